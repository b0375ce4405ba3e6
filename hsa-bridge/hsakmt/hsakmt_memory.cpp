// Memory over the thunk: allocation, registration, GPU mappings (paths and caveats:
// hsakmt_device.hpp).
#include <spdlog/spdlog.h>
#include <xenhsa/proto/memory.h>

#include <array>

#include "hsakmt_device.hpp"
#include "kmt_call.hpp"

namespace xenhsa::hsa::kmt {

namespace {

void* ptr(Va va) { return reinterpret_cast<void*>(va); }

}  // namespace

Result<void> HsakmtDevice::alloc(uint32_t node, Va va, uint64_t size, uint32_t flags) {
    const bool device_local = (flags & XENHSA_ALLOC_DEVICE_LOCAL) != 0;
    HsaMemFlags mem{};
    mem.ui32.FixedAddress = 1;  // at the guest's VA: xenhsa mirrors
    mem.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    mem.ui32.NonPaged = 1;
    mem.ui32.HostAccess = device_local ? 0 : 1;
    mem.ui32.NoSubstitute = device_local ? 1 : 0;
    mem.ui32.ExecuteAccess = (flags & XENHSA_ALLOC_EXECUTABLE) != 0 ? 1 : 0;
    mem.ui32.CoarseGrain = (flags & XENHSA_ALLOC_COARSE_GRAIN) != 0 ? 1 : 0;
    mem.ui32.ReadOnly = (flags & XENHSA_ALLOC_READ_ONLY) != 0 ? 1 : 0;
    if ((flags & XENHSA_ALLOC_UNCACHED) != 0) {
        mem.ui32.Uncached = 1;
        mem.ui32.CachePolicy = HSA_CACHING_NONCACHED;
    }
    void* address = ptr(va);
    if (auto e =
            call([&] { return hsaKmtAllocMemory(device_local ? node : 0, size, mem, &address); })) {
        return e;
    }
    if (reinterpret_cast<Va>(address) != va) {
        hsaKmtFreeMemory(address, size);
        spdlog::error("hsakmt: FixedAddress allocation landed at {} instead of {:#x}", address, va);
        return errc(std::errc::bad_address);
    }
    std::lock_guard lock(mutex_);
    memory_[va] = Memory{size, false, false};
    return boost::outcome_v2::success();
}

Result<void> HsakmtDevice::free(Va va) {
    std::unique_lock lock(mutex_);
    auto it = memory_.find(va);
    if (it == memory_.end() || it->second.user) {
        return errc(std::errc::no_such_file_or_directory);
    }
    if (it->second.mapped) {
        return errc(std::errc::device_or_resource_busy);
    }
    const uint64_t size = it->second.size;
    lock.unlock();
    if (auto e = call([&] { return hsaKmtFreeMemory(ptr(va), size); })) {
        return e;
    }
    lock.lock();
    memory_.erase(va);
    return boost::outcome_v2::success();
}

Result<void> HsakmtDevice::register_user(Va va, uint64_t size, bool read_only) {
    HsaMemFlags mem{};
    mem.ui32.HostAccess = 1;  // the thunk wants HostAccess and pageable memory for userptr
    mem.ui32.NonPaged = 0;
    mem.ui32.ReadOnly = read_only ? 1 : 0;
    mem.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    if (auto e = call([&] { return hsaKmtRegisterMemoryWithFlags(ptr(va), size, mem); })) {
        // Not pinnable through userptr (a PV dom0's grant mapping): the dma-buf path.
        if (e == std::errc::bad_address || e == std::errc::operation_not_permitted ||
            e == std::errc::invalid_argument) {
            spdlog::warn(
                "hsakmt: userptr registration of {:#x}+{:#x} refused ({}); trying "
                "the grant dma-buf path",
                va, size, e.message());
            return register_grant_dmabuf(va, size, read_only);
        }
        return e;
    }
    std::lock_guard lock(mutex_);
    memory_[va] = Memory{size, true, false};
    return boost::outcome_v2::success();
}

// TODO(issue #5): export the MAP's grant refs as a dma-buf (IOCTL_GNTDEV_DMABUF_EXP_FROM_REFS)
// and import it with hsaKmtRegisterGraphicsHandleToNodes. Needs the grant refs, which the
// seam does not pass yet, and a thunk whose dma-buf import accepts foreign dma-bufs.
Result<void> HsakmtDevice::register_grant_dmabuf(Va va, uint64_t size, bool) {
    spdlog::error("hsakmt: grant dma-buf import of {:#x}+{:#x} is not implemented", va, size);
    return errc(std::errc::operation_not_supported);
}

Result<void> HsakmtDevice::deregister_user(Va va) {
    {
        std::lock_guard lock(mutex_);
        auto it = memory_.find(va);
        if (it == memory_.end() || !it->second.user) {
            return errc(std::errc::no_such_file_or_directory);
        }
        if (it->second.mapped) {
            return errc(std::errc::device_or_resource_busy);
        }
    }
    if (auto e = call([&] { return hsaKmtDeregisterMemory(ptr(va)); })) {
        return e;
    }
    std::lock_guard lock(mutex_);
    memory_.erase(va);
    return boost::outcome_v2::success();
}

Result<void> HsakmtDevice::map_to_gpu(Va va, uint64_t node_mask, bool read_only) {
    uint64_t size = 0;
    {
        std::lock_guard lock(mutex_);
        auto it = memory_.find(va);
        if (it == memory_.end()) {
            return errc(std::errc::no_such_file_or_directory);
        }
        if (it->second.mapped) {
            return errc(std::errc::device_or_resource_busy);
        }
        size = it->second.size;
    }
    std::array<HSAuint32, 64> nodes{};
    HSAuint64 count = 0;
    for (uint32_t n = 0; n < 64; ++n) {
        if ((node_mask >> n & 1u) != 0) {
            nodes[count++] = n;
        }
    }
    if (count == 0) {
        return errc(std::errc::invalid_argument);
    }
    HsaMemMapFlags map{};
    map.ui32.ReadOnly = read_only ? 1 : 0;
    map.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    HSAuint64 gpu_va = 0;
    if (auto e = call([&] {
            return hsaKmtMapMemoryToGPUNodes(ptr(va), size, &gpu_va, map, count, nodes.data());
        })) {
        return e;
    }
    if (gpu_va != 0 && gpu_va != va) {
        hsaKmtUnmapMemoryToGPU(ptr(va));
        spdlog::error(
            "hsakmt: GPU VA {:#x} of {:#x} breaks the mirror; this thunk maps "
            "userptr memory in its own aperture",
            gpu_va, va);
        return errc(std::errc::operation_not_supported);
    }
    std::lock_guard lock(mutex_);
    memory_[va].mapped = true;
    return boost::outcome_v2::success();
}

Result<void> HsakmtDevice::unmap_from_gpu(Va va) {
    {
        std::lock_guard lock(mutex_);
        auto it = memory_.find(va);
        if (it == memory_.end() || !it->second.mapped) {
            return errc(std::errc::no_such_file_or_directory);
        }
    }
    if (auto e = call([&] { return hsaKmtUnmapMemoryToGPU(ptr(va)); })) {
        return e;  // EBUSY from kernels >= 6.12 while a queue uses it
    }
    std::lock_guard lock(mutex_);
    memory_[va].mapped = false;
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::hsa::kmt
