#include <xenhsa/backend/service/connector_config.hpp>
#include <xenhsa/backend/service/gpu_device.hpp>

#if XENHSA_SERVICE_HAVE_KFD
#include <xenhsa/hsa/gpu_mode.hpp>
#include <xenhsa/hsa/hsakmt_device.hpp>
#endif
#if XENHSA_SERVICE_HAVE_SOFT
#include <xenhsa/hsa/soft_agent.hpp>
#endif

namespace xenhsa::backend::service {

namespace {

std::string bad_mode(std::string_view mode) {
    return "--gpu must be auto, kfd or soft, not \"" + std::string(mode) + "\"";
}

#if XENHSA_SERVICE_HAVE_SOFT
OpenedGpu soft_gpu(std::string_view gfx, uint32_t agent_threads) {
    hsa::SoftAgentOptions options;
    if (agent_threads != 0) {
        options.worker_threads = agent_threads;
    }
    options.gfx = hsa::parse_soft_gfx(gfx).value_or(hsa::SoftGfx::gfx900);  // checked before
    return OpenedGpu{hsa::make_soft_agent(options), "soft"};
}
#endif

}  // namespace

std::optional<std::string> check_soft_gfx(std::string_view target) {
#if XENHSA_SERVICE_HAVE_SOFT
    if (!hsa::parse_soft_gfx(target)) {
        return "--soft-gfx must be gfx900, gfx906, gfx908 or gfx90a, not \"" + std::string(target) +
               "\"";
    }
#else
    if (target != ConnectorConfig{}.soft_gfx) {
        return std::string("--soft-gfx: this build has no software GPU agent");
    }
#endif
    return std::nullopt;
}

#if XENHSA_SERVICE_HAVE_KFD

std::optional<std::string> check_gpu_mode(std::string_view mode) {
    const auto parsed = hsa::parse_gpu_mode(mode);
    if (!parsed) {
        return bad_mode(mode);
    }
#if !XENHSA_SERVICE_HAVE_SOFT
    if (parsed.value() == hsa::GpuMode::soft) {
        return std::string("this build has no software GPU agent");
    }
#endif
    return std::nullopt;
}

std::optional<OpenedGpu> open_gpu(std::string_view mode, std::string_view soft_gfx,
                                  uint32_t agent_threads, std::string& error) {
    if (auto problem = check_soft_gfx(soft_gfx)) {
        error = *problem;
        return std::nullopt;
    }
    const auto parsed = hsa::parse_gpu_mode(mode);
    if (!parsed) {
        error = bad_mode(mode);
        return std::nullopt;
    }
    bool kfd_opens = false;
    if (parsed.value() != hsa::GpuMode::soft) {
        std::string message;
        auto device = hsa::open_hsakmt_device(&message);
        if (device) {
            return OpenedGpu{std::move(device).value(), "kfd"};
        }
        if (parsed.value() == hsa::GpuMode::kfd) {
            error = "cannot open the KFD: " + message;
            return std::nullopt;
        }
    }
    // auto without a KFD, or soft.
    if (hsa::resolve_gpu_mode(parsed.value(), kfd_opens) == hsa::GpuMode::soft) {
#if XENHSA_SERVICE_HAVE_SOFT
        return soft_gpu(soft_gfx, agent_threads);
#endif
    }
    error = "no GPU: no KFD and no software agent in this build";
    return std::nullopt;
}

#else  // without the KFD seam's library: the software agent only

std::optional<std::string> check_gpu_mode(std::string_view mode) {
    if (mode != "auto" && mode != "kfd" && mode != "soft") {
        return bad_mode(mode);
    }
    if (mode == "kfd") {
        return std::string("this build has no libhsakmt adapter: use --gpu soft");
    }
#if !XENHSA_SERVICE_HAVE_SOFT
    return std::string("this build has no software GPU agent");
#else
    return std::nullopt;
#endif
}

std::optional<OpenedGpu> open_gpu(std::string_view mode, std::string_view soft_gfx,
                                  uint32_t agent_threads, std::string& error) {
    if (auto problem = check_gpu_mode(mode)) {
        error = *problem;
        return std::nullopt;
    }
    if (auto problem = check_soft_gfx(soft_gfx)) {
        error = *problem;
        return std::nullopt;
    }
#if XENHSA_SERVICE_HAVE_SOFT
    return soft_gpu(soft_gfx, agent_threads);
#else
    error = "no GPU seam";
    return std::nullopt;
#endif
}

#endif

}  // namespace xenhsa::backend::service
