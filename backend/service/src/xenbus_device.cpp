#include <xenhsa/proto/xenbus.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <utility>
#include <xenhsa/backend/service/xenbus_device.hpp>

namespace xenhsa::backend::service {

XenbusDevice::XenbusDevice(boost::asio::io_context& io, xen::Platform& platform,
                           GuestConnector& factory, DeviceId id,
                           std::shared_ptr<spdlog::logger> log)
    : io_(io),
      platform_(platform),
      factory_(factory),
      id_(id),
      log_(std::move(log)),
      be_(platform.domains->self()),
      be_dir_(backend_dir(be_, id)),
      fe_dir_(frontend_dir(id)) {}

XenbusDevice::~XenbusDevice() { guest_.reset(); }

xen::Result<void> XenbusDevice::start() {
    if (const Write w = advertise(); w != Write::ok) {
        return xen::errc(w == Write::gone ? std::errc::no_such_file_or_directory
                                          : std::errc::io_error);
    }
    if (const Write w = set_state(XenbusState::init_wait); w != Write::ok) {
        return xen::errc(w == Write::gone ? std::errc::no_such_file_or_directory
                                          : std::errc::io_error);
    }
    for (const auto& [path, token] :
         {std::pair{be_dir_ + "/online", kOnlineToken},
          std::pair{fe_dir_ + "/" XENHSA_XS_STATE, kFrontendStateToken}}) {
        auto watched = platform_.store->watch(path, token);
        if (!watched) {
            failed_ = true;
            return watched.error();
        }
    }
    return xen::Result<void>(boost::outcome_v2::success());
}

void XenbusDevice::on_watch(const xen::WatchEvent& event) {
    if (event.token == kFrontendStateToken) {
        frontend_changed();
    } else if (event.token == kOnlineToken) {
        online_changed();
    }
}

void XenbusDevice::online_changed() {
    if (stopped_ || failed_) {
        return;
    }
    auto online = platform_.store->read(xen::kNoTx, be_dir_ + "/online");
    const bool offline = online && online.value() == "0";
    if (offline == offline_) {
        return;
    }
    offline_ = offline;
    log_->info("the toolstack set the device {}", offline ? "offline" : "online");
    if (offline && state_ == XenbusState::closed) {
        // Closed already: say so again over the Closing the toolstack wrote with it.
        (void)set_state(XenbusState::closed);
        return;
    }
    frontend_changed();  // offline: closes; online again: a waiting frontend is served
}

void XenbusDevice::frontend_changed() {
    if (stopped_ || failed_) {
        return;
    }
    if (offline_) {
        if (state_ == XenbusState::init_wait || state_ == XenbusState::connected) {
            close({});
        }
        return;
    }
    auto read = read_state(*platform_.store, fe_dir_);
    if (!read && read.error() == std::errc::invalid_argument) {
        if (state_ == XenbusState::init_wait || state_ == XenbusState::connected) {
            log_->warn("frontend state is not a xenbus state: closing");
            close(std::to_string(EINVAL) + " state: not a xenbus state");
        }
        return;
    }
    if (!read) {
        log_->warn("cannot read the frontend state: {}", read.error().message());
    }
    const std::optional<XenbusState> fe = read ? read.value() : std::nullopt;
    if (!fe) {
        // The frontend's directory is gone: its domain is going away, or it was unplugged.
        if (state_ == XenbusState::connected) {
            close({});
        }
        return;
    }
    log_->debug("frontend {}, backend {}", to_string(*fe), to_string(state_));
    switch (*fe) {
        case XenbusState::initialising:
            if (state_ == XenbusState::connected) {
                log_->info("frontend restarted");
                close({});
            }
            if (state_ == XenbusState::closed && !factory_.ready()) {
                log_->debug("frontend reconnecting: waiting for the pool shares");
                if (on_factory_wanted) {
                    on_factory_wanted();
                }
                break;
            }
            if (state_ == XenbusState::closed) {
                log_->info("frontend reconnecting");
                if (advertise() == Write::ok) {
                    (void)set_state(XenbusState::init_wait);
                }
            }
            break;
        case XenbusState::initialised:
        case XenbusState::connected:
            if (state_ == XenbusState::init_wait) {
                connect();
            }
            break;
        case XenbusState::closing:
        case XenbusState::closed:
            if (state_ == XenbusState::init_wait || state_ == XenbusState::connected) {
                close({});
            }
            break;
        default:
            break;
    }
}

void XenbusDevice::factory_ready() { frontend_changed(); }

void XenbusDevice::connect() {
    auto keys = read_frontend_keys(*platform_.store, fe_dir_, factory_.max_ring_page_order());
    if (!keys) {
        const std::string text = keys.error().text();
        log_->warn("refusing the frontend's keys: {}", text);
        close(text);
        return;
    }
    const uint64_t generation = ++generation_;
    CloseRequest fatal = [this, &io = io_, weak = std::weak_ptr<int>(alive_),
                          generation](std::string why) {
        // May run on any thread, even after this device is gone: touch `this` only on the
        // loop, and only while `weak` says it exists.
        boost::asio::post(io, [this, weak, generation, why = std::move(why)] {
            if (weak.expired() || generation != generation_) {
                return;
            }
            log_->warn("closing the connection: {}", why);
            close(std::to_string(EPROTO) + " " + why);
        });
    };
    auto guest =
        factory_.connect(ConnectArgs{io_, platform_, be_, id_, keys.value(), std::move(fatal)});
    if (!guest) {
        log_->warn("cannot connect: {}", guest.error().message());
        close(std::to_string(guest.error().value()) + " connect: " + guest.error().message());
        return;
    }
    guest_ = std::move(guest).value();
    if (!error_.empty()) {
        (void)platform_.store->rm(xen::kNoTx, be_dir_ + "/error");
        error_.clear();
    }
    if (set_state(XenbusState::connected) == Write::ok) {
        log_->info("connected: ring order {}, event channel {}", keys.value().ring_page_order,
                   keys.value().event_channel);
    }
}

void XenbusDevice::close(const std::string& error) {
    ++generation_;
    if (!error.empty() && write_error(error) != Write::ok) {
        return;
    }
    if (state_ != XenbusState::closing && set_state(XenbusState::closing) != Write::ok) {
        return;
    }
    guest_.reset();
    (void)set_state(XenbusState::closed);
}

void XenbusDevice::revoke_all() noexcept {
    if (guest_) {
        log_->info("operator revoke: revoking everything the guest holds");
        guest_->revoke_all();
    }
}

bool XenbusDevice::revoke_handle(uint64_t handle) noexcept {
    if (!guest_ || !guest_->revoke_handle(handle)) {
        return false;
    }
    log_->info("operator revoke of handle {:#x}", handle);
    return true;
}

std::optional<std::string> XenbusDevice::update_limits(const std::vector<std::string>& settings,
                                                       uint64_t& revoked) {
    revoked = 0;
    if (auto refused = factory_.update_limits(settings)) {
        return refused;
    }
    if (guest_) {
        revoked = guest_->enforce_limits();
        if (revoked != 0) {
            log_->info("new limits: revoked {} object(s) over quota", revoked);
        }
    }
    return std::nullopt;
}

void XenbusDevice::shutdown() noexcept {
    if (stopped_) {
        return;
    }
    if (!failed_ && state_ != XenbusState::closed) {
        close({});
    }
    guest_.reset();
    stopped_ = true;
}

DeviceStatus XenbusDevice::status() const {
    DeviceStatus s{id_, state_, {}, error_};
    if (guest_) {
        s.stats = guest_->stats();
    }
    return s;
}

XenbusDevice::Write XenbusDevice::set_state(XenbusState state) {
    auto written = write_state_if_present(*platform_.store, be_dir_, state);
    if (!written) {
        store_failed("write the backend state", written.error());
        return Write::failed;
    }
    if (!written.value()) {
        unplugged();
        return Write::gone;
    }
    state_ = state;
    if (on_state_change) {
        on_state_change(state);
    }
    return Write::ok;
}

XenbusDevice::Write XenbusDevice::advertise() {
    const std::pair<std::string_view, std::string> values[] = {
        {XENHSA_XS_VERSIONS, "1"},
        {XENHSA_XS_MAX_RING_PAGE_ORDER, std::to_string(factory_.max_ring_page_order())},
        {"hotplug-status", "connected"},
    };
    auto written = write_if_present(*platform_.store, be_dir_, values);
    if (!written) {
        store_failed("advertise", written.error());
        return Write::failed;
    }
    if (!written.value()) {
        unplugged();
        return Write::gone;
    }
    return Write::ok;
}

XenbusDevice::Write XenbusDevice::write_error(const std::string& text) {
    const std::pair<std::string_view, std::string> value{"error", text};
    auto written = write_if_present(*platform_.store, be_dir_, std::span(&value, 1));
    if (!written) {
        store_failed("write the error node", written.error());
        return Write::failed;
    }
    if (!written.value()) {
        unplugged();
        return Write::gone;
    }
    error_ = text;
    return Write::ok;
}

void XenbusDevice::unplugged() {
    if (!stopped_) {
        log_->info("backend directory removed: device unplugged");
    }
    ++generation_;
    guest_.reset();
    stopped_ = true;
    state_ = XenbusState::closed;
}

void XenbusDevice::store_failed(const char* what, std::error_code ec) {
    ++generation_;
    guest_.reset();
    if (failed_) {
        return;
    }
    failed_ = true;
    log_->error("cannot {}: {}", what, ec.message());
    if (on_store_failure) {
        on_store_failure(ec);
    }
}

}  // namespace xenhsa::backend::service
