// The one place that picks what serves a connected device: the per-guest core when this
// build has it (xenhsa::backend_core). Without it a connected guest is only the transport: the
// pages are mapped, be_alive is 1 and the port is bound, but the ring is not served.
#include <sched.h>

#include <algorithm>
#include <thread>
#include <xenhsa/backend/service/connector_config.hpp>
#include <xenhsa/backend/service/device_transport.hpp>
#include <xenhsa/backend/service/gpu_device.hpp>

#if XENHSA_SERVICE_HAVE_CORE
#include <xenhsa/backend/core/quotas.hpp>

#include "core_connector.hpp"
#if XENHSA_TEST_HOOKS
#include <xenhsa/hsa/faulty_device.hpp>
#endif
#endif

namespace xenhsa::backend::service {

namespace {

#if XENHSA_SERVICE_HAVE_CORE
// The quotas `config` describes, or a readable error.
std::optional<core::Quotas> load_quotas(const ConnectorConfig& config, std::string& error) {
    core::Quotas quotas;
    if (!config.config_file.empty()) {
        auto loaded = core::load_quotas_file(config.config_file);
        if (!loaded) {
            error = config.config_file.string() + ": " + loaded.error().message;
            return std::nullopt;
        }
        quotas = loaded.value();
    }
    for (const auto& setting : config.settings) {
        if (auto applied = core::apply_override(quotas, setting); !applied) {
            error = "--set " + setting + ": " + applied.error().message;
            return std::nullopt;
        }
    }
    return quotas;
}
#else
class TransportGuest final : public ConnectedGuest {
public:
    explicit TransportGuest(std::unique_ptr<DeviceTransport> transport)
        : transport_(std::move(transport)) {}
    [[nodiscard]] DeviceStats stats() const noexcept override { return {}; }
    void revoke_all() noexcept override {}

private:
    std::unique_ptr<DeviceTransport> transport_;
};

class TransportConnector final : public GuestConnector {
public:
    explicit TransportConnector(std::shared_ptr<spdlog::logger> log) : log_(std::move(log)) {}
    [[nodiscard]] uint32_t max_ring_page_order() const noexcept override {
        return XENHSA_RING_MAX_ORDER;
    }
    xen::Result<std::unique_ptr<ConnectedGuest>> connect(const ConnectArgs& start) override {
        auto transport = DeviceTransport::open(start.platform, start.device.fe, start.keys);
        if (!transport) {
            return transport.error();
        }
        log_->warn("this build has no backend core: the ring is not served");
        return std::unique_ptr<ConnectedGuest>(
            std::make_unique<TransportGuest>(std::move(transport).value()));
    }

private:
    std::shared_ptr<spdlog::logger> log_;
};
#endif

}  // namespace

uint32_t agent_threads_for(uint32_t configured, std::size_t live_workers, uint32_t cpus) noexcept {
    if (configured != 0) {
        return configured;
    }
    return static_cast<uint32_t>(
        std::max<std::size_t>(1, cpus / std::max<std::size_t>(1, live_workers)));
}

uint32_t usable_cpus() noexcept {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
        return static_cast<uint32_t>(std::max(1, CPU_COUNT(&set)));
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

std::optional<std::string> check_connector_config(const ConnectorConfig& config) {
    if (auto problem = check_gpu_mode(config.gpu_mode)) {
        return problem;
    }
    if (auto problem = check_soft_gfx(config.soft_gfx)) {
        return problem;
    }
#if XENHSA_SERVICE_HAVE_CORE
    std::string error;
    if (!load_quotas(config, error)) {
        return error;
    }
#else
    if (!config.config_file.empty() || !config.settings.empty()) {
        return std::string("this build has no quota configuration (no backend core)");
    }
#endif
    return std::nullopt;
}

std::unique_ptr<GuestConnector> make_connector(const ConnectorConfig& config,
                                               std::shared_ptr<spdlog::logger> log,
                                               std::string& error,
                                               const SeamFaultHook& gpu_faults) {
#if XENHSA_SERVICE_HAVE_CORE
    auto quotas = load_quotas(config, error);
    if (!quotas) {
        return nullptr;
    }
    auto gpu = open_gpu(config.gpu_mode, config.soft_gfx, config.agent_threads, error);
    if (!gpu) {
        return nullptr;
    }
    log->info("GPU seam: {}", gpu->kind);
#if XENHSA_TEST_HOOKS
    if (gpu_faults) {
        gpu->device = hsa::with_faults(std::move(gpu->device), gpu_faults);
    }
#else
    (void)gpu_faults;
#endif
    return std::make_unique<CoreConnector>(*quotas, config.ceilings, std::move(*gpu),
                                           std::chrono::microseconds(config.ring_spin_us),
                                           std::move(log));
#else
    if (auto problem = check_connector_config(config)) {
        error = *problem;
        return nullptr;
    }
    (void)gpu_faults;
    return std::make_unique<TransportConnector>(std::move(log));
#endif
}

}  // namespace xenhsa::backend::service
