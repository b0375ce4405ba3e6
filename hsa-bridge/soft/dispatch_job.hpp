// One big kernel dispatch in flight on the worker pool: its packet, decoded and checked, a
// private copy of its kernargs, and the workgroups the pool's workers take from it, a
// chunk at a time (at most kChunkGroups workgroups and kChunkItems work-items: the
// longest a stop or a revoke waits for one worker, and the finest a turn ends at: see
// worker_pool.hpp). Small dispatches do not come here:
// the queue runs them inline (aql_queue.hpp).
#ifndef XENHSA_HSA_SOFT_DISPATCH_JOB_HPP
#define XENHSA_HSA_SOFT_DISPATCH_JOB_HPP

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "kernels.hpp"
#include "worker_pool.hpp"
#include "workgroups.hpp"

namespace xenhsa::hsa::soft {

class AqlQueue;

class DispatchJob final : public PoolTask {
public:
    static constexpr uint64_t kChunkGroups = 64;
    static constexpr uint64_t kChunkItems = 64 * 1024;

    DispatchJob(AqlQueue& queue, const BuiltinKernel& kernel, const DispatchShape& shape,
                std::span<const std::byte> kernarg, uint64_t completion_signal,
                uint8_t release_scope, uint64_t start_ts = 0) noexcept;

    bool run(const PoolTurn& turn) noexcept override;

    [[nodiscard]] uint64_t completion_signal() const noexcept { return completion_signal_; }
    [[nodiscard]] uint8_t release_scope() const noexcept { return release_scope_; }
    // When the packet started, on the agent's clock; 0 when its queue does not profile.
    [[nodiscard]] uint64_t start_ts() const noexcept { return start_ts_; }

private:
    AqlQueue& queue_;  // outlives the job's last workgroup (it waits for in-flight jobs)
    const BuiltinKernel& kernel_;
    DispatchShape shape_;
    std::array<std::byte, kMaxKernargSize> kernarg_{};
    uint64_t completion_signal_;
    uint64_t chunk_;  // workgroups a worker takes at once
    uint8_t release_scope_;
    uint64_t start_ts_;
    std::atomic<uint64_t> next_{0};
    std::atomic<uint64_t> done_{0};
};

}  // namespace xenhsa::hsa::soft

#endif
