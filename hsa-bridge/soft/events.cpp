#include "events.hpp"

#include <xenhsa/proto/event.h>

#include <algorithm>
#include <chrono>

namespace xenhsa::hsa::soft {

EventTable::~EventTable() {
    std::unique_lock lock(mutex_);
    closing_ = true;
    for (auto& [id, event] : events_) {
        for (Waiter* waiter : event.waiters) {
            waiter->dead = true;
        }
        event.waiters.clear();
    }
    cv_.notify_all();
    cv_.wait(lock, [this] { return waiting_ == 0; });
}

Result<EventInfo> EventTable::create(const EventSpec& spec) {
    std::lock_guard lock(mutex_);
    if (events_.size() >= max_events_) {
        return errc(std::errc::not_enough_memory);
    }
    // Unique among live events; the counter only comes back after 2^32 creations.
    while (next_event_id_ == 0 || by_event_id_.contains(next_event_id_)) {
        ++next_event_id_;
    }
    const uint32_t event_id = next_event_id_++;
    const EventId id = next_id_++;
    by_event_id_.emplace(event_id, id);
    try {
        Event event;
        event.event_id = event_id;
        event.type = spec.type;
        event.manual_reset = spec.manual_reset;
        event.signaled = spec.signaled;
        events_.emplace(id, std::move(event));
    } catch (...) {
        by_event_id_.erase(event_id);
        throw;
    }
    return EventInfo{id, event_id, 0};
}

Result<void> EventTable::destroy(EventId id) {
    std::lock_guard lock(mutex_);
    auto it = events_.find(id);
    if (it == events_.end()) {
        return errc(std::errc::no_such_file_or_directory);
    }
    for (Waiter* waiter : it->second.waiters) {
        waiter->dead = true;
    }
    by_event_id_.erase(it->second.event_id);
    events_.erase(it);
    cv_.notify_all();
    return boost::outcome_v2::success();
}

uint32_t EventTable::slots_of(const Waiter& waiter, EventId event) noexcept {
    uint32_t mask = 0;
    for (size_t i = 0; i < waiter.ids.size(); ++i) {
        if (waiter.ids[i] == event) {
            mask |= 1u << i;
        }
    }
    return mask;
}

void EventTable::signal_locked(EventId id, Event& event) noexcept {
    if (event.waiters.empty()) {
        event.signaled = true;
        return;
    }
    for (Waiter* waiter : event.waiters) {
        waiter->activated |= slots_of(*waiter, id);
    }
    event.signaled = event.manual_reset;  // the waiters consumed an auto-reset event
    cv_.notify_all();
}

Result<void> EventTable::set(EventId id) {
    std::lock_guard lock(mutex_);
    auto it = events_.find(id);
    if (it == events_.end()) {
        return errc(std::errc::no_such_file_or_directory);
    }
    signal_locked(id, it->second);
    return boost::outcome_v2::success();
}

void EventTable::set_by_event_id(uint32_t event_id) noexcept {
    std::lock_guard lock(mutex_);
    auto id = by_event_id_.find(event_id);
    if (id == by_event_id_.end()) {
        return;
    }
    signal_locked(id->second, events_.at(id->second));
}

void EventTable::set_memory_events() noexcept {
    std::lock_guard lock(mutex_);
    for (auto& [id, event] : events_) {
        if (event.type == XENHSA_EVENT_MEMORY) {
            signal_locked(id, event);
        }
    }
}

Result<void> EventTable::reset(EventId id) {
    std::lock_guard lock(mutex_);
    auto it = events_.find(id);
    if (it == events_.end()) {
        return errc(std::errc::no_such_file_or_directory);
    }
    it->second.signaled = false;
    return boost::outcome_v2::success();
}

bool EventTable::contains(EventId id) {
    std::lock_guard lock(mutex_);
    return events_.contains(id);
}

void EventTable::unregister_locked(Waiter& waiter) noexcept {
    for (EventId id : waiter.ids) {
        auto it = events_.find(id);
        if (it != events_.end()) {
            std::erase(it->second.waiters, &waiter);
        }
    }
}

Result<uint32_t> EventTable::wait(std::span<const EventId> ids, bool all, uint32_t timeout_ms) {
    if (ids.empty() || ids.size() > kMaxWaitEvents) {
        return errc(std::errc::invalid_argument);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::unique_lock lock(mutex_);
    if (closing_) {
        return errc(std::errc::no_such_file_or_directory);
    }
    for (EventId id : ids) {
        if (!events_.contains(id)) {
            return errc(std::errc::no_such_file_or_directory);
        }
    }
    Waiter waiter;
    waiter.ids = ids;
    try {
        for (EventId id : ids) {
            Event& event = events_.at(id);
            if (event.signaled) {
                waiter.activated |= slots_of(waiter, id);
                event.signaled = event.manual_reset;
            }
            if (event.waiters.empty() || event.waiters.back() != &waiter) {
                event.waiters.push_back(&waiter);
            }
        }
    } catch (...) {
        unregister_locked(waiter);
        throw;
    }
    ++waiting_;
    const uint32_t full = ids.size() == 32 ? ~0u : (1u << ids.size()) - 1;
    auto done = [&] {
        const bool fired = all ? waiter.activated == full : waiter.activated != 0;
        return fired || waiter.dead;
    };
    if (timeout_ms == XENHSA_WAIT_INFINITE) {
        cv_.wait(lock, done);
    } else {
        cv_.wait_until(lock, deadline, done);
    }
    unregister_locked(waiter);
    if (--waiting_ == 0 && closing_) {
        cv_.notify_all();
    }
    const bool fired = all ? waiter.activated == full : waiter.activated != 0;
    if (fired) {
        return waiter.activated;
    }
    if (waiter.dead) {
        return errc(std::errc::no_such_file_or_directory);
    }
    return errc(std::errc::timed_out);
}

}  // namespace xenhsa::hsa::soft
