// The library's connection to its xenhsa device: the hypervisor seam (xenhsa-sim or real
// Xen), the xenbus handshake, HELLO, and the one Client every hsaKmt call goes through.
// Made at hsaKmtOpenKFD, destroyed at the last hsaKmtCloseKFD (which closes the device,
// so the backend revokes whatever is left).
#ifndef XENHSA_FRONTEND_HSAKMT_CONNECTION_HPP
#define XENHSA_FRONTEND_HSAKMT_CONNECTION_HPP

#include <memory>
#include <mutex>
#include <string>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/device_claim.hpp>
#include <xenhsa/frontend/guest_device.hpp>
#include <xenhsa/xen/platform.hpp>

#include "config.hpp"
#include "memory_limits.hpp"
#include "serial_link.hpp"

namespace xenhsa::frontend::hsakmt {

class Connection {
public:
    // Under `mutex` (the library's). `why` says what failed.
    static std::unique_ptr<Connection> open(const GuestConfig& config, std::mutex& mutex,
                                            std::string& why);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    [[nodiscard]] Client& client() noexcept { return *client_; }
    [[nodiscard]] xenhsa_doorbell_page& doorbell_page() { return device_->doorbell_page(); }
    [[nodiscard]] xen::DomId domid() const noexcept { return domid_; }
    [[nodiscard]] SerialLink& link() noexcept { return *link_; }
    // This guest's memory limits as they are now (the grant capacity is read again).
    [[nodiscard]] MemoryLimits memory_limits() const;
    [[nodiscard]] uint32_t devid() const noexcept { return claim_.devid(); }
    // In a child forked from the owner: drops the child's copy of the claim, which would
    // keep the device claimed after the parent is gone.
    void release_claim_in_child() noexcept { claim_.release(); }

private:
    Connection() = default;

    DeviceClaim claim_;  // declared first: released after the device closed
    xen::Platform platform_;
    xen::DomId domid_ = 0;
    std::unique_ptr<xen::GrantUsage> usage_;  // xenhsa-sim: this domain's grant capacity
    std::unique_ptr<GuestDevice> device_;
    std::unique_ptr<SerialLink> link_;
    std::unique_ptr<Client> client_;
};

}  // namespace xenhsa::frontend::hsakmt

#endif
