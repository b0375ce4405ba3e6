// HsakmtDevice: the KfdDevice over Debian's libhsakmt 5.2.3 (ROCt thunk) and /dev/kfd.
//
// Guest pages and the GPU: which path applies where
// -------------------------------------------------
// A PIN names worker memory that is a grant mapping of guest pages (gntdev, mapped at the
// guest's own VA). register_user() has to turn that into something KFD can map:
//
//  1. userptr registration (implemented): hsaKmtRegisterMemoryWithFlags(va, size) makes a
//     KFD userptr BO; KFD pins the pages with hmm_range_fault/GUP. That works where the
//     grant mapping is backed by struct pages in an ordinary VMA: a PVH or HVM dom0 or
//     driver domain (gntdev inserts ballooned pages with vm_map_pages_zero, VM_MIXEDMAP),
//     and the xenhsa-sim tier (memfd pages).
//  2. gntdev dma-buf export + KFD dma-buf import (TODO, returns EOPNOTSUPP): in a PV dom0
//     gntdev maps grants through special PTEs (find_grant_ptes; VM_PFNMAP-like), which
//     GUP/HMM refuse, so the userptr registration fails. The path there is
//     IOCTL_GNTDEV_DMABUF_EXP_FROM_REFS on the MAP's grant refs, then importing the
//     dma-buf fd with hsaKmtRegisterGraphicsHandleToNodes. It stays behind the same seam
//     call: register_user() falls back to register_grant_dmabuf() when userptr is
//     refused. Caveats for whoever implements it: thunk 5.2.3 first asks
//     AMDKFD_IOC_GET_DMABUF_INFO, which only accepts amdgpu's own dma-bufs; it needs the
//     MAP's grant refs, which this seam does not carry yet.
//
// Mirroring: xenhsa needs GPU VA == worker VA == guest VA. ALLOC uses FixedAddress, so the
// thunk places the BO at the guest's VA. For a userptr BO thunk 5.2.3 picks the GPU VA in
// its own SVM aperture instead; map_to_gpu() checks AlternateVAGPU and fails with
// EOPNOTSUPP (undoing the mapping) when the mirror does not hold, rather than hand out a
// GPU address the guest does not know.
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
// a hardware exception for every live queue, with address 0. Not wired: per-queue
// exception codes (ErrorReason / the CWSR header; QueueSpec has no ErrorReason), debug
// trap events, RAS events.
#ifndef XENHSA_HSA_HSAKMT_DEVICE_IMPL_HPP
#define XENHSA_HSA_HSAKMT_DEVICE_IMPL_HPP

#include <xenhsa/hsa/hsakmt_include.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <xenhsa/hsa/kfd_device.hpp>

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
    Result<xenhsa_kernel_info> kernel(uint32_t index) override;

    Result<void> alloc(uint32_t node, Va va, uint64_t size, uint32_t flags) override;
    Result<void> free(Va va) override;
    Result<void> register_user(Va va, uint64_t size, bool read_only) override;
    Result<void> deregister_user(Va va) override;
    Result<void> map_to_gpu(Va va, uint64_t node_mask, bool read_only) override;
    Result<void> unmap_from_gpu(Va va) override;

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
        bool user = false;
        bool mapped = false;
    };
    struct Queue {
        HSA_QUEUEID id = 0;
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
    Result<void> register_grant_dmabuf(Va va, uint64_t size, bool read_only);
    Result<HsaNodeProperties> node_properties(uint32_t node);
    void start_fault_thread();
    void stop_fault_thread() noexcept;
    void fault_loop() noexcept;
    void report_faults(bool any_node, uint32_t node, Va address) noexcept;
    void release_everything() noexcept;

    mutable std::mutex mutex_;  // the maps below; never held across a blocking thunk call
    std::map<Va, Memory> memory_;
    std::map<QueueId, Queue> queues_;
    std::map<EventId, Event> events_;
    QueueId next_queue_ = 1;
    EventId next_event_ = 1;
    HsaSystemProperties system_{};

    std::mutex fault_mutex_;
    FaultHandler fault_handler_;
    HsaEvent* memory_event_ = nullptr;
    HsaEvent* exception_event_ = nullptr;
    HsaEvent* stop_event_ = nullptr;
    bool fault_thread_started_ = false;  // by the first set_fault_handler with a handler
    std::thread fault_thread_;
};

// Whether a signaled manual-reset KFD event is signaled now (a zero-timeout wait).
bool poll_event(HsaEvent* event) noexcept;

}  // namespace xenhsa::hsa::kmt

#endif
