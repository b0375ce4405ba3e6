// A KfdDevice that records every call in the shared EventLog and keeps the kernel's rules
// that matter to the backend (memory must be registered or allocated before it is mapped
// to the GPU; memory a live queue uses cannot be unmapped, deregistered or freed: EBUSY).
// Topology: node 0 is a CPU, node 1 a GPU with local memory. wait_events blocks until an
// event fires or the time passes; set_event wakes it.
#ifndef XENHSA_TESTS_BACKEND_CORE_RECORDING_KFD_HPP
#define XENHSA_TESTS_BACKEND_CORE_RECORDING_KFD_HPP

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <xenhsa/hsa/kfd_device.hpp>

#include "event_log.hpp"

namespace xenhsa::backend::core::testing {

class RecordingKfd final : public hsa::KfdDevice {
public:
    explicit RecordingKfd(EventLog* log) : log_(log) {}  // `log` may be null

    hsa::Result<xenhsa_version_info> version() override;
    hsa::Result<xenhsa_system_props> system() override;
    hsa::Result<xenhsa_node_props> node(uint32_t node) override;
    hsa::Result<xenhsa_mem_bank> mem_bank(uint32_t node, uint32_t index) override;
    hsa::Result<xenhsa_cache> cache(uint32_t node, uint32_t index) override;
    hsa::Result<xenhsa_io_link> io_link(uint32_t node, uint32_t index) override;
    hsa::Result<xenhsa_clock_counters> clock(uint32_t node) override;
    hsa::Result<xenhsa_kernel_info> kernel(uint32_t index) override;

    hsa::Result<void> alloc(uint32_t node, hsa::Va va, uint64_t size, uint32_t flags) override;
    hsa::Result<void> free(hsa::Va va) override;
    hsa::Result<void> register_user(hsa::Va va, uint64_t size, bool read_only) override;
    hsa::Result<void> deregister_user(hsa::Va va) override;
    hsa::Result<void> map_to_gpu(hsa::Va va, uint64_t node_mask, bool read_only) override;
    hsa::Result<void> unmap_from_gpu(hsa::Va va) override;

    bool supports_queue_type(hsa::QueueType type) noexcept override;
    hsa::Result<hsa::QueueId> create_queue(const hsa::QueueSpec& spec) override;
    hsa::Result<void> destroy_queue(hsa::QueueId queue) override;
    hsa::Result<void> ring_doorbell(hsa::QueueId queue, uint64_t value) override;

    hsa::Result<hsa::EventInfo> create_event(const hsa::EventSpec& spec) override;
    hsa::Result<void> destroy_event(hsa::EventId event) override;
    hsa::Result<void> set_event(hsa::EventId event) override;
    hsa::Result<void> reset_event(hsa::EventId event) override;
    hsa::Result<uint32_t> wait_events(std::span<const hsa::EventId> events, bool all,
                                      uint32_t timeout_ms) override;

    void set_fault_handler(FaultHandler handler) override;
    [[nodiscard]] std::optional<uint64_t> packets_taken() const noexcept override;

    // Test hooks.
    void fault(hsa::QueueId queue, hsa::Va address, bool hang = false);
    [[nodiscard]] std::size_t registered() const;
    [[nodiscard]] std::size_t allocations() const;
    [[nodiscard]] std::size_t live_queues() const;
    [[nodiscard]] hsa::QueueId last_queue() const;
    [[nodiscard]] uint64_t last_doorbell() const;
    [[nodiscard]] hsa::QueueType last_queue_type() const;
    // A registration at `va` is refused with EFAULT, as a PV dom0's kernel refuses to pin
    // gntdev's grant mappings.
    void refuse_pin_at(hsa::Va va);
    // Whether SDMA queues are made (default) or refused with EOPNOTSUPP.
    void set_sdma(bool supported);
    // From now on packets_taken() answers, and each doorbell takes `per_doorbell` packets
    // (nullopt, the default: it cannot tell, as hardware).
    void take_packets(std::optional<uint64_t> per_doorbell);

private:
    struct Memory {
        uint64_t size = 0;
        bool alloc = false;
        uint64_t gpu_nodes = 0;
    };
    struct Event {
        bool manual_reset = false;
        bool signaled = false;
    };
    [[nodiscard]] bool used_by_queue(hsa::Va va) const;  // with lock_ held
    void record(std::string entry);                      // log_ may be null

    EventLog* log_;
    mutable std::mutex lock_;
    std::condition_variable changed_;
    std::map<hsa::Va, Memory> memory_;
    std::map<hsa::QueueId, hsa::QueueSpec> queues_;
    std::map<hsa::EventId, Event> events_;
    hsa::QueueId next_queue_ = 100;
    hsa::EventId next_event_ = 500;
    hsa::QueueId last_queue_ = 0;
    uint64_t last_doorbell_ = 0;
    bool sdma_ = true;
    std::set<hsa::Va> unpinnable_;
    std::optional<uint64_t> per_doorbell_;
    uint64_t taken_ = 0;
    FaultHandler fault_handler_;
};

}  // namespace xenhsa::backend::core::testing

#endif
