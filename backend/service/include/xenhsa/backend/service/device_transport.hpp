// Handshake step 4 (docs/protocol.md §1.4, §2.7): the shared pages and the event channel
// of one connected device. Maps the ring pages (contiguously, read-write), the notify
// page and the doorbell page; registers the unmap notification on be_alive (clear the
// byte at offset 72 and notify the port when the mapping goes, also when this process
// dies); binds the event channel; then sets be_alive = 1.
//
// Destruction stores be_alive = 0, then unmaps every page and unbinds the port.
#ifndef XENHSA_BACKEND_SERVICE_DEVICE_TRANSPORT_HPP
#define XENHSA_BACKEND_SERVICE_DEVICE_TRANSPORT_HPP

#include <xenhsa/proto/doorbell.h>
#include <xenhsa/proto/notify.h>
#include <xenhsa/proto/ring.h>

#include <cstddef>
#include <memory>
#include <span>
#include <xenhsa/backend/service/frontend_keys.hpp>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::backend::service {

class DeviceTransport {
public:
    // Everything or nothing: on failure whatever was mapped or bound is undone.
    static xen::Result<std::unique_ptr<DeviceTransport>> open(xen::Platform& platform,
                                                              xen::DomId frontend,
                                                              const FrontendKeys& keys);
    ~DeviceTransport();
    DeviceTransport(const DeviceTransport&) = delete;
    DeviceTransport& operator=(const DeviceTransport&) = delete;

    [[nodiscard]] std::span<std::byte> ring() const noexcept { return ring_.bytes(); }
    [[nodiscard]] xenhsa_sring* shared_ring() const noexcept;
    [[nodiscard]] uint32_t ring_page_order() const noexcept { return order_; }
    [[nodiscard]] uint32_t ring_slots() const noexcept { return XENHSA_RING_SLOTS(order_); }
    [[nodiscard]] xenhsa_notify_page* notify_page() const noexcept;
    [[nodiscard]] xenhsa_doorbell_page* doorbell_page() const noexcept;
    [[nodiscard]] xen::EventChannel& events() const noexcept { return events_; }
    [[nodiscard]] xen::Port local_port() const noexcept { return port_.port(); }
    // Kicks the frontend.
    xen::Result<void> notify() { return events_.notify(port_.port()); }

private:
    DeviceTransport(xen::EventChannel& events, uint32_t order) noexcept
        : events_(events), order_(order) {}

    xen::EventChannel& events_;
    uint32_t order_;
    // Destroyed in reverse: pages before the port their unmap notification names.
    xen::BoundPort port_;
    xen::GrantMapping ring_;
    xen::GrantMapping alive_;  // order > 0: ring page 0 again, with the unmap notification
    xen::GrantMapping notify_;
    xen::GrantMapping doorbell_;
};

}  // namespace xenhsa::backend::service

#endif
