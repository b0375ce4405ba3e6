#include "wait_engine.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <system_error>
#include <utility>

#include "fatal.hpp"
#include "object_pool.hpp"

namespace xenhsa::hsa::detail {

namespace {

// A slot stays busy for a moment after its wait is decided (while `done` runs, or while a
// cancelled wait leaves the device), so there are twice as many slots as pending waits
// allowed.
uint32_t slot_capacity(uint32_t max_waits) { return max_waits == 0 ? 0 : 2 * max_waits; }

// How long start() waits for a cancelled or finished wait to give its slot back when every
// slot is busy. Those waits end on their own at once; the bound only guards a device that
// ignores its cancel event.
constexpr auto kSlotSettle = std::chrono::seconds(2);

bool names_tag(const WaitEngine::Request& request, uint32_t tag) {
    for (uint32_t i = 0; i < request.count; ++i) {
        if (request.tags[i] == tag) {
            return true;
        }
    }
    return false;
}

}  // namespace

WaitEngine::WaitEngine(KfdDevice& device, uint32_t max_waits)
    : device_(device), max_waits_(max_waits) {
    slots_.reserve(slot_capacity(max_waits));
    scratch_.reserve(slot_capacity(max_waits));
}

WaitEngine::~WaitEngine() {
    stop();
    release_events();
}

uint32_t WaitEngine::pending() const noexcept {
    std::lock_guard lock(mutex_);
    return pending_;
}

Result<uint64_t> WaitEngine::start(const Request& request, GpuContext::WaitDone done) {
    Slot* slot = nullptr;
    {
        std::unique_lock lock(mutex_);
        if (pending_ >= max_waits_) {
            return quota_exceeded();
        }
        const auto idle_slot = [&] {
            for (auto& candidate : slots_) {
                if (candidate->state == State::idle) {
                    return candidate.get();
                }
            }
            return static_cast<Slot*>(nullptr);
        };
        slot = idle_slot();
        if (slot == nullptr && slots_.size() < slot_capacity(max_waits_)) {
            slots_.push_back(std::make_unique<Slot>());
            slot = slots_.back().get();
        }
        // Every slot is busy, but fewer than max_waits with pending waits: the others hold
        // waits that are cancelled or done and give their slots back by themselves.
        const auto freed = [&] { return (slot = idle_slot()) != nullptr; };
        if (slot == nullptr && !settled_.wait_for(lock, kSlotSettle, freed)) {
            return quota_exceeded();
        }
        // Reserved: only this (the worker) thread moves a slot out of idle.
        slot->state = State::finishing;
    }
    auto release_slot = [&] {
        std::lock_guard lock(mutex_);
        slot->state = State::idle;
    };

    // The cancel event of the slot's previous wait may still be set.
    if (!slot->has_cancel_event) {
        EventSpec spec;
        spec.type = XENHSA_EVENT_SIGNAL;
        spec.manual_reset = true;
        auto created = device_.create_event(spec);
        if (!created) {
            release_slot();
            return created.error();
        }
        slot->cancel_event = created.value().id;
        slot->has_cancel_event = true;
    } else if (auto reset = device_.reset_event(slot->cancel_event); !reset) {
        release_slot();
        return reset.error();
    }

    if (!slot->thread.joinable()) {
        try {
            slot->thread = std::thread([this, slot] { run(*slot); });
        } catch (const std::system_error&) {
            release_slot();
            return errc(std::errc::resource_unavailable_try_again);
        }
    }

    std::lock_guard lock(mutex_);
    slot->request = request;
    slot->done = std::move(done);
    slot->id = ++next_id_;
    slot->state = State::pending;
    slot->counted = true;
    slot->in_device = true;
    slot->has_work = true;
    ++pending_;
    slot->work.notify_one();
    return slot->id;
}

void WaitEngine::fire_cancel(EventId cancel_event) noexcept {
    if (auto set = device_.set_event(cancel_event); !set) {
        fatal("set cancel event", cancel_event, set.error());
    }
}

bool WaitEngine::cancel(uint64_t wait) noexcept {
    EventId cancel_event = 0;
    {
        std::lock_guard lock(mutex_);
        auto it = std::find_if(slots_.begin(), slots_.end(), [wait](const auto& slot) {
            return slot->state == State::pending && slot->id == wait;
        });
        if (wait == 0 || it == slots_.end()) {
            return false;
        }
        (*it)->state = State::cancelling;
        cancel_event = (*it)->cancel_event;
        // Answered CANCELLED from now on: no longer pending, whenever the thread ends it.
        (*it)->counted = false;
        --pending_;
    }
    fire_cancel(cancel_event);
    return true;
}

void WaitEngine::restore(const Request& request, uint32_t consumed) noexcept {
    for (uint32_t i = 0; i < request.count; ++i) {
        if ((consumed & (1u << i)) == 0) {
            continue;
        }
        // The event cannot be gone: destroying it waits until no wait naming it is in
        // the device (cancel_tag), and this wait still counts as in the device.
        if (auto set = device_.set_event(request.ids[i]); !set) {
            spdlog::warn("gpu context: re-setting an event a cancelled wait consumed: {}",
                         set.error().message());
        }
    }
}

void WaitEngine::cancel_tag(uint32_t tag) noexcept {
    std::unique_lock lock(mutex_);
    scratch_.clear();
    for (auto& slot : slots_) {
        if (slot->state == State::pending && names_tag(slot->request, tag)) {
            slot->state = State::cancelling;
            scratch_.push_back(slot->cancel_event);
        }
    }
    lock.unlock();
    for (EventId cancel_event : scratch_) {
        fire_cancel(cancel_event);
    }
    lock.lock();
    settled_.wait(lock, [&] {
        return std::none_of(slots_.begin(), slots_.end(), [tag](const auto& slot) {
            return slot->in_device && names_tag(slot->request, tag);
        });
    });
}

void WaitEngine::stop() noexcept {
    std::unique_lock lock(mutex_);
    scratch_.clear();
    for (auto& slot : slots_) {
        if (slot->state == State::pending) {
            slot->state = State::cancelling;
            scratch_.push_back(slot->cancel_event);
        }
        slot->stop = true;
        slot->work.notify_one();
    }
    lock.unlock();
    for (EventId cancel_event : scratch_) {
        fire_cancel(cancel_event);
    }
    // Only this thread adds slots, so iterating without the lock is safe.
    for (auto& slot : slots_) {
        if (slot->thread.joinable()) {
            slot->thread.join();
        }
        slot->stop = false;
        slot->state = State::idle;
        slot->has_work = false;
        slot->in_device = false;
    }
}

void WaitEngine::release_events() noexcept {
    for (auto& slot : slots_) {
        if (slot->has_cancel_event) {
            if (auto destroyed = device_.destroy_event(slot->cancel_event); !destroyed) {
                fatal("destroy cancel event", slot->cancel_event, destroyed.error());
            }
            slot->has_cancel_event = false;
        }
    }
}

void WaitEngine::run(Slot& slot) noexcept {
    std::unique_lock lock(mutex_);
    for (;;) {
        slot.work.wait(lock, [&] { return slot.has_work || slot.stop; });
        if (!slot.has_work) {
            return;
        }
        const Request request = slot.request;
        const EventId cancel_event = slot.cancel_event;
        lock.unlock();
        Outcome outcome = wait_on_device(request, cancel_event);
        lock.lock();

        // A cancel may come at any moment until the state leaves `pending`: restore
        // outside the lock, then look again.
        while (slot.state == State::cancelling && outcome.consumed != 0) {
            // Only auto-reset events were taken; a manual-reset one is still set, and
            // setting it again could undo a reset the guest made since.
            const uint32_t consumed = std::exchange(outcome.consumed, 0) & request.auto_reset;
            lock.unlock();
            restore(request, consumed);
            lock.lock();
        }
        slot.in_device = false;
        if (slot.state == State::cancelling) {
            outcome = {WaitEnd::cancelled, 0, 0};
        }
        slot.state = State::finishing;
        if (std::exchange(slot.counted, false)) {
            --pending_;
        }
        GpuContext::WaitDone done = std::move(slot.done);
        slot.done = nullptr;
        settled_.notify_all();
        lock.unlock();

        try {
            if (done) {
                done(outcome.end, outcome.mask);
            }
        } catch (const std::exception& e) {
            spdlog::error("gpu context: EVENT_WAIT completion threw: {}", e.what());
        } catch (...) {
            spdlog::error("gpu context: EVENT_WAIT completion threw");
        }
        done = nullptr;

        lock.lock();
        slot.has_work = false;
        slot.state = State::idle;
        settled_.notify_all();
    }
}

WaitEngine::Outcome WaitEngine::wait_on_device(const Request& request,
                                               EventId cancel_event) noexcept {
    using Clock = std::chrono::steady_clock;
    const bool infinite = request.timeout_ms == XENHSA_WAIT_INFINITE;
    const auto deadline = Clock::now() + std::chrono::milliseconds(request.timeout_ms);
    const uint32_t all_bits = request.count >= 32 ? ~0u : ((1u << request.count) - 1u);
    uint32_t waiting = all_bits;  // events an all-wait still needs
    uint32_t fired = 0;

    std::array<EventId, kMaxEvents + 1> list{};
    std::array<uint32_t, kMaxEvents + 1> index_of{};
    for (;;) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < request.count; ++i) {
            if (!request.all || (waiting & (1u << i)) != 0) {
                list[n] = request.ids[i];
                index_of[n] = i;
                ++n;
            }
        }
        const uint32_t cancel_bit = 1u << n;
        list[n++] = cancel_event;

        uint32_t timeout_ms = XENHSA_WAIT_INFINITE;
        if (!infinite) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            timeout_ms = left.count() > 0 ? static_cast<uint32_t>(left.count()) : 0;
        }
        auto result =
            device_.wait_events(std::span<const EventId>(list.data(), n), false, timeout_ms);
        if (!result) {
            if (result.error() == std::errc::timed_out) {
                return {WaitEnd::timeout, 0, fired};
            }
            spdlog::warn("gpu context: device wait failed: {}", result.error().message());
            return {WaitEnd::failed, 0, fired};
        }
        const uint32_t mask = result.value();
        if (mask == 0 || mask >= (cancel_bit << 1)) {
            spdlog::warn("gpu context: device wait returned the impossible mask {:#x}", mask);
            return {WaitEnd::failed, 0, fired};
        }
        // The events that fired together with the cancel event were consumed too.
        for (uint32_t j = 0; j + 1 < n; ++j) {
            if ((mask & (1u << j)) != 0) {
                fired |= 1u << index_of[j];
            }
        }
        if ((mask & cancel_bit) != 0) {
            return {WaitEnd::cancelled, 0, fired};
        }
        if (!request.all) {
            return {WaitEnd::fired, fired, fired};
        }
        waiting &= ~fired;
        if (waiting == 0) {
            return {WaitEnd::fired, all_bits, fired};
        }
    }
}

}  // namespace xenhsa::hsa::detail
