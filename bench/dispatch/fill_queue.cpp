#include "fill_queue.hpp"

#include <xenhsa/hsa/builtin_kernels.h>

namespace xenhsa::bench {

namespace {

constexpr uint32_t kWords = 16;          // 64 bytes, as the in-process path
constexpr uint32_t kRingPackets = 1024;  // as the in-process path
constexpr std::size_t kArenaPages = 2;   // data, kernel arguments and signals

}  // namespace

FillQueue::FillQueue(GuestDomain& guest) : client_(guest.client()) {
    if (!client_.granted(XENHSA_FEATURE_GPU)) {
        throw std::runtime_error("the backend did not grant the GPU feature");
    }
    const auto node = take(frontend::aql::find_gpu_node(client_), "find GPU node");
    if (!node) {
        throw std::runtime_error("the backend reports no GPU node");
    }
    const auto kernel = take(client_.find_kernel(XENHSA_KERNEL_NAME_FILL), "find fill kernel");
    if (!kernel) {
        throw std::runtime_error("no built-in fill kernel");
    }
    memory_ = take(frontend::aql::GpuMemory::create(client_, kArenaPages, *node), "GPU memory");
    frontend::aql::QueueOptions q;
    q.node = *node;
    q.packets = kRingPackets;
    queue_ = take(frontend::aql::AqlQueue::create(client_, q), "queue create");

    auto* data = take(memory_.carve(kWords * sizeof(uint32_t)), "carve data");
    auto* kernarg = take(memory_.carve_array<xenhsa_kernarg_fill>(1), "carve kernarg");
    done_ = take(memory_.carve_array<amd_signal_t>(1), "carve signal");
    *kernarg = xenhsa_kernarg_fill{reinterpret_cast<uintptr_t>(data), kWords, 0x600d, 0};
    frontend::aql::signal_init(*done_, 0);

    fill_.kernel_object = kernel->kernel_object;
    fill_.kernarg_address = reinterpret_cast<uintptr_t>(kernarg);
    fill_.completion_signal = frontend::aql::signal_handle(*done_);
    fill_.grid[0] = kWords;
    fill_.workgroup[0] = kWords;
    fill_.private_segment_size = kernel->private_segment_size;
    fill_.group_segment_size = kernel->group_segment_size;
}

FillQueue::~FillQueue() {
    // The queue before the memory it reads.
    (void)queue_.destroy();
    (void)memory_.release(client_);
}

void FillQueue::dispatch_and_wait() {
    frontend::aql::signal_store(*done_, 1);
    (void)take(queue_.dispatch(fill_, kGuestTimeout), "dispatch");
    (void)take(frontend::aql::signal_wait(*done_, HSA_SIGNAL_CONDITION_EQ, 0, kGuestTimeout),
               "wait for the dispatch");
}

void FillQueue::dispatch_batch_and_wait(uint32_t count) {
    frontend::aql::signal_store(*done_, count);
    // As the in-process path: every packet written, then one write-index publication and
    // one doorbell for the batch.
    uint64_t last = 0;
    for (uint32_t i = 0; i < count; ++i) {
        last = take(queue_.reserve(kGuestTimeout), "reserve");
        frontend::aql::write_dispatch(queue_.slot(last), fill_);
    }
    ensure(queue_.submit(last), "submit");
    (void)take(frontend::aql::signal_wait(*done_, HSA_SIGNAL_CONDITION_EQ, 0, kGuestTimeout),
               "wait for the batch");
}

}  // namespace xenhsa::bench
