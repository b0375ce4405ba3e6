// Fuzz target "ring": a hostile frontend against the backend core's RingServer and
// GuestRequests, in process, over the stand-ins the core tests use (tests/backend/core: guest
// RAM on a memfd with fake grant seams, the recording KfdDevice under the real
// GpuContext). The harness is the guest: it writes slots, producer indices, indirect
// pages, doorbells and the notify page's consumer index, any bytes at any time.
//
// Input: a config byte (bits 0-1 ring order; 2 connect with a proper HELLO pair first;
// 3 also set up MAP, PIN, MAP_TO_GPU, EVENT, QUEUE, ALLOC; 4 tight quotas; 5 no GPU
// seam; 6 no LEND seam), a budget byte, then operations (one byte each, then operands;
// see Rig::step): raw slot bytes, encoded requests (with optional substitution of live
// handles, window addresses and granted refs), publish, arbitrary producer index, serve,
// doorbells, notify consumer index, indirect page contents, event-loop polls, operator
// revokes and GPU faults, scribbles over the ring header.
//
// Invariants:
//   * a producer index more than `slots` ahead of the responses, or behind what was
//     consumed, disconnects the guest (and nothing is consumed); anything else never
//     does; nothing past the producer index is consumed; one pass serves at most
//     `budget` requests; `idle` means caught up with req_event armed;
//   * every consumed request is answered exactly once, now or (an accepted EVENT_WAIT)
//     later: requests consumed minus responses produced equals the waits pending;
//   * each response echoes the seqno, has a defined status, passes the frontend's
//     header check for its command and is zero past its payload, in the slot as well;
//   * a request that fails validate.h is answered with exactly that status; before
//     CONNECTED everything but HELLO is BAD_STATE; OK only for valid requests and
//     granted features; OK payloads pass the frontend's checks (HELLO, QUERY, LEND,
//     QUEUE_CREATE), objects lie inside the negotiated window, and a handle is never 0
//     and never issued twice;
//   * the notify page never holds more than 64 unconsumed records of its producer's
//     own count, never advances while the guest's consumer index is out of range, and
//     every record it publishes is well formed and names an issued handle;
//   * teardown leaves no grant mapping, shared page, registration, allocation or queue
//     behind, frees the VA window, and closes every file descriptor it opened.
//
// The rig is in ring_rig.hpp and ring_rig.cpp, the checks of the answers in
// ring_checks.cpp; this file holds the hostile guest's operations and the entry point.
#include <dirent.h>
#include <xenhsa/proto.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "ring_rig.hpp"

namespace xenhsa::fuzz::ring {
namespace {

constexpr int kMaxOps = 256;

std::size_t open_fds() {
    std::size_t n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d) != nullptr) {
            ++n;
        }
        ::closedir(d);
    }
    return n;
}

}  // namespace

// An encoded request: command, seqno, substitution flags, payload.
//   flags bit 0: handle fields name live handles (the operand picks which)
//   flags bit 1: VA fields are moved into the negotiated window (offset kept)
//   flags bit 2: gref[] entries name granted pages (the operand picks which)
//   flags bit 3: a nonzero header pad
void Rig::push_fuzzed(FuzzInput& in) {
    const uint8_t pick = in.u8();
    const uint32_t cmd = pick == 0xFF ? in.u32() : pick % 20u;
    const uint32_t seqno = in.u16();
    const uint8_t flags = in.u8();
    uint32_t len = xenhsa_req_len(cmd);
    if (len == XENHSA_LEN_UNKNOWN) {
        len = in.u8() % (XENHSA_SLOT_PAYLOAD_MAX + 1);
    }
    std::array<uint8_t, XENHSA_SLOT_PAYLOAD_MAX> p{};
    in.fill(p.data(), len);
    const auto field = [&](std::size_t at, auto&& f) {
        uint64_t v = 0;
        std::memcpy(&v, p.data() + at, 8);
        v = f(v);
        std::memcpy(p.data() + at, &v, 8);
    };
    if ((flags & 1u) != 0) {
        const auto h = [this](uint64_t v) { return patch_handle(v); };
        switch (cmd) {
            case XENHSA_CMD_QUEUE_CREATE:
                field(48, h);
                break;
            case XENHSA_CMD_EVENT_WAIT:
                for (std::size_t i = 0; i < std::min<uint32_t>(p[0], 16); ++i) {
                    field(16 + 8 * i, h);
                }
                break;
            case XENHSA_CMD_HELLO:
            case XENHSA_CMD_QUERY:
            case XENHSA_CMD_MAP:
            case XENHSA_CMD_LEND:
            case XENHSA_CMD_PIN:
            case XENHSA_CMD_ALLOC:
            case XENHSA_CMD_EVENT_CREATE:
            case XENHSA_CMD_EVENT_WAIT_CANCEL:
                break;
            default:
                if (len >= 8) {
                    field(0, h);  // the handle requests and MAP_TO_GPU
                }
                break;
        }
    }
    if ((flags & 2u) != 0) {
        const auto v = [this](uint64_t raw) { return relocate(raw); };
        switch (cmd) {
            case XENHSA_CMD_MAP:
            case XENHSA_CMD_LEND:
            case XENHSA_CMD_PIN:
            case XENHSA_CMD_ALLOC:
                field(0, v);
                break;
            case XENHSA_CMD_QUEUE_CREATE:
                field(16, v);
                field(32, v);
                field(40, v);
                break;
            default:
                break;
        }
    }
    if ((flags & 4u) != 0 && cmd == XENHSA_CMD_MAP) {
        xenhsa_map_req m;
        std::memcpy(&m, p.data(), sizeof m);
        for (uint32_t i = 0; i < std::min(m.nrefs, XENHSA_MAP_INLINE_GREFS); ++i) {
            m.gref[i] = ref(m.gref[i]);
        }
        std::memcpy(p.data(), &m, sizeof m);
    }
    std::byte* slot = ring_pages_.get() + xenhsa_ring_slot_offset(req_prod_pvt_++, slots_);
    xenhsa_req_slot s{};
    s.hdr.cmd = cmd;
    s.hdr.len = len;
    s.hdr.seqno = seqno;
    s.hdr.pad = (flags & 8u) != 0 ? 1u : 0u;
    std::memcpy(s.payload, p.data(), len);
    std::memcpy(slot, &s, sizeof s);
}

void Rig::doorbell(FuzzInput& in) {
    const uint32_t index = in.u16() % XENHSA_DOORBELLS_PER_PAGE;
    const uint64_t value = in.u64();
    (void)xenhsa_doorbell_ring(doorbells_.get(), index, value);
    requests_->doorbells(*doorbells_);
    settled();
}

void Rig::notify_cons(FuzzInput& in) {
    const uint8_t mode = in.u8();
    const uint32_t published = requests_->notify().published();
    const uint32_t cons = (mode & 1u) != 0 ? in.u32() : published - in.u8() % 80u;
    xenhsa_index_store(&notify_->cons, cons);
    cons_written_ = cons;
    published_at_cons_ = published;
    requests_->notify().flush();
    settled();
}

// An indirect page: `count` grant refs (an operand byte each: a granted page, or 0xFF
// then a raw ref), then zeroes or (flag) garbage in the tail.
void Rig::write_indirect(FuzzInput& in) {
    std::byte* page = memory_.page(kIndirectFirst + in.u8() % (kGuestPages - kIndirectFirst));
    const uint32_t count = in.u16() % (XENHSA_GREFS_PER_INDIRECT_PAGE + 1);
    const bool garbage_tail = (in.u8() & 1u) != 0;
    std::vector<uint32_t> refs(XENHSA_GREFS_PER_INDIRECT_PAGE, garbage_tail ? 0xA5A5A5A5u : 0);
    for (uint32_t i = 0; i < count; ++i) {
        const uint8_t b = in.u8();
        refs[i] = b == 0xFF ? in.u32() : ref(b);
    }
    std::memcpy(page, refs.data(), XENHSA_PAGE_SIZE);
}

void Rig::operator_action(FuzzInput& in) {
    switch (in.u8() % 4) {
        case 0:
            requests_->revoke_all(false);
            break;
        case 1:
            (void)requests_->revoke_handle(patch_handle(in.u64()));
            break;
        case 2: {
            core::Quotas q = quotas_;
            q.max_map_pages = in.u8();
            q.max_lend_pages = in.u8();
            (void)requests_->enforce_quotas(q);
            break;
        }
        default:
            if (gpu_ != nullptr && kfd_.last_queue() != 0) {
                kfd_.fault(kfd_.last_queue(), relocate(in.u64()));
            }
            break;
    }
    poll(false);
}

// The guest writes into the ring header, the backend's cache line included (the
// backend must never trust what it reads back there).
void Rig::scribble(FuzzInput& in) {
    const uint32_t word = 1 + in.u8() % 31u;  // not req_prod: that has its own operations
    const uint32_t value = in.u32();
    std::memcpy(ring_pages_.get() + 4 * word, &value, 4);
}

void Rig::step(FuzzInput& in, uint8_t op) {
    switch (op % 12) {
        case 0: {  // raw slot bytes
            const uint8_t index = in.u8();
            in.fill(ring_pages_.get() + xenhsa_ring_slot_offset(index, slots_), XENHSA_SLOT_SIZE);
            break;
        }
        case 1:
            push_fuzzed(in);
            break;
        case 2:
            xenhsa_index_store(&sring()->req_prod, req_prod_pvt_);
            break;
        case 3: {  // a producer index: near the consumer, or anything
            const uint8_t mode = in.u8();
            const uint32_t rp = (mode & 1u) != 0 ? in.u32() : ring_->rsp_prod() + in.u8() % 40u;
            xenhsa_index_store(&sring()->req_prod, rp);
            break;
        }
        case 4:
            serve();
            break;
        case 5:
            doorbell(in);
            break;
        case 6:
            notify_cons(in);
            break;
        case 7:
            write_indirect(in);
            break;
        case 8:
            poll(false);
            break;
        case 9:
            operator_action(in);
            break;
        case 10:
            scribble(in);
            break;
        default:
            poll(true);
            break;
    }
}

void Rig::run(FuzzInput& in) {
    for (int i = 0; i < kMaxOps && !in.empty(); ++i) {
        step(in, in.u8());
    }
    serve();
    poll(false);
    teardown();
}

}  // namespace xenhsa::fuzz::ring

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace xenhsa::fuzz;
    const std::size_t fds = ring::open_fds();
    {
        FuzzInput in(data, size);
        ring::Rig rig(in);
        rig.run(in);
    }
    XENHSA_FUZZ_CHECK(ring::open_fds() == fds, "a file descriptor outlived the session");
    return 0;
}
