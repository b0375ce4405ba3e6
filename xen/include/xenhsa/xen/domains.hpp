// Domain identity and liveness. On Xen, liveness comes from libxenctrl where privilege
// allows and from xenstore (@releaseDomain, /local/domain/<id>) in a driver domain.
#ifndef XENHSA_XEN_DOMAINS_HPP
#define XENHSA_XEN_DOMAINS_HPP

#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen {

class Domains {
public:
    virtual ~Domains() = default;
    [[nodiscard]] virtual DomId self() const noexcept = 0;
    // false once the domain is dying or gone.
    virtual Result<bool> alive(DomId domid) = 0;
};

}  // namespace xenhsa::xen

#endif
