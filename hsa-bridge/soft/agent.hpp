// SoftAgent: the KfdDevice of the software GPU (see <xenhsa/hsa/soft_agent.hpp>). It
// checks arguments, owns the parts and wires them together; the parts do the work.
#ifndef XENHSA_HSA_SOFT_AGENT_IMPL_HPP
#define XENHSA_HSA_SOFT_AGENT_IMPL_HPP

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#include <xenhsa/hsa/soft_agent.hpp>

#include "address_space.hpp"
#include "agent_shared.hpp"
#include "aql_queue.hpp"
#include "events.hpp"
#include "sdma_queue.hpp"
#include "signals.hpp"
#include "topology.hpp"
#include "worker_pool.hpp"

namespace xenhsa::hsa {

class SoftAgent final : public KfdDevice, private soft::QueueErrorSink {
public:
    explicit SoftAgent(const SoftAgentOptions& options);
    ~SoftAgent() override;  // queues first (stopped, joined), then workers, memory, events
    SoftAgent(const SoftAgent&) = delete;
    SoftAgent& operator=(const SoftAgent&) = delete;

    Result<xenhsa_version_info> version() override;
    Result<xenhsa_system_props> system() override;
    Result<xenhsa_node_props> node(uint32_t node) override;
    Result<xenhsa_mem_bank> mem_bank(uint32_t node, uint32_t index) override;
    Result<xenhsa_cache> cache(uint32_t node, uint32_t index) override;
    Result<xenhsa_io_link> io_link(uint32_t node, uint32_t index) override;
    Result<xenhsa_clock_counters> clock(uint32_t node) override;
    Result<xenhsa_tile_config> tile_config(uint32_t node) override;
    Result<xenhsa_kernel_info> kernel(uint32_t index) override;

    Result<void> alloc(uint32_t node, Va va, uint64_t size, uint32_t flags) override;
    Result<void> free(Va va) override;
    Result<void> register_user(Va va, uint64_t size, bool read_only) override;
    Result<void> deregister_user(Va va) override;
    Result<void> map_to_gpu(Va va, uint64_t node_mask, bool read_only) override;
    Result<void> unmap_from_gpu(Va va) override;

    bool supports_queue_type(QueueType type) noexcept override;
    Result<QueueId> create_queue(const QueueSpec& spec) override;
    Result<void> destroy_queue(QueueId queue) override;
    Result<void> ring_doorbell(QueueId queue, uint64_t value) override;
    bool track_kicks(uint32_t* kick_requested) noexcept override;

    Result<EventInfo> create_event(const EventSpec& spec) override;
    Result<void> destroy_event(EventId event) override;
    Result<void> set_event(EventId event) override;
    Result<void> reset_event(EventId event) override;
    Result<uint32_t> wait_events(std::span<const EventId> events, bool all,
                                 uint32_t timeout_ms) override;

    void set_fault_handler(FaultHandler handler) override;
    [[nodiscard]] std::optional<uint64_t> packets_taken() const noexcept override {
        return packets_taken_.load(std::memory_order_relaxed);
    }

private:
    void queue_failed(QueueId queue, EventId error_event, std::optional<Va> fault,
                      bool hang) noexcept override;
    void adopt_thread(std::thread thread) noexcept override;
    Result<QueueId> make_queue(const QueueSpec& spec);

    SoftAgentOptions options_;
    soft::Topology topology_;
    soft::EventTable events_;
    soft::AddressSpace memory_;
    soft::SignalHub signals_;
    std::mutex fault_mutex_;
    std::mutex adopted_mutex_;
    std::vector<std::thread> adopted_;  // queue threads their own fault handler ended
    FaultHandler fault_handler_;
    soft::WorkerPool pool_;
    soft::KickTracker kicks_;
    soft::SdmaEngines sdma_engines_;
    std::atomic<uint64_t> packets_taken_{0};
    soft::AgentShared shared_;
    std::mutex queues_mutex_;
    std::map<QueueId, std::unique_ptr<soft::Queue>> queues_;
    QueueId next_queue_ = 1;
};

}  // namespace xenhsa::hsa

#endif
