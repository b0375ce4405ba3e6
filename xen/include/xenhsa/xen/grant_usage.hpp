// How much of this domain's grant pool its peers use: the privileged side of LEND
// accounting. A backend that lends pages (GrantSharer) shares one pool among all its
// guests (gntalloc's page limit on Linux, the grant table in the end), and a peer may
// keep lent pages mapped after the backend let go of them: they stay out of the pool
// until the peer unmaps them. GrantUsage tells how many of this domain's grants a peer
// still holds, so that the backend can charge them to that peer.
#ifndef XENHSA_XEN_GRANT_USAGE_HPP
#define XENHSA_XEN_GRANT_USAGE_HPP

#include <cstdint>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen {

class GrantUsage {
public:
    virtual ~GrantUsage() = default;
    // Entries of this domain's grant table that `peer` may still use: granted to it and
    // not yet ended, including those ended by the granter but deferred because the peer
    // still maps them. ENOTSUP where the table cannot be read (see the adapters).
    virtual Result<uint32_t> held_by(DomId peer) noexcept = 0;
    // How many pages this domain can have shared at once, all peers together (the pool
    // LEND draws from). ENOTSUP when the platform cannot tell.
    virtual Result<uint32_t> share_pool_pages() noexcept = 0;
};

}  // namespace xenhsa::xen

#endif
