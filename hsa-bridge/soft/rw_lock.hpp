// A shared lock that lets a waiting writer in before new readers. Kernels hold it shared
// for one workgroup at a time, continuously; std::shared_mutex (glibc prefers readers)
// could starve the backend's unmap behind them.
#ifndef XENHSA_HSA_SOFT_RW_LOCK_HPP
#define XENHSA_HSA_SOFT_RW_LOCK_HPP

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace xenhsa::hsa::soft {

class WriterFirstLock {
public:
    void lock_shared()
    {
        std::unique_lock lock(mutex_);
        readers_cv_.wait(lock, [this] { return !writer_ && writers_waiting_ == 0; });
        ++readers_;
    }

    void unlock_shared()
    {
        std::lock_guard lock(mutex_);
        if (--readers_ == 0 && writers_waiting_ != 0) {
            writers_cv_.notify_one();
        }
    }

    void lock()
    {
        std::unique_lock lock(mutex_);
        ++writers_waiting_;
        writers_cv_.wait(lock, [this] { return !writer_ && readers_ == 0; });
        --writers_waiting_;
        writer_ = true;
    }

    void unlock()
    {
        std::lock_guard lock(mutex_);
        writer_ = false;
        if (writers_waiting_ != 0) {
            writers_cv_.notify_one();
        } else {
            readers_cv_.notify_all();
        }
    }

private:
    std::mutex mutex_;
    std::condition_variable readers_cv_;
    std::condition_variable writers_cv_;
    uint32_t readers_ = 0;
    uint32_t writers_waiting_ = 0;
    bool writer_ = false;
};

}  // namespace xenhsa::hsa::soft

#endif
