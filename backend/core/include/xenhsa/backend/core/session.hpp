// One guest's request handler (docs/protocol.md §3-5): the session state (before and
// after HELLO), HELLO's window negotiation, QUERY, and the dispatch of every command with
// the backend's checks in the documented order: state, feature, handles, addresses, host
// arguments, busy, quota, execution. Seam errors become statuses in one place
// (seam_status.hpp); every response is zero-initialised (reply.hpp).
//
// Owns the guest's window, Map/Revoke state and notify producer; uses (does not own) the
// seams. GpuSession alone keeps the GPU objects: the checks here ask it. Single-threaded:
// every call on the worker's io_context thread. EVENT_WAITs complete on GpuSession threads
// and are posted back to that io_context before they are answered.
#ifndef XENHSA_BACKEND_CORE_SESSION_HPP
#define XENHSA_BACKEND_CORE_SESSION_HPP

#include <xenhsa/proto.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <xenhsa/backend/core/map_revoke.hpp>
#include <xenhsa/backend/core/notify_producer.hpp>
#include <xenhsa/backend/core/quotas.hpp>
#include <xenhsa/backend/core/request_handler.hpp>
#include <xenhsa/backend/core/stats.hpp>
#include <xenhsa/backend/core/topology.hpp>
#include <xenhsa/backend/core/va_window.hpp>
#include <xenhsa/backend/core/window_negotiation.hpp>
#include <xenhsa/hsa/gpu_session.hpp>
#include <xenhsa/xen/grant_map.hpp>
#include <xenhsa/xen/grant_share.hpp>

namespace xenhsa::backend::core {

struct SessionSeams {
    xen::DomId guest = xen::kDomIdInvalid;
    xen::GrantMapper& mapper;
    xen::GrantSharer* sharer = nullptr;  // null: LEND is not granted
    hsa::GpuSession* gpu = nullptr;      // null: GPU and WAIT_CANCEL are not granted
};

struct SessionOptions {
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

// GpuSession's limits for a guest with these quotas (the worker builds the GpuSession).
hsa::SessionLimits gpu_limits(const Quotas& quotas, uint32_t ring_slots) noexcept;

class Session final : public RequestHandler {
public:
    enum class State : uint8_t { fresh, negotiating, connected };

    Session(boost::asio::io_context& io, const SessionSeams& seams, const SessionOptions& options);
    // Session end: pending waits dropped, everything revoked in the fixed order (§5.20),
    // the window released last.
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Where EVENT_WAIT completions and EVENT_WAIT_CANCEL's CANCELLED go (the ring).
    void set_async_sink(ReplySink* sink) noexcept { async_sink_ = sink; }

    void handle(const xenhsa_req_slot& copy, ReplySink& sink) noexcept override;

    // --- revoke triggers
    // The operator's revoke of one MAP or LEND handle; false if it names neither.
    bool revoke_handle(hsa::Handle handle) noexcept;
    // Everything the guest holds. `session_end`: guest death, Closing, shutdown (pending
    // waits dropped without a response, no notifications). Otherwise the operator's
    // revoke with the connection staying up (waits answered CANCELLED, REVOKED posted).
    void revoke_all(bool session_end) noexcept;
    // The quota-breach path: new limits (max_handles cannot grow past the value the
    // session was created with); revokes the newest MAPs/LENDs until the guest fits.
    // Returns how many objects were revoked.
    uint32_t enforce_quotas(const Quotas& quotas) noexcept;

    // The guest rang doorbells: each live queue's slot is read once and forwarded to the
    // GPU session when it changed. Returns how many were forwarded.
    uint32_t doorbells(const xenhsa_doorbell_page& page) noexcept;
    // Whether the guest has a live queue (whose doorbell may move).
    [[nodiscard]] bool has_queues() const noexcept;
    // Doorbell changes forwarded so far (stats().doorbells_forwarded, without the rest).
    [[nodiscard]] uint64_t doorbells_forwarded() const noexcept { return doorbells_forwarded_; }
    // The doorbell watch's polls (guest_core.hpp), for stats().
    void count_doorbell_polls(uint64_t polls) noexcept { doorbell_polls_ += polls; }

    [[nodiscard]] Stats stats() const noexcept;
    [[nodiscard]] State state() const noexcept { return state_; }
    [[nodiscard]] uint64_t features() const noexcept { return features_; }
    [[nodiscard]] const VaWindow& window() const noexcept { return window_; }
    [[nodiscard]] const Quotas& quotas() const noexcept { return quotas_; }
    [[nodiscard]] uint32_t max_in_flight() const noexcept;
    [[nodiscard]] std::size_t pending_waits() const noexcept { return waits_.size(); }
    NotifyProducer& notify() noexcept { return notify_; }

private:
    struct Gate;  // the hand-off from GpuSession threads to the io_context
    struct PendingWait {
        uint64_t token = 0;
        uint64_t wait_id = 0;
    };

    using Reply_ = std::optional<Reply>;  // nullopt: answered later (EVENT_WAIT)

    Reply_ dispatch(const xenhsa_req_slot& copy, ReplySink& sink);
    void hello(const xenhsa_req_slot& copy, uint32_t syntactic, ReplySink& sink);
    [[nodiscard]] uint32_t gate_check(uint32_t cmd) const noexcept;  // state, feature
    [[nodiscard]] uint64_t supported_features() const noexcept;
    [[nodiscard]] uint64_t total_handles() const noexcept;
    [[nodiscard]] bool handles_full() const noexcept;

    Reply map(const xenhsa_map_req& req, uint32_t seqno);
    Reply unmap(const xenhsa_handle_req& req, uint32_t seqno);
    Reply lend(const xenhsa_lend_req& req, uint32_t seqno);
    Reply pin(const xenhsa_pin_req& req, uint32_t seqno);
    Reply unpin(const xenhsa_handle_req& req, uint32_t seqno);
    Reply map_to_gpu(const xenhsa_map_to_gpu_req& req, uint32_t seqno);
    Reply unmap_from_gpu(const xenhsa_handle_req& req, uint32_t seqno);
    Reply alloc(const xenhsa_alloc_req& req, uint32_t seqno);
    Reply free(const xenhsa_handle_req& req, uint32_t seqno);
    Reply queue_create(const xenhsa_queue_create_req& req, uint32_t seqno);
    Reply queue_destroy(const xenhsa_handle_req& req, uint32_t seqno);
    Reply event_create(const xenhsa_event_create_req& req, uint32_t seqno);
    Reply event_op(uint32_t cmd, const xenhsa_handle_req& req, uint32_t seqno);
    Reply_ event_wait(const xenhsa_event_wait_req& req, uint32_t seqno);
    Reply event_wait_cancel(const xenhsa_event_wait_cancel_req& req, uint32_t seqno,
                            ReplySink& sink);

    void wait_done(uint64_t token, hsa::WaitEnd end, uint32_t mask) noexcept;
    void drain_lost_queues() noexcept;
    [[nodiscard]] bool range_held(uint64_t va, uint64_t size) const noexcept;

    boost::asio::io_context& io_;
    SessionSeams seams_;
    uint32_t ring_slots_;
    uint32_t handle_capacity_;
    Quotas quotas_;
    uint64_t allowed_features_;
    State state_ = State::fresh;
    uint32_t hellos_ = 0;
    uint64_t features_ = 0;
    bool ending_ = false;

    // Declaration order is release order reversed: the window outlives everything that
    // maps into it.
    WindowNegotiation negotiation_;
    VaWindow window_;
    NotifyProducer notify_;
    MapRevoke map_revoke_;
    Topology topology_;
    std::shared_ptr<Gate> gate_;
    std::map<uint32_t, PendingWait> waits_;  // by the wait's seqno
    uint64_t next_token_ = 0;
    ReplySink* async_sink_ = nullptr;
    xenhsa_doorbell_page* doorbell_page_;
    uint64_t doorbells_forwarded_ = 0;
    uint64_t doorbell_polls_ = 0;
};

}  // namespace xenhsa::backend::core

#endif
