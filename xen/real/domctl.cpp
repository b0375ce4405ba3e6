// First include: see domctl.hpp.
extern "C" {
#include <xenctrl.h>
}

#include <new>

#include "detail.hpp"
#include "domctl.hpp"

namespace xenhsa::xen::real::detail {

namespace {

struct XcClose {
    void operator()(xc_interface* h) const noexcept { xc_interface_close(h); }
};
using XcHandle = std::unique_ptr<xc_interface, XcClose>;

class RealDomctl final : public Domctl {
public:
    explicit RealDomctl(XcHandle h) noexcept : h_(std::move(h)) {}

    Result<bool> alive(DomId domid) override {
        // Xen 4.17 has no xc_domain_getinfo_single(): getinfolist returns the first
        // domain with an id >= domid, so check it is the one asked for.
        xc_domaininfo_t info{};
        errno = 0;
        const int n = xc_domain_getinfolist(h_.get(), domid, 1, &info);
        if (n < 0) {
            return last_error();
        }
        if (n == 0 || info.domain != domid) {
            return false;
        }
        return (info.flags & XEN_DOMINF_dying) == 0;
    }

private:
    XcHandle h_;
};

}  // namespace

std::unique_ptr<Domctl> open_domctl() noexcept {
    XcHandle h(xc_interface_open(silent_logger(), silent_logger(), 0));
    if (!h) {
        return nullptr;
    }
    try {
        return std::make_unique<RealDomctl>(std::move(h));
    } catch (const std::bad_alloc&) {
        return nullptr;  // h closes the handle
    }
}

}  // namespace xenhsa::xen::real::detail
