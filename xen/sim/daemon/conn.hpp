// One client connection of the daemon and what it owns: grant maps (pins), shares, bound
// ports and an event-channel handle, a store connection. All of it is released when the
// connection goes.
#ifndef XENHSA_XEN_SIM_DAEMON_CONN_HPP
#define XENHSA_XEN_SIM_DAEMON_CONN_HPP

#include <sys/types.h>

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <xenhsa/xen/sim/store_tree.hpp>
#include <xenhsa/xen/sim/wire_io.hpp>

#include "granter_table.hpp"
#include "port_table.hpp"

namespace xenhsa::xen::sim::daemon {

// Pins of one grant map, and its unmap notification.
struct MapRecord {
    std::shared_ptr<GranterTable> table;
    std::vector<GrantRef> refs;
    bool writable = false;
    std::shared_ptr<Segment> notify_segment;  // the page whose byte is cleared
    uint64_t notify_page = 0;
    std::optional<uint32_t> clear_byte;
    std::optional<Port> notify_port;  // in the mapper's domain, held
};

// One share() of the connection's domain.
struct ShareRecord {
    std::shared_ptr<GranterTable> table;
    std::shared_ptr<Segment> segment;
    std::vector<GrantRef> refs;
    std::optional<uint32_t> clear_byte;  // gntalloc's unmap notification, in the first page
    std::optional<Port> notify_port;     // in the sharer's domain, held
};

// A watch registered with a relative path: its events get relative paths too (xenstored).
struct RelativeWatch {
    std::string absolute_path;
    std::string token;
};

struct Conn {
    enum class Role : uint8_t { none, control, attached };

    ConnKey key = 0;
    UniqueFd sock;
    pid_t pid = 0;
    UniqueFd pidfd;
    Role role = Role::none;
    DomId dom = 0;
    DomId acting_for = 0;  // a dom0 connection that may act for this guest only (0: any)
    bool closing = false;
    bool want_write = false;  // registered for EPOLLOUT (and not EPOLLIN)

    std::deque<wire::OutMessage> out;
    std::map<uint64_t, MapRecord> maps;
    uint64_t mapped_pages = 0;
    std::map<uint64_t, ShareRecord> shares;
    std::set<Port> ports;
    // The event-channel handle of this connection (evtchn_open): a copy of its inbox, which
    // keeps the inbox's name from going to another socket while outboxes get connected to
    // it, and the daemon's own outbox into it (wake-ups; see Daemon::flush).
    UniqueFd evtchn_inbox;
    wire::SocketName evtchn_inbox_name{};
    UniqueFd evtchn_wake;
    std::optional<ConnId> store;
    std::vector<RelativeWatch> relative_watches;
};

}  // namespace xenhsa::xen::sim::daemon

#endif
