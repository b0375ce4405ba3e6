// The software GPU agent: a KfdDevice that runs AQL and SDMA queues on the CPU. It is the
// GPU when the host has no /dev/kfd (CI, development machines).
//
// What it models:
//   * one GPU address space per agent (i.e. per guest). The GPU reaches only memory that
//     was allocated (alloc) or registered (register_user) AND mapped to the GPU
//     (map_to_gpu). Host pointers are VAs (the backend mirrors guest VAs). Any other
//     access (packet, kernarg, buffer, signal, mailbox) is a GPU page fault: that queue
//     stops, its error event is signalled and the FaultHandler hears of it once; the
//     agent and the other queues go on.
//   * the kernel's rules: GPU mapping needs an allocation or registration (ENOENT);
//     unmap_from_gpu, deregister_user or free of memory a live queue uses (ring, read or
//     write pointer) and deregister_user or free of GPU-mapped memory: EBUSY; a queue
//     whose ring, read or write pointer is not GPU-mapped on its node, or whose read
//     pointer is not GPU-writable: EFAULT; bad sizes, flags, nodes or alignment, or a
//     ring and pointers that overlap each other: EINVAL; queue memory overlapping a live
//     queue's ring or pointers: EBUSY.
//   * an AQL packet processor per queue (one thread each), over the ring in guest memory:
//     kernel dispatch of the built-in kernels (builtin_kernels.h), barrier-AND,
//     barrier-OR, the barrier bit, fence scopes and completion signals (amd_signal_t). A
//     small dispatch (at most `inline_max_workgroups` workgroups) runs on the queue's own
//     thread, a workgroup at a time; a bigger one runs on a worker pool shared by the
//     agent's queues, taken in chunks of workgroups, up to `max_inflight_dispatches` at
//     once per queue; a dispatch that has held the pool for `work_slice` while another
//     waits goes behind it and resumes after it. Dispatches without the barrier bit may
//     overlap; the read index
//     advances in order as packets are fetched. Every GPU access is checked against the
//     address space, whose read side takes no mutex; an unmap waits for the accesses in
//     flight (at most a workgroup of an inline dispatch, a chunk of a pool one) and no
//     access starts until it is done, however busy the kernels keep the space.
//     AMD's vendor-specific PM4 indirect-buffer packet (ROCr's cache invalidations) is
//     the no-op it means here: retired, its completion signal decremented; other vendor
//     formats are invalid packets. A write index that goes backwards, or runs more than a
//     ring ahead of the read index with no packet there, stops the queue like an invalid
//     packet. Stopping a
//     queue skips every workgroup not yet started at once: it waits only for the running
//     ones, however large the grid. Doorbell values are never compared: any doorbell
//     wakes the queue, which reads its write pointer.
//   * SDMA queues (one thread each; sdma_queue.hpp): the gfx9 "SDMA v4" packets ROCr's
//     BlitSdmaV4 writes (copy, copy-rect, fill, fence, trap, poll, atomic add, timestamp,
//     and the cache/HDP flushes as no-ops), over a ring of bytes with 64-bit monotonic
//     byte read/write indexes. Copies and fills run on `sdma_engines` engines the queues
//     share in turns of `work_slice` (sdma_engines.hpp): however many SDMA queues a guest
//     has and however big its packets, they keep at most that many threads busy.
//   * KFD events, with KFD's manual/auto-reset semantics.
//   * doorbells without kicks: ROCr in a guest only stores its write index (and the
//     doorbell slot) and never kicks, so a queue that runs out of work polls its write
//     pointer: it spins `idle_spin` polls and for `idle_spin_time` (so does a barrier
//     packet waiting for its dependencies), then sleeps in steps that double from
//     `idle_backoff_min` to `idle_backoff_max`, re-checking after each; after
//     `idle_block_after` of idleness it asks for kicks through the word given to
//     track_kicks (protocol doorbell.h), re-checks, and sleeps until ring_doorbell, but
//     re-checks every `idle_block_recheck` all the same. A doorbell returns it to the
//     spin phase. The trade-off: shorter backoffs and a shorter recheck serve a producer
//     that never kicks sooner, at the price of wakeups (an idle queue costs about
//     1000 / idle_block_recheck_ms of them a second once blocked).
//
// Topology: node 0 is a CPU node (system memory, an L1 data cache), node 1 the GPU node
// (queues run there; device-local memory lives there; GPU mappings name it: node_mask
// bit 1) with the memory banks ROCr 5.2.3 expects: FB_PRIVATE (device-local memory the
// guest CPU cannot reach through Xen), LDS and SCRATCH apertures. Its ISA is
// SoftAgentOptions::gfx. XNACK is off. Events have no agent mailbox (mailbox 0); a
// completion signal whose event_id names a live event sets that event, and one with
// event_mailbox_ptr != 0 also gets event_id stored there (8 bytes, a GPU write). A GPU
// page fault also sets every event of type XENHSA_EVENT_MEMORY, as KFD does on a VM
// fault (ROCr's VM-fault handler waits on one).
//
// Not modelled: queue priority and CU percentage other than 0 (a queue created at 0%
// is inactive, as on KFD), profiling timestamps of AQL packets, agent dispatch, other
// vendor packets (AMD barrier-value: an invalid packet, which stops the queue like any
// unknown type), SDMA atomics other than 64-bit add, byte swapping.
//
// Threads: the backend calls from one thread; wait_events may run concurrently on other
// threads; queues run on agent threads. The FaultHandler runs on the faulting queue's
// thread, before its error event is set; it may destroy that queue. destroy_queue from
// another thread waits for the handler to return.
#ifndef XENHSA_HSA_SOFT_AGENT_HPP
#define XENHSA_HSA_SOFT_AGENT_HPP

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <xenhsa/hsa/kfd_device.hpp>

namespace xenhsa::hsa {

// The GPU ISA the agent reports (HSA_ENGINE_ID and amd_name). It only names the target
// ROCr sees; the agent runs its built-in kernels whatever it is.
enum class SoftGfx : uint8_t { gfx900, gfx906, gfx908, gfx90a };

// "gfx900", "gfx906", "gfx908", "gfx90a"; nullopt for anything else.
std::optional<SoftGfx> parse_soft_gfx(std::string_view name) noexcept;
const char* soft_gfx_name(SoftGfx gfx) noexcept;

// The most workgroups a dispatch may have to run inline (SoftAgentOptions).
inline constexpr uint32_t kInlineMaxWorkgroupsLimit = 64;
inline constexpr uint32_t kMaxSdmaEngines = 16;

struct SoftAgentOptions {
    uint32_t worker_threads = 2;           // workgroup workers shared by all queues (>= 1)
    uint64_t local_mem_size = 1ull << 30;  // device-local bytes alloc may hand out
    uint32_t max_queues = 128;             // ENOMEM beyond
    uint32_t max_events = 4096;            // ENOMEM beyond (KFD's signal event limit)
    uint32_t max_inflight_dispatches = 4;  // per queue, overlapping pool dispatches (>= 1)
    // SDMA engines (1 .. kMaxSdmaEngines) all SDMA queues share: at most this many copy
    // or fill at once (sdma_engines.hpp). The topology reports as many.
    uint32_t sdma_engines = 2;
    // How long one packet's work (an SDMA copy, a big dispatch's workgroups) runs while
    // other queues wait for the engines or the workers, before it lets them have a turn
    // (50 us .. 100 ms).
    std::chrono::microseconds work_slice{2000};
    // Dispatches of at most this many workgroups run inline on the queue's thread (no
    // job, no pool, no in-flight cap; a stop or an unmap waits for one workgroup of it).
    // nullopt: worker_threads; 0: none; at most kInlineMaxWorkgroupsLimit (64), so that a
    // big grid always goes to the pool.
    std::optional<uint32_t> inline_max_workgroups{};
    // An idle queue (see above): wptr polls in a row, then sleeps from backoff_min
    // doubling to backoff_max, then after block_after it asks for kicks and re-checks
    // only every block_recheck (or on a doorbell).
    uint32_t idle_spin = 256;
    std::chrono::microseconds idle_spin_time{50};  // and at least this long (<= 1 ms)
    std::chrono::microseconds idle_backoff_min{20};
    std::chrono::microseconds idle_backoff_max{2000};
    std::chrono::milliseconds idle_block_after{250};
    std::chrono::milliseconds idle_block_recheck{20};
    SoftGfx gfx = SoftGfx::gfx900;
};

// The GPU node's id and its bit in map_to_gpu's node_mask.
inline constexpr uint32_t kSoftGpuNode = 1;
inline constexpr uint32_t kSoftCpuNode = 0;

// Never null. Options out of range are clamped to the nearest valid value. Starts no
// thread: queue engines start with their queue, the workgroup pool with the first big
// dispatch (a backend worker confines itself after it made its agent, and a thread
// started before that would run unconfined).
std::unique_ptr<KfdDevice> make_soft_agent(SoftAgentOptions options = {});

}  // namespace xenhsa::hsa

#endif
