// What a Client needs from a connected device: the shared pages, the event channel and
// the backend's liveness. GuestDevice provides it over the hypervisor seam; tests provide
// it over plain memory.
#ifndef XENHSA_FRONTEND_LINK_HPP
#define XENHSA_FRONTEND_LINK_HPP

#include <xenhsa/proto.h>

#include <chrono>
#include <cstddef>
#include <span>
#include <xenhsa/frontend/front_ring.hpp>
#include <xenhsa/frontend/result.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::frontend {

class Link {
public:
    virtual ~Link() = default;

    virtual FrontRing& ring() = 0;
    virtual std::span<std::byte> notify_page() = 0;
    virtual xenhsa_doorbell_page& doorbell_page() = 0;
    [[nodiscard]] virtual xen::DomId backend_domid() const noexcept = 0;

    // Notifies the backend through the event channel.
    virtual Result<void> kick() = 0;
    // Sleeps until the event channel fires, something the link watches changes, or
    // `timeout` passes (then it simply returns). Errc::backend_gone when the backend
    // died meanwhile.
    virtual Result<void> wait(std::chrono::milliseconds timeout) = 0;
    // Errc::backend_gone once be_alive reads 0 or the backend left Connected.
    virtual Result<void> check_backend() = 0;
    // The backend broke the protocol: stop using the device and start closing it.
    virtual void mark_broken() noexcept = 0;
};

}  // namespace xenhsa::frontend

#endif
