#include <xenhsa/backend/core/gpu_objects.hpp>

namespace xenhsa::backend::core {
namespace {

constexpr uint64_t kPointerSize = 8;

bool inside(uint64_t va, uint64_t size, uint64_t base, uint64_t base_size) noexcept {
    return va >= base && size <= base_size && va - base <= base_size - size;
}

// The three ranges a queue uses.
template <class F>
bool any_queue_range(const GpuObjects::Queue& q, F&& f) noexcept {
    return f(q.ring, q.ring_size) || f(q.rptr, kPointerSize) || f(q.wptr, kPointerSize);
}

}  // namespace

GpuObjects::Memory* GpuObjects::live_memory(Handle h) noexcept {
    auto it = memory_.find(h);
    return it != memory_.end() && !it->second.released ? &it->second : nullptr;
}

GpuObjects::Queue* GpuObjects::queue(Handle h) noexcept {
    auto it = queues_.find(h);
    return it != queues_.end() ? &it->second : nullptr;
}

bool GpuObjects::gpu_mapped_on(uint64_t va, uint64_t size, uint32_t node) const noexcept {
    for (const auto& [h, m] : memory_) {
        if (!m.released && node < 64 && (m.gpu_nodes & (uint64_t{1} << node)) != 0 &&
            inside(va, size, m.va, m.size)) {
            return true;
        }
    }
    return false;
}

bool GpuObjects::queue_touches(const Queue& q, uint64_t va, uint64_t size,
                               bool pins_only) const noexcept {
    if (any_queue_range(q, [&](uint64_t r, uint64_t rs) { return overlaps(r, rs, va, size); })) {
        return true;
    }
    for (const auto& entry : memory_) {
        const auto& m = entry.second;  // not a structured binding: the lambda captures it
        if ((pins_only && m.alloc) || !overlaps(m.va, m.size, va, size)) {
            continue;
        }
        if (any_queue_range(
                q, [&](uint64_t r, uint64_t rs) { return overlaps(r, rs, m.va, m.size); })) {
            return true;
        }
    }
    return false;
}

bool GpuObjects::range_held(uint64_t va, uint64_t size) const noexcept {
    for (const auto& [h, q] : queues_) {
        if (queue_touches(q, va, size, /*pins_only=*/false)) {
            return true;
        }
    }
    return false;
}

bool GpuObjects::queue_uses(uint64_t va, uint64_t size) const noexcept {
    for (const auto& [h, q] : queues_) {
        if (any_queue_range(q,
                            [&](uint64_t r, uint64_t rs) { return overlaps(r, rs, va, size); })) {
            return true;
        }
    }
    return false;
}

bool GpuObjects::pinned(uint64_t va, uint64_t size) const noexcept {
    for (const auto& [h, m] : memory_) {
        if (!m.alloc && !m.released && overlaps(m.va, m.size, va, size)) {
            return true;
        }
    }
    return false;
}

bool GpuObjects::held(const Memory& m) const noexcept {
    for (const auto& [h, q] : queues_) {
        if (any_queue_range(
                q, [&](uint64_t r, uint64_t rs) { return overlaps(r, rs, m.va, m.size); })) {
            return true;
        }
    }
    return false;
}

bool GpuObjects::release_memory(Handle h) noexcept {
    auto it = memory_.find(h);
    if (it == memory_.end()) {
        return true;
    }
    if (held(it->second)) {
        it->second.released = true;
        it->second.gpu_nodes = 0;
        return false;
    }
    memory_.erase(it);
    return true;
}

}  // namespace xenhsa::backend::core
