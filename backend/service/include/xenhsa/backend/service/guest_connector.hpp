// Where the per-guest core plugs into the worker: once the xenbus state machine has read
// and checked the frontend's keys, a GuestConnector turns them into a live ConnectedGuest
// (mapped ring, notify and doorbell pages, bound event channel, request handling, handle
// tables, quotas, Map/Revoke, GPU context). Destroying it revokes everything the
// guest holds, in the fixed order, and unmaps every page.
#ifndef XENHSA_BACKEND_SERVICE_GUEST_CONNECTOR_HPP
#define XENHSA_BACKEND_SERVICE_GUEST_CONNECTOR_HPP

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <xenhsa/backend/service/frontend_keys.hpp>
#include <xenhsa/backend/service/quota_ceilings.hpp>
#include <xenhsa/backend/service/xenbus.hpp>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::backend::service {

// What `xenhsa-ctl status` reports for one device.
struct DeviceStats {
    uint64_t mapped_pages = 0;
    uint64_t pinned_pages = 0;
    uint64_t lent_pages = 0;
    uint64_t queues = 0;
    uint64_t events = 0;
    uint64_t handles = 0;
    uint64_t doorbells_forwarded = 0;  // doorbell changes given to the GPU seam
    uint64_t doorbell_polls = 0;       // polls of the doorbell page (seams without kicks)
};

class ConnectedGuest {
public:
    virtual ~ConnectedGuest() = default;  // revokes everything, in order; never fails
    [[nodiscard]] virtual DeviceStats stats() const noexcept = 0;
    // The operator's `xenhsa-ctl revoke`: take away everything the guest holds. The
    // connection itself stays up.
    virtual void revoke_all() noexcept = 0;
    // `xenhsa-ctl revoke --handle H`: one MAP or LEND; false when `handle` names neither.
    virtual bool revoke_handle(uint64_t handle) noexcept {
        (void)handle;
        return false;
    }
    // The factory's limits changed (`xenhsa-ctl quota`): enforce them now, revoking the
    // newest objects of a guest that no longer fits. Returns how many were revoked.
    virtual uint64_t enforce_limits() noexcept { return 0; }
};

// A connected guest asks to be closed (ring violation, quota breach, ...). The device
// closes from a fresh handler on the io_context, never from inside this call, so the
// guest may call it from anywhere in its own code on the worker's loop.
using CloseRequest = std::function<void(std::string reason)>;

struct ConnectArgs {
    boost::asio::io_context& io;
    xen::Platform& platform;
    xen::DomId backend_domid;
    DeviceId device;
    const FrontendKeys& keys;
    CloseRequest on_fatal;
};

class GuestConnector {
public:
    virtual ~GuestConnector() = default;
    // What the backend advertises in max-ring-page-order.
    [[nodiscard]] virtual uint32_t max_ring_page_order() const noexcept = 0;
    virtual xen::Result<std::unique_ptr<ConnectedGuest>> connect(const ConnectArgs& start) = 0;
    // Applies "key=value" quota overrides to this and every later connection of the worker.
    // A readable error, and nothing changed, when one of them is refused.
    virtual std::optional<std::string> update_limits(const std::vector<std::string>& settings) {
        (void)settings;
        return std::string("this backend has no quotas to change");
    }
    // The supervisor's bounds for this and every later connection (pool shares): quotas
    // above them are lowered to them, whatever the settings say.
    virtual void set_ceilings(const QuotaCeilings& ceilings) noexcept { (void)ceilings; }
    // A connection ended: what the guest still maps of its lends changes the LEND bound of
    // the next one, which only the supervisor can read (when the device is advertised
    // again). Until set_ceilings() brings it, the LEND bound is 0.
    virtual void ceilings_outdated() noexcept {}
    // Whether a new connection may be advertised (InitWait) now. A reconnecting frontend
    // waits while this is false, so that its HELLO never reports an outdated bound.
    [[nodiscard]] virtual bool ready() const noexcept { return true; }
};

}  // namespace xenhsa::backend::service

#endif
