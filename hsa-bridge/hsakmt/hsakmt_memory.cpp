// Memory at the guest's VA, on the adapter's own /dev/kfd descriptor (kfd_fd.hpp; why, and
// which dom0 each path serves: hsakmt_device.hpp).
#include <spdlog/spdlog.h>
#include <xenhsa/proto/memory.h>

#include <vector>

#include "hsakmt_device.hpp"

namespace xenhsa::hsa::kmt {

Result<std::vector<uint32_t>> HsakmtDevice::gpu_ids(uint64_t node_mask) const {
    std::vector<uint32_t> ids;
    for (const auto& [node, gpu_id] : gpus_) {
        if (node < 64 && (node_mask >> node & 1u) != 0) {
            ids.push_back(gpu_id);
            node_mask &= ~(uint64_t{1} << node);
        }
    }
    if (ids.empty() || node_mask != 0) {
        return errc(std::errc::invalid_argument);  // a CPU node, or none
    }
    return ids;
}

Result<uint32_t> HsakmtDevice::gpu_of(uint32_t node) const {
    auto it = gpus_.find(node);
    if (it == gpus_.end()) {
        return errc(std::errc::invalid_argument);
    }
    return it->second;
}

Result<void> HsakmtDevice::alloc(uint32_t node, Va va, uint64_t size, uint32_t flags) {
    const bool device_local = (flags & XENHSA_ALLOC_DEVICE_LOCAL) != 0;
    // System memory is GTT of the first GPU; VRAM is the node's. Either at the guest's VA
    // (the worker holds a PROT_NONE reservation there; the kernel needs no CPU mapping).
    auto gpu = device_local ? gpu_of(node) : gpu_of(gpus_.begin()->first);
    if (!gpu) {
        return gpu.error();
    }
    BoFlags bo;
    bo.kind = device_local ? BoKind::vram : BoKind::gtt;
    bo.writable = (flags & XENHSA_ALLOC_READ_ONLY) == 0;
    bo.executable = (flags & XENHSA_ALLOC_EXECUTABLE) != 0;
    bo.coherent = (flags & XENHSA_ALLOC_COARSE_GRAIN) == 0;
    bo.uncached = (flags & XENHSA_ALLOC_UNCACHED) != 0;
    auto handle = kfd_.alloc(gpu.value(), va, size, bo);
    if (!handle) {
        return handle.error();
    }
    std::lock_guard lock(mutex_);
    memory_[va] = Memory{size, handle.value(), false, {}};
    return boost::outcome_v2::success();
}

Result<void> HsakmtDevice::free(Va va) { return release(va, false); }

Result<void> HsakmtDevice::register_user(Va va, uint64_t size, bool read_only) {
    BoFlags bo;
    bo.kind = BoKind::userptr;
    bo.writable = !read_only;
    bo.executable = true;
    auto handle = kfd_.alloc(gpus_.begin()->second, va, size, bo);
    if (!handle) {
        if (handle.error() == std::errc::bad_address && !told_unpinnable_.exchange(true)) {
            // hmm_range_fault refused the pages: in a PV dom0 gntdev maps grants with
            // special PTEs (docs/real-hardware.md). Guest memory the GPU reaches must be
            // LEND pages there, which are the worker's own.
            spdlog::warn(
                "hsakmt: the kernel cannot pin {:#x}+{:#x} for the GPU (EFAULT: a grant "
                "mapping in a PV dom0?); the guest is told UNSUPPORTED and uses LENDs",
                va, size);
        }
        return handle.error();
    }
    std::lock_guard lock(mutex_);
    memory_[va] = Memory{size, handle.value(), true, {}};
    return boost::outcome_v2::success();
}

Result<void> HsakmtDevice::deregister_user(Va va) { return release(va, true); }

Result<void> HsakmtDevice::release(Va va, bool user) {
    uint64_t handle = 0;
    {
        std::lock_guard lock(mutex_);
        auto it = memory_.find(va);
        if (it == memory_.end() || it->second.user != user) {
            return errc(std::errc::no_such_file_or_directory);
        }
        if (!it->second.mapped_to.empty()) {
            return errc(std::errc::device_or_resource_busy);
        }
        handle = it->second.handle;
    }
    if (auto r = kfd_.free(handle); !r) {
        return r.error();
    }
    std::lock_guard lock(mutex_);
    memory_.erase(va);
    return boost::outcome_v2::success();
}

// KFD has no read-only mapping of a writable BO: a read-only PIN is a read-only BO from
// registration on (register_user), so read_only here adds nothing.
Result<void> HsakmtDevice::map_to_gpu(Va va, uint64_t node_mask, bool /*read_only*/) {
    auto ids = gpu_ids(node_mask);
    if (!ids) {
        return ids.error();
    }
    uint64_t handle = 0;
    {
        std::lock_guard lock(mutex_);
        auto it = memory_.find(va);
        if (it == memory_.end()) {
            return errc(std::errc::no_such_file_or_directory);
        }
        if (!it->second.mapped_to.empty()) {
            return errc(std::errc::device_or_resource_busy);
        }
        handle = it->second.handle;
    }
    if (auto r = kfd_.map(handle, ids.value()); !r) {
        return r.error();
    }
    std::lock_guard lock(mutex_);
    memory_[va].mapped_to = std::move(ids).value();
    return boost::outcome_v2::success();
}

Result<void> HsakmtDevice::unmap_from_gpu(Va va) {
    uint64_t handle = 0;
    std::vector<uint32_t> ids;
    {
        std::lock_guard lock(mutex_);
        auto it = memory_.find(va);
        if (it == memory_.end() || it->second.mapped_to.empty()) {
            return errc(std::errc::no_such_file_or_directory);
        }
        handle = it->second.handle;
        ids = it->second.mapped_to;
    }
    if (auto r = kfd_.unmap(handle, ids); !r) {
        return r.error();  // EBUSY from kernels >= 6.12 while a queue uses it
    }
    std::lock_guard lock(mutex_);
    memory_[va].mapped_to.clear();
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::hsa::kmt
