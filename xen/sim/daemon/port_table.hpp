// One domain's event-channel ports in the daemon, with Xen's port states: unbound (ready
// for `remote` to bind) and interdomain. The daemon keeps a copy of each interdomain end's
// outbox (the datagram socket into the peer handle's inbox) to deliver unmap notifications
// itself: sent from the same socket, they are attributed to the same port.
#ifndef XENHSA_XEN_SIM_DAEMON_PORT_TABLE_HPP
#define XENHSA_XEN_SIM_DAEMON_PORT_TABLE_HPP

#include <cstdint>
#include <map>
#include <xenhsa/xen/sim/unique_fd.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen::sim::daemon {

using ConnKey = uint64_t;  // a daemon connection; 0 is none

struct PortEntry {
    ConnKey owner = 0;  // the handle that bound it; 0: orphaned but held (see holds)
    bool interdomain = false;
    DomId remote = 0;      // unbound: who may bind; interdomain: the peer domain
    Port remote_port = 0;  // interdomain only
    UniqueFd to_peer;      // interdomain only; shut for writing when the binding ends
    // Unmap notifications that will signal this port (gntdev's evtchn_get): the port stays
    // bound after its handle unbinds or dies until they are done.
    uint32_t holds = 0;

    // Delivers one notification to the peer, never blocking.
    void notify() const noexcept;
};

class PortTable {
public:
    // Xen's 2-level ABI limit, and this simulation's per-domain quota.
    static constexpr Port kMaxPorts = 4096;

    // The lowest free port (ports start at 1). ENOSPC when full.
    Result<Port> allocate();
    PortEntry* find(Port port) noexcept;
    void erase(Port port) noexcept;
    std::map<Port, PortEntry>& all() noexcept { return ports_; }

private:
    std::map<Port, PortEntry> ports_;
};

}  // namespace xenhsa::xen::sim::daemon

#endif
