// What the agent holds of a queue of either kind (AqlQueue, SdmaQueue): a processor
// thread over a ring in guest memory.
#ifndef XENHSA_HSA_SOFT_QUEUE_HPP
#define XENHSA_HSA_SOFT_QUEUE_HPP

#include "address_space.hpp"

namespace xenhsa::hsa::soft {

class Queue {
public:
    virtual ~Queue() = default;
    Queue(const Queue&) = delete;
    Queue& operator=(const Queue&) = delete;
    Queue(Queue&&) = delete;
    Queue& operator=(Queue&&) = delete;

    // Starts the processor (not for an inactive, 0% queue). Throws std::system_error when
    // no thread can be made.
    virtual void start() = 0;
    // The guest rang the queue's doorbell: a hint that its write pointer moved.
    virtual void doorbell() noexcept = 0;
    // Stops processing and joins (from the queue's own thread, i.e. its FaultHandler:
    // detaches instead). Idempotent. Nothing of the queue touches memory afterwards.
    virtual void stop() noexcept = 0;
    [[nodiscard]] virtual const QueueMemory& memory() const noexcept = 0;

protected:
    Queue() = default;
};

}  // namespace xenhsa::hsa::soft

#endif
