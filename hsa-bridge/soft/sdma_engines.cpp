#include "sdma_engines.hpp"

#include <algorithm>

namespace xenhsa::hsa::soft {

bool SdmaEngines::acquire(const std::atomic<bool>& halted) {
    std::unique_lock lock(mutex_);
    const uint64_t ticket = next_ticket_++;
    line_.push_back(ticket);
    waiting_.store(static_cast<uint32_t>(line_.size()), std::memory_order_relaxed);
    const auto mine = [&] { return free_ > 0 && line_.front() == ticket; };
    cv_.wait(lock, [&] { return halted.load(std::memory_order_acquire) || mine(); });
    const bool granted = !halted.load(std::memory_order_acquire) && mine();
    if (granted) {
        line_.pop_front();
        --free_;
    } else {
        line_.erase(std::find(line_.begin(), line_.end(), ticket));
    }
    waiting_.store(static_cast<uint32_t>(line_.size()), std::memory_order_relaxed);
    if (!line_.empty() && free_ > 0) {
        cv_.notify_all();  // the next in line may be allowed now
    }
    return granted;
}

void SdmaEngines::release() noexcept {
    {
        std::lock_guard lock(mutex_);
        ++free_;
    }
    cv_.notify_all();
}

void SdmaEngines::interrupt() noexcept {
    { std::lock_guard lock(mutex_); }  // a waiter between its check and its sleep sees it
    cv_.notify_all();
}

EngineTurn::~EngineTurn() {
    if (held_) {
        engines_.release();
    }
}

bool EngineTurn::take() {
    held_ = engines_.acquire(halted_);
    since_ = std::chrono::steady_clock::now();
    return held_;
}

bool EngineTurn::go() {
    if (halted_.load(std::memory_order_acquire)) {
        return false;
    }
    if (!held_) {
        return take();
    }
    if (engines_.contended() && std::chrono::steady_clock::now() - since_ >= engines_.slice()) {
        engines_.release();
        held_ = false;
        return take();
    }
    return true;
}

}  // namespace xenhsa::hsa::soft
