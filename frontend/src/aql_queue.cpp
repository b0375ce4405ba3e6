#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <xenhsa/frontend/aql_queue.hpp>
#include <xenhsa/frontend/errors.hpp>

namespace xenhsa::frontend::aql {

Result<AqlQueue> AqlQueue::create(Client& client, const QueueOptions& options) {
    if ((options.packets & (options.packets - 1)) != 0) {
        return errno_code(EINVAL);
    }
    QueueSpec spec;
    spec.type = XENHSA_QUEUE_COMPUTE_AQL;
    spec.node = options.node;
    spec.ring_bytes = uint64_t{options.packets} * kPacketSize;
    spec.priority = options.priority;
    spec.percentage = options.percentage;
    spec.error_event = options.error_event;
    auto queue = QueueMemory::create(client, spec);
    if (!queue) {
        return queue.error();
    }
    AqlQueue aql;
    aql.queue_ = std::move(queue.value());
    aql.packets_ = options.packets;
    for (uint32_t i = 0; i < options.packets; ++i) {
        invalidate(aql.slot(i));
    }
    return aql;
}

void* AqlQueue::slot(uint64_t index) const noexcept {
    return queue_.ring() + (index & (packets_ - 1)) * kPacketSize;
}

Result<uint64_t> AqlQueue::reserve(std::chrono::milliseconds timeout) {
    if (queue_.handle() == 0) {
        return Errc::not_connected;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        // The packet processor writes the read index; a value past what we wrote only
        // means it is not to be trusted, so it does not free slots.
        const uint64_t read = read_index();
        const uint64_t done = read <= next_ ? read : 0;
        if (next_ - done < packets_) {
            // A consumed slot may still show its old header: mark it free before the
            // body is written, so no mix of old and new is ever a valid packet.
            invalidate(slot(next_));
            return next_++;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            return errno_code(ETIMEDOUT);
        }
        if (auto alive = queue_.check_backend(); !alive) {
            return alive.error();
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

Result<uint64_t> AqlQueue::dispatch(const DispatchSpec& spec, std::chrono::milliseconds timeout) {
    auto index = reserve(timeout);
    if (!index) {
        return index;
    }
    write_dispatch(slot(index.value()), spec);
    if (auto s = submit(index.value()); !s) {
        return s.error();
    }
    return index;
}

Result<uint64_t> AqlQueue::barrier_and(const BarrierSpec& spec, std::chrono::milliseconds timeout) {
    auto index = reserve(timeout);
    if (!index) {
        return index;
    }
    write_barrier_and(slot(index.value()), spec);
    if (auto s = submit(index.value()); !s) {
        return s.error();
    }
    return index;
}

Result<uint64_t> AqlQueue::barrier_or(const BarrierSpec& spec, std::chrono::milliseconds timeout) {
    auto index = reserve(timeout);
    if (!index) {
        return index;
    }
    write_barrier_or(slot(index.value()), spec);
    if (auto s = submit(index.value()); !s) {
        return s.error();
    }
    return index;
}

}  // namespace xenhsa::frontend::aql
