// One connected guest's requests (docs/protocol.md §3-5): each one copied off the ring is
// checked and dispatched here, in the documented order (state, feature, handles,
// addresses, host arguments, busy, quota, execution), to the class that owns what it
// touches:
//   HELLO                              Handshake       (handshake.hpp)
//   QUERY                              Topology        (topology.hpp)
//   MAP, UNMAP, LEND                   MemoryCommands  (memory_commands.hpp) -> MapRevoke
//   PIN ... EVENT_RESET                GpuCommands     (gpu_commands.hpp) -> GpuContext
//   EVENT_WAIT, EVENT_WAIT_CANCEL      EventWaits      (event_waits.hpp) -> GpuContext
// Seam errors become statuses in one place (seam_status.hpp); every response is
// zero-initialised (reply.hpp). Also the guest's revoke triggers (operator, quota breach,
// session end) and its stats.
//
// Owns the guest's terms, window, Map/Revoke state and notify producer; uses (does not
// own) the seams. GpuContext alone keeps the GPU objects. Single-threaded: every call on
// the worker's io_context thread; GpuContext's threads hand over through GpuHandoff.
#ifndef XENHSA_BACKEND_CORE_GUEST_REQUESTS_HPP
#define XENHSA_BACKEND_CORE_GUEST_REQUESTS_HPP

#include <xenhsa/proto.h>

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <xenhsa/backend/core/event_waits.hpp>
#include <xenhsa/backend/core/gpu_commands.hpp>
#include <xenhsa/backend/core/gpu_handoff.hpp>
#include <xenhsa/backend/core/guest_terms.hpp>
#include <xenhsa/backend/core/handle_quota.hpp>
#include <xenhsa/backend/core/handshake.hpp>
#include <xenhsa/backend/core/map_revoke.hpp>
#include <xenhsa/backend/core/memory_commands.hpp>
#include <xenhsa/backend/core/notify_producer.hpp>
#include <xenhsa/backend/core/quotas.hpp>
#include <xenhsa/backend/core/request_handler.hpp>
#include <xenhsa/backend/core/stats.hpp>
#include <xenhsa/backend/core/topology.hpp>
#include <xenhsa/backend/core/va_window.hpp>
#include <xenhsa/hsa/gpu_context.hpp>
#include <xenhsa/xen/grant_map.hpp>
#include <xenhsa/xen/grant_share.hpp>

namespace xenhsa::backend::core {

struct RequestSeams {
    xen::DomId guest = xen::kDomIdInvalid;
    xen::GrantMapper& mapper;
    xen::GrantSharer* sharer = nullptr;  // null: LEND is not granted
    hsa::GpuContext* gpu = nullptr;      // null: GPU and WAIT_CANCEL are not granted
};

struct RequestOptions {
    uint32_t ring_slots = XENHSA_RING_SLOTS(0);
    Quotas quotas;
    // The most this backend grants; HELLO grants the request's bits within it that the
    // seams support.
    uint64_t features = XENHSA_FEATURES_KNOWN;
    uint64_t proposal_base = WindowNegotiation::kDefaultProposalBase;
    xenhsa_notify_page* notify_page = nullptr;  // may be attached later
    // The guest's doorbell page: QUEUE_CREATE clears the new queue's slot. May be null.
    xenhsa_doorbell_page* doorbell_page = nullptr;
};

class GuestRequests final : public RequestHandler {
public:
    using State = Handshake::State;

    GuestRequests(boost::asio::io_context& io, const RequestSeams& seams,
                  const RequestOptions& options);
    // The guest is gone: pending waits dropped, everything revoked in the fixed order
    // (§5.20), the window released last.
    ~GuestRequests();
    GuestRequests(const GuestRequests&) = delete;
    GuestRequests& operator=(const GuestRequests&) = delete;

    // Where EVENT_WAIT completions and EVENT_WAIT_CANCEL's CANCELLED go (the ring).
    void set_async_sink(ReplySink* sink) noexcept { waits_.set_sink(sink); }

    void handle(const xenhsa_req_slot& copy, ReplySink& sink) noexcept override;

    // --- revoke triggers
    // The operator's revoke of one MAP or LEND handle; false if it names neither.
    bool revoke_handle(hsa::Handle handle) noexcept;
    // Everything the guest holds. `session_end`: guest death, Closing, shutdown (pending
    // waits dropped without a response, no notifications). Otherwise the operator's
    // revoke with the connection staying up (waits answered CANCELLED, REVOKED posted).
    void revoke_all(bool session_end) noexcept;
    // The quota-breach path: new limits (max_handles cannot grow past the value the guest
    // was connected with); revokes the newest MAPs/LENDs until the guest fits. Returns
    // how many objects were revoked.
    uint32_t enforce_quotas(const Quotas& quotas) noexcept;

    // The guest rang doorbells: each live queue's slot is read once and forwarded to the
    // GPU context when it changed. Returns how many were forwarded.
    uint32_t doorbells(const xenhsa_doorbell_page& page) noexcept { return gpu_.doorbells(page); }
    // Whether the guest has a live queue (whose doorbell may move).
    [[nodiscard]] bool has_queues() const noexcept { return gpu_.has_queues(); }
    // Doorbell changes forwarded so far (stats().doorbells_forwarded, without the rest).
    [[nodiscard]] uint64_t doorbells_forwarded() const noexcept {
        return gpu_.doorbells_forwarded();
    }
    // GpuCommands::gpu_progress: moves when the GPU took work from the guest's queues.
    [[nodiscard]] uint64_t gpu_progress() const noexcept { return gpu_.gpu_progress(); }
    // The doorbell watch's polls (guest_core.hpp), for stats().
    void count_doorbell_polls(uint64_t polls) noexcept { gpu_.count_doorbell_polls(polls); }

    [[nodiscard]] Stats stats() const noexcept;
    [[nodiscard]] State state() const noexcept { return handshake_.state(); }
    [[nodiscard]] uint64_t features() const noexcept { return terms_.features; }
    [[nodiscard]] const VaWindow& window() const noexcept { return window_; }
    [[nodiscard]] const Quotas& quotas() const noexcept { return terms_.quotas; }
    [[nodiscard]] uint32_t max_in_flight() const noexcept { return terms_.max_in_flight(); }
    [[nodiscard]] std::size_t pending_waits() const noexcept { return waits_.pending(); }
    NotifyProducer& notify() noexcept { return notify_; }

private:
    std::optional<Reply> dispatch(const xenhsa_req_slot& copy, ReplySink& sink);
    [[nodiscard]] uint32_t gate_check(uint32_t cmd) const noexcept;  // state, feature
    [[nodiscard]] uint64_t supported_features() const noexcept;

    RequestSeams seams_;
    uint32_t handle_capacity_;
    uint64_t allowed_features_;
    GuestTerms terms_;
    Handshake handshake_;

    // Declaration order is release order reversed: the window outlives everything that
    // maps into it.
    VaWindow window_;
    NotifyProducer notify_;
    MapRevoke map_revoke_;
    Topology topology_;
    HandleQuota handles_;
    std::shared_ptr<GpuHandoff> handoff_;
    MemoryCommands memory_;
    GpuCommands gpu_;
    EventWaits waits_;
};

}  // namespace xenhsa::backend::core

#endif
