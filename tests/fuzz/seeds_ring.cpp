// Seeds of the "ring" target (input format: ring_fuzz.cpp, Rig::step).
#include <xenhsa/proto.h>

#include "seeds.hpp"

namespace xenhsa::fuzz {
namespace {

// Config bits and operations of ring_fuzz.cpp.
enum Config : uint8_t { kConnect = 4, kWarm = 8, kTight = 16, kNoGpu = 32, kNoLend = 64 };
enum Op : uint8_t {
    kRawSlot = 0,
    kPush,
    kPublish,
    kReqProd,
    kServe,
    kDoorbell,
    kNotifyCons,
    kIndirect,
    kPoll,
    kOperator,
    kScribble,
    kRunFor
};
enum PushFlags : uint8_t { kHandles = 1, kVas = 2, kGrefs = 4, kBadPad = 8 };
// The warm start's handles, in the order Rig::connect makes them.
enum Warm : uint8_t { kWarmMap = 0, kWarmPin, kWarmEvent, kWarmQueue, kWarmAlloc };

constexpr uint64_t kProposal = 0x200000000000ull;  // WindowNegotiation's first proposal

class Script {
public:
    // `budget`: 1..64 requests per pass.
    Script(uint8_t config, uint8_t budget) { b_.u8(config).u8(budget - 1); }

    template <class Wire>
    Script& push(uint32_t cmd, uint16_t seqno, uint8_t flags, const Wire& w) {
        b_.u8(kPush).u8(cmd).u16(seqno).u8(flags).pod(w);
        return *this;
    }
    Script& handle_cmd(uint32_t cmd, uint16_t seqno, uint64_t handle_index) {
        return push(cmd, seqno, kHandles, xenhsa_handle_req{handle_index});
    }
    Script& append(const std::vector<uint8_t>& raw) {
        b_.raw(raw.data(), raw.size());
        return *this;
    }
    Script& op(Op o) {
        b_.u8(o);
        return *this;
    }
    Script& serve() { return op(kPublish).op(kServe); }
    Script& req_prod_near(uint8_t ahead) {
        b_.u8(kReqProd).u8(0).u8(ahead);
        return *this;
    }
    Script& req_prod_raw(uint32_t v) {
        b_.u8(kReqProd).u8(1).u32(v);
        return *this;
    }
    Script& raw_slot(uint8_t index, const xenhsa_req_slot& s) {
        b_.u8(kRawSlot).u8(index).pod(s);
        return *this;
    }
    Script& doorbell(uint16_t index, uint64_t value) {
        b_.u8(kDoorbell).u16(index).u64(value);
        return *this;
    }
    Script& notify_behind(uint8_t behind) {
        b_.u8(kNotifyCons).u8(0).u8(behind);
        return *this;
    }
    Script& notify_raw(uint32_t cons) {
        b_.u8(kNotifyCons).u8(1).u32(cons);
        return *this;
    }
    // Indirect page `page` (0..7 of the indirect pages) listing granted pages first..
    Script& indirect(uint8_t page, uint16_t count, uint8_t first, bool garbage_tail) {
        b_.u8(kIndirect).u8(page).u16(count).u8(garbage_tail ? 1 : 0);
        for (uint16_t i = 0; i < count; ++i) {
            b_.u8(static_cast<uint8_t>((first + i) % 56));
        }
        return *this;
    }
    Script& revoke_all() {
        b_.u8(kOperator).u8(0);
        return *this;
    }
    Script& revoke_handle(uint64_t index) {
        b_.u8(kOperator).u8(1).u64(index);
        return *this;
    }
    Script& quotas(uint8_t map_pages, uint8_t lend_pages) {
        b_.u8(kOperator).u8(2).u8(map_pages).u8(lend_pages);
        return *this;
    }
    Script& gpu_fault(uint64_t offset) {
        b_.u8(kOperator).u8(3).u64(offset);
        return *this;
    }
    Script& scribble(uint8_t word, uint32_t value) {
        b_.u8(kScribble).u8(word).u32(value);
        return *this;
    }
    [[nodiscard]] const std::vector<uint8_t>& bytes() const { return b_.bytes(); }

private:
    SeedBytes b_;
};

xenhsa_hello_req hello(uint64_t base, uint64_t features = XENHSA_FEATURES_V1) {
    return xenhsa_hello_req{1, 1, features, base, 1ull << 30};
}

xenhsa_map_req map(uint64_t offset, uint32_t npages, uint32_t first_page, uint32_t flags) {
    xenhsa_map_req m{};
    m.va = offset;  // moved into the window by kVas
    m.npages = npages;
    m.flags = flags;
    m.nrefs = xenhsa_map_nrefs(npages, flags);
    for (uint32_t i = 0; i < m.nrefs && i < XENHSA_MAP_INLINE_GREFS; ++i) {
        m.gref[i] = first_page + i;  // ref table indices, patched by kGrefs
    }
    return m;
}

xenhsa_event_wait_req wait_for(uint64_t handle_index, uint32_t timeout_ms) {
    xenhsa_event_wait_req w{};
    w.count = 1;
    w.timeout_ms = timeout_ms;
    w.event[0] = handle_index;
    return w;
}

}  // namespace

void ring_seeds(SeedSet& out) {
    const auto add = [&](const char* name, const Script& s) { out.add("ring", name, s.bytes()); };

    add("handshake",
        Script(0, 64)
            .push(XENHSA_CMD_QUERY, 1, 0, xenhsa_query_req{1, 0, 0, 0})
            .push(XENHSA_CMD_HELLO, 2, 0, hello(0))
            .serve()
            .push(XENHSA_CMD_HELLO, 3, 0, hello(kProposal))
            .serve()
            .push(XENHSA_CMD_QUERY, 4, 0, xenhsa_query_req{XENHSA_QUERY_NODE, 1, 0, 0})
            .push(XENHSA_CMD_QUERY, 5, 0, xenhsa_query_req{XENHSA_QUERY_NODE, 1, 0, 224})
            .push(XENHSA_CMD_HELLO, 6, 0, hello(kProposal))
            .serve());

    add("map-unmap", Script(kConnect, 64)
                         .push(XENHSA_CMD_MAP, 1, kVas | kGrefs, map(0x10000, 4, 0, XENHSA_MAP_RW))
                         .push(XENHSA_CMD_MAP, 2, kVas | kGrefs, map(0x12000, 4, 4, XENHSA_MAP_RW))
                         .push(XENHSA_CMD_MAP, 3, kVas | kGrefs, map(0x20000, 2, 64, XENHSA_MAP_RW))
                         .push(XENHSA_CMD_MAP, 4, kVas | kGrefs, map(0x30000, 2, 64, 0))
                         .serve()
                         .handle_cmd(XENHSA_CMD_UNMAP, 5, 0)
                         .handle_cmd(XENHSA_CMD_UNMAP, 6, 0)
                         .serve());

    add("map-indirect", Script(kConnect | 1, 64)
                            .indirect(0, 1024, 0, false)
                            .indirect(1, 100, 10, false)
                            .push(XENHSA_CMD_MAP, 1, kVas | kGrefs,
                                  map(0x100000, 1124, 56, XENHSA_MAP_RW | XENHSA_MAP_INDIRECT))
                            .serve()
                            .indirect(2, 3, 0, true)
                            .push(XENHSA_CMD_MAP, 2, kVas | kGrefs,
                                  map(0x800000, 3, 58, XENHSA_MAP_RW | XENHSA_MAP_INDIRECT))
                            .serve()
                            .revoke_handle(0)
                            .serve());

    const xenhsa_pin_req pin{0x40000, 2 * 4096, 0, 0};
    add("gpu-objects",
        Script(kConnect | kWarm, 64)
            .doorbell(0, 5)
            .doorbell(1, 7)
            .handle_cmd(XENHSA_CMD_EVENT_SET, 1, kWarmEvent)
            .push(XENHSA_CMD_EVENT_WAIT, 2, kHandles, wait_for(kWarmEvent, 0))
            .push(XENHSA_CMD_EVENT_WAIT, 3, kHandles, wait_for(kWarmEvent, XENHSA_WAIT_INFINITE))
            .serve()
            .op(kRunFor)
            .op(kPoll)
            .push(XENHSA_CMD_EVENT_WAIT_CANCEL, 4, 0, xenhsa_event_wait_cancel_req{3, 0})
            .push(XENHSA_CMD_MAP, 5, kVas | kGrefs, map(0x40000, 2, 20, XENHSA_MAP_RW))
            .push(XENHSA_CMD_PIN, 6, kVas, pin)
            .push(XENHSA_CMD_ALLOC, 7, kVas, xenhsa_alloc_req{0x60000, 8192, 1, 0})
            .serve()
            .gpu_fault(0x100)
            .op(kPoll)
            .notify_behind(0)
            .handle_cmd(XENHSA_CMD_UNMAP_FROM_GPU, 8, kWarmPin)
            .handle_cmd(XENHSA_CMD_UNPIN, 9, kWarmPin)
            .handle_cmd(XENHSA_CMD_UNMAP, 10, kWarmMap)
            .handle_cmd(XENHSA_CMD_QUEUE_DESTROY, 11, kWarmQueue)
            .handle_cmd(XENHSA_CMD_FREE, 12, kWarmAlloc)
            .handle_cmd(XENHSA_CMD_EVENT_RESET, 13, kWarmEvent)
            .handle_cmd(XENHSA_CMD_EVENT_DESTROY, 14, kWarmEvent)
            .serve()
            .op(kPoll));

    add("queue-lifecycle",
        Script(kConnect | kWarm, 64)
            .push(XENHSA_CMD_QUEUE_CREATE, 1, kVas | kHandles,
                  xenhsa_queue_create_req{1, XENHSA_QUEUE_COMPUTE_AQL, 50, 1, 0x4000, 4096,
                                          0x5000 + 16, 0x5000 + 24, kWarmEvent})
            .handle_cmd(XENHSA_CMD_UNPIN, 2, kWarmPin)
            .handle_cmd(XENHSA_CMD_UNMAP, 3, kWarmMap)
            .serve()
            .doorbell(1, 64)
            .gpu_fault(0x2000)
            .op(kPoll)
            .revoke_all()
            .op(kPoll)
            .notify_raw(0xFFFFFF00u)
            .notify_behind(2)
            .serve());

    add("lend-revoke",
        Script(kConnect, 64)
            .push(XENHSA_CMD_LEND, 1, kVas, xenhsa_lend_req{0x200000, 8, XENHSA_MAP_RW})
            .push(XENHSA_CMD_LEND, 2, kVas, xenhsa_lend_req{0x300000, 60, 0})
            .serve()
            .revoke_all()
            .notify_behind(0)
            .push(XENHSA_CMD_MAP, 3, kVas | kGrefs, map(0x200000, 1, 0, XENHSA_MAP_RW))
            .handle_cmd(XENHSA_CMD_UNMAP, 4, 0)
            .serve()
            .quotas(1, 1));

    add("producer-overflow",
        Script(0, 64).req_prod_near(16).op(kServe).req_prod_near(17).op(kServe).op(kServe));

    add("producer-backwards", Script(kConnect, 64)
                                  .push(XENHSA_CMD_QUERY, 1, 0, xenhsa_query_req{1, 0, 0, 0})
                                  .serve()
                                  .req_prod_raw(0xFFFFFFF0u)
                                  .op(kServe));

    // With an answer owed (a pending wait), the producer index steps back behind the
    // consumer: still within `slots` of the responses, so only a check against the
    // consumer notices it.
    add("producer-behind-pending-wait",
        Script(kConnect | kWarm, 64)
            .push(XENHSA_CMD_EVENT_WAIT, 1, kHandles, wait_for(kWarmEvent, XENHSA_WAIT_INFINITE))
            .serve()
            .req_prod_near(0)
            .op(kServe)
            .op(kServe));

    xenhsa_req_slot garbage{};
    for (uint32_t i = 0; i < sizeof garbage; ++i) {
        reinterpret_cast<uint8_t*>(&garbage)[i] = static_cast<uint8_t>(i * 37 + 11);
    }
    xenhsa_req_slot half{};
    half.hdr.cmd = XENHSA_CMD_MAP;
    half.hdr.len = 232;
    half.hdr.seqno = 9;
    add("garbage-slots", Script(kConnect | 1, 64)
                             .raw_slot(2, garbage)
                             .raw_slot(3, half)
                             .raw_slot(4, garbage)
                             .req_prod_near(5)
                             .op(kServe)
                             .scribble(16, 0xFFFFFFFFu)
                             .scribble(17, 0)
                             .scribble(18, 0)
                             .req_prod_near(7)
                             .op(kServe));

    Script blocked(kConnect | kWarm | kTight, 2);
    for (uint16_t i = 0; i < 5; ++i) {
        blocked.push(XENHSA_CMD_EVENT_WAIT, static_cast<uint16_t>(100 + i), kHandles,
                     wait_for(kWarmEvent, XENHSA_WAIT_INFINITE));
    }
    blocked.push(XENHSA_CMD_EVENT_WAIT, 100, kHandles, wait_for(kWarmEvent, 1))
        .push(XENHSA_CMD_MAP, 7, kVas | kGrefs, map(0x80000, 60, 0, XENHSA_MAP_RW))
        .serve()
        .op(kServe)
        .op(kServe)
        .handle_cmd(XENHSA_CMD_EVENT_SET, 8, kWarmEvent)
        .serve()
        .op(kRunFor)
        .op(kPoll)
        .revoke_all()
        .op(kRunFor)
        .op(kPoll)
        .op(kServe);
    add("waits-and-quotas", blocked);

    add("no-seams",
        Script(kConnect | kNoGpu | kNoLend, 64)
            .push(XENHSA_CMD_LEND, 1, kVas, xenhsa_lend_req{0x1000, 1, 0})
            .push(XENHSA_CMD_PIN, 2, kVas, pin)
            .push(XENHSA_CMD_EVENT_WAIT_CANCEL, 3, 0, xenhsa_event_wait_cancel_req{})
            .push(XENHSA_CMD_MAP, 4, kVas | kGrefs, map(0x2000, 3000, 0, XENHSA_MAP_INDIRECT))
            .serve()
            .doorbell(3, 1));

    Script many(kConnect | 3, 16);
    for (uint16_t i = 0; i < 40; ++i) {
        many.push(XENHSA_CMD_QUERY, i, 0,
                  xenhsa_query_req{static_cast<uint32_t>(1 + i % 8), i % 3u, 0, 0});
        if (i % 13 == 12) {
            many.serve().op(kServe);
        }
    }
    many.serve().op(kServe).op(kServe);
    add("order3-many", many);

    add("bad-requests",
        Script(kConnect, 64)
            .push(XENHSA_CMD_PIN, 1, kBadPad, pin)
            .append(SeedBytes()  // an unknown command with 7 bytes
                        .u8(kPush)
                        .u8(0xFF)
                        .u32(1000)
                        .u16(2)
                        .u8(0)
                        .u8(7)
                        .u32(1)
                        .u16(2)
                        .u8(3)
                        .bytes())
            .push(XENHSA_CMD_HELLO, 3, 0, hello(kProposal))
            .push(XENHSA_CMD_EVENT_WAIT, 4, 0, xenhsa_event_wait_req{})
            .push(XENHSA_CMD_MAP_TO_GPU, 5, kHandles, xenhsa_map_to_gpu_req{0, 0, 0, 0})
            .serve());
}

}  // namespace xenhsa::fuzz
