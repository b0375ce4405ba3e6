#include <algorithm>
#include <boost/asio/post.hpp>
#include <xenhsa/backend/core/doorbell_watch.hpp>

namespace xenhsa::backend::core {

DoorbellWatch::DoorbellWatch(boost::asio::io_context& io, const xenhsa_doorbell_page& page,
                             GuestRequests& requests, const DoorbellPollPolicy& policy)
    : io_(io),
      page_(page),
      requests_(requests),
      policy_(policy),
      timer_(io),
      backoff_(policy.backoff_min),
      idle_since_(std::chrono::steady_clock::now()) {
    policy_.backoff_max = std::max(policy_.backoff_max, policy_.backoff_min);
}

DoorbellWatch::~DoorbellWatch() { stop(); }

void DoorbellWatch::stop() noexcept {
    stopped_ = true;
    timer_.cancel();
    life_.reset();  // a posted poll finds nothing
}

void DoorbellWatch::reset_phase() noexcept {
    spins_ = 0;
    backoff_ = policy_.backoff_min;
    idle_since_ = std::chrono::steady_clock::now();
}

void DoorbellWatch::update() noexcept {
    if (stopped_ || scheduled_ || !requests_.has_queues()) {
        return;
    }
    reset_phase();
    schedule();
}

void DoorbellWatch::activity() noexcept {
    reset_phase();
    if (scheduled_) {
        timer_.cancel();  // a long timer may be pending: poll now instead
    }
}

void DoorbellWatch::poll() noexcept {
    scheduled_ = false;
    if (stopped_ || !requests_.has_queues()) {
        return;  // polling again from update(), when a queue exists
    }
    ++polls_;
    requests_.count_doorbell_polls(1);
    if (requests_.doorbells(page_) != 0) {
        reset_phase();
    }
    schedule();
}

void DoorbellWatch::schedule() noexcept {
    scheduled_ = true;
    std::weak_ptr<int> alive = life_;
    if (spins_ < policy_.spin_polls) {
        ++spins_;
        boost::asio::post(io_, [this, alive] {
            if (!alive.expired()) {
                poll();
            }
        });
        return;
    }
    const auto idle = std::chrono::steady_clock::now() - idle_since_;
    std::chrono::steady_clock::duration delay = policy_.slow_interval;
    if (idle < policy_.slow_after) {
        delay = backoff_;
        backoff_ = std::min(backoff_ * 2, policy_.backoff_max);
    }
    timer_.expires_after(delay);
    // A cancelled timer (activity) polls at once too; only stop() ends the watch.
    timer_.async_wait([this, alive](const boost::system::error_code&) {
        if (!alive.expired()) {
            poll();
        }
    });
}

}  // namespace xenhsa::backend::core
