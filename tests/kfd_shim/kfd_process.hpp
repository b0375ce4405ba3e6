// The KFD process of the worker (kfd_process.c: one per mm, whatever the number of
// /dev/kfd fds): its BOs and GPU VM, queues and events, and the GPU that runs them, a
// software agent (hsa-bridge/soft) that reaches memory only through the BOs mapped to it.
//
// The kernel's rules, each where it is enforced (6.1 function in brackets):
//   - ALLOC_MEMORY_OF_GPU: size and a known gpu_id [kfd_ioctl_alloc_memory_of_gpu];
//     USERPTR pages are faulted in as HMM would [amdgpu_ttm_tt_get_user_pages]: every page
//     mapped and readable (writable for a writable BO), and in a PV dom0 no gntdev grant
//     mapping (--mode pv: EFAULT); GPU VA and CPU address are independent.
//   - MAP_MEMORY_TO_GPU checks the GPU VA [amdgpu_vm_bo_map]: page aligned, not 0, below
//     the VM's limit, no overlap with another mapping (EINVAL); a second map on the same
//     GPU is a no-op.
//   - UNMAP/FREE: a BO still mapped cannot be freed (EBUSY) [free_memory_of_gpu]; memory a
//     live queue's ring or pointers use cannot be unmapped (EBUSY, the agent's rule).
//   - A munmap under a live USERPTR BO evicts it (MMU notifier): the queues that use it
//     stop for good and the GPU no longer reaches it; logged, never a crash.
//   - A GPU access to memory no BO maps is a VM fault: the process's queues on that GPU
//     stop [kfd_dqm_evict_pasid] and its memory events fire with the address
//     [kfd_signal_vm_fault_event].
//   - Events: KFD semantics (auto/manual reset, WAIT_EVENTS all/any, timeouts) are the
//     agent's; signal event ids are the agent's event ids, the slot index in the events
//     page the thunk hands over with the first CREATE_EVENT.
#ifndef XENHSA_TESTS_KFD_SHIM_KFD_PROCESS_HPP
#define XENHSA_TESTS_KFD_SHIM_KFD_PROCESS_HPP

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <xenhsa/hsa/kfd_device.hpp>

#include "host_maps.hpp"

namespace xenhsa::kfd_shim {

// kfd_priv.h: the type of an mmap offset on /dev/kfd (bits 63:62).
inline constexpr uint64_t kMmapTypeDoorbell = uint64_t{3} << 62;
inline constexpr uint64_t kMmapTypeEvents = uint64_t{2} << 62;
inline constexpr uint64_t kMmapTypeMmio = uint64_t{0} << 62;
inline constexpr uint64_t kMmapTypeMask = uint64_t{3} << 62;

enum class DomKind : uint8_t { pvh, pv };

struct ShimOptions {
    DomKind dom0 = DomKind::pvh;
    uint32_t own_domid = 0;  // the sim's pages of this domain are the worker's own
};

class KfdProcess {
public:
    explicit KfdProcess(const ShimOptions& options);
    ~KfdProcess();
    KfdProcess(const KfdProcess&) = delete;
    KfdProcess& operator=(const KfdProcess&) = delete;

    // One AMDKFD_IOC_* call: 0 or a positive errno; `arg` is the caller's struct.
    int ioctl(unsigned long request, void* arg);
    // mmap of a /dev/kfd fd (doorbells, MMIO, events page) or of a render fd (a BO's
    // mmap_offset): the mapping, or MAP_FAILED with errno set.
    void* mmap_kfd(void* addr, size_t length, int prot, int flags, uint64_t offset);
    void* mmap_render(void* addr, size_t length, int prot, int flags, uint64_t offset);
    // Before the C library's munmap: evicts the USERPTR BOs under [addr, addr + length).
    void before_munmap(uint64_t addr, uint64_t length);
    // ACQUIRE_VM checks the render fd it is given; the render fds are the shim's.
    void set_render_fd_checker(bool (*is_render_fd)(int)) { is_render_fd_ = is_render_fd; }
    // The last /dev/kfd fd closed: logs what the process still holds.
    void log_holdings(const char* when);

private:
    enum class Kind : uint8_t { userptr, vram, gtt, doorbell, mmio };
    struct Bo {
        Kind kind = Kind::vram;
        uint64_t va = 0;
        uint64_t size = 0;
        uint64_t cpu = 0;              // USERPTR: the CPU address
        uint32_t flags = 0;            // KFD_IOC_ALLOC_MEM_FLAGS_*
        uint64_t mmap_offset = 0;      // of a render-node BO (VRAM, GTT)
        int memfd = -1;                // what a VRAM, GTT, doorbell or MMIO BO holds
        bool placed = false;           // the memfd is mapped at va by the shim
        bool reserved_before = false;  // [va, va + size) was a PROT_NONE reservation
        bool aliased = false;          // USERPTR at va != cpu: an alias of the pages at va
        bool gpu_mapped = false;
        bool evicted = false;
    };
    struct Queue {
        hsa::QueueId agent = 0;
        bool running = false;  // false once evicted or stopped by a fault
        uint64_t ring = 0;
        uint64_t ring_size = 0;
        uint64_t rptr = 0;
        uint64_t wptr = 0;
    };
    struct Event {
        hsa::EventId agent = 0;
        uint32_t type = 0;
    };

    int get_version(void* arg);
    int get_process_apertures_new(void* arg);
    int acquire_vm(void* arg);
    int set_memory_policy(void* arg);
    int get_clock_counters(void* arg);
    int get_tile_config(void* arg);
    int set_xnack_mode(void* arg);
    int alloc_memory(void* arg);
    int free_memory(void* arg);
    int map_memory(void* arg);
    int unmap_memory(void* arg);
    int create_queue(void* arg);
    int destroy_queue(void* arg);
    int update_queue(void* arg);
    int create_event(void* arg);
    int destroy_event(void* arg);
    int set_event(void* arg);
    int reset_event(void* arg);
    int wait_events(void* arg);

    // Memory, under mutex_.
    int validate_userptr(uint64_t cpu, uint64_t size, bool writable);
    int place(Bo& bo);  // a memfd BO at its GPU VA, where the CPU range is free or reserved
    int alias(Bo& bo);  // a USERPTR BO's pages also at its GPU VA
    void unplace(Bo& bo);
    int gpu_map(Bo& bo);
    int gpu_unmap(Bo& bo);
    Bo* find_bo(uint64_t handle);
    Bo* bo_at_offset(uint64_t offset, uint64_t length);
    bool queue_uses(const Queue& queue, const Bo& bo) const;
    void stop_queues_using(const Bo& bo, const char* why);
    void on_gpu_fault(const hsa::GpuFault& fault);
    void start_evictor();  // with the first queue (after the worker's confinement)
    void evict_on_faults(std::stop_token stop);

    const ShimOptions options_;
    HostMaps maps_;
    std::unique_ptr<hsa::KfdDevice> gpu_;
    bool (*is_render_fd_)(int) = nullptr;

    std::mutex mutex_;
    std::map<uint64_t, Bo> bos_;  // by handle
    std::map<uint32_t, Queue> queues_;
    std::map<uint32_t, Event> events_;  // by KFD event id
    uint32_t next_bo_ = 1;
    uint32_t next_queue_ = 1;
    uint64_t next_render_offset_ = uint64_t{1} << 32;  // DRM_FILE_PAGE_OFFSET_START
    int drm_fd_ = -1;                                  // ACQUIRE_VM's
    int doorbell_memfd_ = -1;   // the process's doorbell slice (BO and kfd mmap alike)
    uint64_t events_page_ = 0;  // the BO the thunk handed over as the signal page

    std::mutex fault_mutex_;  // never held while mutex_ is taken
    std::condition_variable_any fault_cv_;
    std::optional<hsa::GpuFault> last_fault_;
    bool evict_all_ = false;
    std::jthread evictor_;  // last: stopped and joined before the rest goes
};

}  // namespace xenhsa::kfd_shim

#endif
