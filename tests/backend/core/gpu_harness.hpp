// A connected guest with a MAP, a PIN over it MAPped to the GPU, and helpers for queues.
#ifndef XENHSA_TESTS_BACKEND_CORE_GPU_HARNESS_HPP
#define XENHSA_TESTS_BACKEND_CORE_GPU_HARNESS_HPP

#include "requests_harness.hpp"

namespace xenhsa::backend::core::testing {

inline constexpr uint32_t kGpuNode = 1;
inline constexpr uint64_t kGpuMask = 1u << kGpuNode;

class GpuHarness : public RequestsHarness {
public:
    explicit GpuHarness(const HarnessOptions& o = {}) : RequestsHarness(o) {
        base = connect(o.features);
    }

    hsa::Handle pin_ok(uint64_t va, uint64_t size, uint32_t flags = 0) {
        xenhsa_pin_req p{};
        p.va = va;
        p.size = size;
        p.flags = flags;
        auto r = send(XENHSA_CMD_PIN, p);
        EXPECT_TRUE(r && r->status == XENHSA_STATUS_OK)
            << (r ? xenhsa_status_name(r->status) : "none");
        return r ? payload_of<xenhsa_handle_rsp>(*r).handle : 0;
    }
    uint32_t map_to_gpu(hsa::Handle h, uint64_t mask = kGpuMask) {
        xenhsa_map_to_gpu_req g{};
        g.handle = h;
        g.node_mask = mask;
        return status(XENHSA_CMD_MAP_TO_GPU, g);
    }
    xenhsa_queue_create_req queue_req(uint64_t ring, uint64_t pointers) const {
        xenhsa_queue_create_req q{};
        q.node = kGpuNode;
        q.type = XENHSA_QUEUE_COMPUTE_AQL;
        q.percentage = 100;
        q.ring_va = ring;
        q.ring_size = 4096;
        q.rptr_va = pointers;
        q.wptr_va = pointers + 8;
        return q;
    }
    hsa::Handle queue_ok(uint64_t ring, uint64_t pointers) {
        auto r = send(XENHSA_CMD_QUEUE_CREATE, queue_req(ring, pointers));
        EXPECT_TRUE(r && r->status == XENHSA_STATUS_OK)
            << (r ? xenhsa_status_name(r->status) : "none");
        if (!r || r->status != XENHSA_STATUS_OK) {
            return 0;
        }
        const auto rsp = payload_of<xenhsa_queue_create_rsp>(*r);
        EXPECT_EQ(xenhsa_check_queue_create_rsp(&rsp), XENHSA_STATUS_OK);
        doorbell = rsp.doorbell_index;
        return rsp.handle;
    }
    hsa::Handle event_ok(uint32_t flags = 0) {
        xenhsa_event_create_req e{};
        e.node = kGpuNode;
        e.flags = flags;
        auto r = send(XENHSA_CMD_EVENT_CREATE, e);
        EXPECT_TRUE(r && r->status == XENHSA_STATUS_OK);
        return r ? payload_of<xenhsa_event_create_rsp>(*r).handle : 0;
    }

    // MAP of 4 pages at base, a PIN over it on the GPU, a queue whose ring is page 0 and
    // pointers page 1.
    struct Setup {
        hsa::Handle map = 0;
        hsa::Handle pin = 0;
        hsa::Handle queue = 0;
    };
    Setup map_pin_queue(uint64_t at) {
        Setup s;
        s.map = map_ok(at, 4, 0);
        s.pin = pin_ok(at, 4 * 4096);
        EXPECT_EQ(map_to_gpu(s.pin), XENHSA_STATUS_OK);
        s.queue = queue_ok(at, at + 4096);
        return s;
    }

    uint64_t base = 0;
    uint32_t doorbell = 0;
};

}  // namespace xenhsa::backend::core::testing

#endif
