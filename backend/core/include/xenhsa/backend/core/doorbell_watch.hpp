// Notices doorbell stores the guest makes without a kick, for a GPU seam that does not
// track kicks (KfdDevice::track_kicks false: the libhsakmt adapter). ROCr in a guest only
// stores its write index into the doorbell slot and never kicks the event channel, so
// without this its packets would wait for the guest's next request.
//
// While the guest has live queues, the watch polls the doorbell page on the worker's
// io_context: `spin_polls` polls in a row (posted, so other handlers run in between), then
// timers that double from `backoff_min` to `backoff_max`, and once nothing has moved for
// `slow_after`, one poll every `slow_interval`. A changed slot (seen by the watch or by a
// kicked pass, `activity()`) returns it to the spin phase. Without queues it holds no
// timer at all. Changes go the usual way: GuestRequests::doorbells.
//
// The trade-off: a packet stored after a long idle period waits up to `slow_interval`
// (unless the guest kicks or sends a request, which forwards doorbells at once); an idle
// guest with queues costs 1000 / slow_interval_ms wakeups a second.
//
// Threading: the io_context's thread only.
#ifndef XENHSA_BACKEND_CORE_DOORBELL_WATCH_HPP
#define XENHSA_BACKEND_CORE_DOORBELL_WATCH_HPP

#include <xenhsa/proto/doorbell.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <xenhsa/backend/core/guest_requests.hpp>

namespace xenhsa::backend::core {

struct DoorbellPollPolicy {
    uint32_t spin_polls = 64;  // polls in a row after activity, before the first timer
    std::chrono::microseconds backoff_min{20};
    std::chrono::microseconds backoff_max{2000};
    std::chrono::milliseconds slow_after{250};    // idle this long: the slow phase
    std::chrono::milliseconds slow_interval{20};  // the slow phase's poll period
};

class DoorbellWatch {
public:
    // `page` and `requests` must outlive the watch.
    DoorbellWatch(boost::asio::io_context& io, const xenhsa_doorbell_page& page,
                  GuestRequests& requests, const DoorbellPollPolicy& policy);
    ~DoorbellWatch();  // cancels; no handler touches the watch afterwards
    DoorbellWatch(const DoorbellWatch&) = delete;
    DoorbellWatch& operator=(const DoorbellWatch&) = delete;
    DoorbellWatch(DoorbellWatch&&) = delete;
    DoorbellWatch& operator=(DoorbellWatch&&) = delete;

    // Starts polling when the guest has queues and the watch is not already polling
    // (after each pass: a QUEUE_CREATE may have made the first queue).
    void update() noexcept;
    // A pass forwarded a doorbell change: back to the spin phase.
    void activity() noexcept;
    // For good (the guest is being disconnected).
    void stop() noexcept;

    [[nodiscard]] bool polling() const noexcept { return scheduled_; }
    [[nodiscard]] uint64_t polls() const noexcept { return polls_; }

private:
    void poll() noexcept;
    void schedule() noexcept;
    void reset_phase() noexcept;

    boost::asio::io_context& io_;
    const xenhsa_doorbell_page& page_;
    GuestRequests& requests_;
    DoorbellPollPolicy policy_;
    boost::asio::steady_timer timer_;
    std::shared_ptr<int> life_ = std::make_shared<int>(0);
    bool scheduled_ = false;  // a post or a timer is pending
    bool stopped_ = false;
    uint32_t spins_ = 0;
    std::chrono::microseconds backoff_;
    std::chrono::steady_clock::time_point idle_since_;
    uint64_t polls_ = 0;
};

}  // namespace xenhsa::backend::core

#endif
