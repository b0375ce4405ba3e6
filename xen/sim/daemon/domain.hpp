// A simulated domain in the daemon's domain table.
#ifndef XENHSA_XEN_SIM_DAEMON_DOMAIN_HPP
#define XENHSA_XEN_SIM_DAEMON_DOMAIN_HPP

#include <memory>
#include <set>
#include <string>

#include "granter_table.hpp"
#include "port_table.hpp"

namespace xenhsa::xen::sim::daemon {

struct Domain {
    DomId id = 0;
    std::string name;
    uint64_t ram_pages = 0;  // budget for the pages of live shares
    uint64_t used_pages = 0;
    bool dying = false;
    std::shared_ptr<GranterTable> grants;
    PortTable ports;
    std::set<ConnKey> conns;  // attached connections
};

// A domain's home directory in xenstore.
inline std::string home_of(DomId id) { return "/local/domain/" + std::to_string(id); }

}  // namespace xenhsa::xen::sim::daemon

#endif
