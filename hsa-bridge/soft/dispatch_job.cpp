#include "dispatch_job.hpp"

#include <algorithm>
#include <cstring>

#include "aql_queue.hpp"

namespace xenhsa::hsa::soft {

namespace {

// Big enough that taking a chunk costs little beside running it, small enough that every
// worker gets several.
uint64_t chunk_for(const DispatchShape& shape) noexcept {
    const uint64_t group_items =
        uint64_t{shape.workgroup[0]} * shape.workgroup[1] * shape.workgroup[2];
    const uint64_t by_items = std::max<uint64_t>(DispatchJob::kChunkItems / group_items, 1);
    const uint64_t spread = std::max<uint64_t>(shape.total_groups / 8, 1);
    return std::min({by_items, DispatchJob::kChunkGroups, spread});
}

}  // namespace

DispatchJob::DispatchJob(AqlQueue& queue, const BuiltinKernel& kernel, const DispatchShape& shape,
                         std::span<const std::byte> kernarg, uint64_t completion_signal,
                         uint8_t release_scope, uint64_t start_ts) noexcept
    : queue_(queue),
      kernel_(kernel),
      shape_(shape),
      completion_signal_(completion_signal),
      chunk_(chunk_for(shape)),
      release_scope_(release_scope),
      start_ts_(start_ts) {
    std::memcpy(kernarg_.data(), kernarg.data(), std::min(kernarg.size(), kernarg_.size()));
}

bool DispatchJob::run(const PoolTurn& turn) noexcept {
    const uint64_t total = shape_.total_groups;
    const std::span<const std::byte> kernarg(kernarg_.data(), kernel_.kernarg_size);
    for (;;) {
        const uint64_t first = next_.fetch_add(chunk_, std::memory_order_relaxed);
        if (first >= total) {
            return false;  // all taken; the queue may already be gone
        }
        const uint64_t last = std::min(first + chunk_, total);
        uint64_t finished = last - first;
        // Until this chunk is counted in done_ the dispatch cannot end: the queue is alive.
        if (queue_.halted()) {
            // Take every workgroup not yet started in one step: a halt ends the dispatch
            // in the time of the chunks running, not of the 2^32 workgroups it may have left.
            const uint64_t rest = next_.exchange(total, std::memory_order_relaxed);
            if (rest < total) {
                finished += total - rest;
            }
        } else if (auto fault = run_workgroups(kernel_, shape_, kernarg, queue_.address_space(),
                                               first, last)) {
            queue_.fail(fault);
        }
        // acq_rel: the last worker sees every other worker's stores before it releases
        // them through the completion signal.
        if (done_.fetch_add(finished, std::memory_order_acq_rel) + finished == total) {
            queue_.dispatch_done(*this);
            return false;
        }
        if (turn.over()) {
            return true;  // the rest after the tasks that wait
        }
    }
}

}  // namespace xenhsa::hsa::soft
