// Domain liveness through libxenctrl, isolated in its own object library: <xenctrl.h>
// needs the GNU dialect (xenhsa_use_gnu_dialect) and must come before any other Xen
// public header (it defines __XEN_TOOLS__, which those headers test once).
#ifndef XENHSA_XEN_REAL_DOMCTL_HPP
#define XENHSA_XEN_REAL_DOMCTL_HPP

#include <memory>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen::real::detail {

class Domctl {
public:
    virtual ~Domctl() = default;
    // Present and not dying; false when the domain does not exist.
    virtual Result<bool> alive(DomId domid) = 0;
};

// nullptr when xc_interface_open() fails (no privcmd, or not privileged): expected in a
// driver domain, so the library's error log is silenced.
std::unique_ptr<Domctl> open_domctl() noexcept;

}  // namespace xenhsa::xen::real::detail

#endif
