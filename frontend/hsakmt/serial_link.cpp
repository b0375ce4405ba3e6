#include "serial_link.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <xenhsa/frontend/errors.hpp>

namespace xenhsa::frontend::hsakmt {

SerialLink::SerialLink(GuestDevice& device, int event_fd, int store_fd, std::mutex& mutex) noexcept
    : device_(device),
      event_fd_(event_fd),
      store_fd_(store_fd),
      mutex_(mutex),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

SerialLink::~SerialLink() {
    if (wake_fd_ >= 0) {
        ::close(wake_fd_);
    }
}

void SerialLink::shut_down() {
    closing_ = true;
    if (wake_fd_ >= 0) {
        const uint64_t one = 1;
        (void)!::write(wake_fd_, &one, sizeof one);
    }
    woken_.notify_all();
    left_.wait(mutex_, [this] { return waiters_ == 0; });
}

void SerialLink::mark_broken() noexcept {
    device_.mark_broken();
    if (wake_fd_ >= 0) {
        const uint64_t one = 1;
        (void)!::write(wake_fd_, &one, sizeof one);
    }
    woken_.notify_all();
}

Result<void> SerialLink::wait(std::chrono::milliseconds timeout) {
    if (closing_) {
        return std::error_code(Errc::closing);
    }
    ++waiters_;
    struct Leave {
        SerialLink& link;
        ~Leave() {
            --link.waiters_;
            link.left_.notify_all();
        }
    } leave{*this};
    // The caller has just drained the ring: anyone waiting may find its reply now.
    woken_.notify_all();
    if (polling_) {
        woken_.wait_for(mutex_, timeout);
        if (closing_) {
            return std::error_code(Errc::closing);
        }
        return device_.check_backend();
    }
    if (auto alive = device_.check_backend(); !alive) {
        return alive;
    }
    polling_ = true;
    std::array<pollfd, 3> fds{};
    fds[0] = {event_fd_, POLLIN, 0};
    fds[1] = {store_fd_, POLLIN, 0};
    fds[2] = {wake_fd_, POLLIN, 0};  // -1 (no eventfd): ignored by poll()
    mutex_.unlock();
    const int n = ::poll(fds.data(), fds.size(),
                         static_cast<int>(std::clamp<int64_t>(timeout.count(), 0, 60000)));
    const int err = errno;
    mutex_.lock();
    polling_ = false;
    woken_.notify_all();  // another waiter takes over the polling
    if (closing_) {
        return std::error_code(Errc::closing);
    }
    if (n < 0 && err != EINTR) {
        return std::error_code(err, std::generic_category());
    }
    // What fired is consumed (pending/unmask, store events) under the mutex.
    return n > 0 ? device_.wait(std::chrono::milliseconds(0)) : device_.check_backend();
}

}  // namespace xenhsa::frontend::hsakmt
