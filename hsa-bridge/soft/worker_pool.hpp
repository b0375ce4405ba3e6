// The agent's compute units: a fixed set of threads, shared by all its queues, that run
// workgroups. A task is handed to several workers at once; each takes workgroups from it
// until none are left.
#ifndef XENHSA_HSA_SOFT_WORKER_POOL_HPP
#define XENHSA_HSA_SOFT_WORKER_POOL_HPP

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace xenhsa::hsa::soft {

class PoolTask {
public:
    virtual ~PoolTask() = default;
    // Runs on a worker, possibly on several at once.
    virtual void run() noexcept = 0;
};

class WorkerPool {
public:
    explicit WorkerPool(uint32_t threads);
    ~WorkerPool();  // drops tasks not started and joins the workers
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // Hands `task` to `copies` workers (at most size()).
    void submit(const std::shared_ptr<PoolTask>& task, uint32_t copies);
    [[nodiscard]] uint32_t size() const noexcept { return static_cast<uint32_t>(threads_.size()); }

private:
    void work(std::stop_token stop);

    std::mutex mutex_;
    std::condition_variable_any cv_;
    std::deque<std::shared_ptr<PoolTask>> tasks_;
    std::vector<std::jthread> threads_;  // last: joined before the rest goes
};

}  // namespace xenhsa::hsa::soft

#endif
