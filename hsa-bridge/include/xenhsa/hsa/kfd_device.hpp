// The KFD seam: what one guest's GPU context can ask of a GPU, at the level of the
// libhsakmt thunk. Two implementations: the libhsakmt adapter (hsakmt_device.hpp) and
// the software AQL agent (soft_agent.hpp). One instance per backend worker, i.e. per
// guest: on KFD each is its own KFD process with its own GPU address space.
//
// Addresses are worker VAs that the caller has already checked against the guest's
// ranges. The device enforces the kernel's rules on top: memory must be allocated or
// registered before it is mapped to the GPU, a queue's ring and read/write pointers must
// lie in GPU-mapped memory, and memory a live queue uses cannot be unmapped from the GPU,
// deregistered or freed (EBUSY). GpuContext (gpu_context.hpp) orders its calls so that
// these rules never bite a well-behaved guest.
#ifndef XENHSA_HSA_KFD_DEVICE_HPP
#define XENHSA_HSA_KFD_DEVICE_HPP

#include <xenhsa/proto/event.h>
#include <xenhsa/proto/query.h>

#include <functional>
#include <optional>
#include <span>
#include <xenhsa/hsa/types.hpp>

namespace xenhsa::hsa {

// What a queue's ring holds: AQL packets (64 bytes; rptr/wptr are dispatch ids), or
// SDMA packets (gfx9 SDMA v4; rptr/wptr are 64-bit monotonic byte indexes).
enum class QueueType : uint8_t { compute_aql, sdma };

struct QueueSpec {
    QueueType type = QueueType::compute_aql;
    uint32_t node = 0;
    uint32_t percentage = 100;  // 0..100
    int32_t priority = 0;       // XENHSA_QUEUE_PRIORITY_MIN..MAX
    Va ring = 0;                // page aligned
    uint64_t ring_size = 0;     // power of two, XENHSA_QUEUE_RING_MIN..MAX
    Va rptr = 0;                // 8-byte aligned read index (see QueueType)
    Va wptr = 0;                // 8-byte aligned write index
    EventId error_event = 0;    // signalled when the queue stops on an error; 0: none
};

struct EventSpec {
    uint32_t type = XENHSA_EVENT_SIGNAL;  // enum xenhsa_event_type
    uint32_t node = 0;
    bool manual_reset = false;
    bool signaled = false;
};

struct EventInfo {
    EventId id = 0;
    uint32_t event_id = 0;  // for amd_signal_t.event_id
    Va mailbox = 0;         // for amd_signal_t.event_mailbox_ptr; 0 when none
};

// A GPU memory fault that stopped a queue. The device stops only that queue, signals
// its error event, and reports the fault once. `hang`: no fault but a queue that stopped
// on an error with no error event to report it (an SDMA queue: the engine hangs on a
// packet it cannot decode, and a GPU's reset recovers it); no address.
struct GpuFault {
    QueueId queue = 0;
    Va address = 0;
    bool hang = false;
};

class KfdDevice {
public:
    virtual ~KfdDevice() = default;

    // --- topology (xenhsa's own structs, converted from the thunk's; XNACK always off)
    virtual Result<xenhsa_version_info> version() = 0;
    virtual Result<xenhsa_system_props> system() = 0;
    virtual Result<xenhsa_node_props> node(uint32_t node) = 0;
    virtual Result<xenhsa_mem_bank> mem_bank(uint32_t node, uint32_t index) = 0;
    virtual Result<xenhsa_cache> cache(uint32_t node, uint32_t index) = 0;
    virtual Result<xenhsa_io_link> io_link(uint32_t node, uint32_t index) = 0;
    virtual Result<xenhsa_clock_counters> clock(uint32_t node) = 0;
    // A GPU node's tiling setup (hsaKmtGetTileConfig; EINVAL for a CPU node).
    virtual Result<xenhsa_tile_config> tile_config(uint32_t node) {
        (void)node;
        return std::make_error_code(std::errc::not_supported);
    }
    // Built-in kernels a guest may dispatch (ENOENT past the last; KFD has none).
    virtual Result<xenhsa_kernel_info> kernel(uint32_t index) = 0;

    // --- memory
    // Device memory (flags: XENHSA_ALLOC_*) at exactly [va, va + size): the caller owns a
    // PROT_NONE reservation there.
    virtual Result<void> alloc(uint32_t node, Va va, uint64_t size, uint32_t flags) = 0;
    virtual Result<void> free(Va va) = 0;
    // Userptr pinning of worker memory already mapped at [va, va + size) (a guest MAP).
    virtual Result<void> register_user(Va va, uint64_t size, bool read_only) = 0;
    virtual Result<void> deregister_user(Va va) = 0;
    // Make an allocation or registration (named by its start) reachable by the GPU.
    virtual Result<void> map_to_gpu(Va va, uint64_t node_mask, bool read_only) = 0;
    virtual Result<void> unmap_from_gpu(Va va) = 0;

    // --- queues
    // Whether create_queue can make queues of this type (others: EOPNOTSUPP).
    virtual bool supports_queue_type(QueueType type) noexcept {
        return type == QueueType::compute_aql;
    }
    virtual Result<QueueId> create_queue(const QueueSpec& spec) = 0;
    virtual Result<void> destroy_queue(QueueId queue) = 0;
    // The guest stored `value` (its new write index) in this queue's doorbell.
    virtual Result<void> ring_doorbell(QueueId queue, uint64_t value) = 0;
    // Doorbell kicks (protocol doorbell.h). A device that polls the write pointers of its
    // busy queues keeps `*kick_requested` (the guest's doorbell page word) at 1 while any
    // queue sleeps and 0 while all poll, and returns true; it stops touching a word when
    // track_kicks is called again (nullptr: none). A device that needs every doorbell, as
    // hardware does, returns false: the caller keeps the word at 1.
    virtual bool track_kicks(uint32_t* kick_requested) noexcept {
        (void)kick_requested;
        return false;
    }
    // How many packets the device's queues took off their rings so far (monotonic), for
    // telling a guest's kick that brought work from one that only moved a doorbell;
    // nullopt for a device that cannot tell (hardware: its read pointers lie in memory
    // the guest writes too), where a doorbell is taken as work.
    [[nodiscard]] virtual std::optional<uint64_t> packets_taken() const noexcept {
        return std::nullopt;
    }

    // --- events
    virtual Result<EventInfo> create_event(const EventSpec& spec) = 0;
    virtual Result<void> destroy_event(EventId event) = 0;
    virtual Result<void> set_event(EventId event) = 0;
    virtual Result<void> reset_event(EventId event) = 0;
    // Blocks up to timeout_ms (XENHSA_WAIT_INFINITE: forever); returns the mask of
    // `events` that fired (all of them when `all`). ETIMEDOUT when the time passes.
    // Auto-reset events that fired are reset by the wait that saw them.
    virtual Result<uint32_t> wait_events(std::span<const EventId> events, bool all,
                                         uint32_t timeout_ms) = 0;

    // --- faults
    // Called from any thread, once per fault; set before the first queue is created.
    using FaultHandler = std::function<void(const GpuFault&)>;
    virtual void set_fault_handler(FaultHandler handler) = 0;
};

}  // namespace xenhsa::hsa

#endif
