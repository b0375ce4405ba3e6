#include <cerrno>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/queue_memory.hpp>

namespace xenhsa::frontend {

Result<QueueMemory> QueueMemory::create(Client& client, const QueueSpec& spec) {
    const uint64_t size = spec.ring_bytes;
    if (size < XENHSA_QUEUE_RING_MIN || size > XENHSA_QUEUE_RING_MAX || (size & (size - 1)) != 0) {
        return std::error_code(EINVAL, std::generic_category());
    }
    QueueMemory queue;
    queue.client_ = &client;
    queue.ring_bytes_ = size;
    auto memory = aql::GpuMemory::create(client, size / XENHSA_PAGE_SIZE + 1, spec.node);
    if (!memory) {
        return memory.error();
    }
    queue.memory_ = std::move(memory.value());
    auto ring = queue.memory_.carve(size, XENHSA_PAGE_SIZE);
    auto pointers = queue.memory_.carve(128, 64);
    if (!ring || !pointers) {
        (void)queue.memory_.release(client);
        return std::error_code(ENOMEM, std::generic_category());
    }
    queue.ring_ = ring.value();
    queue.rptr_ = reinterpret_cast<uint64_t*>(pointers.value());
    queue.wptr_ = reinterpret_cast<uint64_t*>(pointers.value() + 64);
    const xenhsa_queue_create_req req{spec.node,
                                      spec.type,
                                      spec.percentage,
                                      spec.priority,
                                      queue.memory_.va(),
                                      size,
                                      reinterpret_cast<uintptr_t>(queue.rptr_),
                                      reinterpret_cast<uintptr_t>(queue.wptr_),
                                      spec.error_event};
    auto created = client.queue_create(req);
    if (!created) {
        (void)queue.memory_.release(client);
        return created.error();
    }
    queue.handle_ = created.value().handle;
    queue.doorbell_ = created.value().doorbell_index;
    return queue;
}

uint64_t QueueMemory::read_index() const noexcept {
    return rptr_ == nullptr ? 0 : __atomic_load_n(rptr_, __ATOMIC_ACQUIRE);
}

Result<void> QueueMemory::publish(uint64_t index) {
    if (client_ == nullptr || handle_ == 0) {
        return Errc::not_connected;
    }
    uint64_t current = __atomic_load_n(wptr_, __ATOMIC_RELAXED);
    if (index > current) {
        __atomic_store_n(wptr_, index, __ATOMIC_RELEASE);
        current = index;
    }
    Link& link = client_->link();
    if (xenhsa_doorbell_ring(&link.doorbell_page(), doorbell_, current) != 0) {
        return link.kick();
    }
    return boost::outcome_v2::success();
}

Result<void> QueueMemory::check_backend() {
    if (client_ == nullptr) {
        return Errc::not_connected;
    }
    return client_->link().check_backend();
}

Result<void> QueueMemory::destroy() {
    if (client_ == nullptr) {
        return boost::outcome_v2::success();
    }
    if (handle_ != 0) {
        if (auto r = client_->queue_destroy(handle_); !r) {
            return r;
        }
        handle_ = 0;
    }
    auto released = memory_.release(*client_);
    if (released) {
        client_ = nullptr;
    }
    return released;
}

}  // namespace xenhsa::frontend
