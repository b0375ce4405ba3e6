// BOs, the GPU VM and the CPU mappings of BOs (kfd_chardev.c, amdgpu_amdkfd_gpuvm.c,
// amdgpu_vm.c).
#include <linux/kfd_ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <xenhsa/hsa/soft_agent.hpp>

#include "call_log.hpp"
#include "kfd_process.hpp"
#include "machine.hpp"
#include "real_libc.hpp"

namespace xenhsa::kfd_shim {

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint32_t kTypes = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT |
                            KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL |
                            KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP;
// kfd_priv.h: the mmap offset's gpu_id (bits 61:46).
constexpr uint64_t kGpuIdOffset = uint64_t{kGpuId} << 46;
constexpr const char* kBoMemfdName = "xenhsa-kfd-shim-bo";

bool aligned(uint64_t v) { return (v & (kPage - 1)) == 0; }

const char* kind_name(uint32_t flags) {
    switch (flags & kTypes) {
        case KFD_IOC_ALLOC_MEM_FLAGS_VRAM:
            return "VRAM";
        case KFD_IOC_ALLOC_MEM_FLAGS_GTT:
            return "GTT";
        case KFD_IOC_ALLOC_MEM_FLAGS_USERPTR:
            return "USERPTR";
        case KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL:
            return "DOORBELL";
        case KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP:
            return "MMIO_REMAP";
        default:
            return "?";
    }
}

int new_memfd(uint64_t size) {
    const int fd = ::memfd_create(kBoMemfdName, MFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
        real::close(fd);
        return -1;
    }
    return fd;
}

// Device memory a USERPTR cannot pin (VM_IO / VM_PFNMAP in the kernel): device files other
// than Xen's grant devices, and the BOs the shim itself maps (VRAM, doorbells, MMIO).
bool device_mapping(const Vma& vma) {
    // Xen's grant devices map pages; shared anonymous memory shows as /dev/zero (shmem).
    if (vma.path == "/dev/xen/gntdev" || vma.path == "/dev/xen/gntalloc" ||
        vma.path.rfind("/dev/zero", 0) == 0) {
        return false;
    }
    return vma.path.rfind("/dev/", 0) == 0 ||
           vma.path.rfind(std::string("/memfd:") + kBoMemfdName, 0) == 0;
}

}  // namespace

int KfdProcess::validate_userptr(uint64_t cpu, uint64_t size, bool writable) {
    // amdgpu_ttm_tt_get_user_pages / hmm_range_fault: every page mapped by a VMA that
    // allows the access, not device memory; PV dom0: gntdev's special PTEs cannot be
    // faulted in (the issue #24 assumption, until xen-qemu says otherwise).
    uint64_t at = cpu;
    for (const Vma& vma : maps_.covering(cpu, cpu + size)) {
        if (vma.start > at || !vma.read || (writable && !vma.write) || device_mapping(vma) ||
            (options_.dom0 == DomKind::pv && is_grant_mapping(vma, options_.own_domid))) {
            return EFAULT;
        }
        at = vma.end;
    }
    return at >= cpu + size ? 0 : EFAULT;
}

int KfdProcess::place(Bo& bo) {
    // A real GPU's VRAM needs no CPU range; the emulated one reaches a BO at its GPU VA in
    // this process, so that range has to be free or a PROT_NONE reservation (the thunk's
    // aperture, the adapter's guest window).
    const auto vmas = maps_.covering(bo.va, bo.va + bo.size);
    for (const Vma& vma : vmas) {
        if (vma.read || vma.write) {
            return ENOMEM;
        }
    }
    void* at = real::mmap(reinterpret_cast<void*>(bo.va), bo.size, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_FIXED, bo.memfd, 0);
    if (at == MAP_FAILED) {
        return ENOMEM;
    }
    bo.placed = true;
    bo.reserved_before = !vmas.empty();
    return 0;
}

void KfdProcess::unplace(Bo& bo) {
    if (!bo.placed && !bo.aliased) {
        return;
    }
    void* va = reinterpret_cast<void*>(bo.va);
    if (bo.reserved_before) {
        (void)real::mmap(va, bo.size, PROT_NONE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    } else {
        (void)real::munmap(va, bo.size);
    }
    bo.placed = false;
    bo.aliased = false;
}

int KfdProcess::alloc_memory(void* arg) {
    auto& a = *static_cast<kfd_ioctl_alloc_memory_of_gpu_args*>(arg);
    const uint32_t type = a.flags & kTypes;
    const bool writable = (a.flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) != 0;
    Bo bo;
    bo.va = a.va_addr;
    bo.size = a.size;
    bo.flags = a.flags;
    int err = 0;
    const std::lock_guard lock(mutex_);
    if (a.gpu_id != kGpuId || a.size == 0 || std::popcount(type) != 1 || !aligned(a.va_addr) ||
        !aligned(a.size) ||
        (type == KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL && a.size != kDoorbellSliceBytes) ||
        (type == KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP && a.size != kPage)) {
        err = EINVAL;
    } else if (type == KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
        bo.kind = Kind::userptr;
        bo.cpu = a.mmap_offset;
        err = aligned(bo.cpu) ? validate_userptr(bo.cpu, bo.size, writable) : EINVAL;
        if (err == 0 && bo.va != bo.cpu) {
            err = alias(bo);
        }
    } else {
        bo.kind = type == KFD_IOC_ALLOC_MEM_FLAGS_VRAM       ? Kind::vram
                  : type == KFD_IOC_ALLOC_MEM_FLAGS_GTT      ? Kind::gtt
                  : type == KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL ? Kind::doorbell
                                                             : Kind::mmio;
        if (bo.kind == Kind::doorbell) {
            if (doorbell_memfd_ < 0) {
                doorbell_memfd_ = new_memfd(kDoorbellSliceBytes);
            }
            bo.memfd = doorbell_memfd_ < 0 ? -1 : real::dup(doorbell_memfd_);
        } else {
            bo.memfd = new_memfd(bo.size);
        }
        err = bo.memfd < 0 ? ENOMEM : place(bo);
        if (err != 0 && bo.memfd >= 0) {
            real::close(bo.memfd);
        }
    }
    std::string text = std::string("kfd ALLOC_MEMORY_OF_GPU type=") + kind_name(a.flags) +
                       " va=" + hex(a.va_addr) + " size=" + hex(a.size);
    if (type == KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
        text += " cpu=" + hex(a.mmap_offset);
    }
    if (err != 0) {
        call_log().line(text + " -> " + result_text(err));
        return err;
    }
    const uint64_t handle = (uint64_t{kGpuId} << 32) | next_bo_++;
    switch (bo.kind) {
        case Kind::vram:
        case Kind::gtt:
            bo.mmap_offset = next_render_offset_;
            next_render_offset_ += bo.size;
            a.mmap_offset = bo.mmap_offset;
            break;
        case Kind::doorbell:
            a.mmap_offset = kMmapTypeDoorbell | kGpuIdOffset;
            break;
        case Kind::mmio:
            a.mmap_offset = kMmapTypeMmio | kGpuIdOffset;
            break;
        case Kind::userptr:
            break;
    }
    a.handle = handle;
    bos_.emplace(handle, bo);
    call_log().line(text + " -> ok handle=" + hex(handle));
    return 0;
}

// A USERPTR BO at a GPU VA other than its CPU address (the thunk's own registrations):
// the emulated GPU reads memory at the GPU VA, so the pages get a second mapping there.
// mremap can alias shared mappings only (grant mappings are); private memory: EFAULT.
int KfdProcess::alias(Bo& bo) {
    const auto vmas = maps_.covering(bo.cpu, bo.cpu + bo.size);
    for (const Vma& vma : vmas) {
        if (!vma.shared) {
            return EFAULT;
        }
    }
    for (const Vma& vma : maps_.covering(bo.va, bo.va + bo.size)) {
        if (vma.read || vma.write) {
            return ENOMEM;
        }
        bo.reserved_before = true;
    }
    for (const Vma& vma : vmas) {
        const uint64_t from = std::max(vma.start, bo.cpu);
        const uint64_t to = std::min(vma.end, bo.cpu + bo.size);
        void* at =
            ::mremap(reinterpret_cast<void*>(from), 0, to - from, MREMAP_MAYMOVE | MREMAP_FIXED,
                     reinterpret_cast<void*>(bo.va + (from - bo.cpu)));
        if (at == MAP_FAILED) {
            bo.aliased = true;  // what is there goes back to the reservation
            unplace(bo);
            return EFAULT;
        }
    }
    bo.aliased = true;
    return 0;
}

KfdProcess::Bo* KfdProcess::find_bo(uint64_t handle) {
    auto it = bos_.find(handle);
    return it == bos_.end() ? nullptr : &it->second;
}

int KfdProcess::free_memory(void* arg) {
    const auto& a = *static_cast<kfd_ioctl_free_memory_of_gpu_args*>(arg);
    const std::lock_guard lock(mutex_);
    Bo* bo = find_bo(a.handle);
    int err = 0;
    if (bo == nullptr) {
        err = EINVAL;
    } else if (bo->gpu_mapped) {
        err = EBUSY;  // amdgpu_amdkfd_gpuvm_free_memory_of_gpu: "still mapped"
    } else {
        unplace(*bo);
        if (bo->memfd >= 0) {
            real::close(bo->memfd);
        }
        if (events_page_ == a.handle) {
            events_page_ = 0;
        }
        bos_.erase(a.handle);
    }
    call_log().line("kfd FREE_MEMORY_OF_GPU handle=" + hex(a.handle) + " -> " + result_text(err));
    return err;
}

int KfdProcess::gpu_map(Bo& bo) {
    // amdgpu_vm_bo_map: page aligned, not 0, below max_pfn, no overlap.
    if (bo.va == 0 || !aligned(bo.va) || bo.va + bo.size - 1 > kGpuVmLimit ||
        bo.va + bo.size < bo.va) {
        return EINVAL;
    }
    for (const auto& [handle, other] : bos_) {
        if (&other != &bo && other.gpu_mapped && other.va < bo.va + bo.size &&
            bo.va < other.va + other.size) {
            return EINVAL;
        }
    }
    if (bo.evicted) {
        return EFAULT;  // its pages are gone: a restore could not fault them in
    }
    const bool read_only = (bo.flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) == 0;
    if (auto r = gpu_->register_user(bo.va, bo.size, read_only); !r) {
        return r.error().value();
    }
    if (auto r = gpu_->map_to_gpu(bo.va, uint64_t{1} << hsa::kSoftGpuNode, read_only); !r) {
        (void)gpu_->deregister_user(bo.va);
        return r.error().value();
    }
    bo.gpu_mapped = true;
    return 0;
}

int KfdProcess::gpu_unmap(Bo& bo) {
    if (!bo.evicted) {
        if (auto r = gpu_->unmap_from_gpu(bo.va); !r) {
            return r.error().value();  // EBUSY: a live queue's ring or pointers
        }
        (void)gpu_->deregister_user(bo.va);
    }
    bo.gpu_mapped = false;
    return 0;
}

int KfdProcess::map_memory(void* arg) {
    auto& a = *static_cast<kfd_ioctl_map_memory_to_gpu_args*>(arg);
    const auto* ids = reinterpret_cast<const uint32_t*>(a.device_ids_array_ptr);
    const std::lock_guard lock(mutex_);
    Bo* bo = find_bo(a.handle);
    int err = bo == nullptr || ids == nullptr || a.n_devices == 0 ? EINVAL : 0;
    for (uint32_t i = a.n_success; err == 0 && i < a.n_devices; ++i) {
        if (ids[i] != kGpuId) {
            err = EINVAL;
        } else if (!bo->gpu_mapped) {
            err = gpu_map(*bo);
        }
        if (err == 0) {
            a.n_success = i + 1;
        }
    }
    call_log().line("kfd MAP_MEMORY_TO_GPU handle=" + hex(a.handle) +
                    (bo != nullptr ? " va=" + hex(bo->va) + " size=" + hex(bo->size) : "") +
                    " -> " + result_text(err));
    return err;
}

int KfdProcess::unmap_memory(void* arg) {
    auto& a = *static_cast<kfd_ioctl_unmap_memory_from_gpu_args*>(arg);
    const auto* ids = reinterpret_cast<const uint32_t*>(a.device_ids_array_ptr);
    const std::lock_guard lock(mutex_);
    Bo* bo = find_bo(a.handle);
    int err = bo == nullptr || ids == nullptr || a.n_devices == 0 ? EINVAL : 0;
    for (uint32_t i = a.n_success; err == 0 && i < a.n_devices; ++i) {
        if (ids[i] != kGpuId) {
            err = EINVAL;
        } else if (bo->gpu_mapped) {
            err = gpu_unmap(*bo);
        }
        if (err == 0) {
            a.n_success = i + 1;
        }
    }
    call_log().line("kfd UNMAP_MEMORY_FROM_GPU handle=" + hex(a.handle) +
                    (bo != nullptr ? " va=" + hex(bo->va) : "") + " -> " + result_text(err));
    return err;
}

KfdProcess::Bo* KfdProcess::bo_at_offset(uint64_t offset, uint64_t length) {
    for (auto& [handle, bo] : bos_) {
        if (bo.memfd >= 0 && bo.mmap_offset == offset && length <= bo.size) {
            return &bo;
        }
    }
    return nullptr;
}

void* KfdProcess::mmap_render(void* addr, size_t length, int prot, int flags, uint64_t offset) {
    const std::lock_guard lock(mutex_);
    Bo* bo = offset == 0 ? nullptr : bo_at_offset(offset, length);
    if (bo == nullptr) {
        errno = EINVAL;
        return MAP_FAILED;
    }
    // At its GPU VA the BO stays readable and writable whatever the caller asks (the
    // emulated GPU reaches it there); elsewhere the caller's protection holds.
    const bool at_va = reinterpret_cast<uint64_t>(addr) == bo->va && (flags & MAP_FIXED) != 0;
    void* at = real::mmap(addr, length, at_va ? PROT_READ | PROT_WRITE : prot,
                          MAP_SHARED | (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)), bo->memfd, 0);
    call_log().line("drm mmap offset=" + hex(offset) +
                    " addr=" + hex(reinterpret_cast<uint64_t>(addr)) + " size=" + hex(length) +
                    " -> " + result_text(at == MAP_FAILED ? errno : 0));
    return at;
}

void* KfdProcess::mmap_kfd(void* addr, size_t length, int prot, int flags, uint64_t offset) {
    const std::lock_guard lock(mutex_);
    int fd = -1;
    const uint64_t type = offset & kMmapTypeMask;
    if (type == kMmapTypeDoorbell && length <= kDoorbellSliceBytes) {
        if (doorbell_memfd_ < 0) {
            doorbell_memfd_ = new_memfd(kDoorbellSliceBytes);
        }
        fd = doorbell_memfd_;
    } else if (type == kMmapTypeMmio && length <= kPage) {
        for (auto& [handle, bo] : bos_) {
            if (bo.kind == Kind::mmio) {
                fd = bo.memfd;
            }
        }
    }
    void* at = MAP_FAILED;
    if (fd >= 0) {
        at = real::mmap(addr, length, prot | PROT_READ | PROT_WRITE,
                        MAP_SHARED | (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)), fd, 0);
    } else {
        errno = EINVAL;
    }
    call_log().line("kfd mmap offset=" + hex(offset) +
                    " addr=" + hex(reinterpret_cast<uint64_t>(addr)) + " size=" + hex(length) +
                    " -> " + result_text(at == MAP_FAILED ? errno : 0));
    return at;
}

void KfdProcess::before_munmap(uint64_t addr, uint64_t length) {
    std::string evicted;
    bool under_bo = false;
    {
        const std::lock_guard lock(mutex_);
        for (auto& [handle, bo] : bos_) {
            const auto hits = [&](uint64_t start, uint64_t size) {
                return start < addr + length && addr < start + size;
            };
            under_bo = under_bo || hits(bo.va, bo.size) || (bo.cpu != 0 && hits(bo.cpu, bo.size));
            // The MMU notifier of a USERPTR BO: its CPU pages go away.
            if (bo.kind != Kind::userptr || bo.evicted || !hits(bo.cpu, bo.size)) {
                continue;
            }
            stop_queues_using(bo, "eviction");
            if (bo.gpu_mapped) {
                (void)gpu_->unmap_from_gpu(bo.va);
                (void)gpu_->deregister_user(bo.va);
            }
            bo.evicted = true;
            evicted += (evicted.empty() ? "" : ",") + hex(handle);
        }
    }
    if (!call_log().on()) {
        return;
    }
    // The log keeps the munmaps that matter to the order: of BOs' ranges and of grant
    // mappings (the process makes many others).
    bool grant = false;
    for (const Vma& vma : maps_.covering(addr, addr + length)) {
        grant = grant || is_grant_mapping(vma, options_.own_domid) ||
                vma.path == "/dev/xen/gntalloc" || vma.path.rfind("/memfd:xenhsa-sim-d", 0) == 0;
    }
    if (grant || under_bo) {
        call_log().line("munmap addr=" + hex(addr) + " size=" + hex(length) +
                        (grant ? " grant" : "") + (evicted.empty() ? "" : " evicts=" + evicted));
    }
}

}  // namespace xenhsa::kfd_shim
