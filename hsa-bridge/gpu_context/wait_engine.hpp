// EVENT_WAIT on context-owned threads. Each pending wait runs on its own thread, blocked
// in KfdDevice::wait_events. To make a wait cancellable at once, every slot owns a private
// manual-reset "cancel" event that is added to each device wait: cancelling sets it.
//
// An all-events wait is run as a sequence of any-event waits over the events that have
// not fired yet (plus the cancel event), which is also what the kernel does: each event
// is consumed when it wakes the waiter. It relies on the device reporting exactly which
// events fired.
//
// `done` runs exactly once per started wait, on the wait's thread, outside every lock. It
// must not call back into the context or block on the worker: teardown joins the threads.
#ifndef XENHSA_HSA_GPU_CONTEXT_WAIT_ENGINE_HPP
#define XENHSA_HSA_GPU_CONTEXT_WAIT_ENGINE_HPP

#include <array>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#include <xenhsa/hsa/gpu_context.hpp>

namespace xenhsa::hsa::detail {

class WaitEngine {
public:
    static constexpr uint32_t kMaxEvents = XENHSA_WAIT_MAX_EVENTS;

    struct Request {
        std::array<EventId, kMaxEvents> ids{};
        std::array<uint32_t, kMaxEvents> tags{};  // the context's event slots, for cancel_tag
        uint32_t count = 0;
        uint32_t auto_reset = 0;  // request indexes of auto-reset events (a wait consumes them)
        bool all = false;
        uint32_t timeout_ms = 0;
    };

    WaitEngine(KfdDevice& device, uint32_t max_waits);
    ~WaitEngine();
    WaitEngine(const WaitEngine&) = delete;
    WaitEngine& operator=(const WaitEngine&) = delete;

    // EDQUOT when max_waits waits are pending; device errors from preparing the cancel event.
    Result<uint64_t> start(const Request& request, GpuContext::WaitDone done);
    // true when the wait was pending; it then ends `cancelled`, and no longer counts
    // against max_waits from this moment on (its answer is the caller's to give).
    bool cancel(uint64_t wait) noexcept;
    // Cancels the pending waits that name `tag`, and returns once none of them is inside
    // the device any more (so the event may be destroyed).
    void cancel_tag(uint32_t tag) noexcept;
    // Cancels every wait and joins the threads: every `done` has run when it returns.
    // Never allocates; idempotent. start() works again afterwards.
    void stop() noexcept;
    // Destroys the cancel events (after stop(); teardown does it with the other events).
    void release_events() noexcept;

    [[nodiscard]] uint32_t pending() const noexcept;

private:
    enum class State : uint8_t { idle, pending, cancelling, finishing };
    struct Slot {
        std::condition_variable work;
        std::thread thread;
        State state = State::idle;
        bool has_work = false;
        bool in_device = false;
        bool counted = false;  // in pending_: started and neither ended nor cancelled
        bool stop = false;
        bool has_cancel_event = false;
        EventId cancel_event = 0;
        uint64_t id = 0;
        Request request;
        GpuContext::WaitDone done;
    };
    struct Outcome {
        WaitEnd end = WaitEnd::failed;
        uint32_t mask = 0;
        uint32_t consumed = 0;  // request indexes of auto-reset events the wait took
    };

    void run(Slot& slot) noexcept;
    Outcome wait_on_device(const Request& request, EventId cancel_event) noexcept;
    void fire_cancel(EventId cancel_event) noexcept;
    // Sets again the events a cancelled wait consumed: once CANCELLED is answered (at
    // once, before the wait leaves the device), the wait must have taken nothing.
    void restore(const Request& request, uint32_t consumed) noexcept;

    KfdDevice& device_;
    const uint32_t max_waits_;
    mutable std::mutex mutex_;
    std::condition_variable settled_;  // a slot left the device or went idle
    std::vector<std::unique_ptr<Slot>> slots_;
    std::vector<EventId> scratch_;  // cancel events to fire, reserved for every slot
    uint32_t pending_ = 0;
    uint64_t next_id_ = 0;
};

}  // namespace xenhsa::hsa::detail

#endif
