// Fuzz target "frontend": a hostile backend against the guest library (frontend/): the
// guest's FrontRing, check_response and NotifyConsumer. The harness pushes well-formed
// requests as a guest would, and as the backend writes any bytes into the response
// slots, the response producer index and the notify page.
//
// Input: an order byte, then operations (see Rig::step): push a request, publish,
// write a response slot (raw, or shaped after an outstanding request), publish a
// response producer index (near, or anything), pop and check every response, write
// notify records and their producer index, poll the notify page, final check.
//
// Invariants:
//   * the guest never takes more responses than it published requests, never has more
//     than `slots` outstanding, and once the backend is found broken it stays broken;
//   * a response check_response accepts passes validate.h's header check for the
//     command sent with that seqno and the payload check for its command, and is safe to
//     use: a QUERY chunk is copied into the 4 KiB result at its offset, a doorbell index
//     rings a real doorbell page, LEND grefs are indexed up to nrefs, an EVENT_WAIT mask
//     names only events of the wait, HELLO's version lies in the asked range;
//   * the notify consumer hands out only well-formed records, at most 64 a poll, moves
//     `cons` by exactly what it handed out, and once broken stays broken.
#include <xenhsa/proto.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>
#include <xenhsa/frontend/front_ring.hpp>
#include <xenhsa/frontend/notify_consumer.hpp>
#include <xenhsa/frontend/response_check.hpp>

#include "fuzz_check.hpp"
#include "fuzz_input.hpp"

namespace xenhsa::fuzz {
namespace {

using frontend::Payload;
using frontend::SentRequest;

constexpr int kMaxOps = 256;

struct FreeDeleter {
    void operator()(void* p) const noexcept { std::free(p); }
};

std::unique_ptr<std::byte[], FreeDeleter> zeroed(std::size_t bytes) {
    void* p = std::aligned_alloc(XENHSA_PAGE_SIZE, bytes);
    XENHSA_FUZZ_CHECK(p != nullptr, "allocation");
    std::memset(p, 0, bytes);
    return std::unique_ptr<std::byte[], FreeDeleter>(static_cast<std::byte*>(p));
}

// What a guest does with an accepted response; ASan and UBSan watch the bounds.
void use_accepted(const xenhsa_rsp_slot& rsp, const SentRequest& sent) {
    const uint32_t cmd = sent.cmd;
    XENHSA_FUZZ_CHECK(xenhsa_check_rsp_hdr(&rsp.hdr, cmd) == XENHSA_STATUS_OK,
                      "check_response accepted a header validate.h rejects");
    if (rsp.hdr.status != XENHSA_STATUS_OK) {
        if (cmd == XENHSA_CMD_HELLO && rsp.hdr.status == XENHSA_STATUS_BAD_ADDRESS) {
            const auto r = proto::payload_as<xenhsa_hello_rsp>(rsp);
            const bool none = r.va_base == 0 && r.va_size == 0;  // refused outright
            XENHSA_FUZZ_CHECK(none || (xenhsa_va_range_ok(r.va_base, r.va_size) != 0 &&
                                       r.va_base >= XENHSA_VA_WINDOW_FLOOR &&
                                       r.va_size == sent.payload.as<xenhsa_hello_req>().va_size),
                              "an accepted HELLO proposal is no valid window of the asked size");
        }
        return;
    }
    switch (cmd) {
        case XENHSA_CMD_HELLO: {
            const auto r = proto::payload_as<xenhsa_hello_rsp>(rsp);
            const auto q = sent.payload.as<xenhsa_hello_req>();
            XENHSA_FUZZ_CHECK(xenhsa_check_hello_rsp(&r, &q) == XENHSA_STATUS_OK,
                              "an accepted HELLO fails xenhsa_check_hello_rsp");
            XENHSA_FUZZ_CHECK(r.version >= q.version_min && r.version <= q.version_max,
                              "an accepted HELLO version outside the asked range");
            break;
        }
        case XENHSA_CMD_QUERY: {
            const auto r = proto::payload_as<xenhsa_query_rsp>(rsp);
            const auto q = sent.payload.as<xenhsa_query_req>();
            XENHSA_FUZZ_CHECK(xenhsa_check_query_rsp(&r, &q) == XENHSA_STATUS_OK,
                              "an accepted QUERY fails xenhsa_check_query_rsp");
            auto result = std::make_unique<uint8_t[]>(XENHSA_PAGE_SIZE);
            XENHSA_FUZZ_CHECK(uint64_t{q.offset} + r.chunk_len <= XENHSA_PAGE_SIZE,
                              "an accepted QUERY chunk past the result");
            std::memcpy(result.get() + q.offset, r.data, r.chunk_len);
            break;
        }
        case XENHSA_CMD_LEND: {
            const auto r = proto::payload_as<xenhsa_lend_rsp>(rsp);
            const auto q = sent.payload.as<xenhsa_lend_req>();
            XENHSA_FUZZ_CHECK(xenhsa_check_lend_rsp(&r, &q) == XENHSA_STATUS_OK,
                              "an accepted LEND fails xenhsa_check_lend_rsp");
            uint32_t any = 0;
            for (uint32_t i = 0; i < r.nrefs; ++i) {
                any |= r.gref[i];
            }
            (void)any;
            break;
        }
        case XENHSA_CMD_QUEUE_CREATE: {
            const auto r = proto::payload_as<xenhsa_queue_create_rsp>(rsp);
            XENHSA_FUZZ_CHECK(xenhsa_check_queue_create_rsp(&r) == XENHSA_STATUS_OK,
                              "an accepted QUEUE_CREATE fails xenhsa_check_queue_create_rsp");
            auto page = zeroed(XENHSA_PAGE_SIZE);
            (void)xenhsa_doorbell_ring(reinterpret_cast<xenhsa_doorbell_page*>(page.get()),
                                       r.doorbell_index, 1);
            break;
        }
        case XENHSA_CMD_MAP:
        case XENHSA_CMD_PIN:
            XENHSA_FUZZ_CHECK(proto::payload_as<xenhsa_handle_rsp>(rsp).handle != 0,
                              "an accepted handle 0");
            break;
        case XENHSA_CMD_ALLOC: {
            const auto r = proto::payload_as<xenhsa_alloc_rsp>(rsp);
            const auto q = sent.payload.as<xenhsa_alloc_req>();
            XENHSA_FUZZ_CHECK(r.handle != 0 && xenhsa_va_range_ok(r.va, q.size) != 0 &&
                                  (q.va == 0 || r.va == q.va),
                              "an accepted ALLOC range the guest cannot use");
            break;
        }
        case XENHSA_CMD_EVENT_WAIT: {
            const auto r = proto::payload_as<xenhsa_event_wait_rsp>(rsp);
            const auto q = sent.payload.as<xenhsa_event_wait_req>();
            XENHSA_FUZZ_CHECK(r.pad == 0 && q.count >= 1 && q.count <= XENHSA_WAIT_MAX_EVENTS &&
                                  (r.signaled_mask >> q.count) == 0,
                              "an accepted wait mask naming events the wait did not name");
            break;
        }
        default:
            break;
    }
}

class Rig {
public:
    explicit Rig(FuzzInput& in)
        : order_(in.u8() % (XENHSA_RING_MAX_ORDER + 1)),
          slots_(XENHSA_RING_SLOTS(order_)),
          ring_pages_(zeroed(XENHSA_RING_BYTES(order_))),
          notify_page_(zeroed(XENHSA_PAGE_SIZE)),
          ring_(std::span<std::byte>(ring_pages_.get(), XENHSA_RING_BYTES(order_)), order_),
          notify_(std::span<std::byte>(notify_page_.get(), XENHSA_PAGE_SIZE)) {}

    void run(FuzzInput& in) {
        for (int i = 0; i < kMaxOps && !in.empty(); ++i) {
            step(in);
        }
        pop_all();
        poll_notify();
    }

private:
    xenhsa_sring* sring() { return reinterpret_cast<xenhsa_sring*>(ring_pages_.get()); }
    xenhsa_notify_page* npage() {
        return reinterpret_cast<xenhsa_notify_page*>(notify_page_.get());
    }

    // A request of a known command (the payload bytes come from the input).
    void push(FuzzInput& in) {
        const uint32_t cmd = 1 + in.u8() % 19u;
        std::array<std::byte, XENHSA_SLOT_PAYLOAD_MAX> p{};
        const uint32_t len = xenhsa_req_len(cmd);
        in.fill(p.data(), len);
        const uint32_t seqno = next_seqno_++;
        const bool had_room = ring_.outstanding() < slots_;
        auto pushed = ring_.push(cmd, seqno, std::span<const std::byte>(p.data(), len));
        XENHSA_FUZZ_CHECK(pushed.has_value() == had_room, "push refused with room, or overfilled");
        // check_response takes requests that passed their own checks, as the library's
        // typed calls build them; answers to others are left alone (unknown seqnos).
        xenhsa_req_slot as_sent{};
        xenhsa_encode_req(&as_sent, cmd, seqno, p.data(), len);
        if (pushed && xenhsa_check_req(&as_sent) == XENHSA_STATUS_OK) {
            sent_[seqno] = SentRequest{cmd, Payload::of(std::span<const std::byte>(p.data(), len))};
        }
        XENHSA_FUZZ_CHECK(ring_.outstanding() <= slots_, "more than `slots` outstanding");
    }

    // A response slot: raw bytes, or shaped after an outstanding request.
    void write_response(FuzzInput& in) {
        const uint8_t mode = in.u8();
        std::byte* slot = ring_pages_.get() + xenhsa_ring_slot_offset(rsp_written_++, slots_);
        if ((mode & 1u) == 0 || sent_.empty()) {
            in.fill(slot, XENHSA_SLOT_SIZE);
            return;
        }
        auto it = sent_.begin();
        std::advance(it, in.u8() % sent_.size());
        const uint32_t status = in.u8() % 20u;
        uint32_t len = xenhsa_rsp_len(it->second.cmd);
        if ((mode & 2u) != 0) {
            len = in.u8();
        } else if (status != XENHSA_STATUS_OK && it->second.cmd != XENHSA_CMD_HELLO) {
            len = 0;
        }
        std::array<std::byte, XENHSA_SLOT_PAYLOAD_MAX> p{};
        in.fill(p.data(), std::min<uint32_t>(len, XENHSA_SLOT_PAYLOAD_MAX));
        if (xenhsa_encode_rsp(slot, it->first, status, p.data(), len) != 0) {
            in.fill(slot, XENHSA_SLOT_SIZE);
        }
    }

    void pop_all() {
        for (int i = 0; i < 2 * static_cast<int>(slots_) + 2; ++i) {
            auto r = ring_.pop();
            if (!r) {
                broken_ = true;
                return;
            }
            XENHSA_FUZZ_CHECK(!broken_, "the ring works again after the backend broke it");
            if (!r.value()) {
                return;
            }
            ++popped_;
            XENHSA_FUZZ_CHECK(popped_ <= ring_.published(),
                              "more responses taken than requests published");
            const xenhsa_rsp_slot& rsp = *r.value();
            auto it = sent_.find(rsp.hdr.seqno);
            if (it == sent_.end()) {
                continue;  // a seqno the guest never sent: a broken backend, caught by the caller
            }
            const uint32_t verdict = frontend::check_response(rsp, it->second);
            if (verdict == XENHSA_STATUS_OK || sabotage()) {
                use_accepted(rsp, it->second);
                sent_.erase(it);
            }
        }
    }

    void write_notify(FuzzInput& in) {
        const uint32_t n = in.u8() % 70u;
        for (uint32_t i = 0; i < n; ++i) {
            xenhsa_notify rec{};
            const uint8_t kind = in.u8();
            if (kind < 200) {
                rec.type = 1 + kind % 2u;
                rec.handle = in.u64();
                rec.arg0 = in.u64();
            } else {
                in.fill(&rec, sizeof rec);
            }
            std::memcpy(&npage()->slot[notify_written_++ % XENHSA_NOTIFY_SLOTS], &rec, sizeof rec);
        }
        const uint8_t mode = in.u8();
        const uint32_t prod = (mode & 1u) != 0 ? in.u32() : notify_written_;
        xenhsa_index_store(&npage()->prod, prod);
    }

    void poll_notify() {
        const uint32_t before = notify_.consumed();
        auto r = notify_.poll();
        if (!r) {
            XENHSA_FUZZ_CHECK(notify_.broken(), "a failed poll without marking the backend broken");
            notify_broken_ = true;
            return;
        }
        XENHSA_FUZZ_CHECK(!notify_broken_, "the notify page works again after it was broken");
        const auto& records = r.value();
        XENHSA_FUZZ_CHECK(records.size() <= XENHSA_NOTIFY_SLOTS, "more than 64 records a poll");
        XENHSA_FUZZ_CHECK(notify_.consumed() - before == records.size() &&
                              xenhsa_index_load(&npage()->cons) == notify_.consumed(),
                          "cons does not move by the records handed out");
        for (const auto& rec : records) {
            XENHSA_FUZZ_CHECK(
                (rec.type == XENHSA_NOTIFY_REVOKED || rec.type == XENHSA_NOTIFY_GPU_FAULT) &&
                    rec.pad == 0,
                "a malformed notify record handed out");
        }
    }

    void step(FuzzInput& in) {
        switch (in.u8() % 8) {
            case 0:
            case 1:
                push(in);
                break;
            case 2:
                (void)ring_.publish();
                break;
            case 3:
                write_response(in);
                break;
            case 4: {  // the backend's producer index
                const uint8_t mode = in.u8();
                const uint32_t v = (mode & 1u) != 0 ? in.u32() : rsp_written_ - in.u8() % 4u;
                xenhsa_index_store(&sring()->rsp_prod, v);
                break;
            }
            case 5:
                pop_all();
                break;
            case 6:
                write_notify(in);
                break;
            default:
                poll_notify();
                (void)ring_.final_check();
                break;
        }
    }

    uint32_t order_;
    uint32_t slots_;
    std::unique_ptr<std::byte[], FreeDeleter> ring_pages_;
    std::unique_ptr<std::byte[], FreeDeleter> notify_page_;
    frontend::FrontRing ring_;
    frontend::NotifyConsumer notify_;
    std::map<uint32_t, SentRequest> sent_;
    uint32_t next_seqno_ = 1;
    uint32_t rsp_written_ = 0;
    uint32_t notify_written_ = 0;
    uint32_t popped_ = 0;
    bool broken_ = false;
    bool notify_broken_ = false;
};

}  // namespace
}  // namespace xenhsa::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    xenhsa::fuzz::FuzzInput in(data, size);
    xenhsa::fuzz::Rig rig(in);
    rig.run(in);
    return 0;
}
