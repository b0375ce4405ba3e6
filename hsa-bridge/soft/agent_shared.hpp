// What an agent's queues share: its address space, events, signal hub, workers and SDMA
// engines, and where a queue that stopped on an error reports.
#ifndef XENHSA_HSA_SOFT_AGENT_SHARED_HPP
#define XENHSA_HSA_SOFT_AGENT_SHARED_HPP

#include <atomic>
#include <cstdint>
#include <optional>
#include <thread>
#include <xenhsa/hsa/kfd_device.hpp>

#include "address_space.hpp"
#include "events.hpp"
#include "idle_wait.hpp"
#include "kick_tracker.hpp"
#include "sdma_engines.hpp"
#include "signals.hpp"
#include "worker_pool.hpp"

namespace xenhsa::hsa::soft {

class QueueErrorSink {
public:
    // A queue stopped on an error: a GPU page fault at `fault`, or (nullopt) an invalid
    // packet or a device failure; `hang`: one nothing else reports (GpuFault::hang).
    // Called once per queue, on the queue's thread.
    virtual void queue_failed(QueueId queue, EventId error_event, std::optional<Va> fault,
                              bool hang) noexcept = 0;
    // A queue destroyed from its own thread (by the fault handler) hands that thread
    // over: it still returns through queue_failed, so the agent joins it before it goes.
    virtual void adopt_thread(std::thread thread) noexcept = 0;

protected:
    ~QueueErrorSink() = default;
};

struct AgentShared {
    AddressSpace& memory;
    EventTable& events;
    SignalHub& signals;
    WorkerPool& pool;
    QueueErrorSink& errors;
    KickTracker& kicks;
    SdmaEngines& sdma;
    // Packets the queues took off their rings so far (KfdDevice::packets_taken).
    std::atomic<uint64_t>& packets_taken;
    uint32_t max_inflight = 4;
    IdlePolicy idle;
    uint64_t inline_max_groups = 0;  // dispatches this small run on the queue's thread
};

}  // namespace xenhsa::hsa::soft

#endif
