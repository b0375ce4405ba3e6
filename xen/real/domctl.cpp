// First include: see domctl.hpp.
extern "C" {
#include <xenctrl.h>
}

#include <new>
#include <string>
#include <xenhsa/xen/real/grant_limits.hpp>

#include "detail.hpp"
#include "domctl.hpp"

namespace xenhsa::xen::real::detail {

struct XcClose {
    void operator()(xc_interface* h) const noexcept { xc_interface_close(h); }
};
using XcHandle = std::unique_ptr<xc_interface, XcClose>;

namespace {

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

namespace xenhsa::xen::real {

Result<GrantLimits> read_grant_limits() noexcept {
    detail::XcHandle h(xc_interface_open(detail::silent_logger(), detail::silent_logger(), 0));
    if (!h) {
        return errno_code(ENOTSUP);
    }
    gnttab_query_size query{};
    query.dom = DOMID_SELF;
    if (xc_gnttab_query_size(h.get(), &query) != 0) {
        return detail::last_error();
    }
    if (query.status != GNTST_okay) {
        return errno_code(EPERM);
    }
    GrantLimits limits;
    limits.grant_frames = query.max_nr_frames;
    limits.maptrack_frames = kXenDefaultMaptrackFrames;
    xen_commandline_t commandline{};
    if (xc_version(h.get(), XENVER_commandline, &commandline) == 0) {
        commandline[sizeof commandline - 1] = '\0';
        if (const auto frames = maptrack_frames_from_commandline(commandline)) {
            limits.maptrack_frames = *frames;
            limits.maptrack_default = false;
        }
    }
    return limits;
}

}  // namespace xenhsa::xen::real
