#include "waits.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <thread>

namespace xenhsa::sem {

namespace {

using Clock = std::chrono::steady_clock;

// Polls `fd` for at most `left` (capped, so a descriptor that stays readable without
// anything to read cannot make the caller spin for long without rechecking).
void poll_some(int fd, Millis left) {
    const auto slice = std::min(left, Millis(50));
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(slice.count()));
    if (n > 0) {
        std::this_thread::sleep_for(Millis(1));  // readable but nothing came: do not spin
    }
}

template <class Next>
auto wait_for(int fd, Millis timeout, Next next) -> decltype(next()) {
    const auto deadline = Clock::now() + timeout;
    while (true) {
        auto r = next();
        if (!r || r.value()) {
            return r;
        }
        const auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now());
        if (left <= Millis(0)) {
            return r;  // nullopt
        }
        poll_some(fd, left);
    }
}

}  // namespace

xen::Result<std::optional<xen::Port>> wait_port(xen::EventChannel& events, Millis timeout) {
    return wait_for(events.fd(), timeout, [&] { return events.pending(); });
}

xen::Result<int> drain_ports(xen::EventChannel& events, Millis quiet) {
    int n = 0;
    while (true) {
        auto p = wait_port(events, quiet);
        if (!p) {
            return p.error();
        }
        if (!p.value()) {
            return n;
        }
        ++n;
        if (auto u = events.unmask(*p.value()); !u) {
            return u.error();
        }
    }
}

xen::Result<std::optional<xen::WatchEvent>> wait_watch(xen::Store& store, Millis timeout) {
    return wait_for(store.fd(), timeout, [&] { return store.next_event(); });
}

}  // namespace xenhsa::sem
