// An owned file descriptor (closed when destroyed). Used by the xenhsa-sim daemon and its
// client library for sockets, memfds, eventfds and epoll instances.
#ifndef XENHSA_XEN_SIM_UNIQUE_FD_HPP
#define XENHSA_XEN_SIM_UNIQUE_FD_HPP

#include <unistd.h>

#include <utility>

namespace xenhsa::xen::sim {

class UniqueFd {
public:
    UniqueFd() noexcept = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&& o) noexcept {
        UniqueFd(std::move(o)).swap(*this);
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    [[nodiscard]] int get() const noexcept { return fd_; }
    explicit operator bool() const noexcept { return fd_ >= 0; }
    int release() noexcept { return std::exchange(fd_, -1); }
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }
    void swap(UniqueFd& o) noexcept { std::swap(fd_, o.fd_); }

private:
    int fd_ = -1;
};

}  // namespace xenhsa::xen::sim

#endif
