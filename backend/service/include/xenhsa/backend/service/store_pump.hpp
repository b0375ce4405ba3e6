// Waits on a Store's fd with Boost.Asio and drains its watch events to a callback.
#ifndef XENHSA_BACKEND_SERVICE_STORE_PUMP_HPP
#define XENHSA_BACKEND_SERVICE_STORE_PUMP_HPP

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <memory>
#include <system_error>
#include <xenhsa/xen/store.hpp>

namespace xenhsa::backend::service {

class StorePump {
public:
    using EventHandler = std::function<void(const xen::WatchEvent&)>;
    using ErrorHandler = std::function<void(std::error_code)>;

    // `store` must outlive the pump. The pump waits on a duplicate of store.fd().
    StorePump(boost::asio::io_context& io, xen::Store& store, EventHandler on_event,
              ErrorHandler on_error);
    ~StorePump();
    StorePump(const StorePump&) = delete;
    StorePump& operator=(const StorePump&) = delete;

    // Starts waiting; also drains what is already queued (watches fire at registration).
    xen::Result<void> start();
    // Drains queued events now (e.g. right after registering a watch).
    void drain();

private:
    void wait();

    xen::Store& store_;
    boost::asio::posix::stream_descriptor fd_;
    EventHandler on_event_;
    ErrorHandler on_error_;
    bool failed_ = false;
    std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace xenhsa::backend::service

#endif
