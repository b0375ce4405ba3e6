#include "worker_pool.hpp"

#include <algorithm>

namespace xenhsa::hsa::soft {

WorkerPool::WorkerPool(uint32_t threads) {
    threads_.reserve(threads);
    for (uint32_t i = 0; i < threads; ++i) {
        threads_.emplace_back([this](std::stop_token stop) { work(stop); });
    }
}

WorkerPool::~WorkerPool() {
    for (auto& thread : threads_) {
        thread.request_stop();
    }
    cv_.notify_all();
    threads_.clear();
}

void WorkerPool::submit(const std::shared_ptr<PoolTask>& task, uint32_t copies) {
    copies = std::clamp<uint32_t>(copies, 1, size());
    {
        std::lock_guard lock(mutex_);
        tasks_.insert(tasks_.end(), copies, task);
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
        }
        task->run();
    }
}

}  // namespace xenhsa::hsa::soft
