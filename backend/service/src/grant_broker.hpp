// A real-Xen worker's broker (docs/threat-model.md, "A compromised worker"): the worker's
// gntdev, gntalloc and evtchn files are shared with a small process it forks before it is
// confined, which keeps them and does for it the steps that name a domain or spend what
// all of dom0's backends share (xen/real/authority.hpp). The worker's filter refuses those
// ioctls by number; it can only mmap and munmap what the broker mapped or granted, drop
// its own entries and use the ports the broker bound.
//
// The broker maps and grants for the worker's guest only, binds at most the guest's share
// of event channel ports, asks gntdev to signal only those, and bounds every request.
// It stays root without a capability (the worker, another uid, can neither signal nor
// trace it), no-new-privs, non-dumpable and under a filter of its own (read, write, its
// five ioctls by number); it closes every fd but those files, stderr and its socket, and
// ends when the worker does (its socket closes; PR_SET_PDEATHSIG as well).
//
// Wire: a SOCK_SEQPACKET pair, one BrokerRequest and one BrokerReply per call; grant refs
// travel in a shared buffer (a memfd both map), which the broker copies once before it
// checks them.
#ifndef XENHSA_BACKEND_SERVICE_SRC_GRANT_BROKER_HPP
#define XENHSA_BACKEND_SERVICE_SRC_GRANT_BROKER_HPP

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <xenhsa/xen/real/authority.hpp>

namespace xenhsa::backend::service {

// Refs in one request: a MAP or LEND's largest batch (XENHSA_MAP_MAX_PAGES) fits.
inline constexpr uint32_t kBrokerMaxRefs = 65536;

enum class BrokerOp : uint32_t {
    map_grants = 1,
    notify_on_unmap = 2,
    grant_pages = 3,
    bind_interdomain = 4,
    unbind = 5,
};

struct BrokerRequest {
    uint32_t op = 0;
    uint32_t domid = 0;  // map_grants, grant_pages, bind_interdomain
    uint32_t count = 0;  // refs in the shared buffer (map_grants), pages (grant_pages)
    uint32_t flags = 0;  // grant_pages: kBrokerWritable; notify_on_unmap: kBrokerClearByte,
                         // kBrokerSendEvent
    uint32_t port = 0;   // bind_interdomain: the remote port; unbind, notify: the local one
    uint32_t pad = 0;
    uint64_t offset = 0;  // notify_on_unmap: the byte's offset in gntdev's file
};
static_assert(sizeof(BrokerRequest) == 32);

inline constexpr uint32_t kBrokerWritable = 1;
inline constexpr uint32_t kBrokerClearByte = 1;
inline constexpr uint32_t kBrokerSendEvent = 2;

struct BrokerReply {
    int32_t error = 0;    // an errno, 0 on success
    uint32_t port = 0;    // bind_interdomain
    uint64_t offset = 0;  // map_grants, grant_pages: in gntdev's or gntalloc's file
};
static_assert(sizeof(BrokerReply) == 16);

struct BrokerLimits {
    xen::DomId guest = xen::kDomIdInvalid;
    uint32_t max_ports = 1;  // pool_shares.hpp: kEventChannelsPerGuest
};

// The broker's checks and its one piece of state (the ports it bound), over the authority
// that does the ioctls. `refs`: the shared buffer (read for map_grants, written for
// grant_pages).
class BrokerRules {
public:
    BrokerRules(xen::real::Authority& authority, const BrokerLimits& limits) noexcept
        : authority_(authority), limits_(limits) {}
    BrokerReply handle(const BrokerRequest& request, std::span<xen::GrantRef> refs);

private:
    BrokerReply map_grants(const BrokerRequest& request, std::span<const xen::GrantRef> refs);
    BrokerReply grant_pages(const BrokerRequest& request, std::span<xen::GrantRef> refs);
    BrokerReply bind(const BrokerRequest& request);
    BrokerReply unbind(const BrokerRequest& request);
    BrokerReply notify(const BrokerRequest& request);

    xen::real::Authority& authority_;
    BrokerLimits limits_;
    std::set<xen::Port> ports_;
};

// The Authority that asks the broker, and the broker's pid (this process's child).
struct BrokerProcess {
    std::shared_ptr<xen::real::Authority> authority;
    pid_t pid = 0;
};

// Forks the broker over `fds` (which stay open in this process too). `authority`: what
// the broker does the ioctls with (direct_authority(fds) in production). `confine`:
// false only in tests that run as a user who cannot.
xen::Result<BrokerProcess> start_grant_broker(const xen::real::DeviceFds& fds,
                                              std::unique_ptr<xen::real::Authority> authority,
                                              const BrokerLimits& limits, bool confine = true);

}  // namespace xenhsa::backend::service

#endif
