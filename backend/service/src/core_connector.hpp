// The per-guest core (xenhsa::backend_core) behind the worker's GuestConnector: the
// transport maps the pages, a GpuContext runs over the worker's GPU seam instance, and a
// GuestCore serves the ring on the worker's io_context.
#ifndef XENHSA_BACKEND_SERVICE_CORE_CONNECTOR_HPP
#define XENHSA_BACKEND_SERVICE_CORE_CONNECTOR_HPP

#include <spdlog/logger.h>

#include <chrono>
#include <memory>
#include <xenhsa/backend/core/quotas.hpp>
#include <xenhsa/backend/service/gpu_device.hpp>
#include <xenhsa/backend/service/guest_connector.hpp>

namespace xenhsa::backend::service {

class CoreConnector final : public GuestConnector {
public:
    // `configured`: from the quota file and the overrides; the sessions get them lowered to
    // `ceilings`.
    CoreConnector(core::Quotas configured, const QuotaCeilings& ceilings, OpenedGpu gpu,
                  std::chrono::microseconds ring_spin, std::shared_ptr<spdlog::logger> log);

    [[nodiscard]] uint32_t max_ring_page_order() const noexcept override;
    xen::Result<std::unique_ptr<ConnectedGuest>> connect(const ConnectArgs& start) override;
    std::optional<std::string> update_limits(const std::vector<std::string>& settings) override;
    void set_ceilings(const QuotaCeilings& ceilings) noexcept override;
    void ceilings_outdated() noexcept override;
    [[nodiscard]] bool ready() const noexcept override { return !lend_ceiling_outdated_; }

    [[nodiscard]] const core::Quotas& quotas() const noexcept { return quotas_; }

private:
    void apply_ceilings() noexcept;

    core::Quotas configured_;
    QuotaCeilings ceilings_;
    bool lend_ceiling_outdated_ = false;
    core::Quotas quotas_;  // configured_ lowered to the ceilings
    OpenedGpu gpu_;
    std::chrono::microseconds ring_spin_;
    std::shared_ptr<spdlog::logger> log_;
};

}  // namespace xenhsa::backend::service

#endif
