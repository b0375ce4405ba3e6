// EventChannel over libxenevtchn; binding and unbinding by its authority (authority.hpp).
#include <fcntl.h>
#include <poll.h>

#include <xenhsa/xen/real/platform.hpp>
#include <xenhsa/xen/real/testing.hpp>

#include "authority_user.hpp"
#include "detail.hpp"

extern "C" {
#include <xenevtchn.h>
}

namespace xenhsa::xen::real {

namespace {

struct EvtchnClose {
    void operator()(xenevtchn_handle* h) const noexcept { xenevtchn_close(h); }
};
using EvtchnHandle = std::unique_ptr<xenevtchn_handle, EvtchnClose>;

class RealEventChannel final : public EventChannel, public detail::AuthorityUser {
public:
    RealEventChannel(EvtchnHandle h, int fd) : h_(std::move(h)), fd_(fd) {
        if (h_) {
            authority_ = direct_authority({.evtchn = fd_});
        }
    }

    [[nodiscard]] int fd() const noexcept override { return fd_; }
    [[nodiscard]] int device_fd() const noexcept override { return fd_; }

    Result<BoundPort> bind_interdomain(DomId remote, Port remote_port) override {
        if (remote == kDomIdInvalid) {
            return errno_code(EINVAL);
        }
        if (!h_) {
            return errno_code(EBADF);
        }
        auto port = authority_->bind_interdomain(remote, remote_port);
        if (!port) {
            return port.error();
        }
        return BoundPort(this, port.value());
    }

    Result<BoundPort> bind_unbound(DomId remote) override {
        if (remote == kDomIdInvalid) {
            return errno_code(EINVAL);
        }
        if (!h_) {
            return errno_code(EBADF);
        }
        errno = 0;
        const xenevtchn_port_or_error_t port = xenevtchn_bind_unbound_port(h_.get(), remote);
        if (port < 0) {
            return detail::last_error();
        }
        return BoundPort(this, static_cast<Port>(port));
    }

    Result<void> notify(Port local) override {
        if (!h_) {
            return errno_code(EBADF);
        }
        errno = 0;
        if (xenevtchn_notify(h_.get(), local) != 0) {
            return detail::last_error();
        }
        return boost::outcome_v2::success();
    }

    Result<std::optional<Port>> pending() override {
        if (!h_) {
            return errno_code(EBADF);
        }
        // xenevtchn.h: even with O_NONBLOCK, xenevtchn_pending() may block when nothing
        // is signalled; poll first. That makes a spurious call (readiness reported, event
        // already consumed) return nullopt instead of hanging the caller's thread.
        pollfd pfd{fd_, POLLIN, 0};
        int ready = 0;
        do {
            ready = ::poll(&pfd, 1, 0);
        } while (ready < 0 && errno == EINTR);
        if (ready < 0) {
            return detail::last_error();
        }
        if (ready == 0 || (pfd.revents & POLLIN) == 0) {
            if ((pfd.revents & (POLLERR | POLLNVAL)) != 0) {
                return errno_code(EIO);
            }
            return std::optional<Port>{};
        }
        errno = 0;
        const xenevtchn_port_or_error_t port = xenevtchn_pending(h_.get());
        if (port < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return std::optional<Port>{};
            }
            return detail::last_error();
        }
        return std::optional<Port>{static_cast<Port>(port)};
    }

    Result<void> unmask(Port local) override {
        if (!h_) {
            return errno_code(EBADF);
        }
        errno = 0;
        if (xenevtchn_unmask(h_.get(), local) != 0) {
            return detail::last_error();
        }
        return boost::outcome_v2::success();
    }

protected:
    void unbind(Port local) noexcept override {
        // Not a safety problem if it fails (the port stays bound until the handle closes,
        // which unbinds everything): log and carry on.
        if (!authority_) {
            return;
        }
        if (auto unbound = authority_->unbind(local); !unbound) {
            detail::warn("IOCTL_EVTCHN_UNBIND", unbound.error().value());
        }
    }

private:
    EvtchnHandle h_;
    int fd_ = -1;
};

}  // namespace

Result<std::unique_ptr<EventChannel>> open_event_channel(const RealOptions& options) {
    errno = 0;
    EvtchnHandle h(xenevtchn_open(detail::library_logger(options.quiet), 0));
    if (!h) {
        return detail::last_error();
    }
    if (options.restrict_to && xenevtchn_restrict(h.get(), *options.restrict_to) != 0) {
        return detail::last_error();
    }
    const int fd = xenevtchn_fd(h.get());
    // Non-blocking as well as polled (see pending()): belt and braces, and what Asio
    // expects of a descriptor it waits on.
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        return detail::last_error();
    }
    return std::unique_ptr<EventChannel>(std::make_unique<RealEventChannel>(std::move(h), fd));
}

namespace testing {

std::unique_ptr<EventChannel> detached_event_channel() {
    return std::make_unique<RealEventChannel>(EvtchnHandle{}, -1);
}

}  // namespace testing

}  // namespace xenhsa::xen::real
