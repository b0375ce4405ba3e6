// The hand-off from GpuContext threads (device faults, EVENT_WAIT completions) to the
// guest's io_context. Callbacks post to the loop only while it is open; GuestRequests
// closes it (under the lock) before it goes, so no callback touches a dead guest or posts
// to a dead loop.
#ifndef XENHSA_BACKEND_CORE_GPU_HANDOFF_HPP
#define XENHSA_BACKEND_CORE_GPU_HANDOFF_HPP

#include <mutex>
#include <vector>
#include <xenhsa/hsa/gpu_context.hpp>

namespace xenhsa::backend::core {

struct GpuHandoff {
    std::mutex lock;
    bool open = true;
    // Queues GpuContext reported lost (fault, revoke, teardown), allocated once: a revoke
    // on the loop thread pushes here without allocating.
    struct Lost {
        hsa::Handle queue = 0;
        hsa::Va address = 0;
        bool hang = false;
    };
    std::vector<Lost> lost;
    std::vector<Lost> draining;

    void close() noexcept {
        std::lock_guard<std::mutex> hold(lock);
        open = false;
    }
    [[nodiscard]] bool is_open() noexcept {
        std::lock_guard<std::mutex> hold(lock);
        return open;
    }
};

}  // namespace xenhsa::backend::core

#endif
