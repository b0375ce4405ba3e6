// The GPU commands (docs/protocol.md §5.7-5.16): the backend's checks in the documented
// order (handles, address coverage, host nodes, the handle quota), asked of GpuContext,
// which alone keeps the GPU objects; then GpuContext executes. Also the doorbell page
// (each live queue's slot forwarded when it moved) and the queues GpuContext reports lost
// (a GPU_FAULT record on the notify page).
#ifndef XENHSA_BACKEND_CORE_GPU_COMMANDS_HPP
#define XENHSA_BACKEND_CORE_GPU_COMMANDS_HPP

#include <xenhsa/proto/doorbell.h>
#include <xenhsa/proto/event.h>
#include <xenhsa/proto/memory.h>
#include <xenhsa/proto/queue.h>

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <xenhsa/backend/core/gpu_handoff.hpp>
#include <xenhsa/backend/core/guest_terms.hpp>
#include <xenhsa/backend/core/handle_quota.hpp>
#include <xenhsa/backend/core/map_revoke.hpp>
#include <xenhsa/backend/core/notify_producer.hpp>
#include <xenhsa/backend/core/reply.hpp>
#include <xenhsa/backend/core/topology.hpp>
#include <xenhsa/backend/core/va_window.hpp>
#include <xenhsa/hsa/gpu_context.hpp>

namespace xenhsa::backend::core {

struct GpuCommandParts {
    const GuestTerms& terms;
    const HandleQuota& handles;
    VaWindow& window;
    MapRevoke& map_revoke;
    const Topology& topology;
    NotifyProducer& notify;
    xenhsa_doorbell_page* doorbell_page = nullptr;  // QUEUE_CREATE clears the slot; may be null
};

class GpuCommands {
public:
    // `gpu` may be null (no GPU seam: gate_check refuses every GPU command). Lost queues
    // reach `handoff` from any thread and are drained on `io`'s thread.
    GpuCommands(boost::asio::io_context& io, hsa::GpuContext* gpu, const GpuCommandParts& parts,
                std::shared_ptr<GpuHandoff> handoff, uint32_t max_queues);
    ~GpuCommands();
    GpuCommands(const GpuCommands&) = delete;
    GpuCommands& operator=(const GpuCommands&) = delete;

    Reply pin(const xenhsa_pin_req& req, uint32_t seqno);
    Reply unpin(const xenhsa_handle_req& req, uint32_t seqno);
    Reply map_to_gpu(const xenhsa_map_to_gpu_req& req, uint32_t seqno);
    Reply unmap_from_gpu(const xenhsa_handle_req& req, uint32_t seqno);
    Reply alloc(const xenhsa_alloc_req& req, uint32_t seqno);
    Reply free(const xenhsa_handle_req& req, uint32_t seqno);
    Reply queue_create(const xenhsa_queue_create_req& req, uint32_t seqno);
    Reply queue_destroy(const xenhsa_handle_req& req, uint32_t seqno);
    Reply event_create(const xenhsa_event_create_req& req, uint32_t seqno);
    // EVENT_DESTROY, EVENT_SET, EVENT_RESET.
    Reply event_op(uint32_t cmd, const xenhsa_handle_req& req, uint32_t seqno);

    // The guest rang doorbells: each live queue's slot is read once and forwarded when it
    // changed. Returns how many were.
    uint32_t doorbells(const xenhsa_doorbell_page& page) noexcept;
    [[nodiscard]] bool has_queues() const noexcept;
    [[nodiscard]] uint64_t doorbells_forwarded() const noexcept { return doorbells_forwarded_; }
    // Moves when the GPU took work from the guest's queues: the packets its queues took,
    // or, from a GPU that cannot tell (hardware), the doorbells forwarded to it.
    [[nodiscard]] uint64_t gpu_progress() const noexcept;
    [[nodiscard]] uint64_t doorbell_polls() const noexcept { return doorbell_polls_; }
    void count_doorbell_polls(uint64_t polls) noexcept { doorbell_polls_ += polls; }

    // Posts a GPU_FAULT for each queue GpuContext reported lost since the last drain
    // (only forgets them once the guest is going: stop_notifying()).
    void drain_lost_queues() noexcept;
    void stop_notifying() noexcept { notifying_ = false; }

private:
    hsa::GpuContext* gpu_;
    GpuCommandParts parts_;
    std::shared_ptr<GpuHandoff> handoff_;
    bool notifying_ = true;
    uint64_t doorbells_forwarded_ = 0;
    uint64_t doorbell_polls_ = 0;
};

}  // namespace xenhsa::backend::core

#endif
