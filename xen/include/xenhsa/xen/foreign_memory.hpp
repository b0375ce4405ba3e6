// Foreign memory mapping (libxenforeignmemory): privileged backends only. A driver
// domain serving untrusted guests uses grants instead; xenhsa never needs this to serve
// a guest, it exists for dom0 tooling and may be absent (Platform::foreign == nullptr).
#ifndef XENHSA_XEN_FOREIGN_MEMORY_HPP
#define XENHSA_XEN_FOREIGN_MEMORY_HPP

#include <cstddef>
#include <memory>
#include <span>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen {

class ForeignMapping {
public:
    virtual ~ForeignMapping() = default;
    [[nodiscard]] virtual std::span<std::byte> bytes() const noexcept = 0;
};

class ForeignMemory {
public:
    virtual ~ForeignMemory() = default;
    // Maps the guest frames `gfns` of `domid`; all or nothing.
    virtual Result<std::unique_ptr<ForeignMapping>> map(DomId domid, std::span<const uint64_t> gfns,
                                                        bool writable) = 0;
};

}  // namespace xenhsa::xen

#endif
