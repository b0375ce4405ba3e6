// The adapter's own descriptor of /dev/kfd, for what thunk 5.2.3 cannot do. A second open
// in the process reaches the thunk's KFD process (kfd_create_process finds it by mm), so
// raw ioctls here share its GPU VM, queues and events:
//   - memory at the guest's VA: ALLOC_MEMORY_OF_GPU with va_addr chosen by us (USERPTR
//     with va_addr == mmap_offset, VRAM and GTT at the reservation the worker holds); the
//     thunk would place a USERPTR in its own aperture (fmm_register_user_memory) and
//     refuses FixedAddress in mmap-aperture mode;
//   - SDMA queues with the guest's read and write pointers: the thunk substitutes its own
//     for every queue type but AQL.
// Layouts and numbers: Debian's <linux/kfd_ioctl.h> (Linux 6.1, KFD 1.11).
#ifndef XENHSA_HSA_KMT_KFD_FD_HPP
#define XENHSA_HSA_KMT_KFD_FD_HPP

#include <cstdint>
#include <span>
#include <xenhsa/hsa/types.hpp>

namespace xenhsa::hsa::kmt {

// KFD_IOC_ALLOC_MEM_FLAGS_*: the kind, and the attributes the adapter sets.
enum class BoKind : uint8_t { userptr, vram, gtt };

struct BoFlags {
    BoKind kind = BoKind::userptr;
    bool writable = true;
    bool executable = false;
    bool coherent = true;  // fine-grained; false: coarse-grained
    bool uncached = false;
    bool public_vram = false;  // CPU-visible VRAM (large BAR)
};

class KfdFd {
public:
    KfdFd() = default;
    // Opens /dev/kfd again; the thunk's hsaKmtOpenKFD must have run (it made the process
    // and acquired the VMs).
    static Result<KfdFd> open();
    ~KfdFd();
    KfdFd(KfdFd&& other) noexcept;
    KfdFd& operator=(KfdFd&& other) noexcept;
    KfdFd(const KfdFd&) = delete;
    KfdFd& operator=(const KfdFd&) = delete;

    // A BO of `gpu_id` at GPU VA `va`; for USERPTR the CPU pages at `va` too. Its handle.
    Result<uint64_t> alloc(uint32_t gpu_id, Va va, uint64_t size, const BoFlags& flags);
    Result<void> free(uint64_t handle);
    Result<void> map(uint64_t handle, std::span<const uint32_t> gpu_ids);
    Result<void> unmap(uint64_t handle, std::span<const uint32_t> gpu_ids);

    struct SdmaQueue {
        uint32_t id = 0;
        volatile uint64_t* doorbell = nullptr;
    };
    // An SDMA queue on `gpu_id` (gfx9 and later: 8-byte doorbells in a 2-page slice) that
    // reads the guest's ring and read/write pointers. priority: KFD's 0..15.
    Result<SdmaQueue> create_sdma_queue(uint32_t gpu_id, Va ring, uint64_t ring_size, Va rptr,
                                        Va wptr, uint32_t percentage, uint32_t priority);
    Result<void> destroy_queue(uint32_t id);

private:
    int fd_ = -1;
    uint32_t doorbell_gpu_ = 0;
    void* doorbells_ = nullptr;  // the doorbell slice of doorbell_gpu_, mapped once
};

// The thunk's queue priorities -3..3 as KFD's 0..15 (queues.c priority_map).
uint32_t kfd_priority(int32_t priority) noexcept;

}  // namespace xenhsa::hsa::kmt

#endif
