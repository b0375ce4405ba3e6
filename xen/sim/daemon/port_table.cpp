#include "port_table.hpp"

#include <sys/socket.h>

#include <cerrno>

namespace xenhsa::xen::sim::daemon {

void PortEntry::notify() const noexcept {
    if (!interdomain || !to_peer) return;
    const char one = 1;
    // EAGAIN: the peer's inbox is full (it notices); ECONNREFUSED: the peer closed it.
    // Dropped either way.
    (void)::send(to_peer.get(), &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

Result<Port> PortTable::allocate() {
    Port want = 1;
    for (const auto& [port, entry] : ports_) {
        if (port != want) break;
        ++want;
    }
    if (want >= kMaxPorts) return errno_code(ENOSPC);
    ports_.try_emplace(want);
    return want;
}

PortEntry* PortTable::find(Port port) noexcept {
    auto it = ports_.find(port);
    return it == ports_.end() ? nullptr : &it->second;
}

void PortTable::erase(Port port) noexcept { ports_.erase(port); }

}  // namespace xenhsa::xen::sim::daemon
