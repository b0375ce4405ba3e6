// Seeds of the "proto" target (input format: proto_fuzz.cpp).
#include <xenhsa/proto.h>

#include "seeds.hpp"

namespace xenhsa::fuzz {
namespace {

template <class Wire>
xenhsa_req_slot slot(uint32_t cmd, uint32_t seqno, const Wire& w) {
    xenhsa_req_slot s{};
    xenhsa_encode_req(&s, cmd, seqno, &w, sizeof w);
    return s;
}

xenhsa_hello_req hello(uint64_t base) {
    xenhsa_hello_req h{};
    h.version_min = 1;
    h.version_max = 1;
    h.features = XENHSA_FEATURES_V1;
    h.va_base = base;
    h.va_size = 1ull << 30;
    return h;
}

}  // namespace

void proto_seeds(SeedSet& out) {
    constexpr uint64_t kBase = 0x200000000000ull;
    xenhsa_query_req query{};
    query.kind = XENHSA_QUERY_MEM_BANK;
    query.node = 1;
    query.index = 2;
    xenhsa_map_req map{};
    map.va = kBase;
    map.npages = 3;
    map.flags = XENHSA_MAP_RW;
    map.nrefs = 3;
    map.gref[0] = 8;
    map.gref[1] = 9;
    map.gref[2] = 10;
    xenhsa_map_req indirect{};
    indirect.va = kBase + 0x100000;
    indirect.npages = 1500;
    indirect.flags = XENHSA_MAP_RW | XENHSA_MAP_INDIRECT;
    indirect.nrefs = 2;
    indirect.gref[0] = 60;
    indirect.gref[1] = 61;
    xenhsa_lend_req lend{kBase + 0x200000, 52, XENHSA_MAP_RW};
    xenhsa_pin_req pin{kBase, 3 * 4096, XENHSA_PIN_COARSE_GRAIN, 0};
    xenhsa_map_to_gpu_req to_gpu{0x1234, 2, 0, 0};
    xenhsa_alloc_req alloc{0, 1u << 20, 1, XENHSA_ALLOC_DEVICE_LOCAL};
    xenhsa_queue_create_req queue{
        1, XENHSA_QUEUE_COMPUTE_AQL, 100, -1, kBase, 4096, kBase + 4096, kBase + 4096 + 8, 0};
    xenhsa_queue_create_req sdma{
        1, XENHSA_QUEUE_SDMA, 100, 3, kBase, 1u << 20, kBase + (1u << 20), kBase + (1u << 20) + 8,
        0};
    xenhsa_event_create_req event{XENHSA_EVENT_SIGNAL, 1, XENHSA_EVENT_MANUAL_RESET, 0};
    xenhsa_event_wait_req wait{};
    wait.count = 2;
    wait.flags = XENHSA_WAIT_ALL;
    wait.timeout_ms = 10;
    wait.event[0] = 0x99;
    wait.event[1] = 0x9a;
    xenhsa_event_wait_cancel_req cancel{7, 0};
    xenhsa_handle_req handle{0x4242};

    // Mode 0: whole request slots, one per command.
    const auto raw = [&](const char* name, const xenhsa_req_slot& s) {
        out.add("proto", std::string("req-") + name, SeedBytes().u8(0).pod(s).bytes());
    };
    raw("hello", slot(XENHSA_CMD_HELLO, 1, hello(0)));
    raw("hello-base", slot(XENHSA_CMD_HELLO, 2, hello(kBase)));
    raw("hello-below-floor", slot(XENHSA_CMD_HELLO, 2, hello(0x1000)));
    raw("query", slot(XENHSA_CMD_QUERY, 3, query));
    raw("map", slot(XENHSA_CMD_MAP, 4, map));
    raw("map-indirect", slot(XENHSA_CMD_MAP, 5, indirect));
    raw("lend", slot(XENHSA_CMD_LEND, 6, lend));
    raw("pin", slot(XENHSA_CMD_PIN, 7, pin));
    raw("map-to-gpu", slot(XENHSA_CMD_MAP_TO_GPU, 8, to_gpu));
    raw("alloc", slot(XENHSA_CMD_ALLOC, 9, alloc));
    raw("queue-create", slot(XENHSA_CMD_QUEUE_CREATE, 10, queue));
    raw("queue-create-sdma", slot(XENHSA_CMD_QUEUE_CREATE, 10, sdma));
    auto overlapping = queue;
    overlapping.rptr_va = kBase + 64;  // the read index inside the ring
    raw("queue-create-rptr-in-ring", slot(XENHSA_CMD_QUEUE_CREATE, 10, overlapping));
    raw("event-create", slot(XENHSA_CMD_EVENT_CREATE, 11, event));
    raw("event-wait", slot(XENHSA_CMD_EVENT_WAIT, 12, wait));
    raw("event-wait-cancel", slot(XENHSA_CMD_EVENT_WAIT_CANCEL, 13, cancel));
    for (uint32_t cmd : {XENHSA_CMD_UNMAP, XENHSA_CMD_UNPIN, XENHSA_CMD_UNMAP_FROM_GPU,
                         XENHSA_CMD_FREE, XENHSA_CMD_QUEUE_DESTROY, XENHSA_CMD_EVENT_DESTROY,
                         XENHSA_CMD_EVENT_SET, XENHSA_CMD_EVENT_RESET}) {
        raw((std::string("handle-") + xenhsa_cmd_name(cmd)).c_str(), slot(cmd, 20 + cmd, handle));
    }
    auto bad_pad = slot(XENHSA_CMD_PIN, 30, pin);
    bad_pad.hdr.pad = 1;
    raw("bad-header-pad", bad_pad);
    auto bad_len = slot(XENHSA_CMD_QUERY, 31, query);
    bad_len.hdr.len = 17;
    raw("bad-length", bad_len);

    // Mode 1: built with xenhsa_encode_req (cmd byte, seqno, length choice, payload).
    out.add("proto", "enc-map",
            SeedBytes().u8(1).u8(XENHSA_CMD_MAP).u32(77).u8(0).pod(map).bytes());
    out.add("proto", "enc-wait-len",
            SeedBytes().u8(1).u8(XENHSA_CMD_EVENT_WAIT).u32(78).u8(1).u8(143).pod(wait).bytes());
    out.add("proto", "enc-unknown",
            SeedBytes().u8(1).u8(0xFF).u32(1000).u32(5).u8(6).u32(300).u32(1).bytes());

    // Mode 2: responses, with the request the frontend sent.
    xenhsa_rsp_slot rsp{};
    xenhsa_hello_rsp hr{1, 16, XENHSA_FEATURES_V1, kBase, 1ull << 30, 1024, 512, 64, 15};
    xenhsa_encode_rsp(&rsp, 1, XENHSA_STATUS_OK, &hr, sizeof hr);
    out.add("proto", "rsp-hello",
            SeedBytes().u8(2).u8(XENHSA_CMD_HELLO).pod(rsp).padded(hello(0), 232).bytes());
    xenhsa_query_rsp qr{};
    qr.total_len = 296;
    qr.chunk_len = 72;
    xenhsa_query_req node{XENHSA_QUERY_NODE, 1, 0, 224};
    xenhsa_encode_rsp(&rsp, 2, XENHSA_STATUS_OK, &qr, sizeof qr);
    out.add("proto", "rsp-query",
            SeedBytes().u8(2).u8(XENHSA_CMD_QUERY).pod(rsp).padded(node, 232).bytes());
    xenhsa_lend_rsp lr{};
    lr.handle = 0x55;
    lr.npages = 52;
    lr.flags = XENHSA_MAP_RW;
    lr.nrefs = 52;
    for (uint32_t i = 0; i < 52; ++i) {
        lr.gref[i] = 100 + i;
    }
    xenhsa_encode_rsp(&rsp, 3, XENHSA_STATUS_OK, &lr, sizeof lr);
    out.add("proto", "rsp-lend",
            SeedBytes().u8(2).u8(XENHSA_CMD_LEND).pod(rsp).padded(lend, 232).bytes());
    xenhsa_queue_create_rsp cr{0x77, 503, 0};
    xenhsa_encode_rsp(&rsp, 4, XENHSA_STATUS_OK, &cr, sizeof cr);
    out.add("proto", "rsp-queue-create",
            SeedBytes().u8(2).u8(XENHSA_CMD_QUEUE_CREATE).pod(rsp).padded(queue, 232).bytes());
    xenhsa_encode_rsp(&rsp, 5, XENHSA_STATUS_BAD_HANDLE, nullptr, 0);
    out.add("proto", "rsp-error",
            SeedBytes().u8(2).u8(XENHSA_CMD_UNMAP).pod(rsp).padded(handle, 232).bytes());

    // Mode 3: ring indices near the wrap and the overflow edge.
    out.add("proto", "ring-wrap",
            SeedBytes()
                .u8(3)
                .u8(0)
                .u32(0xFFFFFFF8u)
                .u32(8)
                .u32(0xFFFFFFFFu)
                .u32(20)
                .u32(0xFFFFFFF0u)
                .bytes());
    out.add("proto", "ring-edge",
            SeedBytes().u8(3).u8(3).u32(100).u32(228).u32(127).u32(300).u32(200).bytes());
}

}  // namespace xenhsa::fuzz
