// Shared setup for the GpuContext tests: a strict fake device, a context over it, and
// helpers that build the usual objects (pinned and GPU-mapped memory, a queue in it).
#ifndef XENHSA_TESTS_HSA_GPU_CONTEXT_FIXTURE_HPP
#define XENHSA_TESTS_HSA_GPU_CONTEXT_FIXTURE_HPP

#include <gtest/gtest.h>
#include <xenhsa/proto/doorbell.h>
#include <xenhsa/proto/memory.h>
#include <xenhsa/proto/queue.h>

#include <cerrno>
#include <memory>
#include <utility>
#include <vector>
#include <xenhsa/hsa/gpu_context.hpp>

#include "strict_fake_device.hpp"

namespace xenhsa::hsa::test {

inline constexpr uint64_t kPage = XENHSA_PAGE_SIZE;
inline constexpr uint32_t kGpuNode = 1;
inline constexpr uint64_t kGpuMask = 1u << kGpuNode;

inline std::error_code edquot() { return {EDQUOT, std::generic_category()}; }
inline std::error_code ebadf() { return errc(std::errc::bad_file_descriptor); }
inline std::error_code ebusy() { return errc(std::errc::device_or_resource_busy); }
inline std::error_code efault() { return errc(std::errc::bad_address); }
inline std::error_code einval() { return errc(std::errc::invalid_argument); }

// Guest VAs, far apart so that no two helpers' ranges touch.
inline Va area(uint32_t n) { return 0x100000000ull + uint64_t{n} * 0x1000000ull; }

inline xenhsa_queue_create_req queue_req(Va ring, Va pointers, Handle error_event = 0,
                                         uint64_t ring_size = kPage) {
    xenhsa_queue_create_req req{};
    req.node = kGpuNode;
    req.type = XENHSA_QUEUE_COMPUTE_AQL;
    req.percentage = 100;
    req.priority = 0;
    req.ring_va = ring;
    req.ring_size = ring_size;
    req.rptr_va = pointers;
    req.wptr_va = pointers + 8;
    req.error_event = error_event;
    return req;
}

// Where the context hands back ALLOC ranges whose device memory went (the window, in the
// backend). Room is reserved: the revoke paths must not allocate.
struct FreedLog final : FreedAllocs {
    FreedLog() { ranges.reserve(64); }
    void alloc_freed(Va va, uint64_t size) noexcept override {
        if (ranges.size() < ranges.capacity()) {
            ranges.emplace_back(va, size);
        }
    }
    std::vector<std::pair<Va, uint64_t>> ranges;
};

class ContextTest : public ::testing::Test {
protected:
    void SetUp() override { make_context(GpuLimits{}); }

    void TearDown() override {
        context.reset();
        EXPECT_EQ(device.violations(), std::vector<std::string>{})
            << "the context broke a rule of the device";
    }

    void make_context(GpuLimits limits) {
        context.reset();
        context = std::make_unique<GpuContext>(device, limits);
    }

    Handle pin(Va va, uint64_t size = kPage, uint32_t flags = 0) {
        auto r = context->pin(va, size, flags);
        EXPECT_TRUE(r) << r.error().message();
        return r ? r.value() : 0;
    }
    Handle alloc(Va va, uint64_t size = kPage, uint32_t flags = 0) {
        auto r = context->alloc(va, size, kGpuNode, flags);
        EXPECT_TRUE(r) << r.error().message();
        return r ? r.value() : 0;
    }
    void map(Handle memory, uint64_t mask = kGpuMask) {
        auto r = context->map_to_gpu(memory, mask, 0);
        EXPECT_TRUE(r) << r.error().message();
    }
    Handle pin_mapped(Va va, uint64_t size = kPage) {
        const Handle h = pin(va, size);
        map(h);
        return h;
    }
    Handle event(uint32_t flags = 0) {
        xenhsa_event_create_req req{};
        req.type = XENHSA_EVENT_SIGNAL;
        req.flags = flags;
        auto r = context->create_event(req);
        EXPECT_TRUE(r) << r.error().message();
        return r ? r.value().handle : 0;
    }
    GpuContext::QueueCreated queue(Va ring, Va pointers, Handle error_event = 0) {
        auto r = context->create_queue(queue_req(ring, pointers, error_event));
        EXPECT_TRUE(r) << r.error().message();
        return r ? r.value() : GpuContext::QueueCreated{};
    }

    StrictFakeDevice device;
    FreedLog freed;
    std::unique_ptr<GpuContext> context;
};

}  // namespace xenhsa::hsa::test

#endif
