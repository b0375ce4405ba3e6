#include <xenhsa/backend/service/device_transport.hpp>

namespace xenhsa::backend::service {

xen::Result<std::unique_ptr<DeviceTransport>> DeviceTransport::open(xen::Platform& platform,
                                                                    xen::DomId frontend,
                                                                    const FrontendKeys& keys) {
    if (!platform.grants || !platform.events || keys.ring_refs.empty() ||
        keys.ring_refs.size() != (std::size_t{1} << keys.ring_page_order)) {
        return xen::errc(std::errc::invalid_argument);
    }
    std::unique_ptr<DeviceTransport> t(new DeviceTransport(*platform.events, keys.ring_page_order));

    auto port = platform.events->bind_interdomain(frontend, keys.event_channel);
    if (!port) {
        return port.error();
    }
    t->port_ = std::move(port).value();

    const xen::UnmapNotify on_unmap{XENHSA_SRING_ALIVE_OFFSET, t->port_.port()};
    auto& grants = *platform.grants;
    if (keys.ring_page_order == 0) {
        auto ring = grants.map_notify(frontend, keys.ring_refs[0], true, on_unmap);
        if (!ring) {
            return ring.error();
        }
        t->ring_ = std::move(ring).value();
    } else {
        auto ring = grants.map(xen::GrantMapSpec{frontend, keys.ring_refs, true, nullptr});
        if (!ring) {
            return ring.error();
        }
        t->ring_ = std::move(ring).value();
        auto alive = grants.map_notify(frontend, keys.ring_refs[0], true, on_unmap);
        if (!alive) {
            return alive.error();
        }
        t->alive_ = std::move(alive).value();
    }
    auto notify = grants.map(xen::GrantMapSpec{frontend, std::span(&keys.notify_ref, 1), true});
    if (!notify) {
        return notify.error();
    }
    t->notify_ = std::move(notify).value();
    auto doorbell = grants.map(xen::GrantMapSpec{frontend, std::span(&keys.doorbell_ref, 1), true});
    if (!doorbell) {
        return doorbell.error();
    }
    t->doorbell_ = std::move(doorbell).value();

    xenhsa_index_store(&t->shared_ring()->be_alive, 1);
    return t;
}

DeviceTransport::~DeviceTransport() {
    if (ring_) {
        xenhsa_index_store(&shared_ring()->be_alive, 0);
    }
}

xenhsa_sring* DeviceTransport::shared_ring() const noexcept {
    return reinterpret_cast<xenhsa_sring*>(ring_.data());
}

xenhsa_notify_page* DeviceTransport::notify_page() const noexcept {
    return reinterpret_cast<xenhsa_notify_page*>(notify_.data());
}

xenhsa_doorbell_page* DeviceTransport::doorbell_page() const noexcept {
    return reinterpret_cast<xenhsa_doorbell_page*>(doorbell_.data());
}

}  // namespace xenhsa::backend::service
