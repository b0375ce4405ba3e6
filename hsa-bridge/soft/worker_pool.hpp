// The agent's compute units: a fixed number of threads, shared by all its queues, that run
// workgroups. A task is handed to several workers at once; each takes workgroups from it
// until none are left, or until its turn is over: after `slice`, when another task waits,
// the worker puts the task back behind the waiting ones and takes the next, so that one
// dispatch of 2^32 workgroups does not hold the workers from every other queue's.
//
// The threads start with the first task, never with the pool: a backend worker confines
// itself (seccomp, no_new_privs, capabilities, all per thread) after it made its agent and
// before it serves, and a thread that existed before that would run unconfined.
#ifndef XENHSA_HSA_SOFT_WORKER_POOL_HPP
#define XENHSA_HSA_SOFT_WORKER_POOL_HPP

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace xenhsa::hsa::soft {

class WorkerPool;

// A worker's turn at a task.
class PoolTurn {
public:
    explicit PoolTurn(const WorkerPool& pool) noexcept;
    // The slice has passed and another task waits: the task should return true.
    [[nodiscard]] bool over() const noexcept;

private:
    const WorkerPool& pool_;
    std::chrono::steady_clock::time_point start_;
};

class PoolTask {
public:
    virtual ~PoolTask() = default;
    // Runs on a worker, possibly on several at once, until nothing is left for it
    // (false) or `turn` is over (true: the pool queues it again, behind the others).
    virtual bool run(const PoolTurn& turn) noexcept = 0;
};

class WorkerPool {
public:
    explicit WorkerPool(uint32_t threads,
                        std::chrono::microseconds slice = std::chrono::milliseconds(2)) noexcept
        : size_(threads), slice_(slice) {}
    ~WorkerPool();  // drops tasks not started and joins the workers
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // Hands `task` to `copies` workers (at most size()), starting the workers not yet
    // running. Throws std::system_error only when not one worker runs (nothing queued).
    void submit(const std::shared_ptr<PoolTask>& task, uint32_t copies);
    [[nodiscard]] uint32_t size() const noexcept { return size_; }
    // Workers running now (size() once a task came and every thread could start).
    [[nodiscard]] uint32_t started() const;
    [[nodiscard]] std::chrono::microseconds slice() const noexcept { return slice_; }
    // Whether a task waits for a worker now.
    [[nodiscard]] bool tasks_waiting() const noexcept {
        return queued_.load(std::memory_order_relaxed) != 0;
    }
    // Turns that ended because another task waited (stats and tests).
    [[nodiscard]] uint64_t requeued() const noexcept {
        return requeued_.load(std::memory_order_relaxed);
    }

private:
    void start_locked();
    void work(std::stop_token stop);

    const uint32_t size_;
    const std::chrono::microseconds slice_;
    mutable std::mutex mutex_;
    std::condition_variable_any cv_;
    std::deque<std::shared_ptr<PoolTask>> tasks_;
    std::atomic<std::size_t> queued_{0};  // tasks_.size(), read without the mutex
    std::atomic<uint64_t> requeued_{0};
    std::vector<std::jthread> threads_;  // last: joined before the rest goes
};

}  // namespace xenhsa::hsa::soft

#endif
