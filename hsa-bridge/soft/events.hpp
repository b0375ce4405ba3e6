// KFD events: create, destroy, set, reset and wait, with KFD's semantics (kfd_events.c).
//
// A wait activates each of its slots whose event is signalled when the wait starts or is
// set while it waits; an activation sticks for that wait. Setting an auto-reset event
// that has waiters activates them all and leaves the event unsignalled (they consumed
// it); an auto-reset event that a wait finds signalled is reset by that wait. Destroying
// an event ends the waits on it with ENOENT.
//
// Thread-safe: waits block their caller's thread while other calls go on.
#ifndef XENHSA_HSA_SOFT_EVENTS_HPP
#define XENHSA_HSA_SOFT_EVENTS_HPP

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>
#include <xenhsa/hsa/kfd_device.hpp>

namespace xenhsa::hsa::soft {

class EventTable {
public:
    static constexpr size_t kMaxWaitEvents = 32;  // the result is a 32-bit mask

    explicit EventTable(uint32_t max_events) noexcept : max_events_(max_events) {}
    ~EventTable();  // ends every wait (ENOENT) and waits for the waiters to leave
    EventTable(const EventTable&) = delete;
    EventTable& operator=(const EventTable&) = delete;

    // The caller has checked the spec's type and node.
    Result<EventInfo> create(const EventSpec& spec);
    Result<void> destroy(EventId event);
    Result<void> set(EventId event);
    Result<void> reset(EventId event);
    [[nodiscard]] bool contains(EventId event);
    // An event named by the event_id of a signal the GPU completed; unknown ids are
    // ignored, as KFD ignores interrupts for events that are gone.
    void set_by_event_id(uint32_t event_id) noexcept;
    // A GPU memory fault: every event of type XENHSA_EVENT_MEMORY is set, as KFD signals
    // a process's memory events on a VM fault (ROCr's VM-fault handler waits on one).
    void set_memory_events() noexcept;
    Result<uint32_t> wait(std::span<const EventId> events, bool all, uint32_t timeout_ms);

private:
    struct Waiter {
        std::span<const EventId> ids;
        uint32_t activated = 0;  // bit i: slot i fired
        bool dead = false;       // an event it waits on was destroyed
    };
    struct Event {
        uint32_t event_id = 0;
        uint32_t type = 0;  // enum xenhsa_event_type
        bool manual_reset = false;
        bool signaled = false;
        std::vector<Waiter*> waiters;
    };

    static uint32_t slots_of(const Waiter& waiter, EventId event) noexcept;
    void signal_locked(EventId id, Event& event) noexcept;
    void unregister_locked(Waiter& waiter) noexcept;

    std::mutex mutex_;
    std::condition_variable cv_;
    std::unordered_map<EventId, Event> events_;
    std::unordered_map<uint32_t, EventId> by_event_id_;
    uint32_t max_events_;
    EventId next_id_ = 1;
    uint32_t next_event_id_ = 1;
    uint32_t waiting_ = 0;
    bool closing_ = false;
};

}  // namespace xenhsa::hsa::soft

#endif
