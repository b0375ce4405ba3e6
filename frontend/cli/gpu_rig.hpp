// The GPU scenarios' rig: HELLO with the GPU feature, one queue and one arena of
// GPU-reachable guest memory (MAPped, PINned, MAP_TO_GPU), each step a check.
#ifndef XENHSA_FRONTEND_CLI_GPU_RIG_HPP
#define XENHSA_FRONTEND_CLI_GPU_RIG_HPP

#include <fmt/core.h>
#include <xenhsa/hsa/builtin_kernels.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <xenhsa/frontend/aql_queue.hpp>
#include <xenhsa/frontend/errors.hpp>

#include "harness.hpp"
#include "scenarios.hpp"

namespace xenhsa::frontend::cli {

inline constexpr uint16_t kWorkgroup = 64;

// A queue and one arena of GPU-reachable guest memory, set up and torn down with checks.
class GpuRig {
public:
    GpuRig(Harness& h, Report& report) : h_(h), report_(report) {}

    bool setup(std::size_t arena_bytes, uint32_t node, Handle error_event = 0) {
        Client& client = h_.client();
        const std::size_t pages = (arena_bytes + XENHSA_PAGE_SIZE - 1) / XENHSA_PAGE_SIZE + 1;
        auto memory = aql::GpuMemory::create(client, pages, node);
        if (!report_.check("gpu-memory", memory, fmt::format("pages={}", pages))) {
            return false;
        }
        memory_ = std::move(memory.value());
        aql::QueueOptions q;
        q.node = node;
        q.packets = 64;
        q.error_event = error_event;
        auto queue = aql::AqlQueue::create(client, q);
        if (!report_.check("queue-create", queue)) {
            return false;
        }
        queue_ = std::move(queue.value());
        report_.info(fmt::format("queue handle={:#x} doorbell={} ring={:#x} arena={:#x}+{:#x}",
                                 queue_.handle(), queue_.doorbell_index(), queue_.ring_va(),
                                 memory_.va(), memory_.size()));
        return true;
    }

    // The built-in `name`, checked against the kernarg size the header gives.
    // A KFD backend reports none: then XENHSA_KERNEL_<NAME> (the kernel_object a program
    // uses on a GPU that runs the built-ins, as the guest libhsakmt exports them), with the
    // layout of builtin_kernels.h.
    std::optional<xenhsa_kernel_info> kernel(const char* name, std::size_t kernarg_size) {
        auto found = h_.client().find_kernel(name);
        if (found && !found.value()) {
            found = from_environment(name, kernarg_size);
        }
        if (!report_.check(fmt::format("kernel-{}", name), found && found.value().has_value(),
                           found ? "" : describe(found.error()))) {
            return std::nullopt;
        }
        const xenhsa_kernel_info info = *found.value();
        if (!report_.check(fmt::format("kernel-{}-kernarg-size", name),
                           info.kernarg_size == kernarg_size,
                           fmt::format("{} != {}", info.kernarg_size, kernarg_size))) {
            return std::nullopt;
        }
        return info;
    }

    template <class T>
    T* carve(std::size_t count) {
        auto p = memory_.carve_array<T>(count);
        return p ? p.value() : nullptr;
    }

    amd_signal_t* signal(int64_t value) {
        auto* s = carve<amd_signal_t>(1);
        if (s != nullptr) {
            aql::signal_init(*s, value);
        }
        return s;
    }

    aql::DispatchSpec dispatch_spec(const xenhsa_kernel_info& k, const void* kernarg,
                                    uint64_t items, const amd_signal_t* done) const {
        aql::DispatchSpec spec;
        spec.kernel_object = k.kernel_object;
        spec.kernarg_address = reinterpret_cast<uintptr_t>(kernarg);
        spec.completion_signal = done != nullptr ? aql::signal_handle(*done) : 0;
        spec.grid[0] = static_cast<uint32_t>((items + kWorkgroup - 1) / kWorkgroup * kWorkgroup);
        spec.workgroup[0] = kWorkgroup;
        spec.private_segment_size = k.private_segment_size;
        spec.group_segment_size = k.group_segment_size;
        return spec;
    }

    bool submit(std::string_view what, const aql::DispatchSpec& spec) {
        return report_.check(fmt::format("dispatch-{}", what), queue_.dispatch(spec, h_.timeout()));
    }

    bool wait(std::string_view what, const amd_signal_t& done) {
        auto v = aql::signal_wait(done, HSA_SIGNAL_CONDITION_LT, 1, h_.timeout());
        return report_.check(fmt::format("complete-{}", what), v);
    }

    // A built-in oob_read that reads 1 GiB past a buffer of the arena: inside the guest's
    // window, but nothing the GPU may reach. The address it faults at, once submitted.
    std::optional<uint64_t> submit_oob_read() {
        auto oob = kernel(XENHSA_KERNEL_NAME_OOB_READ, sizeof(xenhsa_kernarg_oob_read));
        uint32_t* src = carve<uint32_t>(16);
        uint32_t* dst = carve<uint32_t>(1);
        auto* args = carve<xenhsa_kernarg_oob_read>(1);
        amd_signal_t* done = signal(1);
        if (!oob || !src || !dst || !args || !done) {
            return std::nullopt;
        }
        const uint64_t index = (1ull << 30) / 4;
        *args = {reinterpret_cast<uintptr_t>(src), index, reinterpret_cast<uintptr_t>(dst)};
        if (!submit("oob_read", dispatch_spec(*oob, args, 1, done))) {
            return std::nullopt;
        }
        return reinterpret_cast<uintptr_t>(src) + index * 4;
    }

    aql::AqlQueue& queue() { return queue_; }

    // `live_after`: handles the scenario still holds itself.
    void teardown(std::size_t live_after = 0) {
        if (queue_.handle() != 0) {
            report_.check("queue-destroy", queue_.destroy());
        }
        if (memory_.size() != 0) {
            report_.check("gpu-memory-release", memory_.release(h_.client()));
        }
        report_.check("handles-released", h_.client().live_handles() == live_after,
                      fmt::format("live={}", h_.client().live_handles()));
    }

private:
    static std::optional<xenhsa_kernel_info> from_environment(const char* name,
                                                              std::size_t kernarg_size) {
        std::string variable = "XENHSA_KERNEL_";
        for (const char* c = name; *c != '\0'; ++c) {
            variable += static_cast<char>(std::toupper(static_cast<unsigned char>(*c)));
        }
        const char* value = std::getenv(variable.c_str());
        if (value == nullptr) {
            return std::nullopt;
        }
        xenhsa_kernel_info info{};
        info.kernel_object = std::strtoull(value, nullptr, 0);
        info.kernarg_size = static_cast<uint32_t>(kernarg_size);
        std::strncpy(reinterpret_cast<char*>(info.name), name, sizeof info.name - 1);
        return info;
    }

    Harness& h_;
    Report& report_;
    aql::GpuMemory memory_;
    aql::AqlQueue queue_;
};

// HELLO with the GPU feature granted (and SDMA's if `sdma`), and the node to run on.
inline std::optional<uint32_t> open_gpu(Harness& h, Report& report, const GpuOptions& gpu,
                                        bool sdma = false) {
    if (!h.open(XENHSA_FEATURES_V1 | (sdma ? XENHSA_FEATURE_SDMA : 0)) ||
        !h.require(XENHSA_FEATURE_GPU, "gpu") ||
        (sdma && !h.require(XENHSA_FEATURE_SDMA, "sdma"))) {
        return std::nullopt;
    }
    if (gpu.node) {
        return gpu.node;
    }
    auto found = aql::find_gpu_node(h.client());
    if (!report.check("gpu-node", found && found.value().has_value(),
                      found ? "no node with GPU cores" : describe(found.error()))) {
        return std::nullopt;
    }
    report.info(fmt::format("gpu-node={}", *found.value()));
    return found.value();
}

// vector_add of `n` floats on a fresh rig, result checked ("result"); the rig is torn
// down with `live_after` handles left to the caller. true when the result held. With
// `rounds` other than 1 it repeats (0: until SIGTERM/SIGINT) with several packets in flight
// per round, and prints `info repeating domid=N ...` once the first round is done.
bool vector_add(Harness& h, Report& report, uint32_t node, uint32_t n, std::size_t live_after,
                uint32_t rounds = 1);

}  // namespace xenhsa::frontend::cli

#endif
