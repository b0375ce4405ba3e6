// The agent's compute units: a fixed number of threads, shared by all its queues, that run
// workgroups. A task is handed to several workers at once; each takes workgroups from it
// until none are left.
//
// The threads start with the first task, never with the pool: a backend worker confines
// itself (seccomp, no_new_privs, capabilities, all per thread) after it made its agent and
// before it serves, and a thread that existed before that would run unconfined.
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
    explicit WorkerPool(uint32_t threads) noexcept : size_(threads) {}
    ~WorkerPool();  // drops tasks not started and joins the workers
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // Hands `task` to `copies` workers (at most size()), starting the workers not yet
    // running. Throws std::system_error only when not one worker runs (nothing queued).
    void submit(const std::shared_ptr<PoolTask>& task, uint32_t copies);
    [[nodiscard]] uint32_t size() const noexcept { return size_; }
    // Workers running now (size() once a task came and every thread could start).
    [[nodiscard]] uint32_t started() const;

private:
    void start_locked();
    void work(std::stop_token stop);

    const uint32_t size_;
    mutable std::mutex mutex_;
    std::condition_variable_any cv_;
    std::deque<std::shared_ptr<PoolTask>> tasks_;
    std::vector<std::jthread> threads_;  // last: joined before the rest goes
};

}  // namespace xenhsa::hsa::soft

#endif
