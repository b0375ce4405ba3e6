#include "worker_pool.hpp"

#include <algorithm>
#include <new>
#include <system_error>

namespace xenhsa::hsa::soft {

PoolTurn::PoolTurn(const WorkerPool& pool) noexcept
    : pool_(pool), start_(std::chrono::steady_clock::now()) {}

bool PoolTurn::over() const noexcept {
    return pool_.tasks_waiting() && std::chrono::steady_clock::now() - start_ >= pool_.slice();
}

WorkerPool::~WorkerPool() {
    std::vector<std::jthread> threads;
    {
        const std::lock_guard lock(mutex_);
        threads.swap(threads_);
    }
    for (auto& thread : threads) {
        thread.request_stop();
    }
    cv_.notify_all();
    threads.clear();
}

uint32_t WorkerPool::started() const {
    const std::lock_guard lock(mutex_);
    return static_cast<uint32_t>(threads_.size());
}

void WorkerPool::start_locked() {
    while (threads_.size() < size_) {
        try {
            threads_.emplace_back([this](std::stop_token stop) { work(stop); });
        } catch (const std::system_error&) {
            if (threads_.empty()) {
                throw;
            }
            return;  // fewer workers for now; the next task tries again
        }
    }
}

void WorkerPool::submit(const std::shared_ptr<PoolTask>& task, uint32_t copies) {
    copies = std::clamp<uint32_t>(copies, 1, size_);
    {
        const std::lock_guard lock(mutex_);
        start_locked();
        tasks_.insert(tasks_.end(), copies, task);
        queued_.store(tasks_.size(), std::memory_order_relaxed);
    }
    if (copies == 1) {
        cv_.notify_one();
    } else {
        cv_.notify_all();
    }
}

void WorkerPool::work(std::stop_token stop) {
    for (;;) {
        std::shared_ptr<PoolTask> task;
        {
            std::unique_lock lock(mutex_);
            if (!cv_.wait(lock, stop, [this] { return !tasks_.empty(); })) {
                return;
            }
            task = std::move(tasks_.front());
            tasks_.pop_front();
            queued_.store(tasks_.size(), std::memory_order_relaxed);
        }
        while (task->run(PoolTurn(*this))) {
            requeued_.fetch_add(1, std::memory_order_relaxed);
            try {
                std::lock_guard lock(mutex_);
                tasks_.push_back(task);
                queued_.store(tasks_.size(), std::memory_order_relaxed);
                cv_.notify_one();
                break;
            } catch (const std::bad_alloc&) {
                // no room to queue it again: this worker goes on with it
            }
        }
    }
}

}  // namespace xenhsa::hsa::soft
