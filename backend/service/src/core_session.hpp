// The per-guest core (xenhsa::backend_core) behind the worker's SessionFactory: the
// transport maps the pages, a GpuSession runs over the worker's GPU seam instance, and a
// GuestCore serves the ring on the worker's io_context.
#ifndef XENHSA_BACKEND_SERVICE_CORE_SESSION_HPP
#define XENHSA_BACKEND_SERVICE_CORE_SESSION_HPP

#include <spdlog/logger.h>

#include <memory>
#include <xenhsa/backend/core/quotas.hpp>
#include <xenhsa/backend/service/device_session.hpp>
#include <xenhsa/backend/service/gpu_device.hpp>

namespace xenhsa::backend::service {

class CoreSessionFactory final : public SessionFactory {
public:
    CoreSessionFactory(core::Quotas quotas, OpenedGpu gpu, std::shared_ptr<spdlog::logger> log);

    [[nodiscard]] uint32_t max_ring_page_order() const noexcept override;
    xen::Result<std::unique_ptr<DeviceSession>> connect(const SessionStart& start) override;
    std::optional<std::string> update_limits(const std::vector<std::string>& settings) override;

    [[nodiscard]] const core::Quotas& quotas() const noexcept { return quotas_; }

private:
    core::Quotas quotas_;
    OpenedGpu gpu_;
    std::shared_ptr<spdlog::logger> log_;
};

}  // namespace xenhsa::backend::service

#endif
