// The GPU side of doorbell kicks (protocol doorbell.h): the producer's kick_requested word
// is 1 while any queue of the agent sleeps waiting for a doorbell and 0 while all poll, so
// a guest that keeps a busy queue fed never pays for an event-channel notify.
#ifndef XENHSA_HSA_SOFT_KICK_TRACKER_HPP
#define XENHSA_HSA_SOFT_KICK_TRACKER_HPP

#include <cstdint>
#include <mutex>

namespace xenhsa::hsa::soft {

class KickTracker {
public:
    // The word to keep (guest memory: only stored to, never trusted), or nullptr. Once this
    // returns, no thread touches the previous word again.
    void attach(uint32_t* word) noexcept;
    // A queue is about to sleep until a doorbell: asks for kicks, then a full fence. The
    // caller re-checks its write pointer after this and sleeps only if it did not move.
    void sleeping() noexcept;
    // The queue that called sleeping() runs again.
    void awake() noexcept;

private:
    void store_locked(uint32_t value) noexcept;

    std::mutex mutex_;
    uint32_t* word_ = nullptr;
    uint32_t sleeping_ = 0;
};

}  // namespace xenhsa::hsa::soft

#endif
