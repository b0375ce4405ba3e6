#include <algorithm>
#include <cerrno>
#include <cstring>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/gpu_memory.hpp>

namespace xenhsa::frontend::aql {

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
        return errno_code(EINVAL);
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
    auto pinned = memory.pin_and_map(client, node);
    if (pinned || status_of(pinned.error()) != XENHSA_STATUS_UNSUPPORTED || memory.pin_ != 0) {
        return pinned ? Result<GpuMemory>(std::move(memory)) : undo(pinned.error());
    }
    // The backend's kernel cannot pin grant mappings: take its pages, lent.
    if (auto r = memory.release(client); !r) {
        return r.error();
    }
    auto lent = client.lend(static_cast<uint32_t>(pages), true);
    if (!lent) {
        return lent.error();
    }
    memory.lent_ = std::move(lent.value());
    if (auto r = memory.pin_and_map(client, node); !r) {
        return undo(r.error());
    }
    return memory;
}

Result<void> GpuMemory::pin_and_map(Client& client, uint32_t node) {
    auto pin = client.pin(va(), size(), 0);
    if (!pin) {
        return pin.error();
    }
    pin_ = pin.value();
    auto gpu = client.map_to_gpu(pin_, uint64_t{1} << node, 0);
    if (!gpu) {
        return gpu.error();
    }
    gpu_mapped_ = true;
    return boost::outcome_v2::success();
}

Result<std::byte*> GpuMemory::carve(std::size_t bytes, std::size_t align) {
    if (align == 0 || (align & (align - 1)) != 0) {
        return errno_code(EINVAL);
    }
    const std::size_t at = (used_ + align - 1) & ~(align - 1);
    if (at < used_ || at > size() || size() - at < bytes) {
        return errno_code(ENOMEM);
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
    if (lent_.handle != 0) {
        if (auto r = client.unmap(lent_); !r) {
            return r;
        }
        lent_ = LentBuffer{};
    }
    buffer_.reset();
    used_ = 0;
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::frontend::aql
