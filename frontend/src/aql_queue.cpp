#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <xenhsa/frontend/aql_queue.hpp>
#include <xenhsa/frontend/errors.hpp>

namespace xenhsa::frontend::aql {

namespace {

std::error_code sys_error(int e) { return {e, std::generic_category()}; }

}  // namespace

Result<std::optional<uint32_t>> find_gpu_node(Client& client) {
    auto system = client.query_system();
    if (!system) {
        return system.error();
    }
    const uint32_t nodes = std::min<uint32_t>(system.value().num_nodes, XENHSA_QUERY_MAX_NODES);
    for (uint32_t n = 0; n < nodes; ++n) {
        auto props = client.query_node(n);
        if (!props) {
            return props.error();
        }
        if (props.value().num_fcompute_cores != 0) {
            return std::optional<uint32_t>(n);
        }
    }
    return std::optional<uint32_t>{};
}

Result<GpuMemory> GpuMemory::create(Client& client, std::size_t pages, uint32_t node) {
    if (node >= 64) {
        return sys_error(EINVAL);
    }
    GpuMemory memory;
    auto buffer = client.allocate(pages, true);
    if (!buffer) {
        return buffer.error();
    }
    memory.buffer_ = std::move(buffer.value());
    auto undo = [&](std::error_code err) -> std::error_code {
        (void)memory.release(client);
        return err;
    };
    auto map = client.map(memory.buffer_, true);
    if (!map) {
        return undo(map.error());
    }
    memory.map_ = map.value();
    auto pin = client.pin(memory.va(), memory.size(), 0);
    if (!pin) {
        return undo(pin.error());
    }
    memory.pin_ = pin.value();
    auto gpu = client.map_to_gpu(memory.pin_, uint64_t{1} << node, 0);
    if (!gpu) {
        return undo(gpu.error());
    }
    memory.gpu_mapped_ = true;
    return memory;
}

Result<std::byte*> GpuMemory::carve(std::size_t bytes, std::size_t align) {
    if (align == 0 || (align & (align - 1)) != 0) {
        return sys_error(EINVAL);
    }
    const std::size_t at = (used_ + align - 1) & ~(align - 1);
    if (at < used_ || at > size() || size() - at < bytes) {
        return sys_error(ENOMEM);
    }
    used_ = at + bytes;
    std::memset(data() + at, 0, bytes);
    return data() + at;
}

Result<void> GpuMemory::release(Client& client) {
    if (gpu_mapped_) {
        if (auto r = client.unmap_from_gpu(pin_); !r) {
            return r;
        }
        gpu_mapped_ = false;
    }
    if (pin_ != 0) {
        if (auto r = client.unpin(pin_); !r) {
            return r;
        }
        pin_ = 0;
    }
    if (map_ != 0) {
        if (auto r = client.unmap(map_); !r) {
            return r;
        }
        map_ = 0;
    }
    buffer_.reset();
    used_ = 0;
    return boost::outcome_v2::success();
}

Result<AqlQueue> AqlQueue::create(Client& client, const QueueOptions& options) {
    const uint64_t ring_size = uint64_t{options.packets} * kPacketSize;
    if (ring_size < XENHSA_QUEUE_RING_MIN || ring_size > XENHSA_QUEUE_RING_MAX ||
        (options.packets & (options.packets - 1)) != 0) {
        return sys_error(EINVAL);
    }
    AqlQueue queue;
    queue.client_ = &client;
    queue.packets_ = options.packets;
    // The ring first (page aligned), the read and write pointers on the page after it.
    auto memory = GpuMemory::create(client, ring_size / XENHSA_PAGE_SIZE + 1, options.node);
    if (!memory) {
        return memory.error();
    }
    queue.memory_ = std::move(memory.value());
    auto ring = queue.memory_.carve(ring_size, XENHSA_PAGE_SIZE);
    auto pointers = queue.memory_.carve(128, 64);
    if (!ring || !pointers) {
        (void)queue.memory_.release(client);
        return sys_error(ENOMEM);
    }
    for (uint32_t i = 0; i < options.packets; ++i) {
        invalidate(ring.value() + std::size_t{i} * kPacketSize);
    }
    queue.rptr_ = reinterpret_cast<uint64_t*>(pointers.value());
    queue.wptr_ = reinterpret_cast<uint64_t*>(pointers.value() + 64);
    __atomic_store_n(queue.rptr_, uint64_t{0}, __ATOMIC_RELEASE);
    __atomic_store_n(queue.wptr_, uint64_t{0}, __ATOMIC_RELEASE);

    const xenhsa_queue_create_req req{options.node,
                                      XENHSA_QUEUE_COMPUTE_AQL,
                                      options.percentage,
                                      options.priority,
                                      queue.memory_.va(),
                                      ring_size,
                                      reinterpret_cast<uintptr_t>(queue.rptr_),
                                      reinterpret_cast<uintptr_t>(queue.wptr_),
                                      options.error_event};
    auto created = client.queue_create(req);
    if (!created) {
        (void)queue.memory_.release(client);
        return created.error();
    }
    queue.handle_ = created.value().handle;
    queue.doorbell_ = created.value().doorbell_index;
    return queue;
}

uint64_t AqlQueue::read_index() const noexcept {
    return rptr_ == nullptr ? 0 : __atomic_load_n(rptr_, __ATOMIC_ACQUIRE);
}

void* AqlQueue::slot(uint64_t index) const noexcept {
    return memory_.data() + (index & (packets_ - 1)) * kPacketSize;
}

Result<uint64_t> AqlQueue::reserve(std::chrono::milliseconds timeout) {
    if (client_ == nullptr || handle_ == 0) {
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
            return sys_error(ETIMEDOUT);
        }
        if (auto alive = client_->link().check_backend(); !alive) {
            return alive.error();
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

Result<void> AqlQueue::submit(uint64_t index) {
    if (client_ == nullptr || handle_ == 0) {
        return Errc::not_connected;
    }
    const uint64_t id = index + 1;
    uint64_t current = __atomic_load_n(wptr_, __ATOMIC_RELAXED);
    if (id > current) {
        __atomic_store_n(wptr_, id, __ATOMIC_RELEASE);
        current = id;
    }
    Link& link = client_->link();
    if (xenhsa_doorbell_ring(&link.doorbell_page(), doorbell_, current) != 0) {
        return link.kick();
    }
    return boost::outcome_v2::success();
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

Result<void> AqlQueue::destroy() {
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

}  // namespace xenhsa::frontend::aql
