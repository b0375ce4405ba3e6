// Touching memory that may fault, without dying: what a test needs to check that a
// read-only or revoked mapping really refuses an access.
#ifndef XENHSA_TESTS_SEM_MEM_PROBE_HPP
#define XENHSA_TESTS_SEM_MEM_PROBE_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::sem {

inline constexpr std::size_t kPage = 4096;

// One byte read / written by the kernel (through a pipe): a page that cannot be accessed
// gives EFAULT instead of a signal. Works on any mapping, including gntdev ones (which a
// forked child would not inherit: gntdev maps PV grants VM_DONTCOPY).
xen::Result<uint8_t> probe_read(const std::byte* addr);
xen::Result<void> probe_write(std::byte* addr, uint8_t value);

// The kernel's page-pinning path (GUP: pin_user_pages, as O_DIRECT, RDMA and a KFD
// userptr's validation take pages) over [addr, addr + len): process_vm_readv of this
// process's own range. The bytes read, or the errno (EFAULT: the pages cannot be pinned).
xen::Result<std::size_t> probe_pin(const std::byte* addr, std::size_t len);

// A CPU store of `value` at `addr`: true when it faulted (SIGSEGV or SIGBUS, caught
// in-process and recovered from); false when the store happened.
bool store_faults(std::byte* addr, uint8_t value);

// A PROT_NONE reservation, as a caller of GrantMapSpec::at / ShareSpec::at owns.
class Reservation {
public:
    explicit Reservation(std::size_t pages);
    ~Reservation();
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    [[nodiscard]] std::byte* base() const noexcept { return base_; }
    [[nodiscard]] std::size_t size() const noexcept { return len_; }

private:
    std::byte* base_ = nullptr;
    std::size_t len_;
};

// True when [addr, addr + len) is mapped PROT_NONE, private, without a hole.
bool reserved_prot_none(const std::byte* addr, std::size_t len);
// The /proc/self/maps lines around [addr, addr + len), for failure messages.
std::string describe_maps(const std::byte* addr, std::size_t len);

}  // namespace xenhsa::sem

#endif
