// The per-guest core (xenhsa::backend_core) behind the worker's SessionFactory: the
// transport maps the pages, a GpuSession runs over the worker's GPU seam instance, and a
// GuestCore serves the ring on the worker's io_context.
#ifndef XENHSA_BACKEND_SERVICE_CORE_SESSION_HPP
#define XENHSA_BACKEND_SERVICE_CORE_SESSION_HPP

#include <spdlog/logger.h>

#include <chrono>
#include <memory>
#include <xenhsa/backend/core/quotas.hpp>
#include <xenhsa/backend/service/device_session.hpp>
#include <xenhsa/backend/service/gpu_device.hpp>

namespace xenhsa::backend::service {

class CoreSessionFactory final : public SessionFactory {
public:
    // `configured`: from the quota file and the overrides; the sessions get them lowered to
    // `ceilings`.
    CoreSessionFactory(core::Quotas configured, const QuotaCeilings& ceilings, OpenedGpu gpu,
                       std::chrono::microseconds ring_spin, std::shared_ptr<spdlog::logger> log);

    [[nodiscard]] uint32_t max_ring_page_order() const noexcept override;
    xen::Result<std::unique_ptr<DeviceSession>> connect(const SessionStart& start) override;
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
