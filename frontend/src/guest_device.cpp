#include <poll.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <thread>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/guest_device.hpp>

namespace xenhsa::frontend {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::string_view kStateToken = "xenhsa-frontend-be-state";
constexpr xen::DomId kDomIdMax = 0x7FEF;  // DOMID_FIRST_RESERVED - 1
constexpr int kTxAttempts = 32;

std::chrono::milliseconds left(Clock::time_point deadline) {
    const auto now = Clock::now();
    return now >= deadline ? std::chrono::milliseconds{0}
                           : std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
}

// `versions` lists the versions the backend speaks; v1 writes "1", and the format of a
// list is open (10.2.5), so separators other than digits are accepted.
bool speaks_v1(std::string_view versions) {
    std::size_t i = 0;
    while (i < versions.size()) {
        while (i < versions.size() && (versions[i] < '0' || versions[i] > '9')) {
            ++i;
        }
        std::size_t j = i;
        while (j < versions.size() && versions[j] >= '0' && versions[j] <= '9') {
            ++j;
        }
        if (j > i) {
            auto v = xen::parse_store_uint(versions.substr(i, j - i), 0xFFFFFFFFu);
            if (v && v.value() == XENHSA_PROTO_VERSION) {
                return true;
            }
        }
        i = j;
    }
    return false;
}

}  // namespace

GuestDevice::GuestDevice(xen::GrantSharer& sharer, xen::EventChannel& events, xen::Store& store,
                         xen::DomId self, DeviceConfig config)
    : sharer_(sharer),
      events_(events),
      store_(store),
      self_(self),
      config_(config),
      be_domid_(config.backend_domid) {
    fe_path_ = "/local/domain/" + std::to_string(self_) + "/device/" XENHSA_XS_DEVICE_TYPE "/" +
               std::to_string(config_.devid);
}

GuestDevice::GuestDevice(xen::Platform& platform, DeviceConfig config)
    : GuestDevice(*platform.sharer, *platform.events, *platform.store, platform.domains->self(),
                  config) {}

GuestDevice::~GuestDevice() {
    try {
        if (ring_) {
            (void)close();
        }
    } catch (...) {  // nothing may leave a destructor; the seam objects release themselves
    }
}

std::span<std::byte> GuestDevice::notify_page() { return {notify_pages_.data(), XENHSA_PAGE_SIZE}; }

xenhsa_doorbell_page& GuestDevice::doorbell_page() {
    return *reinterpret_cast<xenhsa_doorbell_page*>(doorbell_pages_.data());
}

uint32_t GuestDevice::be_alive() const noexcept {
    if (!ring_pages_.data()) {
        return 0;
    }
    const auto* sring = reinterpret_cast<const xenhsa_sring*>(ring_pages_.data());
    return xenhsa_index_load(&sring->be_alive);
}

Result<void> GuestDevice::write_state(uint32_t state) {
    return store_.write(xen::kNoTx, fe_path_ + "/" XENHSA_XS_STATE, std::to_string(state));
}

Result<uint32_t> GuestDevice::read_backend_state() {
    auto value = store_.read(xen::kNoTx, be_path_ + "/" XENHSA_XS_STATE);
    if (!value) {
        if (value.error() == std::errc::no_such_file_or_directory) {
            return uint32_t{XENHSA_XB_UNKNOWN};
        }
        return value.error();
    }
    auto state = xen::parse_store_uint(value.value(), 0xFF);
    return state ? static_cast<uint32_t>(state.value()) : uint32_t{XENHSA_XB_UNKNOWN};
}

void GuestDevice::drain_store_events() {
    for (int i = 0; i < 1024; ++i) {
        auto event = store_.next_event();
        if (!event || !event.value()) {
            return;
        }
        if (event.value()->token == kStateToken) {
            be_state_changed_ = true;
        }
    }
}

Result<void> GuestDevice::wait_backend(Clock::time_point deadline) {
    std::array<pollfd, 2> fds{};
    fds[0] = {store_.fd(), POLLIN, 0};
    fds[1] = {events_.fd(), POLLIN, 0};
    const auto timeout = left(deadline);
    if (timeout.count() == 0) {
        return errno_code(ETIMEDOUT);
    }
    const int n =
        ::poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(timeout.count(), 1000)));
    if (n < 0 && errno != EINTR) {
        return errno_code(errno);
    }
    if (n > 0 && (fds[0].revents & POLLIN) != 0) {
        drain_store_events();
    }
    if (n > 0 && (fds[1].revents & POLLIN) != 0) {
        if (auto fired = events_.pending(); fired && fired.value()) {
            (void)events_.unmask(*fired.value());
        }
    }
    return boost::outcome_v2::success();
}

Result<void> GuestDevice::publish_keys() {
    const std::string ring_ref = fe_path_ + "/" XENHSA_XS_RING_REF;
    for (int attempt = 0; attempt < kTxAttempts; ++attempt) {
        auto tx = store_.transaction_start();
        if (!tx) {
            return tx.error();
        }
        const xen::TxId t = tx.value();
        auto write = [&](const std::string& key, uint64_t value) {
            return store_.write(t, fe_path_ + "/" + key, std::to_string(value));
        };
        Result<void> r = write(XENHSA_XS_RING_PAGE_ORDER, order_);
        const auto refs = ring_pages_.refs();
        // Keys of another order, left from an earlier connection, must not linger.
        for (uint32_t i = 0; r && i < (1u << XENHSA_RING_MAX_ORDER); ++i) {
            if (order_ == 0 || i >= refs.size()) {
                r = store_.rm(t, ring_ref + std::to_string(i));
            } else {
                r = write(XENHSA_XS_RING_REF + std::to_string(i), refs[i]);
            }
        }
        if (r) {
            r = order_ == 0 ? write(XENHSA_XS_RING_REF, refs[0]) : store_.rm(t, ring_ref);
        }
        if (r) {
            r = write(XENHSA_XS_NOTIFY_REF, notify_pages_.refs()[0]);
        }
        if (r) {
            r = write(XENHSA_XS_DOORBELL_REF, doorbell_pages_.refs()[0]);
        }
        if (r) {
            r = write(XENHSA_XS_EVENT_CHANNEL, port_.port());
        }
        if (r) {
            r = write(XENHSA_XS_STATE, XENHSA_XB_INITIALISED);
        }
        if (!r) {
            (void)store_.transaction_end(t, false);
            return r.error();
        }
        auto committed = store_.transaction_end(t, true);
        if (committed) {
            return boost::outcome_v2::success();
        }
        if (committed.error() != std::errc::resource_unavailable_try_again) {
            return committed.error();
        }
    }
    return errno_code(EAGAIN);
}

Result<void> GuestDevice::handshake() {
    const auto deadline = Clock::now() + config_.timeout;
    // The toolstack's keys name the backend; fall back to the configured domain.
    if (auto id = store_.read(xen::kNoTx, fe_path_ + "/backend-id"); id) {
        auto parsed = xen::parse_store_uint(id.value(), kDomIdMax);
        if (!parsed) {
            return parsed.error();
        }
        be_domid_ = static_cast<xen::DomId>(parsed.value());
    }
    if (auto path = store_.read(xen::kNoTx, fe_path_ + "/backend"); path && !path.value().empty()) {
        be_path_ = path.value();
    } else {
        be_path_ = "/local/domain/" + std::to_string(be_domid_) +
                   "/backend/" XENHSA_XS_DEVICE_TYPE "/" + std::to_string(self_) + "/" +
                   std::to_string(config_.devid);
    }
    if (!watching_) {
        if (auto w = store_.watch(be_path_ + "/" XENHSA_XS_STATE, kStateToken); !w) {
            return w.error();
        }
        watching_ = true;
    }
    // A device an earlier frontend used (Closed after its close, or anything else after it
    // crashed) starts over from Initialising: only then does the backend advertise again
    // and go back to InitWait (1.4 step 6). A fresh device already is at Initialising.
    if (auto own = store_.read(xen::kNoTx, fe_path_ + "/" XENHSA_XS_STATE);
        own && own.value() != std::to_string(XENHSA_XB_INITIALISING)) {
        if (auto w = write_state(XENHSA_XB_INITIALISING); !w) {
            return w.error();
        }
    }

    // Step 2 is the backend's: versions, max-ring-page-order, InitWait.
    for (;;) {
        auto st = read_backend_state();
        if (!st) {
            return st.error();
        }
        if (st.value() == XENHSA_XB_INIT_WAIT) {
            break;
        }
        if (auto w = wait_backend(deadline); !w) {
            return w.error();
        }
    }
    auto versions = store_.read(xen::kNoTx, be_path_ + "/" XENHSA_XS_VERSIONS);
    if (!versions) {
        return versions.error();
    }
    if (!speaks_v1(versions.value())) {
        return errno_code(EPROTONOSUPPORT);
    }
    uint64_t max_order = 0;
    if (auto v = store_.read(xen::kNoTx, be_path_ + "/" XENHSA_XS_MAX_RING_PAGE_ORDER); v) {
        auto parsed = xen::parse_store_uint(v.value(), 0xFFFFFFFFu);
        if (!parsed) {
            return parsed.error();
        }
        max_order = parsed.value();
    } else if (v.error() != std::errc::no_such_file_or_directory) {
        return v.error();
    }
    order_ = static_cast<uint32_t>(
        std::min<uint64_t>({config_.ring_order, max_order, XENHSA_RING_MAX_ORDER}));

    // Step 3: the port, zeroed pages, the ring header, the keys, Initialised. The ring's
    // pages carry the unmap notification on fe_alive (2.7): if this process dies, its
    // grant driver clears the byte and kicks the backend.
    auto port = events_.bind_unbound(be_domid_);
    if (!port) {
        return port.error();
    }
    port_ = std::move(port.value());
    xen::ShareSpec ring_spec{be_domid_, std::size_t{1} << order_, true, nullptr};
    ring_spec.notify = {.clear_byte_at = XENHSA_SRING_FE_ALIVE_OFFSET, .port = port_.port()};
    auto ring = sharer_.share(ring_spec);
    if (!ring) {
        return ring.error();
    }
    ring_pages_ = std::move(ring.value());
    auto notify = sharer_.share({be_domid_, 1, true, nullptr});
    if (!notify) {
        return notify.error();
    }
    notify_pages_ = std::move(notify.value());
    auto doorbell = sharer_.share({be_domid_, 1, true, nullptr});
    if (!doorbell) {
        return doorbell.error();
    }
    doorbell_pages_ = std::move(doorbell.value());
    std::memset(ring_pages_.data(), 0, XENHSA_RING_BYTES(order_));
    std::memset(notify_pages_.data(), 0, XENHSA_PAGE_SIZE);
    std::memset(doorbell_pages_.data(), 0, XENHSA_PAGE_SIZE);
    ring_.emplace(std::span<std::byte>(ring_pages_.data(), XENHSA_RING_BYTES(order_)), order_);
    xenhsa_index_store(&reinterpret_cast<xenhsa_sring*>(ring_pages_.data())->fe_alive, 1);
    if (auto p = publish_keys(); !p) {
        return p.error();
    }

    // Step 4 is the backend's; step 5: it is Connected, so are we.
    for (;;) {
        auto st = read_backend_state();
        if (!st) {
            return st.error();
        }
        if (st.value() == XENHSA_XB_CONNECTED) {
            break;
        }
        if (st.value() == XENHSA_XB_CLOSING || st.value() == XENHSA_XB_CLOSED) {
            return errno_code(ECONNREFUSED);
        }
        if (auto w = wait_backend(deadline); !w) {
            return w.error();
        }
    }
    if (be_alive() == 0) {  // set before Connected (1.4 step 4)
        return Errc::backend_broken;
    }
    if (auto w = write_state(XENHSA_XB_CONNECTED); !w) {
        return w.error();
    }
    be_state_changed_ = false;
    state_ = DeviceState::connected;
    return boost::outcome_v2::success();
}

Result<void> GuestDevice::connect() {
    if (state_ == DeviceState::connected) {
        return boost::outcome_v2::success();
    }
    if (ring_) {  // leftovers of a broken connection
        teardown(true);
    }
    auto done = handshake();
    if (!done) {
        teardown(true);
        state_ = DeviceState::idle;
    }
    return done;
}

void GuestDevice::teardown(bool wait_for_backend) noexcept {
    try {
        const bool published = port_ || ring_;
        if (published) {
            (void)write_state(XENHSA_XB_CLOSING);
        }
        if (published && wait_for_backend) {
            // The grants may go once the backend is Closed or its mapping is gone (1.4).
            const auto deadline = Clock::now() + config_.timeout;
            for (;;) {
                auto st = read_backend_state();
                if (!st || st.value() == XENHSA_XB_CLOSED || st.value() == XENHSA_XB_UNKNOWN ||
                    be_alive() == 0 || !wait_backend(deadline)) {
                    break;
                }
            }
        }
        ring_.reset();
        // A page the backend still maps cannot end access (EBUSY): retry for a moment,
        // then leave it to the hypervisor (the SharedPages destructor).
        const auto deadline = Clock::now() + std::chrono::milliseconds(wait_for_backend ? 1000 : 0);
        for (xen::SharedPages* pages : {&ring_pages_, &notify_pages_, &doorbell_pages_}) {
            while (pages->data() != nullptr && !pages->end_access() && Clock::now() < deadline) {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            *pages = xen::SharedPages{};
        }
        port_.reset();
        if (watching_) {
            (void)store_.unwatch(be_path_ + "/" XENHSA_XS_STATE, kStateToken);
            watching_ = false;
        }
        if (published) {
            (void)write_state(XENHSA_XB_CLOSED);
        }
    } catch (...) {  // std::bad_alloc from a path: the seam objects still release themselves
    }
}

Result<void> GuestDevice::close() {
    if (!ring_ && !port_) {
        state_ = DeviceState::closed;
        return boost::outcome_v2::success();
    }
    teardown(true);
    state_ = DeviceState::closed;
    return boost::outcome_v2::success();
}

Result<void> GuestDevice::reconnect() {
    if (auto c = close(); !c) {
        return c;
    }
    if (auto w = write_state(XENHSA_XB_INITIALISING); !w) {
        return w;
    }
    state_ = DeviceState::idle;
    return connect();
}

Result<void> GuestDevice::kick() {
    if (!port_) {
        return Errc::not_connected;
    }
    return events_.notify(port_.port());
}

Result<void> GuestDevice::check_backend() {
    if (state_ == DeviceState::broken) {
        return Errc::backend_broken;
    }
    if (state_ != DeviceState::connected) {
        return Errc::not_connected;
    }
    if (be_alive() == 0) {
        return Errc::backend_gone;
    }
    if (be_state_changed_) {
        be_state_changed_ = false;
        auto st = read_backend_state();
        if (st && st.value() != XENHSA_XB_CONNECTED) {
            return Errc::backend_gone;
        }
    }
    return boost::outcome_v2::success();
}

Result<void> GuestDevice::wait(std::chrono::milliseconds timeout) {
    if (auto alive = check_backend(); !alive) {
        return alive;
    }
    std::array<pollfd, 2> fds{};
    fds[0] = {events_.fd(), POLLIN, 0};
    fds[1] = {store_.fd(), POLLIN, 0};
    const int n = ::poll(fds.data(), fds.size(),
                         static_cast<int>(std::clamp<int64_t>(timeout.count(), 0, 60000)));
    if (n < 0 && errno != EINTR) {
        return errno_code(errno);
    }
    if (n > 0 && (fds[0].revents & POLLIN) != 0) {
        auto fired = events_.pending();
        if (!fired) {
            return fired.error();
        }
        if (fired.value()) {
            (void)events_.unmask(*fired.value());
        }
    }
    if (n > 0 && (fds[1].revents & POLLIN) != 0) {
        drain_store_events();
    }
    return check_backend();
}

void GuestDevice::mark_broken() noexcept {
    if (state_ == DeviceState::connected) {
        state_ = DeviceState::broken;
        try {
            (void)write_state(XENHSA_XB_CLOSING);
        } catch (...) {
        }
    }
}

}  // namespace xenhsa::frontend
