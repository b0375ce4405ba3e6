// One guest of a running embedded hypervisor (EmbeddedServices): a new domain with `ram_pages` of
// RAM, its xenhsa device plugged as the toolstack would (attached to dom0 for that step only), this
// process attached to the domain, the xenbus handshake and HELLO done. The backend starts a worker
// for it. Destroying it closes the device and detaches: the domain dies with its last
// connection and the backend reaps the worker.
//
// Any number may live in one process (each has its own connections to the daemon and its
// own VA window); one thread at a time may drive each.
#ifndef XENHSA_BENCH_GUEST_DOMAIN_HPP
#define XENHSA_BENCH_GUEST_DOMAIN_HPP

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/guest_device.hpp>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::bench {

// The RAM of the benchmarks' guests (16 MiB): room for their rings, queues and buffers.
inline constexpr std::size_t kGuestRamPages = 4096;

inline constexpr std::chrono::milliseconds kGuestTimeout{10000};

class GuestDomain {
public:
    // Throws std::runtime_error on any failure. `options.timeout` is kGuestTimeout unless
    // given; HELLO asks for `features`.
    GuestDomain(const std::filesystem::path& sim_dir, std::size_t ram_pages,
                frontend::ClientOptions options = {kGuestTimeout},
                uint64_t features = XENHSA_FEATURES_V1);
    GuestDomain(const GuestDomain&) = delete;
    GuestDomain& operator=(const GuestDomain&) = delete;
    ~GuestDomain();

    [[nodiscard]] frontend::Client& client() { return *client_; }
    [[nodiscard]] xen::DomId domid() const { return domid_; }

private:
    xen::DomId domid_ = 0;
    xen::Platform platform_;
    std::unique_ptr<frontend::GuestDevice> device_;
    std::unique_ptr<frontend::Client> client_;
};

// The value of `r`, or std::runtime_error naming `what`.
template <class T>
T take(frontend::Result<T> r, const char* what) {
    if (!r) {
        throw std::runtime_error(std::string(what) + ": " + r.error().message());
    }
    return std::move(r.value());
}

inline void ensure(frontend::Result<void> r, const char* what) {
    if (!r) {
        throw std::runtime_error(std::string(what) + ": " + r.error().message());
    }
}

}  // namespace xenhsa::bench

#endif
