// A KfdDevice that enforces the kernel's rules and records every call, so that a
// GpuContext that orders its calls wrongly fails the tests:
//   * memory a live queue uses cannot be unmapped from the GPU, deregistered or freed;
//   * memory mapped to the GPU cannot be deregistered or freed;
//   * a queue's ring, rptr and wptr must lie in memory mapped to the GPU on its node;
//   * an event cannot be destroyed while a wait is inside wait_events on it, or while a
//     live queue signals it on error.
// A refusal of a rule is recorded as a violation (violations()); fail_next() injects a
// device error that is not one. Thread-safe: waits block on other threads.
#ifndef XENHSA_TESTS_HSA_STRICT_FAKE_DEVICE_HPP
#define XENHSA_TESTS_HSA_STRICT_FAKE_DEVICE_HPP

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>
#include <xenhsa/hsa/kfd_device.hpp>

namespace xenhsa::hsa::test {

enum class Op : uint8_t {
    alloc,
    free,
    register_user,
    deregister_user,
    map_to_gpu,
    unmap_from_gpu,
    create_queue,
    destroy_queue,
    ring_doorbell,
    create_event,
    destroy_event,
    set_event,
    reset_event,
    wait_events,
};
const char* op_name(Op op);

struct Call {
    Op op;
    uint64_t arg;  // the VA, queue id or event id the call named
    bool operator==(const Call&) const = default;
    auto operator<=>(const Call&) const = default;
};
void PrintTo(const Call& call, std::ostream* os);

class StrictFakeDevice final : public KfdDevice {
public:
    StrictFakeDevice();

    // --- KfdDevice
    Result<xenhsa_version_info> version() override;
    Result<xenhsa_system_props> system() override;
    Result<xenhsa_node_props> node(uint32_t node) override;
    Result<xenhsa_mem_bank> mem_bank(uint32_t node, uint32_t index) override;
    Result<xenhsa_cache> cache(uint32_t node, uint32_t index) override;
    Result<xenhsa_io_link> io_link(uint32_t node, uint32_t index) override;
    Result<xenhsa_clock_counters> clock(uint32_t node) override;
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
    Result<EventInfo> create_event(const EventSpec& spec) override;
    Result<void> destroy_event(EventId event) override;
    Result<void> set_event(EventId event) override;
    Result<void> reset_event(EventId event) override;
    Result<uint32_t> wait_events(std::span<const EventId> events, bool all,
                                 uint32_t timeout_ms) override;
    void set_fault_handler(FaultHandler handler) override;

    // --- test controls
    std::vector<Call> calls() const;
    // The calls of one kind, in order.
    std::vector<uint64_t> calls_of(Op op) const;
    void clear_calls();
    std::vector<std::string> violations() const;
    void fail_next(Op op, std::errc error);

    size_t memory_objects() const;
    size_t gpu_mappings() const;
    size_t queues() const;
    size_t events() const;
    size_t live_objects() const;  // all of the above together
    bool registered(Va va) const;
    bool mapped(Va va) const;
    bool read_only_mapping(Va va) const;
    bool has_event(EventId event) const;
    std::optional<QueueId> last_queue() const;
    std::optional<EventId> last_event() const;
    std::optional<uint64_t> doorbell_value(QueueId queue) const;
    std::optional<QueueType> queue_type(QueueId queue) const;
    // Whether SDMA queues are made (default) or refused with EOPNOTSUPP.
    void set_sdma(bool supported);
    // Waiters inside wait_events right now, over all events.
    uint32_t waiting() const;
    // While held, waiters stay inside wait_events even when their events are signaled
    // (a wait that has not yet run after its wake-up); release lets them see them.
    void hold_waits(bool hold);
    // Calls the fault handler (like the device's fault thread would).
    void inject_fault(QueueId queue, Va address);

private:
    struct Memory {
        uint64_t size = 0;
        bool user = false;
        bool read_only = false;
        uint64_t node_mask = 0;  // GPU mapping, 0 when none
    };
    struct Queue {
        QueueSpec spec;
        std::set<Va> memory;  // starts of the memory objects it uses
        uint64_t doorbell = 0;
    };
    struct Event {
        bool signaled = false;
        bool manual_reset = false;
        uint32_t waiters = 0;
    };

    // With mutex_ held.
    std::optional<std::error_code> enter(Op op, uint64_t arg);
    std::error_code violation(std::errc error, const std::string& what);
    bool used_by_queue(Va va) const;
    bool event_used_by_queue(EventId event) const;
    const Va* gpu_memory_holding(Va va, uint64_t len, uint32_t node) const;

    mutable std::mutex mutex_;
    std::condition_variable changed_;
    bool hold_waits_ = false;
    bool sdma_ = true;
    std::vector<Call> calls_;
    std::vector<std::string> violations_;
    std::map<Op, std::errc> fail_next_;
    std::map<Va, Memory> memory_;
    std::map<QueueId, Queue> queues_;
    std::map<EventId, Event> events_;
    QueueId next_queue_ = 0x1000;
    EventId next_event_ = 0x2000;
    std::optional<QueueId> last_queue_;
    std::optional<EventId> last_event_;
    FaultHandler fault_handler_;
};

}  // namespace xenhsa::hsa::test

#endif
