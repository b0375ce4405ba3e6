// Everything one guest device needs once its pages are mapped and its event channel is
// bound, on the worker's Boost.Asio io_context: GuestRequests (requests, Map/Revoke, GPU
// forwarding), the RingServer, and a driver that waits on the event channel's fd and runs
// the ring, the doorbells and the notify backlog on each kick. A kick is unmasked after
// its pass (late EOI); a streak of kicks without work keeps the channel masked for a
// growing delay (SpuriousEventThrottle). This is what the worker process layer creates
// after the xenbus handshake and destroys on Closing.
//
// Threading: the io_context's thread only (GpuContext callbacks are posted to it).
#ifndef XENHSA_BACKEND_CORE_GUEST_CORE_HPP
#define XENHSA_BACKEND_CORE_GUEST_CORE_HPP

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <xenhsa/backend/core/doorbell_watch.hpp>
#include <xenhsa/backend/core/guest_requests.hpp>
#include <xenhsa/backend/core/quotas.hpp>
#include <xenhsa/backend/core/result.hpp>
#include <xenhsa/backend/core/ring_server.hpp>
#include <xenhsa/backend/core/spurious_events.hpp>
#include <xenhsa/backend/core/stats.hpp>
#include <xenhsa/xen/event_channel.hpp>

namespace xenhsa::backend::core {

// The guest's shared pages, mapped by the worker (ring pages contiguously).
struct GuestPages {
    std::span<std::byte> ring;  // XENHSA_RING_BYTES(ring_order) bytes
    uint32_t ring_order = 0;
    xenhsa_notify_page* notify = nullptr;      // may be null in tests
    xenhsa_doorbell_page* doorbell = nullptr;  // may be null in tests
};

struct GuestOptions {
    Quotas quotas;
    uint64_t features = XENHSA_FEATURES_KNOWN;
    uint64_t proposal_base = WindowNegotiation::kDefaultProposalBase;
    DoorbellPollPolicy doorbell_poll;     // used when the GPU seam does not track kicks
    SpuriousEventPolicy spurious_events;  // kicks without work: late unmask (XSA-332)
    // After a pass that caught up, the ring is polled this long before req_event is armed
    // and the worker sleeps (the guest does not kick meanwhile); 0: arm at once.
    std::chrono::microseconds ring_spin{50};
};

// The guest must be disconnected (ring overflow, notify backlog full, event channel
// failure). Called at most once, from the io_context; the core serves nothing afterwards.
using CoreFatal = std::function<void(std::string reason)>;

class GuestCore {
public:
    // Builds GuestRequests and the ring, sets be_alive = 1 in the ring header (the caller
    // mapped the first ring page with the unmap notification on it), hands the doorbell
    // page's kick_requested word to a GPU seam that tracks kicks or else sets it for good
    // (the GPU side is then driven by kicks, and by a DoorbellWatch that polls the page
    // while queues exist, for guests that never kick), starts waiting on
    // `events.fd()` and runs a first pass for requests published before the bind. EINVAL
    // for pages that do not fit the order. `events` must outlive the core.
    static Result<std::unique_ptr<GuestCore>> start(boost::asio::io_context& io,
                                                    xen::EventChannel& events, xen::Port local,
                                                    const GuestPages& pages,
                                                    const RequestSeams& seams,
                                                    const GuestOptions& options,
                                                    CoreFatal on_fatal);
    // Session end: stops serving, drops pending waits, revokes everything in the fixed
    // order, releases the window. Never fails.
    ~GuestCore();
    GuestCore(const GuestCore&) = delete;
    GuestCore& operator=(const GuestCore&) = delete;

    [[nodiscard]] Stats stats() const noexcept { return requests_->stats(); }
    // The doorbell watch, or null when the GPU seam tracks kicks (or there is none).
    [[nodiscard]] const DoorbellWatch* doorbell_watch() const noexcept;
    // The accounting of the guest's kicks that brought no work.
    [[nodiscard]] const SpuriousEventThrottle& spurious_events() const noexcept;
    // The operator's revoke of everything; the connection stays up.
    void revoke_all() noexcept;
    bool revoke_handle(hsa::Handle handle) noexcept;
    // The quota-breach path (see GuestRequests::enforce_quotas).
    uint32_t enforce_quotas(const Quotas& quotas) noexcept;

    GuestRequests& requests() noexcept { return *requests_; }
    RingServer& ring() noexcept { return *ring_; }
    // Runs one pass now, as a kick would.
    void wake() noexcept;

private:
    struct Driver;
    GuestCore() = default;
    static Result<std::unique_ptr<GuestCore>> start_checked(
        boost::asio::io_context& io, xen::EventChannel& events, xen::Port local,
        const GuestPages& pages, const RequestSeams& seams, const GuestOptions& options,
        CoreFatal on_fatal);

    std::unique_ptr<GuestRequests> requests_;
    std::unique_ptr<RingServer> ring_;
    std::unique_ptr<Driver> driver_;
    hsa::GpuContext* kick_tracker_ = nullptr;  // keeps the doorbell page's kick word
};

}  // namespace xenhsa::backend::core

#endif
