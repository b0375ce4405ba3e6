#include "core_connector.hpp"

#include <algorithm>
#include <xenhsa/backend/core/guest_core.hpp>
#include <xenhsa/backend/core/guest_requests.hpp>
#include <xenhsa/backend/service/device_transport.hpp>
#include <xenhsa/hsa/gpu_context.hpp>

namespace xenhsa::backend::service {

namespace {

class CoreGuest final : public ConnectedGuest {
public:
    CoreGuest(const CoreConnector& factory, std::unique_ptr<DeviceTransport> transport,
              std::unique_ptr<hsa::GpuContext> gpu, std::unique_ptr<core::GuestCore> core)
        : factory_(factory),
          transport_(std::move(transport)),
          gpu_(std::move(gpu)),
          core_(std::move(core)) {}
    // Members go in reverse: the core revokes everything (GPU half, grants, window), the
    // GPU context tears down what is left, then the pages are unmapped and the port
    // unbound.
    ~CoreGuest() override = default;

    [[nodiscard]] DeviceStats stats() const noexcept override {
        const core::Stats s = core_->stats();
        return {s.mapped_pages, s.pinned_pages, s.lent_pages,          s.queues,
                s.events,       s.handles,      s.doorbells_forwarded, s.doorbell_polls};
    }
    void revoke_all() noexcept override { core_->revoke_all(); }
    bool revoke_handle(uint64_t handle) noexcept override { return core_->revoke_handle(handle); }
    uint64_t enforce_limits() noexcept override { return core_->enforce_quotas(factory_.quotas()); }

private:
    const CoreConnector& factory_;
    std::unique_ptr<DeviceTransport> transport_;
    std::unique_ptr<hsa::GpuContext> gpu_;
    std::unique_ptr<core::GuestCore> core_;
};

}  // namespace

CoreConnector::CoreConnector(core::Quotas configured, const QuotaCeilings& ceilings, OpenedGpu gpu,
                             std::chrono::microseconds ring_spin,
                             std::shared_ptr<spdlog::logger> log)
    : configured_(configured),
      ceilings_(ceilings),
      gpu_(std::move(gpu)),
      ring_spin_(ring_spin),
      log_(std::move(log)) {
    apply_ceilings();
}

void CoreConnector::apply_ceilings() noexcept {
    quotas_ = configured_;
    if (ceilings_.max_map_pages) {
        quotas_.max_map_pages = std::min(quotas_.max_map_pages, *ceilings_.max_map_pages);
    }
    if (lend_ceiling_outdated_) {
        quotas_.max_lend_pages = 0;
    } else if (ceilings_.max_lend_pages) {
        quotas_.max_lend_pages = std::min(quotas_.max_lend_pages, *ceilings_.max_lend_pages);
    }
}

void CoreConnector::set_ceilings(const QuotaCeilings& ceilings) noexcept {
    ceilings_ = ceilings;
    lend_ceiling_outdated_ = false;
    apply_ceilings();
    log_->info("pool shares: max_map_pages {}, max_lend_pages {}", quotas_.max_map_pages,
               quotas_.max_lend_pages);
}

void CoreConnector::ceilings_outdated() noexcept {
    if (ceilings_.max_lend_pages) {
        lend_ceiling_outdated_ = true;
        apply_ceilings();
    }
}

uint32_t CoreConnector::max_ring_page_order() const noexcept { return XENHSA_RING_MAX_ORDER; }

xen::Result<std::unique_ptr<ConnectedGuest>> CoreConnector::connect(const ConnectArgs& start) {
    auto transport = DeviceTransport::open(start.platform, start.device.fe, start.keys);
    if (!transport) {
        return transport.error();
    }
    DeviceTransport& t = *transport.value();
    std::unique_ptr<hsa::GpuContext> gpu;
    if (gpu_.device) {
        gpu = std::make_unique<hsa::GpuContext>(*gpu_.device,
                                                core::gpu_limits(quotas_, t.ring_slots()));
    }
    const core::RequestSeams seams{start.device.fe, *start.platform.grants,
                                   start.platform.sharer.get(), gpu.get()};
    const core::GuestPages pages{t.ring(), t.ring_page_order(), t.notify_page(), t.doorbell_page()};
    core::GuestOptions options;
    options.quotas = quotas_;
    options.ring_spin = ring_spin_;
    auto guest = core::GuestCore::start(start.io, t.events(), t.local_port(), pages, seams, options,
                                        start.on_fatal);
    if (!guest) {
        return guest.error();
    }
    log_->debug("guest core started over the {} GPU", gpu_.kind);
    return std::unique_ptr<ConnectedGuest>(std::make_unique<CoreGuest>(
        *this, std::move(transport).value(), std::move(gpu), std::move(guest).value()));
}

std::optional<std::string> CoreConnector::update_limits(const std::vector<std::string>& settings) {
    core::Quotas updated = configured_;
    for (const auto& setting : settings) {
        if (auto applied = core::apply_override(updated, setting); !applied) {
            return setting + ": " + applied.error().message;
        }
    }
    configured_ = updated;
    apply_ceilings();
    if (quotas_.max_map_pages < configured_.max_map_pages ||
        quotas_.max_lend_pages < configured_.max_lend_pages) {
        log_->info(
            "quotas above the device's pool shares lowered: max_map_pages {}, "
            "max_lend_pages {}",
            quotas_.max_map_pages, quotas_.max_lend_pages);
    }
    return std::nullopt;
}

}  // namespace xenhsa::backend::service
