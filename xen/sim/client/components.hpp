// The seam components of the client library, each over its own daemon connection.
#ifndef XENHSA_XEN_SIM_CLIENT_COMPONENTS_HPP
#define XENHSA_XEN_SIM_CLIENT_COMPONENTS_HPP

#include <memory>
#include <xenhsa/xen/platform.hpp>

#include "channel.hpp"

namespace xenhsa::xen::sim::client {

Result<std::unique_ptr<GrantMapper>> make_grant_mapper(Channel ch);
Result<std::unique_ptr<GrantSharer>> make_grant_sharer(Channel ch);
Result<std::unique_ptr<EventChannel>> make_event_channel(Channel ch);
Result<std::unique_ptr<Store>> make_store(Channel ch);
Result<std::unique_ptr<Domains>> make_domains(Channel ch);
Result<std::unique_ptr<ForeignMemory>> make_foreign_memory(Channel ch);
Result<std::unique_ptr<GrantUsage>> make_grant_usage(Channel ch);

// A kernel object that exists only to make an epoll set readable while the component has
// something queued that its socket no longer shows (an eventfd; the store's fd() uses one).
// Remembers its state, so that ringing twice or quieting a quiet bell costs no system call.
class Doorbell {
public:
    static Result<Doorbell> create();
    [[nodiscard]] int fd() const noexcept { return fd_.get(); }
    void ring() noexcept;
    // Rings even if rung: a fresh wake-up, for a waiter whose epoll is edge-triggered
    // (Boost.Asio's) and has consumed the previous one.
    void nudge() noexcept;
    void quiet() noexcept;

private:
    UniqueFd fd_;
    bool rung_ = false;
};

}  // namespace xenhsa::xen::sim::client

#endif
