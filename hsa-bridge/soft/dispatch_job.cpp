#include "dispatch_job.hpp"

#include "aql_queue.hpp"

#include <algorithm>
#include <cstring>

namespace xenhsa::hsa::soft {

DispatchJob::DispatchJob(AqlQueue &queue, const BuiltinKernel &kernel, const DispatchShape &shape,
                         std::span<const std::byte> kernarg, uint64_t completion_signal,
                         uint8_t release_scope) noexcept
    : queue_(queue),
      kernel_(kernel),
      shape_(shape),
      completion_signal_(completion_signal),
      release_scope_(release_scope)
{
    std::memcpy(kernarg_.data(), kernarg.data(), std::min(kernarg.size(), kernarg_.size()));
}

void DispatchJob::run() noexcept
{
    const uint64_t total = shape_.total_groups;
    for (;;) {
        uint64_t finished = 1;
        if (queue_.halted()) {
            // Take every workgroup not yet started in one step: a halt ends the dispatch
            // in the time of the workgroups running, not of the 2^32 it may have left.
            const uint64_t first = next_.exchange(total, std::memory_order_relaxed);
            if (first >= total) {
                return; // all taken; the queue may already be gone
            }
            finished = total - first;
        } else {
            const uint64_t index = next_.fetch_add(1, std::memory_order_relaxed);
            if (index >= total) {
                return; // all taken; the queue may already be gone
            }
            if (auto fault = run_workgroup(index)) {
                queue_.fail(fault);
            }
        }
        // acq_rel: the last worker sees every other worker's stores before it releases
        // them through the completion signal.
        if (done_.fetch_add(finished, std::memory_order_acq_rel) + finished == total) {
            queue_.dispatch_done(*this);
            return;
        }
    }
}

std::optional<Va> DispatchJob::run_workgroup(uint64_t index) noexcept
{
    const auto &grid = shape_.grid;
    const auto &size = shape_.workgroup;
    const uint64_t gx = index % shape_.groups[0];
    const uint64_t gy = index / shape_.groups[0] % shape_.groups[1];
    const uint64_t gz = index / (shape_.groups[0] * shape_.groups[1]);
    const uint64_t x0 = gx * size[0];
    const uint64_t x1 = std::min<uint64_t>(x0 + size[0], grid[0]);
    const uint64_t y0 = gy * size[1];
    const uint64_t y1 = std::min<uint64_t>(y0 + size[1], grid[1]);
    const uint64_t z0 = gz * size[2];
    const uint64_t z1 = std::min<uint64_t>(z0 + size[2], grid[2]);

    GpuMemory memory(queue_.address_space()); // held shared for the whole workgroup
    const std::span<const std::byte> kernarg(kernarg_.data(), kernel_.kernarg_size);
    for (uint64_t z = z0; z < z1; ++z) {
        for (uint64_t y = y0; y < y1; ++y) {
            const uint64_t row = (z * grid[1] + y) * grid[0];
            kernel_.run(kernarg, row + x0, row + x1, memory);
            if (auto fault = memory.fault()) {
                return fault;
            }
        }
    }
    return std::nullopt;
}

}  // namespace xenhsa::hsa::soft
