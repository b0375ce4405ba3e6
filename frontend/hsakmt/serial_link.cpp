#include "serial_link.hpp"

#include <poll.h>

#include <algorithm>
#include <array>
#include <cerrno>

namespace xenhsa::frontend::hsakmt {

Result<void> SerialLink::wait(std::chrono::milliseconds timeout) {
    // The caller has just drained the ring: anyone waiting may find its reply now.
    woken_.notify_all();
    if (polling_) {
        woken_.wait_for(mutex_, timeout);
        return device_.check_backend();
    }
    if (auto alive = device_.check_backend(); !alive) {
        return alive;
    }
    polling_ = true;
    std::array<pollfd, 2> fds{};
    fds[0] = {event_fd_, POLLIN, 0};
    fds[1] = {store_fd_, POLLIN, 0};
    mutex_.unlock();
    const int n = ::poll(fds.data(), fds.size(),
                         static_cast<int>(std::clamp<int64_t>(timeout.count(), 0, 60000)));
    const int err = errno;
    mutex_.lock();
    polling_ = false;
    woken_.notify_all();  // another waiter takes over the polling
    if (n < 0 && err != EINTR) {
        return std::error_code(err, std::generic_category());
    }
    // What fired is consumed (pending/unmask, store events) under the mutex.
    return n > 0 ? device_.wait(std::chrono::milliseconds(0)) : device_.check_backend();
}

}  // namespace xenhsa::frontend::hsakmt
