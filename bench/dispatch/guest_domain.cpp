#include "guest_domain.hpp"

#include <unistd.h>

#include <atomic>
#include <xenhsa/frontend/toolstack.hpp>
#include <xenhsa/xen/sim/client.hpp>

namespace xenhsa::bench {

namespace {

// Domain names are unique in the daemon.
std::string next_name() {
    static std::atomic<unsigned> count{0};
    return "bench-guests-" + std::to_string(getpid()) + "-" + std::to_string(count++);
}

}  // namespace

GuestDomain::GuestDomain(const std::filesystem::path& sim_dir, std::size_t ram_pages,
                         frontend::ClientOptions options, uint64_t features)
    : domid_(take(xen::sim::create_domain(sim_dir, next_name(), ram_pages), "create domain")) {
    {
        xen::Platform dom0 = take(xen::sim::attach(sim_dir, 0), "attach dom0");
        (void)take(frontend::add_device(*dom0.store, 0, domid_, 0), "plug device");
    }
    platform_ = take(xen::sim::attach(sim_dir, domid_), "attach guest");
    frontend::DeviceConfig config;
    config.timeout = kGuestTimeout;
    device_ = std::make_unique<frontend::GuestDevice>(platform_, config);
    ensure(device_->connect(), "xenbus connect");
    client_ =
        std::make_unique<frontend::Client>(*device_, *platform_.sharer, *platform_.grants, options);
    frontend::HelloOptions hello;
    hello.features = features;
    (void)take(client_->hello(hello), "hello");
}

GuestDomain::~GuestDomain() {
    // The session before the device, the device before the platform it uses.
    client_.reset();
    device_.reset();
}

}  // namespace xenhsa::bench
