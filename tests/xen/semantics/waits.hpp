// Bounded waits on the seam's descriptors (the tests' and the peer's).
#ifndef XENHSA_TESTS_SEM_WAITS_HPP
#define XENHSA_TESTS_SEM_WAITS_HPP

#include <chrono>
#include <optional>
#include <xenhsa/xen/event_channel.hpp>
#include <xenhsa/xen/store.hpp>

namespace xenhsa::sem {

using Millis = std::chrono::milliseconds;

// The next fired port (not unmasked), or nullopt after `timeout`.
xen::Result<std::optional<xen::Port>> wait_port(xen::EventChannel& events, Millis timeout);

// Consumes (and unmasks) every port that fires until none did for `quiet`; returns how
// many. For the event Xen raises on a port when it is bound.
xen::Result<int> drain_ports(xen::EventChannel& events, Millis quiet);

// The next watch event, or nullopt after `timeout`.
xen::Result<std::optional<xen::WatchEvent>> wait_watch(xen::Store& store, Millis timeout);

}  // namespace xenhsa::sem

#endif
