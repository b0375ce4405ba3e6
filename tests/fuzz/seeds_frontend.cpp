// Seeds of the "frontend" target (input format: frontend_fuzz.cpp, Rig::step).
#include <xenhsa/proto.h>

#include "seeds.hpp"

namespace xenhsa::fuzz {
namespace {

enum Op : uint8_t { kPush = 0, kPublish = 2, kResponse, kRspProd, kPop, kNotify, kPoll };

class Script {
public:
    explicit Script(uint8_t order) { b_.u8(order); }
    template <class Wire>
    Script& push(uint32_t cmd, const Wire& w) {
        b_.u8(kPush).u8(cmd - 1).pod(w);
        return *this;
    }
    Script& op(Op o) {
        b_.u8(o);
        return *this;
    }
    // A response shaped after outstanding request number `which`, with its full payload.
    template <class Wire>
    Script& answer(uint8_t which, uint32_t status, const Wire& w) {
        b_.u8(kResponse).u8(1).u8(which).u8(status).pod(w);
        return *this;
    }
    Script& answer_error(uint8_t which, uint32_t status) {
        b_.u8(kResponse).u8(1).u8(which).u8(status);
        return *this;
    }
    Script& raw_response(const xenhsa_rsp_slot& s) {
        b_.u8(kResponse).u8(0).pod(s);
        return *this;
    }
    Script& rsp_prod_written() {
        b_.u8(kRspProd).u8(0).u8(0);
        return *this;
    }
    Script& rsp_prod_raw(uint32_t v) {
        b_.u8(kRspProd).u8(1).u32(v);
        return *this;
    }
    // `n` well-formed records (REVOKED/GPU_FAULT alternately), then prod = written.
    Script& notify(uint8_t n) {
        b_.u8(kNotify).u8(n);
        for (uint8_t i = 0; i < n; ++i) {
            b_.u8(i).u64(0x100 + i).u64(0x200000000000ull + 4096u * i);
        }
        b_.u8(0);
        return *this;
    }
    Script& notify_raw(const xenhsa_notify& rec, uint32_t prod) {
        b_.u8(kNotify).u8(1).u8(255).pod(rec).u8(1).u32(prod);
        return *this;
    }
    [[nodiscard]] const std::vector<uint8_t>& bytes() const { return b_.bytes(); }

private:
    SeedBytes b_;
};

}  // namespace

void frontend_seeds(SeedSet& out) {
    const auto add = [&](const char* name, const Script& s) {
        out.add("frontend", name, s.bytes());
    };
    constexpr uint64_t kBase = 0x200000000000ull;
    const xenhsa_hello_req hello{1, 1, XENHSA_FEATURES_V1, 0, 1ull << 30};
    add("hello", Script(0)
                     .push(XENHSA_CMD_HELLO, hello)
                     .op(kPublish)
                     .answer(0, XENHSA_STATUS_OK,
                             xenhsa_hello_rsp{1, 16, XENHSA_FEATURES_V1, kBase, 1ull << 30, 1024,
                                              512, 64, 15})
                     .rsp_prod_written()
                     .op(kPop)
                     .push(XENHSA_CMD_HELLO, hello)
                     .op(kPublish)
                     .answer(0, XENHSA_STATUS_BAD_ADDRESS,
                             xenhsa_hello_rsp{0, 0, 0, kBase * 2, 1ull << 30, 0, 0, 0, 0})
                     .rsp_prod_written()
                     .op(kPop));

    xenhsa_query_rsp query{};
    query.total_len = 296;
    query.chunk_len = 72;
    xenhsa_lend_rsp lend{};
    lend.handle = 9;
    lend.npages = 2;
    lend.flags = XENHSA_MAP_RW;
    lend.nrefs = 2;
    lend.gref[0] = 77;
    lend.gref[1] = 78;
    xenhsa_event_wait_req wait{};
    wait.count = 3;
    wait.event[0] = 1;
    wait.event[1] = 2;
    wait.event[2] = 3;
    add("payloads", Script(1)
                        .push(XENHSA_CMD_QUERY, xenhsa_query_req{XENHSA_QUERY_NODE, 1, 0, 224})
                        .push(XENHSA_CMD_LEND, xenhsa_lend_req{kBase, 2, XENHSA_MAP_RW})
                        .push(XENHSA_CMD_QUEUE_CREATE,
                              xenhsa_queue_create_req{1, XENHSA_QUEUE_COMPUTE_AQL, 100, 0, kBase,
                                                      4096, kBase + 4096, kBase + 4104, 0})
                        .push(XENHSA_CMD_EVENT_WAIT, wait)
                        .push(XENHSA_CMD_ALLOC, xenhsa_alloc_req{0, 8192, 1, 0})
                        .op(kPublish)
                        .answer(0, XENHSA_STATUS_OK, query)
                        .answer(1, XENHSA_STATUS_OK, lend)
                        .answer(2, XENHSA_STATUS_OK, xenhsa_queue_create_rsp{5, 503, 0})
                        .answer(3, XENHSA_STATUS_OK, xenhsa_event_wait_rsp{5, 0})
                        .answer(4, XENHSA_STATUS_OK, xenhsa_alloc_rsp{6, kBase + 8192})
                        .rsp_prod_written()
                        .op(kPop));

    xenhsa_rsp_slot garbage{};
    for (uint32_t i = 0; i < sizeof garbage; ++i) {
        reinterpret_cast<uint8_t*>(&garbage)[i] = static_cast<uint8_t>(i * 29 + 3);
    }
    xenhsa_rsp_slot seqno_only{};
    seqno_only.hdr.seqno = 2;
    seqno_only.hdr.len = 9;  // not the length of any response
    add("garbage-responses", Script(0)
                                 .push(XENHSA_CMD_UNMAP, xenhsa_handle_req{1})
                                 .push(XENHSA_CMD_MAP_TO_GPU, xenhsa_map_to_gpu_req{1, 2, 0, 0})
                                 .push(XENHSA_CMD_EVENT_SET, xenhsa_handle_req{2})
                                 .op(kPublish)
                                 .raw_response(garbage)
                                 .raw_response(seqno_only)
                                 .answer_error(2, XENHSA_STATUS_BAD_HANDLE)
                                 .rsp_prod_written()
                                 .op(kPop));

    add("responses-ahead", Script(2)
                               .push(XENHSA_CMD_FREE, xenhsa_handle_req{1})
                               .op(kPublish)
                               .rsp_prod_raw(5)
                               .op(kPop)
                               .push(XENHSA_CMD_FREE, xenhsa_handle_req{1})
                               .op(kPop));

    xenhsa_notify bad{};
    bad.type = 9;
    add("notify",
        Script(3).notify(3).op(kPoll).notify(64).op(kPoll).notify_raw(bad, 68).op(kPoll).op(kPoll));
    add("notify-overrun",
        Script(0).notify(2).notify_raw(xenhsa_notify{1, 0, 1, 2, 3}, 100).op(kPoll));
}

}  // namespace xenhsa::fuzz
