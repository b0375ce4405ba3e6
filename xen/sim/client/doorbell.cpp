// Doorbell (components.hpp): an eventfd that keeps an epoll set readable.
#include <sys/eventfd.h>

#include "components.hpp"

namespace xenhsa::xen::sim::client {

Result<Doorbell> Doorbell::create() {
    Doorbell d;
    d.fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!d.fd_) return errno_code(errno);
    return d;
}

void Doorbell::ring() noexcept {
    if (!rung_) nudge();
}

void Doorbell::nudge() noexcept {
    const uint64_t one = 1;
    rung_ = ::write(fd_.get(), &one, sizeof one) == sizeof one || rung_;
}

void Doorbell::quiet() noexcept {
    if (!rung_) return;
    uint64_t value = 0;
    (void)::read(fd_.get(), &value, sizeof value);
    rung_ = false;
}

}  // namespace xenhsa::xen::sim::client
