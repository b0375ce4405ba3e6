// HsakmtDevice: the KfdDevice over Debian's libhsakmt 5.2.3 (ROCt thunk) and /dev/kfd.
//
// Guest memory and the GPU: GPU VA == worker VA == guest VA, for every kind
// -----------------------------------------------------------------------------------
// Thunk 5.2.3 cannot mirror: on a dGPU it registers user memory at an address of its own
// SVM aperture (fmm_register_user_memory, returned in AlternateVAGPU), and refuses
// FixedAddress allocations in mmap-aperture mode. The kernel can: ALLOC_MEMORY_OF_GPU takes
// the GPU VA (va_addr) and, for a USERPTR, the CPU address (mmap_offset) independently. So
// memory goes through raw ioctls on the adapter's own /dev/kfd descriptor (kfd_fd.hpp; the
// same KFD process as the thunk's):
//
//  - A PIN (a MAP's grant mapping at the guest's VA) is a USERPTR BO with va_addr ==
//    mmap_offset == the guest VA. The kernel pins its pages with hmm_range_fault: that
//    works where grant mappings are ordinary pages (a PVH or HVM dom0 or driver domain:
//    gntdev maps ballooned pages with vm_map_pages_zero; and xenhsa-sim's memfd pages). In
//    a PV dom0 gntdev maps grants with special PTEs, which the kernel may not pin: the
//    USERPTR is refused (EFAULT; the guest's PIN gets UNSUPPORTED), and guest memory the
//    GPU reaches is then LEND pages (the worker's own pages at the same VA, mapped into
//    the guest), which a USERPTR always pins: the guest libraries switch to them.
//  - An ALLOC is a VRAM BO (device-local) or a GTT BO at the guest VA, where the worker
//    holds a PROT_NONE reservation; the kernel needs no CPU mapping of it.
//  - A MAP_TO_GPU maps the BO on the nodes' GPUs; KFD has no read-only mapping of a
//    writable BO (a read-only PIN makes a read-only BO from the start).
// Not used: the gntdev dma-buf export (IOCTL_GNTDEV_DMABUF_EXP_FROM_REFS refuses a PV dom0,
// and KFD imports foreign dma-bufs only from Linux 6.4, never through thunk 5.2.3).
//
// Queues: AQL through the thunk (it allocates the EOP buffer and context-save area and maps
// the doorbells); SDMA with a raw CREATE_QUEUE on our descriptor, since the thunk
// substitutes read/write pointers of its own for every type but AQL.
//
// Ids: HSA_QUEUEID and HsaEvent* are host pointers; they stay in private maps here and
// the seam sees small counters (QueueId, EventId) only.
//
// Events: every KFD event is created manual-reset, so that after a wait the adapter can
// poll which events fired (hsaKmtWaitOnEvent with timeout 0 does not consume a signaled
// manual-reset event). Auto-reset events are emulated: the wait that reports one resets it.
// A wait reports exactly the events that fired, which the context's all-waits rely on.
//
// Faults (what is wired): a fault thread (started with the first fault handler, so after
// the backend worker's confinement) waits on a MEMORY event (VM faults, with address
// and node) and, where the kernel lets the thunk create one, a HW_EXCEPTION event. KFD
// does not say which queue faulted, so a memory fault is reported once for every live
// queue on the faulting node (a non-XNACK VM fault stops the process's queues there), and
// a hardware exception (KFD's reset of a hung GPU) for every live queue as a hang, with
// address 0. Not wired: per-queue
// exception codes (ErrorReason / the CWSR header; QueueSpec has no ErrorReason), debug
// trap events, RAS events.
#ifndef XENHSA_HSA_HSAKMT_DEVICE_IMPL_HPP
#define XENHSA_HSA_HSAKMT_DEVICE_IMPL_HPP

#include <xenhsa/hsa/hsakmt_include.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <xenhsa/hsa/kfd_device.hpp>

#include "kfd_fd.hpp"

namespace xenhsa::hsa::kmt {

class HsakmtDevice final : public KfdDevice {
public:
    static Result<std::unique_ptr<KfdDevice>> open(std::string* message);
    ~HsakmtDevice() override;
    HsakmtDevice(const HsakmtDevice&) = delete;
    HsakmtDevice& operator=(const HsakmtDevice&) = delete;

    Result<xenhsa_version_info> version() override;
    Result<xenhsa_system_props> system() override;
    Result<xenhsa_node_props> node(uint32_t node) override;
    Result<xenhsa_mem_bank> mem_bank(uint32_t node, uint32_t index) override;
    Result<xenhsa_cache> cache(uint32_t node, uint32_t index) override;
    Result<xenhsa_io_link> io_link(uint32_t node, uint32_t index) override;
    Result<xenhsa_clock_counters> clock(uint32_t node) override;
    Result<xenhsa_tile_config> tile_config(uint32_t node) override;
    Result<xenhsa_kernel_info> kernel(uint32_t index) override;

    Result<void> alloc(uint32_t node, Va va, uint64_t size, uint32_t flags) override;
    Result<void> free(Va va) override;
    Result<void> register_user(Va va, uint64_t size, bool read_only) override;
    Result<void> deregister_user(Va va) override;
    Result<void> map_to_gpu(Va va, uint64_t node_mask, bool read_only) override;
    Result<void> unmap_from_gpu(Va va) override;

    bool supports_queue_type(QueueType type) noexcept override {
        return type == QueueType::compute_aql || type == QueueType::sdma;
    }
    Result<QueueId> create_queue(const QueueSpec& spec) override;
    Result<void> destroy_queue(QueueId queue) override;
    Result<void> ring_doorbell(QueueId queue, uint64_t value) override;

    Result<EventInfo> create_event(const EventSpec& spec) override;
    Result<void> destroy_event(EventId event) override;
    Result<void> set_event(EventId event) override;
    Result<void> reset_event(EventId event) override;
    Result<uint32_t> wait_events(std::span<const EventId> events, bool all,
                                 uint32_t timeout_ms) override;

    void set_fault_handler(FaultHandler handler) override;

private:
    HsakmtDevice() = default;

    struct Memory {
        uint64_t size = 0;
        uint64_t handle = 0;              // the KFD BO
        bool user = false;                // a registration (USERPTR), not an allocation
        std::vector<uint32_t> mapped_to;  // the gpu_ids it is mapped on
    };
    struct Queue {
        HSA_QUEUEID id = 0;   // the thunk's (AQL)
        uint32_t raw_id = 0;  // KFD's, for a queue made on our descriptor (SDMA)
        bool raw = false;
        volatile uint64_t* doorbell = nullptr;
        uint32_t node = 0;
        bool faulted = false;
    };
    struct Event {
        HsaEvent* event = nullptr;
        bool auto_reset = false;
    };

    // The event `id` names; ENOENT for none. Takes mutex_.
    Result<Event> find_event(EventId id) const;
    // The gpu_ids of the GPU nodes in `node_mask` (EINVAL: none, or a CPU node in it).
    Result<std::vector<uint32_t>> gpu_ids(uint64_t node_mask) const;
    Result<uint32_t> gpu_of(uint32_t node) const;
    Result<void> release(Va va, bool user);  // FREE of an allocation or a registration
    Result<HsaNodeProperties> node_properties(uint32_t node);
    void start_fault_thread();
    void stop_fault_thread() noexcept;
    void fault_loop() noexcept;
    void report_faults(bool any_node, uint32_t node, Va address, bool hang) noexcept;
    void release_everything() noexcept;

    mutable std::mutex mutex_;  // the maps below; never held across a blocking thunk call
    std::map<Va, Memory> memory_;
    std::map<QueueId, Queue> queues_;
    std::map<EventId, Event> events_;
    QueueId next_queue_ = 1;
    EventId next_event_ = 1;
    HsaSystemProperties system_{};
    std::map<uint32_t, uint32_t> gpus_;  // GPU node -> gpu_id (KFDGpuID), at least one
    KfdFd kfd_;

    std::mutex fault_mutex_;
    FaultHandler fault_handler_;
    HsaEvent* memory_event_ = nullptr;
    HsaEvent* exception_event_ = nullptr;
    HsaEvent* stop_event_ = nullptr;
    bool fault_thread_started_ = false;         // by the first set_fault_handler with a handler
    std::atomic<bool> told_unpinnable_{false};  // the kernel refused a grant mapping once
    std::thread fault_thread_;
};

// Whether a signaled manual-reset KFD event is signaled now (a zero-timeout wait).
bool poll_event(HsaEvent* event) noexcept;

}  // namespace xenhsa::hsa::kmt

#endif
