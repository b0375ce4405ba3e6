#include <unistd.h>

#include <cerrno>
#include <xenhsa/backend/service/store_pump.hpp>

namespace xenhsa::backend::service {

StorePump::StorePump(boost::asio::io_context& io, xen::Store& store, EventHandler on_event,
                     ErrorHandler on_error)
    : store_(store), fd_(io), on_event_(std::move(on_event)), on_error_(std::move(on_error)) {}

StorePump::~StorePump() {
    boost::system::error_code ignored;
    fd_.close(ignored);
}

xen::Result<void> StorePump::start() {
    const int fd = ::dup(store_.fd());
    if (fd < 0) {
        return xen::errno_code(errno);
    }
    boost::system::error_code ec;
    fd_.assign(fd, ec);
    if (ec) {
        ::close(fd);
        return xen::errno_code(ec.value());
    }
    wait();
    drain();
    return xen::Result<void>(boost::outcome_v2::success());
}

void StorePump::wait() {
    fd_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                   [this, weak = std::weak_ptr<int>(alive_)](boost::system::error_code ec) {
                       if (weak.expired() || ec == boost::asio::error::operation_aborted) {
                           return;
                       }
                       if (ec) {
                           failed_ = true;
                           on_error_(std::error_code(ec.value(), std::generic_category()));
                           return;
                       }
                       drain();
                       if (!weak.expired() && !failed_) {
                           wait();
                       }
                   });
}

void StorePump::drain() {
    // A handler may destroy the pump (e.g. on shutdown): check after each one.
    const std::weak_ptr<int> weak = alive_;
    while (!failed_) {
        auto event = store_.next_event();
        if (!event) {
            failed_ = true;
            on_error_(event.error());
            return;
        }
        if (!event.value()) {
            return;
        }
        on_event_(*event.value());
        if (weak.expired()) {
            return;
        }
    }
}

}  // namespace xenhsa::backend::service
