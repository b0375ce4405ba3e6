// The worker's side of the xenbus handshake for one device (docs/protocol.md §1.4):
//
//   start ............................ versions, max-ring-page-order, InitWait
//   fe Initialised|Connected, be InitWait ... read + check keys, connect the guest,
//                                             Connected (bad keys: error node, Closing,
//                                             Closed)
//   fe Closing|Closed|gone, be InitWait|Connected ... Closing, teardown, Closed
//   fe Initialising, be Connected .... (frontend restarted) Closing, teardown, Closed,
//                                      then as below
//   fe Initialising, be Closed ....... reconnect: InitWait again
//
// The toolstack's conventions, as Linux's and QEMU's backends follow them: the worker
// writes hotplug-status "connected" when it advertises, and watches the backend's
// `online` node: "0" (the toolstack unplugs: libxl writes online 0 and state Closing in
// one transaction, then waits for Closed) closes the device and keeps it closed whatever
// the frontend does, until `online` is "1" again; a missing node counts as online.
//
// The frontend's state node is guest-written: a malformed value counts as Closing, with
// an error node. A failing store write is fatal for the worker (`on_store_failure`), so
// the supervisor marks the device Closed and the guest reconnects to a fresh worker.
#ifndef XENHSA_BACKEND_SERVICE_XENBUS_DEVICE_HPP
#define XENHSA_BACKEND_SERVICE_XENBUS_DEVICE_HPP

#include <spdlog/logger.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <xenhsa/backend/service/guest_connector.hpp>
#include <xenhsa/backend/service/xenbus.hpp>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::backend::service {

struct DeviceStatus {
    DeviceId id;
    XenbusState state = XenbusState::unknown;
    DeviceStats stats;
    std::string error;  // the last error node written, empty if none
};

class XenbusDevice {
public:
    static constexpr std::string_view kFrontendStateToken = "xenhsa-fe-state";
    static constexpr std::string_view kOnlineToken = "xenhsa-be-online";

    XenbusDevice(boost::asio::io_context& io, xen::Platform& platform, GuestConnector& factory,
                 DeviceId id, std::shared_ptr<spdlog::logger> log);
    ~XenbusDevice();  // tears the connected guest down; writes nothing
    XenbusDevice(const XenbusDevice&) = delete;
    XenbusDevice& operator=(const XenbusDevice&) = delete;

    // Called with each new backend state once it is in the store.
    std::function<void(XenbusState)> on_state_change;
    // A frontend reconnects while the factory is not ready(): whoever makes it ready is
    // asked to (the worker asks the supervisor for the pool shares); factory_ready() then
    // serves the frontend.
    std::function<void()> on_factory_wanted;
    // Called when the store refused a write or a watch: the worker should end.
    std::function<void(std::error_code)> on_store_failure;

    // Advertises, moves to InitWait and watches the frontend's state.
    xen::Result<void> start();
    // Feed every watch event of the worker's store here; others are ignored.
    void on_watch(const xen::WatchEvent& event);

    void revoke_all() noexcept;
    // One MAP or LEND handle of the connected guest; false if it names none.
    bool revoke_handle(uint64_t handle) noexcept;
    // `xenhsa-ctl quota`: new limits for this and every later connection of the worker,
    // enforced at once (a guest over them loses its newest objects; `revoked` counts
    // them). A readable error, and nothing changed, when a setting is refused.
    std::optional<std::string> update_limits(const std::vector<std::string>& settings,
                                             uint64_t& revoked);
    // Backend shutdown or unplug: Closing, teardown, Closed (only while the backend
    // directory exists). Afterwards the device ignores the frontend.
    void shutdown() noexcept;
    // The factory became ready() again: a frontend waiting to reconnect is served now.
    void factory_ready();

    [[nodiscard]] XenbusState state() const noexcept { return state_; }
    [[nodiscard]] DeviceStatus status() const;
    [[nodiscard]] const std::string& backend_path() const noexcept { return be_dir_; }
    [[nodiscard]] const std::string& frontend_path() const noexcept { return fe_dir_; }

private:
    enum class Write : uint8_t { ok, gone, failed };

    void frontend_changed();
    void online_changed();
    void connect();
    // Closing, teardown, Closed. A non-empty `error` also goes to the error node.
    void close(const std::string& error);
    Write set_state(XenbusState state);
    Write advertise();
    Write write_error(const std::string& text);
    // The backend directory vanished (unplug): drop everything, stop reacting.
    void unplugged();
    void store_failed(const char* what, std::error_code ec);

    boost::asio::io_context& io_;
    xen::Platform& platform_;
    GuestConnector& factory_;
    DeviceId id_;
    std::shared_ptr<spdlog::logger> log_;
    xen::DomId be_ = 0;
    std::string be_dir_;
    std::string fe_dir_;
    XenbusState state_ = XenbusState::initialising;
    std::unique_ptr<ConnectedGuest> guest_;
    // Bumped on every connect and close, so a late fatal report of an old connection is
    // ignored.
    uint64_t generation_ = 0;
    bool stopped_ = false;
    bool failed_ = false;
    bool offline_ = false;  // the toolstack wrote online "0"

    std::string error_;
    // Posted handlers hold a weak reference to tell whether this object still exists.
    std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace xenhsa::backend::service

#endif
