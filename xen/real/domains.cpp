// Domains: self() from xenstore, alive() from libxenctrl where privilege allows, else
// from xenstore (see make_domains() in platform.hpp).
#include <string>
#include <xenhsa/xen/real/platform.hpp>

#include "detail.hpp"
#include "domctl.hpp"

namespace xenhsa::xen::real {

namespace {

class RealDomains final : public Domains {
public:
    RealDomains(DomId self, std::unique_ptr<Store> store,
                std::unique_ptr<detail::Domctl> domctl) noexcept
        : self_(self), store_(std::move(store)), domctl_(std::move(domctl)) {}

    [[nodiscard]] DomId self() const noexcept override { return self_; }

    Result<bool> alive(DomId domid) override {
        if (domid >= kDomIdFirstReserved) {
            return errno_code(EINVAL);
        }
        if (domctl_) {
            auto r = domctl_->alive(domid);
            // An XSM policy may let us open privcmd yet refuse the domctl: use xenstore.
            if (r || (r.error().value() != EPERM && r.error().value() != EACCES)) {
                return r;
            }
        }
        // libxl removes /local/domain/<id> when it destroys the domain.
        auto node = store_->read(kNoTx, "/local/domain/" + std::to_string(domid));
        if (node) {
            return true;
        }
        if (node.error().value() == ENOENT) {
            return false;
        }
        // Notably EACCES: xenstored answers that for a node we may not read whether or
        // not it exists, so liveness is unknowable here; say so rather than guess.
        return node.error();
    }

private:
    DomId self_;
    std::unique_ptr<Store> store_;
    std::unique_ptr<detail::Domctl> domctl_;
};

}  // namespace

Result<std::unique_ptr<Domains>> make_domains(std::unique_ptr<Store> store,
                                              const RealOptions& options) {
    if (!store) {
        return errno_code(EINVAL);
    }
    // Relative paths are relative to /local/domain/<self>; this is how libxenbe and
    // xenstore-read find their own domid.
    auto text = store->read(kNoTx, "domid");
    if (!text) {
        return text.error();
    }
    auto id = parse_store_uint(text.value(), kDomIdFirstReserved - 1);
    if (!id) {
        return id.error();
    }
    std::unique_ptr<detail::Domctl> domctl;
    if (options.want_domctl) {
        domctl = detail::open_domctl();  // nullptr: fall back to xenstore
    }
    return std::unique_ptr<Domains>(std::make_unique<RealDomains>(
        static_cast<DomId>(id.value()), std::move(store), std::move(domctl)));
}

}  // namespace xenhsa::xen::real
