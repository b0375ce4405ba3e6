// An AQL queue of a GuestDomain driving the built-in fill kernel (64 bytes per dispatch),
// as the in-process path does: the guest writes the packets into its ring in guest memory
// and stores the write index in its doorbell slot, kicking the event channel only when the
// agent asks for it, as a guest's ROCr would; the worker's agent runs them.
#ifndef XENHSA_BENCH_FILL_QUEUE_HPP
#define XENHSA_BENCH_FILL_QUEUE_HPP

#include <cstdint>
#include <xenhsa/frontend/aql_queue.hpp>

#include "guest_domain.hpp"

namespace xenhsa::bench {

class FillQueue {
public:
    // GPU memory for data, kernel arguments and the completion signal, then the queue.
    // Throws std::runtime_error on any failure.
    explicit FillQueue(GuestDomain& guest);
    FillQueue(const FillQueue&) = delete;
    FillQueue& operator=(const FillQueue&) = delete;
    ~FillQueue();

    // One dispatch, then waits for its completion signal.
    void dispatch_and_wait();
    // `count` dispatches on one counted completion signal, published with one doorbell
    // write, then waits (the guest library's signal wait) until all completed.
    void dispatch_batch_and_wait(uint32_t count);

private:
    frontend::Client& client_;
    frontend::aql::GpuMemory memory_;
    frontend::aql::AqlQueue queue_;
    amd_signal_t* done_ = nullptr;
    frontend::aql::DispatchSpec fill_;
};

}  // namespace xenhsa::bench

#endif
