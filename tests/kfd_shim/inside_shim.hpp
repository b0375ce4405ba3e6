// Set while a thread runs the shim's own KFD code (an ioctl, an mmap of a KFD fd, the
// evictor): a munmap that thread makes is the shim's, not the process's, and must not
// take the KFD process's lock again.
#ifndef XENHSA_TESTS_KFD_SHIM_INSIDE_SHIM_HPP
#define XENHSA_TESTS_KFD_SHIM_INSIDE_SHIM_HPP

namespace xenhsa::kfd_shim {

bool inside_shim() noexcept;

class InsideShim {
public:
    InsideShim() noexcept;
    ~InsideShim();
    InsideShim(const InsideShim&) = delete;
    InsideShim& operator=(const InsideShim&) = delete;

private:
    bool was_;
};

}  // namespace xenhsa::kfd_shim

#endif
