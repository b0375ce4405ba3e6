#include "kick_tracker.hpp"

namespace xenhsa::hsa::soft {

void KickTracker::attach(uint32_t* word) noexcept {
    std::lock_guard lock(mutex_);
    word_ = word;
    store_locked(sleeping_ != 0 ? 1 : 0);
}

void KickTracker::sleeping() noexcept {
    std::lock_guard lock(mutex_);
    if (sleeping_++ == 0) {
        store_locked(1);
    }
}

void KickTracker::awake() noexcept {
    std::lock_guard lock(mutex_);
    if (sleeping_ != 0 && --sleeping_ == 0) {
        store_locked(0);
    }
}

// Under the mutex, so stores from queues going to sleep and waking up land in the order
// of the count they reflect.
void KickTracker::store_locked(uint32_t value) noexcept {
    if (word_ != nullptr) {
        __atomic_store_n(word_, value, __ATOMIC_RELAXED);
    }
    // Pairs with the producer's fence between its doorbell store and its load of the word:
    // either it sees 1 and kicks, or the sleeper's re-check sees its write pointer.
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

}  // namespace xenhsa::hsa::soft
