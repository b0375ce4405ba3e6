#include "kfd_fd.hpp"

#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

namespace xenhsa::hsa::kmt {

namespace {

constexpr uint64_t kDoorbellSlice = 8192;  // SOC15: 1024 doorbells of 8 bytes

std::error_code last_error() { return {errno, std::generic_category()}; }

template <class Args>
Result<void> kfd_ioctl(int fd, unsigned long request, Args& args) {
    int rc = 0;
    do {
        rc = ::ioctl(fd, request, &args);
    } while (rc == -1 && (errno == EINTR || errno == EAGAIN));
    if (rc == -1) {
        return last_error();
    }
    return boost::outcome_v2::success();
}

uint32_t ioc_flags(const BoFlags& f) {
    uint32_t flags = KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE;
    switch (f.kind) {
        case BoKind::userptr:
            flags |= KFD_IOC_ALLOC_MEM_FLAGS_USERPTR;
            break;
        case BoKind::vram:
            flags |= KFD_IOC_ALLOC_MEM_FLAGS_VRAM;
            break;
        case BoKind::gtt:
            flags |= KFD_IOC_ALLOC_MEM_FLAGS_GTT;
            break;
    }
    flags |= f.writable ? KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE : 0;
    flags |= f.executable ? KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE : 0;
    flags |= f.coherent ? KFD_IOC_ALLOC_MEM_FLAGS_COHERENT : 0;
    flags |= f.uncached ? KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED : 0;
    flags |= f.public_vram ? KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC : 0;
    return flags;
}

}  // namespace

uint32_t kfd_priority(int32_t priority) noexcept {
    constexpr uint32_t kMap[] = {0, 3, 5, 7, 9, 11, 15};
    const int32_t i = priority < -3 ? 0 : priority > 3 ? 6 : priority + 3;
    return kMap[i];
}

Result<KfdFd> KfdFd::open() {
    KfdFd kfd;
    kfd.fd_ = ::open("/dev/kfd", O_RDWR | O_CLOEXEC);
    if (kfd.fd_ < 0) {
        return last_error();
    }
    return kfd;
}

KfdFd::~KfdFd() {
    if (doorbells_ != nullptr) {
        ::munmap(doorbells_, kDoorbellSlice);
    }
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

KfdFd::KfdFd(KfdFd&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      doorbell_gpu_(other.doorbell_gpu_),
      doorbells_(std::exchange(other.doorbells_, nullptr)) {}

KfdFd& KfdFd::operator=(KfdFd&& other) noexcept {
    if (this != &other) {
        this->~KfdFd();
        fd_ = std::exchange(other.fd_, -1);
        doorbell_gpu_ = other.doorbell_gpu_;
        doorbells_ = std::exchange(other.doorbells_, nullptr);
    }
    return *this;
}

Result<uint64_t> KfdFd::alloc(uint32_t gpu_id, Va va, uint64_t size, const BoFlags& flags) {
    kfd_ioctl_alloc_memory_of_gpu_args args{};
    args.va_addr = va;
    args.size = size;
    args.gpu_id = gpu_id;
    args.flags = ioc_flags(flags);
    // USERPTR: mmap_offset names the CPU pages; the same address, so GPU VA == CPU VA.
    args.mmap_offset = flags.kind == BoKind::userptr ? va : 0;
    if (auto r = kfd_ioctl(fd_, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, args); !r) {
        return r.error();
    }
    return args.handle;
}

Result<void> KfdFd::free(uint64_t handle) {
    kfd_ioctl_free_memory_of_gpu_args args{};
    args.handle = handle;
    return kfd_ioctl(fd_, AMDKFD_IOC_FREE_MEMORY_OF_GPU, args);
}

Result<void> KfdFd::map(uint64_t handle, std::span<const uint32_t> gpu_ids) {
    std::vector<uint32_t> ids(gpu_ids.begin(), gpu_ids.end());
    kfd_ioctl_map_memory_to_gpu_args args{};
    args.handle = handle;
    args.device_ids_array_ptr = reinterpret_cast<uint64_t>(ids.data());
    args.n_devices = static_cast<uint32_t>(ids.size());
    return kfd_ioctl(fd_, AMDKFD_IOC_MAP_MEMORY_TO_GPU, args);
}

Result<void> KfdFd::unmap(uint64_t handle, std::span<const uint32_t> gpu_ids) {
    std::vector<uint32_t> ids(gpu_ids.begin(), gpu_ids.end());
    kfd_ioctl_unmap_memory_from_gpu_args args{};
    args.handle = handle;
    args.device_ids_array_ptr = reinterpret_cast<uint64_t>(ids.data());
    args.n_devices = static_cast<uint32_t>(ids.size());
    return kfd_ioctl(fd_, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, args);
}

Result<KfdFd::SdmaQueue> KfdFd::create_sdma_queue(uint32_t gpu_id, Va ring, uint64_t ring_size,
                                                  Va rptr, Va wptr, uint32_t percentage,
                                                  uint32_t priority) {
    if (doorbells_ != nullptr && doorbell_gpu_ != gpu_id) {
        return errc(std::errc::operation_not_supported);  // one GPU's SDMA per adapter
    }
    kfd_ioctl_create_queue_args args{};
    args.gpu_id = gpu_id;
    args.queue_type = KFD_IOC_QUEUE_TYPE_SDMA;
    args.ring_base_address = ring;
    args.ring_size = static_cast<uint32_t>(ring_size);
    args.read_pointer_address = rptr;
    args.write_pointer_address = wptr;
    args.queue_percentage = percentage;
    args.queue_priority = priority;
    if (auto r = kfd_ioctl(fd_, AMDKFD_IOC_CREATE_QUEUE, args); !r) {
        return r.error();
    }
    if (doorbells_ == nullptr) {
        // kfd_doorbell_mmap: the process's slice, exactly its size.
        void* slice = ::mmap(nullptr, kDoorbellSlice, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                             static_cast<off_t>(args.doorbell_offset & ~(kDoorbellSlice - 1)));
        if (slice == MAP_FAILED) {
            const std::error_code error = last_error();
            (void)destroy_queue(args.queue_id);
            return error;
        }
        doorbells_ = slice;
        doorbell_gpu_ = gpu_id;
    }
    auto* doorbell = reinterpret_cast<volatile uint64_t*>(
        static_cast<char*>(doorbells_) + (args.doorbell_offset & (kDoorbellSlice - 1)));
    return SdmaQueue{args.queue_id, doorbell};
}

Result<void> KfdFd::destroy_queue(uint32_t id) {
    kfd_ioctl_destroy_queue_args args{};
    args.queue_id = id;
    return kfd_ioctl(fd_, AMDKFD_IOC_DESTROY_QUEUE, args);
}

}  // namespace xenhsa::hsa::kmt
