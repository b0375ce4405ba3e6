#include "fake_event_channel.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace xenhsa::backend::core::testing {

FakeEventChannel::FakeEventChannel() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

FakeEventChannel::~FakeEventChannel() { ::close(fd_); }

xen::Result<xen::BoundPort> FakeEventChannel::bind_interdomain(xen::DomId, xen::Port) {
    return xen::BoundPort(this, kPort);
}

xen::Result<xen::BoundPort> FakeEventChannel::bind_unbound(xen::DomId) {
    return xen::BoundPort(this, kPort);
}

xen::Result<void> FakeEventChannel::notify(xen::Port local) {
    if (local != kPort) {
        return xen::errc(std::errc::invalid_argument);
    }
    ++notified_;
    return boost::outcome_v2::success();
}

xen::Result<std::optional<xen::Port>> FakeEventChannel::pending() {
    uint64_t count = 0;
    if (::read(fd_, &count, sizeof count) != sizeof count) {
        if (errno == EAGAIN) {
            return std::optional<xen::Port>{};
        }
        return xen::errno_code(errno);
    }
    ++delivered_;
    return std::optional<xen::Port>{kPort};
}

xen::Result<void> FakeEventChannel::unmask(xen::Port) { return boost::outcome_v2::success(); }

void FakeEventChannel::kick() {
    const uint64_t one = 1;
    (void)::write(fd_, &one, sizeof one);
}

}  // namespace xenhsa::backend::core::testing
