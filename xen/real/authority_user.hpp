// What the real grant mapper, grant sharer and event channel have in common: the device
// they opened, and who does the privileged steps on it (authority.hpp).
#ifndef XENHSA_XEN_REAL_AUTHORITY_USER_HPP
#define XENHSA_XEN_REAL_AUTHORITY_USER_HPP

#include <memory>
#include <xenhsa/xen/real/authority.hpp>

namespace xenhsa::xen::real::detail {

class AuthorityUser {
public:
    virtual ~AuthorityUser() = default;
    [[nodiscard]] virtual int device_fd() const noexcept = 0;
    void use(std::shared_ptr<Authority> authority) noexcept { authority_ = std::move(authority); }

protected:
    // Null when the component has no device (the testing hooks'), else direct at first.
    std::shared_ptr<Authority> authority_;
};

}  // namespace xenhsa::xen::real::detail

#endif
