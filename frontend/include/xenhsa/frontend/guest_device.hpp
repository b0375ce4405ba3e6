// One xenhsa device, guest side: the xenbus handshake (protocol 1.3, 1.4) over the
// hypervisor seam. It grants the ring, notify and doorbell pages, allocates the event
// channel, publishes them in xenstore and follows the backend's state; it notices a
// backend that died (be_alive, state Closing/Closed) and can reconnect with new pages
// and a new port.
#ifndef XENHSA_FRONTEND_GUEST_DEVICE_HPP
#define XENHSA_FRONTEND_GUEST_DEVICE_HPP

#include <chrono>
#include <optional>
#include <string>
#include <xenhsa/frontend/link.hpp>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::frontend {

struct DeviceConfig {
    xen::DomId backend_domid = 0;  // used when the frontend directory has no backend-id
    uint32_t devid = 0;
    uint32_t ring_order = XENHSA_RING_MAX_ORDER;  // wished; capped by max-ring-page-order
    std::chrono::milliseconds timeout{10000};     // each wait of the handshake
};

enum class DeviceState { idle, connected, broken, closed };

// Not thread-safe: one thread drives a device (and the Client over it). The seam objects
// passed in must outlive it.
class GuestDevice final : public Link {
public:
    GuestDevice(xen::GrantSharer& sharer, xen::EventChannel& events, xen::Store& store,
                xen::DomId self, DeviceConfig config);
    // Uses platform.sharer, .events, .store and .domains->self().
    GuestDevice(xen::Platform& platform, DeviceConfig config);
    GuestDevice(const GuestDevice&) = delete;
    GuestDevice& operator=(const GuestDevice&) = delete;
    ~GuestDevice() override;  // close(), best effort

    // Handshake, guest side: a device an earlier frontend left (its state is not
    // Initialising, e.g. Closed) goes back to Initialising first, so that the backend
    // advertises again; then it waits for the backend's InitWait, reads versions and
    // max-ring-page-order, grants zeroed pages (ring header set up as SHARED_RING_INIT),
    // binds an unbound port for the backend, writes every key and state Initialised in
    // one transaction, waits for the backend's Connected and then writes Connected.
    // ETIMEDOUT when the backend does not answer in time, ECONNREFUSED when it closes
    // instead, EPROTONOSUPPORT when it does not speak version 1. On failure nothing stays
    // granted or bound.
    Result<void> connect();
    // Closing, waits until the backend is Closed (or be_alive is 0, or the timeout),
    // withdraws the grants (pages a backend still maps are left to the hypervisor),
    // unbinds the port and writes Closed.
    Result<void> close();
    // close() when needed, state Initialising, then connect() with new pages and port.
    Result<void> reconnect();

    [[nodiscard]] DeviceState state() const noexcept { return state_; }
    [[nodiscard]] bool connected() const noexcept { return state_ == DeviceState::connected; }
    [[nodiscard]] const std::string& frontend_path() const noexcept { return fe_path_; }
    [[nodiscard]] const std::string& backend_path() const noexcept { return be_path_; }
    [[nodiscard]] uint32_t ring_order() const noexcept { return order_; }
    [[nodiscard]] xen::Port port() const noexcept { return port_.port(); }
    // The backend's xenbus state as it reads now (0 when missing or malformed).
    Result<uint32_t> read_backend_state();
    // be_alive of the ring header (0 when not connected).
    [[nodiscard]] uint32_t be_alive() const noexcept;

    // Link (valid while connected; ring() and the pages only then).
    FrontRing& ring() override { return *ring_; }
    std::span<std::byte> notify_page() override;
    xenhsa_doorbell_page& doorbell_page() override;
    [[nodiscard]] xen::DomId backend_domid() const noexcept override { return be_domid_; }
    Result<void> kick() override;
    Result<void> wait(std::chrono::milliseconds timeout) override;
    Result<void> check_backend() override;
    void mark_broken() noexcept override;

private:
    Result<void> handshake();
    Result<void> publish_keys();
    Result<void> write_state(uint32_t state);
    Result<void> wait_backend(std::chrono::steady_clock::time_point deadline);
    void teardown(bool wait_for_backend) noexcept;
    void drain_store_events();

    xen::GrantSharer& sharer_;
    xen::EventChannel& events_;
    xen::Store& store_;
    xen::DomId self_;
    DeviceConfig config_;

    std::string fe_path_;
    std::string be_path_;
    xen::DomId be_domid_;
    uint32_t order_ = 0;
    DeviceState state_ = DeviceState::idle;
    bool watching_ = false;
    bool be_state_changed_ = false;

    xen::SharedPages ring_pages_;
    xen::SharedPages notify_pages_;
    xen::SharedPages doorbell_pages_;
    xen::BoundPort port_;
    std::optional<FrontRing> ring_;
};

}  // namespace xenhsa::frontend

#endif
