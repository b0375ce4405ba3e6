#include "connection.hpp"

#include <unistd.h>
#include <xenhsa/proto.h>

#include "log.hpp"

#if XENHSA_HSAKMT_HAVE_SIM
#include <xenhsa/xen/sim/client.hpp>
#endif
#if XENHSA_HSAKMT_HAVE_XEN
#include <xenhsa/xen/real/platform.hpp>
#endif

namespace xenhsa::frontend::hsakmt {

namespace {

std::optional<xen::Platform> open_platform(const GuestConfig& config, std::string& why) {
    if (!config.sim_dir.empty()) {
#if XENHSA_HSAKMT_HAVE_SIM
        auto platform = xen::sim::attach(config.sim_dir, static_cast<xen::DomId>(*config.domid));
        if (!platform) {
            why = "cannot attach to domain " + std::to_string(*config.domid) +
                  " of xenhsa-sim in " + config.sim_dir + ": " + platform.error().message();
            return std::nullopt;
        }
        return std::move(platform.value());
#else
        why = "this build has no embedded hypervisor client";
        return std::nullopt;
#endif
    }
#if XENHSA_HSAKMT_HAVE_XEN
    xen::real::RealOptions real;
    real.want_domctl = false;
    real.quiet = true;
    auto platform = xen::real::open_real_platform(real);
    if (!platform) {
        why = "cannot open Xen's grant, event channel and xenstore devices: " +
              platform.error().message();
        if (platform.error() == std::errc::permission_denied) {
            why += " (the xenhsa-guest package lets members of the group xenhsa-gpu open them)";
        }
        return std::nullopt;
    }
    return std::move(platform.value());
#else
    why = "this build has no Xen support";
    return std::nullopt;
#endif
}

std::filesystem::path lock_dir(const GuestConfig& config) {
    if (!config.lock_dir.empty()) {
        return config.lock_dir;
    }
    if (!config.sim_dir.empty()) {
        return std::filesystem::path(config.sim_dir) / "guest-locks";
    }
    return "/run/xenhsa-guest";
}

}  // namespace

std::unique_ptr<Connection> Connection::open(const GuestConfig& config, std::mutex& mutex,
                                             std::string& why) {
    std::unique_ptr<Connection> c(new Connection());
    auto platform = open_platform(config, why);
    if (!platform) {
        return nullptr;
    }
    c->platform_ = std::move(*platform);
    c->domid_ = c->platform_.domains->self();
#if XENHSA_HSAKMT_HAVE_SIM
    if (!config.sim_dir.empty()) {
        auto usage = xen::sim::open_grant_usage(config.sim_dir, c->domid_);
        if (usage) {
            c->usage_ = std::move(usage.value());
        }
    }
#endif

    ClaimOptions claim;
    claim.devid = config.devid;
    claim.lock_dir = lock_dir(config);
    auto claimed = claim_device(*c->platform_.store, c->domid_, claim);
    if (!claimed) {
        why = claimed.error().text;
        return nullptr;
    }
    c->claim_ = std::move(claimed).value();
    const uint32_t devid = c->claim_.devid();

    DeviceConfig device;
    device.backend_domid = static_cast<xen::DomId>(config.backend_domid);
    device.devid = devid;
    c->device_ = std::make_unique<GuestDevice>(c->platform_, device);
    if (auto connected = c->device_->connect(); !connected) {
        why = "xenbus handshake on device/xenhsa/" + std::to_string(devid) + " of domain " +
              std::to_string(c->domid_) + " failed: " + connected.error().message();
        return nullptr;
    }
    c->link_ = std::make_unique<SerialLink>(*c->device_, c->platform_.events->fd(),
                                            c->platform_.store->fd(), mutex);
    ClientOptions client;
    client.timeout = std::chrono::milliseconds(config.request_timeout_ms);
    c->client_ =
        std::make_unique<Client>(*c->link_, *c->platform_.sharer, *c->platform_.grants, client);
    HelloOptions hello;
    hello.features = XENHSA_FEATURES_V1 | XENHSA_FEATURE_SDMA;
    hello.va_size = config.window_gib << 30;
    hello.va_base = config.window_base;
    auto session = c->client_->hello(hello);
    if (!session) {
        why = "HELLO failed: " + session.error().message();
        return nullptr;
    }
    log().info("connected: domain {} device {}, window [{:#x}, +{:#x}), features {:#x}", c->domid_,
               devid, session.value().va_base, session.value().va_size, session.value().features);
    return c;
}

MemoryLimits Connection::memory_limits() const {
    MemoryLimits limits;
    if (const auto& session = client_->session()) {
        limits.map_pages = session->max_map_pages;
        limits.lend_pages = session->max_lend_pages;
        limits.handles = session->max_handles;
    }
    if (usage_) {
        if (auto pages = usage_->share_pool_pages()) {
            limits.grant_pages = pages.value();
        }
        return limits;  // a process of the host: its RAM is not the domain's
    }
#if XENHSA_HSAKMT_HAVE_XEN
    if (auto pages = xen::real::gntalloc_limit()) {
        limits.grant_pages = pages.value();
    }
#endif
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) {
        limits.ram_pages = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4096;
    }
    return limits;
}

Connection::~Connection() {
    // The Client's buffers are gone (the Thunk releases its objects first); closing the
    // device makes the backend revoke anything left, then withdraws the ring's grants.
    client_.reset();
    if (device_) {
        auto closed = device_->close();
        log().info("device closed{}", closed ? "" : ": " + closed.error().message());
    }
}

}  // namespace xenhsa::frontend::hsakmt
