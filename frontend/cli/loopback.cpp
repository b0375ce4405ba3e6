#include "loopback.hpp"

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include <map>
#include <string>
#include <vector>
#include <xenhsa/frontend/front_ring.hpp>

#include "loopback_peer.hpp"
#include "shared_pages.hpp"

namespace xenhsa::frontend::cli {

namespace {

struct Case {
    std::string what;
    xenhsa_req_slot slot;
    uint32_t expect;
};

template <class Wire>
xenhsa_req_slot encoded(uint32_t cmd, const Wire& payload) {
    xenhsa_req_slot slot{};
    xenhsa_encode_req(&slot, cmd, 0, &payload, sizeof payload);
    return slot;
}

xenhsa_req_slot with_header(xenhsa_req_slot slot, uint32_t cmd, uint32_t len, uint32_t pad) {
    slot.hdr.cmd = cmd;
    slot.hdr.len = len;
    slot.hdr.pad = pad;
    return slot;
}

std::vector<Case> scenario() {
    constexpr uint64_t kVa = 0x100000000000ull;
    xenhsa_map_req map{};
    map.va = kVa;
    map.npages = 2;
    map.flags = XENHSA_MAP_RW;
    map.nrefs = 2;
    map.gref[0] = 8;
    map.gref[1] = 9;
    xenhsa_map_req indirect = map;
    indirect.npages = 4096;
    indirect.flags = XENHSA_MAP_RW | XENHSA_MAP_INDIRECT;
    indirect.nrefs = 4;
    indirect.gref[2] = 10;
    indirect.gref[3] = 11;
    xenhsa_map_req stale_refs = map;
    stale_refs.gref[40] = 77;
    xenhsa_event_wait_req wait{};
    wait.count = XENHSA_WAIT_MAX_EVENTS + 1;
    const xenhsa_queue_create_req queue{
        1, XENHSA_QUEUE_COMPUTE_AQL, 100, 0, kVa, 4096, kVa + 0x1000, kVa + 0x1004, 0};
    const auto hello =
        encoded(XENHSA_CMD_HELLO, xenhsa_hello_req{1, 1, XENHSA_FEATURES_V1, 0, 1ull << 32});
    const auto query = encoded(XENHSA_CMD_QUERY, xenhsa_query_req{XENHSA_QUERY_SYSTEM, 0, 0, 0});
    return {
        {"HELLO asks for a 4 GiB window", hello, XENHSA_STATUS_OK},
        {"QUERY system properties", query, XENHSA_STATUS_OK},
        {"MAP 2 pages, direct refs", encoded(XENHSA_CMD_MAP, map), XENHSA_STATUS_OK},
        {"MAP 4096 pages, 4 indirect pages", encoded(XENHSA_CMD_MAP, indirect), XENHSA_STATUS_OK},
        {"PIN 8 KiB", encoded(XENHSA_CMD_PIN, xenhsa_pin_req{kVa, 8192, 0, 0}), XENHSA_STATUS_OK},
        {"UNMAP handle 0", encoded(XENHSA_CMD_UNMAP, xenhsa_handle_req{0}),
         XENHSA_STATUS_BAD_HANDLE},
        {"header: unknown command 0x77", with_header(query, 0x77, 16, 0),
         XENHSA_STATUS_BAD_COMMAND},
        {"header: short length", with_header(query, XENHSA_CMD_QUERY, 8, 0),
         XENHSA_STATUS_BAD_LENGTH},
        {"header: length past the slot", with_header(query, XENHSA_CMD_QUERY, 4096, 0),
         XENHSA_STATUS_BAD_LENGTH},
        {"header: nonzero pad", with_header(hello, XENHSA_CMD_HELLO, 32, 1), XENHSA_STATUS_BAD_PAD},
        {"MAP with garbage in unused refs", encoded(XENHSA_CMD_MAP, stale_refs),
         XENHSA_STATUS_BAD_PAD},
        {"EVENT_WAIT on 17 events", encoded(XENHSA_CMD_EVENT_WAIT, wait),
         XENHSA_STATUS_BAD_ARGUMENT},
        {"QUEUE_CREATE, misaligned wptr", encoded(XENHSA_CMD_QUEUE_CREATE, queue),
         XENHSA_STATUS_BAD_ADDRESS},
    };
}

}  // namespace

int run_loopback(const LoopbackOptions& options) {
    auto pages = SharedPages::create(XENHSA_RING_BYTES(options.ring_order));
    if (!pages) {
        spdlog::error("cannot create ring pages: {}", pages.error().message());
        return 1;
    }
    FrontRing ring(pages.value().guest_view(), options.ring_order);
    LoopbackPeer peer(pages.value().peer_view(), options.ring_order);

    auto cases = scenario();
    std::map<uint32_t, uint32_t> got;  // seqno -> status
    uint32_t next = 0;
    uint32_t wakeups = 0;
    while (got.size() < cases.size()) {
        while (next < cases.size() && ring.outstanding() < ring.slots()) {
            cases[next].slot.hdr.seqno = next + 1;
            if (auto pushed = ring.push_raw(cases[next].slot); !pushed) {
                break;
            }
            ++next;
        }
        ring.publish();
        peer.serve(options.budget);
        ++wakeups;
        for (;;) {
            auto rsp = ring.pop();
            if (!rsp) {
                spdlog::error("backend misbehaved: {}", rsp.error().message());
                return 1;
            }
            if (!rsp.value()) {
                break;
            }
            got[rsp.value()->hdr.seqno] = rsp.value()->hdr.status;
        }
    }

    fmt::print(
        "xenhsa wire protocol v{}: guest ring ({} slots) -> loopback peer, budget {}/wake-up\n\n",
        XENHSA_PROTO_VERSION, ring.slots(), options.budget);
    fmt::print("{:>3}  {:<36} {:<13} {:<13} {}\n", "seq", "request", "expected", "answered", "");
    int failures = 0;
    for (uint32_t i = 0; i < cases.size(); ++i) {
        const uint32_t status = got[i + 1];
        const bool ok = status == cases[i].expect;
        failures += ok ? 0 : 1;
        fmt::print("{:>3}  {:<36} {:<13} {:<13} {}\n", i + 1, cases[i].what,
                   xenhsa_status_name(cases[i].expect), xenhsa_status_name(status),
                   ok ? "ok" : "MISMATCH");
    }

    // A guest that runs its producer index past the ring gets disconnected.
    ring.force_req_prod(
        xenhsa_index_load(
            &reinterpret_cast<const xenhsa_sring*>(pages.value().guest_view().data())->rsp_prod) +
        ring.slots() + 5);
    peer.serve(options.budget);
    const bool cut_off = peer.disconnected();
    failures += cut_off ? 0 : 1;
    fmt::print("\n{:>3}  {:<36} {:<13} {:<13} {}\n", "-", "req_prod runs past the ring",
               "disconnect", cut_off ? "disconnect" : "served", cut_off ? "ok" : "MISMATCH");
    fmt::print("\n{} requests in {} wake-ups; {} of {} checks held\n", cases.size(), wakeups,
               cases.size() + 1 - static_cast<size_t>(failures), cases.size() + 1);
    return failures == 0 ? 0 : 1;
}

}  // namespace xenhsa::frontend::cli
