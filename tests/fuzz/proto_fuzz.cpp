// Fuzz target "proto": the wire protocol's validation and codec (frontend-proto/).
//
// Input: one mode byte, then
//   0  a raw request slot (248 bytes);
//   1  a request built with xenhsa_encode_req: cmd byte, seqno, length choice, payload;
//   2  a response slot for a command, with the request the frontend sent;
//   3  ring indices (slot arithmetic and overflow rules).
//
// Invariants:
//   * xenhsa_check_req / xenhsa_check_rsp_hdr / the four response payload checks give
//     exactly the status of an independent reference written from docs/protocol.md
//     (proto_oracle.cpp), i.e. the documented checks in the documented order;
//   * validation depends only on the header and the first `len` payload bytes (what
//     lies past them is ignored), and re-validating a copy gives the same status;
//   * a request accepted by validation obeys every documented bound, checked again
//     field by field and by using the values as a backend would (indexing gref[] and
//     event[] up to the counts, computing range ends) under ASan/UBSan;
//   * a response accepted by the frontend checks is safe to use: a QUERY chunk is
//     copied into a 4 KiB result at its offset, a doorbell index rings a real doorbell
//     page, LEND grefs are indexed up to nrefs;
//   * a producer index that passes the overflow check never lets the backend consume
//     into a slot whose response is still owed, and every slot lies inside the ring.
#include <xenhsa/proto.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "proto_oracle.hpp"

namespace xenhsa::fuzz {
namespace {

constexpr uint64_t kVaLimit = XENHSA_VA_LIMIT;

std::span<const uint8_t, XENHSA_SLOT_SIZE> bytes_of(const xenhsa_req_slot& slot) {
    return std::span<const uint8_t, XENHSA_SLOT_SIZE>(reinterpret_cast<const uint8_t*>(&slot),
                                                      XENHSA_SLOT_SIZE);
}

bool range_below_limit(uint64_t va, uint64_t size) {
    return size != 0 && va % XENHSA_PAGE_SIZE == 0 && size % XENHSA_PAGE_SIZE == 0 &&
           va < kVaLimit && size <= kVaLimit - va;
}

// Every documented bound of an accepted request, restated and used.
void accepted_request_obeys_bounds(const xenhsa_req_slot& copy) {
    using proto::payload_as;
    XENHSA_FUZZ_CHECK(copy.hdr.cmd >= 1 && copy.hdr.cmd <= 19, "accepted: known command");
    XENHSA_FUZZ_CHECK(
        copy.hdr.len == xenhsa_req_len(copy.hdr.cmd) && copy.hdr.len <= XENHSA_SLOT_PAYLOAD_MAX,
        "accepted: exact length");
    XENHSA_FUZZ_CHECK(copy.hdr.pad == 0, "accepted: header pad zero");
    switch (copy.hdr.cmd) {
        case XENHSA_CMD_HELLO: {
            const auto r = payload_as<xenhsa_hello_req>(copy);
            XENHSA_FUZZ_CHECK(r.version_min >= 1 && r.version_min <= r.version_max,
                              "HELLO: version range");
            XENHSA_FUZZ_CHECK(r.va_size >= XENHSA_VA_WINDOW_MIN &&
                                  r.va_size <= XENHSA_VA_WINDOW_MAX &&
                                  r.va_size % XENHSA_PAGE_SIZE == 0,
                              "HELLO: window size");
            XENHSA_FUZZ_CHECK(r.va_base == 0 || range_below_limit(r.va_base, r.va_size),
                              "HELLO: window below 2^47");
            break;
        }
        case XENHSA_CMD_QUERY: {
            const auto r = payload_as<xenhsa_query_req>(copy);
            XENHSA_FUZZ_CHECK(r.kind >= 1 && r.kind < XENHSA_QUERY_KIND_COUNT_, "QUERY: kind");
            XENHSA_FUZZ_CHECK(r.node < XENHSA_QUERY_MAX_NODES && r.index < XENHSA_QUERY_MAX_INDEX,
                              "QUERY: node and index");
            XENHSA_FUZZ_CHECK(r.offset < XENHSA_PAGE_SIZE, "QUERY: offset");
            break;
        }
        case XENHSA_CMD_MAP: {
            const auto r = payload_as<xenhsa_map_req>(copy);
            XENHSA_FUZZ_CHECK(r.npages >= 1 && r.npages <= XENHSA_MAP_MAX_PAGES, "MAP: npages");
            XENHSA_FUZZ_CHECK(r.nrefs >= 1 && r.nrefs <= XENHSA_MAP_INLINE_GREFS, "MAP: nrefs");
            if ((r.flags & XENHSA_MAP_INDIRECT) != 0) {
                // The indirect pages hold exactly the pages: none missing, none spare.
                XENHSA_FUZZ_CHECK(
                    uint64_t{r.nrefs} * XENHSA_GREFS_PER_INDIRECT_PAGE >= r.npages &&
                        uint64_t{r.nrefs - 1} * XENHSA_GREFS_PER_INDIRECT_PAGE < r.npages,
                    "MAP: indirect page count");
            } else {
                XENHSA_FUZZ_CHECK(r.nrefs == r.npages, "MAP: one gref per page");
            }
            XENHSA_FUZZ_CHECK((r.flags & ~XENHSA_MAP_FLAGS_ALL) == 0, "MAP: flags");
            uint32_t used = 0;
            for (uint32_t i = 0; i < r.nrefs; ++i) {
                used |= r.gref[i];  // in bounds: UBSan's bounds check would say otherwise
            }
            (void)used;
            for (uint32_t i = r.nrefs; i < XENHSA_MAP_INLINE_GREFS; ++i) {
                XENHSA_FUZZ_CHECK(r.gref[i] == 0, "MAP: unused grefs zero");
            }
            XENHSA_FUZZ_CHECK(range_below_limit(r.va, uint64_t{r.npages} * XENHSA_PAGE_SIZE),
                              "MAP: range below 2^47");
            break;
        }
        case XENHSA_CMD_LEND: {
            const auto r = payload_as<xenhsa_lend_req>(copy);
            XENHSA_FUZZ_CHECK(r.npages >= 1 && r.npages <= XENHSA_MAP_MAX_PAGES, "LEND: npages");
            XENHSA_FUZZ_CHECK((r.flags & ~XENHSA_MAP_RW) == 0, "LEND: flags");
            XENHSA_FUZZ_CHECK(range_below_limit(r.va, uint64_t{r.npages} * XENHSA_PAGE_SIZE),
                              "LEND: range below 2^47");
            break;
        }
        case XENHSA_CMD_PIN: {
            const auto r = payload_as<xenhsa_pin_req>(copy);
            XENHSA_FUZZ_CHECK(r.pad == 0 && (r.flags & ~XENHSA_PIN_FLAGS_ALL) == 0,
                              "PIN: pad and flags");
            XENHSA_FUZZ_CHECK(range_below_limit(r.va, r.size), "PIN: range below 2^47");
            break;
        }
        case XENHSA_CMD_MAP_TO_GPU: {
            const auto r = payload_as<xenhsa_map_to_gpu_req>(copy);
            XENHSA_FUZZ_CHECK(r.handle != 0 && r.node_mask != 0 && r.pad == 0 &&
                                  (r.flags & ~XENHSA_GPU_MAP_FLAGS_ALL) == 0,
                              "MAP_TO_GPU: fields");
            break;
        }
        case XENHSA_CMD_ALLOC: {
            const auto r = payload_as<xenhsa_alloc_req>(copy);
            XENHSA_FUZZ_CHECK(
                r.size != 0 && r.size % XENHSA_PAGE_SIZE == 0 && r.size <= XENHSA_VA_WINDOW_MAX,
                "ALLOC: size");
            XENHSA_FUZZ_CHECK(
                r.node < XENHSA_QUERY_MAX_NODES && (r.flags & ~XENHSA_ALLOC_FLAGS_ALL) == 0,
                "ALLOC: node and flags");
            XENHSA_FUZZ_CHECK(r.va == 0 || range_below_limit(r.va, r.size), "ALLOC: range");
            break;
        }
        case XENHSA_CMD_QUEUE_CREATE: {
            const auto r = payload_as<xenhsa_queue_create_req>(copy);
            XENHSA_FUZZ_CHECK((r.type == XENHSA_QUEUE_COMPUTE_AQL || r.type == XENHSA_QUEUE_SDMA) &&
                                  r.node < 64 && r.percentage <= 100 && r.priority >= -3 &&
                                  r.priority <= 3,
                              "QUEUE_CREATE: type, node, percentage, priority");
            const uint64_t packets = r.ring_size / XENHSA_AQL_PACKET_SIZE;
            XENHSA_FUZZ_CHECK(r.ring_size % XENHSA_AQL_PACKET_SIZE == 0 && packets >= 64 &&
                                  packets <= 65536 && (packets & (packets - 1)) == 0,
                              "QUEUE_CREATE: ring of 64..64Ki packets, a power of two");
            XENHSA_FUZZ_CHECK(range_below_limit(r.ring_va, r.ring_size), "QUEUE_CREATE: ring");
            for (const uint64_t p : {r.rptr_va, r.wptr_va}) {
                XENHSA_FUZZ_CHECK(p != 0 && p % 8 == 0 && p + 8 <= kVaLimit,
                                  "QUEUE_CREATE: pointer");
            }
            break;
        }
        case XENHSA_CMD_EVENT_CREATE: {
            const auto r = payload_as<xenhsa_event_create_req>(copy);
            XENHSA_FUZZ_CHECK(r.pad == 0 && r.type < XENHSA_EVENT_TYPE_COUNT_ && r.node < 64 &&
                                  (r.flags & ~XENHSA_EVENT_FLAGS_ALL) == 0,
                              "EVENT_CREATE: fields");
            break;
        }
        case XENHSA_CMD_EVENT_WAIT: {
            const auto r = payload_as<xenhsa_event_wait_req>(copy);
            XENHSA_FUZZ_CHECK(r.pad == 0 && r.count >= 1 && r.count <= XENHSA_WAIT_MAX_EVENTS &&
                                  (r.flags & ~XENHSA_WAIT_FLAGS_ALL) == 0,
                              "EVENT_WAIT: count and flags");
            for (uint32_t i = 0; i < r.count; ++i) {
                XENHSA_FUZZ_CHECK(r.event[i] != 0, "EVENT_WAIT: named events nonzero");
            }
            for (uint32_t i = r.count; i < XENHSA_WAIT_MAX_EVENTS; ++i) {
                XENHSA_FUZZ_CHECK(r.event[i] == 0, "EVENT_WAIT: unused events zero");
            }
            break;
        }
        case XENHSA_CMD_EVENT_WAIT_CANCEL:
            XENHSA_FUZZ_CHECK(payload_as<xenhsa_event_wait_cancel_req>(copy).pad == 0,
                              "EVENT_WAIT_CANCEL: pad");
            break;
        default:
            XENHSA_FUZZ_CHECK(payload_as<xenhsa_handle_req>(copy).handle != 0,
                              "handle request: handle nonzero");
            break;
    }
}

void check_request(const xenhsa_req_slot& copy) {
    uint32_t status = xenhsa_check_req(&copy);
    if (sabotage()) {
        status = XENHSA_STATUS_OK;  // a validator that forgot its checks
    }
    XENHSA_FUZZ_CHECK(status == oracle::check_request(bytes_of(copy)),
                      "xenhsa_check_req differs from the documented checks");
    XENHSA_FUZZ_CHECK(status == xenhsa_check_req(&copy), "validation is deterministic");

    // Only the header and `len` payload bytes count: scramble the rest, and encode the
    // same message afresh (which zero-fills it).
    const uint32_t used = XENHSA_REQ_HDR_SIZE + std::min(copy.hdr.len, XENHSA_SLOT_PAYLOAD_MAX);
    xenhsa_req_slot scrambled = copy;
    std::memset(reinterpret_cast<uint8_t*>(&scrambled) + used, 0xA5, XENHSA_SLOT_SIZE - used);
    XENHSA_FUZZ_CHECK(xenhsa_check_req(&scrambled) == status,
                      "validation read bytes past the payload length");
    if (copy.hdr.len <= XENHSA_SLOT_PAYLOAD_MAX) {
        xenhsa_req_slot encoded;
        std::memset(&encoded, 0xEE, sizeof encoded);
        XENHSA_FUZZ_CHECK(xenhsa_encode_req(&encoded, copy.hdr.cmd, copy.hdr.seqno, copy.payload,
                                            copy.hdr.len) == 0,
                          "encode accepts len <= 232");
        const auto* raw = reinterpret_cast<const uint8_t*>(&encoded);
        for (uint32_t i = used; i < XENHSA_SLOT_SIZE; ++i) {
            XENHSA_FUZZ_CHECK(raw[i] == 0, "encode zero-fills the slot past the payload");
        }
        // The encoder writes pad = 0: same status unless the pad was the only fault.
        xenhsa_req_slot with_pad = encoded;
        with_pad.hdr.pad = copy.hdr.pad;
        XENHSA_FUZZ_CHECK(xenhsa_check_req(&with_pad) == status, "encode keeps the message");
    } else {
        XENHSA_FUZZ_CHECK(
            xenhsa_encode_req(&scrambled, copy.hdr.cmd, 0, copy.payload, copy.hdr.len) == -1,
            "encode refuses len > 232");
    }
    if (status == XENHSA_STATUS_OK) {
        accepted_request_obeys_bounds(copy);
    } else {
        XENHSA_FUZZ_CHECK(status < XENHSA_STATUS_COUNT_, "a defined status");
    }
}

void request_raw(FuzzInput& in) {
    xenhsa_req_slot slot;
    in.fill(&slot, sizeof slot);
    xenhsa_req_slot copy;
    xenhsa_copy_req(&copy, &slot);
    XENHSA_FUZZ_CHECK(std::memcmp(&copy, &slot, sizeof slot) == 0, "copy_req copies the slot");
    check_request(copy);
}

void request_encoded(FuzzInput& in) {
    const uint8_t pick = in.u8();
    const uint32_t cmd = pick == 0xFF ? in.u32() : pick % 21u;
    const uint32_t seqno = in.u32();
    const uint8_t len_pick = in.u8();
    uint32_t len = xenhsa_req_len(cmd);
    if (len == XENHSA_LEN_UNKNOWN || (len_pick & 1u) != 0) {
        len = (len_pick & 2u) != 0 ? in.u32() : in.u8() % (XENHSA_SLOT_PAYLOAD_MAX + 1);
    }
    std::array<uint8_t, XENHSA_SLOT_PAYLOAD_MAX> payload{};
    in.fill(payload.data(), std::min<uint32_t>(len, XENHSA_SLOT_PAYLOAD_MAX));
    xenhsa_req_slot slot;
    if (xenhsa_encode_req(&slot, cmd, seqno, payload.data(), len) != 0) {
        XENHSA_FUZZ_CHECK(len > XENHSA_SLOT_PAYLOAD_MAX, "encode refuses only len > 232");
        std::memset(&slot, 0, sizeof slot);
        slot.hdr.cmd = cmd;
        slot.hdr.len = len;
        slot.hdr.seqno = seqno;
    }
    slot.hdr.pad = (len_pick & 4u) != 0 ? in.u32() : 0;
    check_request(slot);
}

void response(FuzzInput& in) {
    const uint32_t cmd = in.u8() % 21u;
    xenhsa_rsp_slot slot;
    in.fill(&slot, sizeof slot);
    std::array<uint8_t, XENHSA_SLOT_PAYLOAD_MAX> req{};
    in.fill(req.data(), req.size());

    xenhsa_rsp_slot copy;
    xenhsa_copy_rsp(&copy, &slot);
    const auto header = std::span<const uint8_t, 16>(reinterpret_cast<const uint8_t*>(&copy), 16);
    const uint32_t status = xenhsa_check_rsp_hdr(&copy.hdr, cmd);
    XENHSA_FUZZ_CHECK(status == oracle::check_response_header(header, cmd),
                      "xenhsa_check_rsp_hdr differs from the documented checks");
    if (status != XENHSA_STATUS_OK || copy.hdr.status != XENHSA_STATUS_OK) {
        return;
    }
    XENHSA_FUZZ_CHECK(copy.hdr.len == xenhsa_rsp_len(cmd), "OK response: exact length");
    const std::span<const uint8_t> payload(copy.payload, XENHSA_SLOT_PAYLOAD_MAX);
    const std::span<const uint8_t> request(req.data(), req.size());
    // The payload checks take the request the frontend sent: always a valid one.
    xenhsa_req_slot sent{};
    xenhsa_encode_req(&sent, cmd, 1, req.data(), xenhsa_req_len(cmd));
    if (cmd != XENHSA_CMD_QUEUE_CREATE && oracle::check_request(bytes_of(sent)) != oracle::kOk) {
        return;
    }
    switch (cmd) {
        case XENHSA_CMD_HELLO: {
            const auto r = proto::payload_as<xenhsa_hello_rsp>(copy);
            const auto q = proto::payload_as<xenhsa_hello_req>(sent);
            const uint32_t s = xenhsa_check_hello_rsp(&r, &q);
            XENHSA_FUZZ_CHECK(s == oracle::check_hello_response(payload, request),
                              "xenhsa_check_hello_rsp differs from the documented checks");
            if (s == XENHSA_STATUS_OK) {
                XENHSA_FUZZ_CHECK(r.ring_slots >= 1 && r.ring_slots <= 128 &&
                                      (r.ring_slots & (r.ring_slots - 1)) == 0 &&
                                      r.max_in_flight < r.ring_slots,
                                  "HELLO rsp: ring slots and in-flight bound");
                XENHSA_FUZZ_CHECK((r.features & ~q.features) == 0, "HELLO rsp: features");
                XENHSA_FUZZ_CHECK(range_below_limit(r.va_base, r.va_size) && r.va_size == q.va_size,
                                  "HELLO rsp: window");
            }
            break;
        }
        case XENHSA_CMD_QUERY: {
            const auto r = proto::payload_as<xenhsa_query_rsp>(copy);
            const auto q = proto::payload_as<xenhsa_query_req>(sent);
            const uint32_t s = xenhsa_check_query_rsp(&r, &q);
            XENHSA_FUZZ_CHECK(s == oracle::check_query_response(payload, request),
                              "xenhsa_check_query_rsp differs from the documented checks");
            if (s == XENHSA_STATUS_OK) {
                // What a frontend does with an accepted chunk: ASan watches the bounds.
                auto result = std::make_unique<uint8_t[]>(XENHSA_PAGE_SIZE);
                XENHSA_FUZZ_CHECK(uint64_t{q.offset} + r.chunk_len <= r.total_len &&
                                      r.total_len <= XENHSA_PAGE_SIZE,
                                  "QUERY rsp: chunk inside the result");
                std::memcpy(result.get() + q.offset, r.data, r.chunk_len);
            }
            break;
        }
        case XENHSA_CMD_LEND: {
            const auto r = proto::payload_as<xenhsa_lend_rsp>(copy);
            const auto q = proto::payload_as<xenhsa_lend_req>(sent);
            const uint32_t s = xenhsa_check_lend_rsp(&r, &q);
            XENHSA_FUZZ_CHECK(s == oracle::check_lend_response(payload, request),
                              "xenhsa_check_lend_rsp differs from the documented checks");
            if (s == XENHSA_STATUS_OK) {
                XENHSA_FUZZ_CHECK(r.nrefs >= 1 && r.nrefs <= XENHSA_MAP_INLINE_GREFS &&
                                      r.nrefs == xenhsa_map_nrefs(r.npages, r.flags),
                                  "LEND rsp: nrefs");
                uint32_t used = 0;
                for (uint32_t i = 0; i < r.nrefs; ++i) {
                    used |= r.gref[i];
                }
                (void)used;
            }
            break;
        }
        case XENHSA_CMD_QUEUE_CREATE: {
            const auto r = proto::payload_as<xenhsa_queue_create_rsp>(copy);
            const uint32_t s = xenhsa_check_queue_create_rsp(&r);
            XENHSA_FUZZ_CHECK(s == oracle::check_queue_create_response(payload),
                              "xenhsa_check_queue_create_rsp differs from the documented checks");
            if (s == XENHSA_STATUS_OK) {
                // Accepted: safe to hand to xenhsa_doorbell_ring, which does not bound it.
                struct FreeDeleter {
                    void operator()(void* p) const noexcept { std::free(p); }
                };
                std::unique_ptr<xenhsa_doorbell_page, FreeDeleter> page(
                    static_cast<xenhsa_doorbell_page*>(
                        std::calloc(1, sizeof(xenhsa_doorbell_page))));
                XENHSA_FUZZ_CHECK(page != nullptr, "allocation");
                (void)xenhsa_doorbell_ring(page.get(), r.doorbell_index, 1);
            }
            break;
        }
        default:
            break;
    }
}

void ring_indices(FuzzInput& in) {
    const uint32_t order = in.u8() % (XENHSA_RING_MAX_ORDER + 1);
    const uint32_t slots = XENHSA_RING_SLOTS(order);
    const uint32_t rsp_prod = in.u32();
    const uint32_t req_prod = in.u32();
    const uint32_t index = in.u32();
    XENHSA_FUZZ_CHECK(
        xenhsa_ring_slot_offset(index, slots) + XENHSA_SLOT_SIZE <= XENHSA_RING_BYTES(order),
        "every slot lies inside the ring");
    if (!xenhsa_ring_req_prod_overflow(req_prod, rsp_prod, slots)) {
        // Everything the backend may consume has a response slot of its own.
        for (uint32_t cons = rsp_prod; cons != req_prod; ++cons) {
            XENHSA_FUZZ_CHECK(!xenhsa_ring_req_cons_overflow(cons, rsp_prod, slots),
                              "a producer within the ring overruns an owed slot");
        }
    }
    // The frontend's check on the backend's producer.
    const uint32_t req_prod_pvt = in.u32();
    const uint32_t rsp_cons = in.u32();
    if (!xenhsa_ring_rsp_prod_overflow(rsp_prod, req_prod_pvt, rsp_cons)) {
        XENHSA_FUZZ_CHECK(static_cast<uint32_t>(rsp_prod - rsp_cons) <=
                              static_cast<uint32_t>(req_prod_pvt - rsp_cons),
                          "no more responses than outstanding requests");
    }
}

}  // namespace
}  // namespace xenhsa::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    xenhsa::fuzz::FuzzInput in(data, size);
    switch (in.u8() % 4) {
        case 0:
            xenhsa::fuzz::request_raw(in);
            break;
        case 1:
            xenhsa::fuzz::request_encoded(in);
            break;
        case 2:
            xenhsa::fuzz::response(in);
            break;
        default:
            xenhsa::fuzz::ring_indices(in);
            break;
    }
    return 0;
}
