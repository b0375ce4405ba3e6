// The address space's lock: read-mostly, writer first. Readers (every GPU access: a
// kernarg fetch, a signal, a chunk of workgroups) take no mutex: they enter and leave an
// atomic count. A writer (unmap, revoke, any change of the space) raises a flag that
// turns new readers away, then waits for the count to drain: it waits for the accesses in
// flight and for no later ones, so kernels that take the lock shared again and again
// cannot starve it. Writers queue on a mutex among themselves. Waits on either side spin
// for a short, bounded time, then sleep on the atomic (a futex).
#ifndef XENHSA_HSA_SOFT_RW_LOCK_HPP
#define XENHSA_HSA_SOFT_RW_LOCK_HPP

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "idle_wait.hpp"

namespace xenhsa::hsa::soft {

class WriterFirstLock {
public:
    void lock_shared() noexcept {
        for (;;) {
            // seq_cst on both sides (here and in lock()): either this reader sees the
            // writer's flag, or the writer sees this reader in the count.
            readers_.fetch_add(1, std::memory_order_seq_cst);
            if (writer_.load(std::memory_order_seq_cst) == 0) {
                return;
            }
            leave();
            if (!spin_for(kSpin, [this] { return writer_.load(std::memory_order_acquire) == 0; })) {
                writer_.wait(1, std::memory_order_acquire);
            }
        }
    }

    void unlock_shared() noexcept { leave(); }

    void lock() {
        writers_.lock();
        writer_.store(1, std::memory_order_seq_cst);
        for (uint32_t n = readers_.load(std::memory_order_seq_cst); n != 0;
             n = readers_.load(std::memory_order_seq_cst)) {
            if (!spin_for(kSpin,
                          [this] { return readers_.load(std::memory_order_acquire) == 0; })) {
                readers_.wait(n, std::memory_order_acquire);
            }
        }
    }

    void unlock() noexcept {
        writer_.store(0, std::memory_order_seq_cst);
        writer_.notify_all();
        writers_.unlock();
    }

    // A writer waits (or holds the lock): a long reader should let go and take it again.
    [[nodiscard]] bool writer_waiting() const noexcept {
        return writer_.load(std::memory_order_relaxed) != 0;
    }

private:
    static constexpr std::chrono::microseconds kSpin{20};

    void leave() noexcept {
        if (readers_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
            writer_.load(std::memory_order_seq_cst) != 0) {
            readers_.notify_all();
        }
    }

    alignas(64) std::atomic<uint32_t> readers_{0};
    alignas(64) std::atomic<uint32_t> writer_{0};  // 1 while a writer waits or holds
    std::mutex writers_;
};

}  // namespace xenhsa::hsa::soft

#endif
