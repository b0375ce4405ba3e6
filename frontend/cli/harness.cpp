#include "harness.hpp"

#include <fmt/core.h>

namespace xenhsa::frontend::cli {

Harness::~Harness() {
    client_.reset();
    device_.reset();  // closes the device
    guest_.reset();
}

bool Harness::open(uint64_t features) {
    auto guest = open_platform(options_);
    if (!report_.check("platform", guest)) {
        return false;
    }
    guest_.emplace(std::move(guest.value()));
    report_.info(fmt::format("domid={} backend-domid={} devid={}", guest_->domid,
                             options_.backend_domid, options_.devid));

    DeviceConfig config;
    config.backend_domid = static_cast<xen::DomId>(options_.backend_domid);
    config.devid = options_.devid;
    config.ring_order = options_.ring_order;
    config.timeout = timeout();
    device_ = std::make_unique<GuestDevice>(guest_->platform, config);
    if (!report_.check("xenbus-connect", device_->connect())) {
        return false;
    }
    report_.info(fmt::format("ring-order={} port={} backend={}", device_->ring_order(),
                             device_->port(), device_->backend_path()));

    features_ = features;
    return hello();
}

bool Harness::hello() {
    client_ = std::make_unique<Client>(*device_, *guest_->platform.sharer, *guest_->platform.grants,
                                       ClientOptions{timeout()});
    HelloOptions hello;
    hello.features = features_;
    hello.va_size = options_.window_gib << 30;
    auto session = client_->hello(hello);
    if (!report_.check("hello", session)) {
        return false;
    }
    const Session& s = session.value();
    report_.info(
        fmt::format("version={} ring-slots={} features={:#x} window={:#x}+{:#x} max-map-pages={} "
                    "max-lend-pages={} max-handles={} max-in-flight={}",
                    s.version, s.ring_slots, s.features, s.va_base, s.va_size, s.max_map_pages,
                    s.max_lend_pages, s.max_handles, s.max_in_flight));
    return true;
}

bool Harness::reconnect() {
    client_.reset();
    if (!report_.check("reconnect", device_->reconnect())) {
        return false;
    }
    report_.info(fmt::format("ring-order={} port={}", device_->ring_order(), device_->port()));
    return hello();
}

bool Harness::require(uint64_t feature, std::string_view name) {
    if (client_ && client_->granted(feature)) {
        return true;
    }
    return report_.check(fmt::format("needs-{}", name), false, "feature not granted by HELLO");
}

}  // namespace xenhsa::frontend::cli
