// One kernel dispatch in flight: its packet, decoded and checked, a private copy of its
// kernargs, and the workgroups the pool's workers take from it.
#ifndef XENHSA_HSA_SOFT_DISPATCH_JOB_HPP
#define XENHSA_HSA_SOFT_DISPATCH_JOB_HPP

#include "kernels.hpp"
#include "worker_pool.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace xenhsa::hsa::soft {

class AqlQueue;

struct DispatchShape {
    std::array<uint32_t, 3> grid{};      // work-items per dimension, >= 1
    std::array<uint32_t, 3> workgroup{}; // work-items per workgroup per dimension, >= 1
    std::array<uint64_t, 3> groups{};    // workgroups per dimension
    uint64_t total_groups = 0;
};

class DispatchJob final : public PoolTask {
public:
    DispatchJob(AqlQueue &queue, const BuiltinKernel &kernel, const DispatchShape &shape,
                std::span<const std::byte> kernarg, uint64_t completion_signal,
                uint8_t release_scope) noexcept;

    void run() noexcept override;

    [[nodiscard]] uint64_t completion_signal() const noexcept { return completion_signal_; }
    [[nodiscard]] uint8_t release_scope() const noexcept { return release_scope_; }

private:
    std::optional<Va> run_workgroup(uint64_t index) noexcept;

    AqlQueue &queue_; // outlives the job's last workgroup (it waits for in-flight jobs)
    const BuiltinKernel &kernel_;
    DispatchShape shape_;
    std::array<std::byte, kMaxKernargSize> kernarg_{};
    uint64_t completion_signal_;
    uint8_t release_scope_;
    std::atomic<uint64_t> next_{0};
    std::atomic<uint64_t> done_{0};
};

}  // namespace xenhsa::hsa::soft

#endif
