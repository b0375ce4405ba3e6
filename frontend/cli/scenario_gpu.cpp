// GPU scenarios: AQL dispatches of the software agent's built-in kernels
// (hsa-bridge/include/xenhsa/hsa/builtin_kernels.h) from guest memory.
#include <fmt/core.h>
#include <xenhsa/hsa/builtin_kernels.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <xenhsa/frontend/aql_queue.hpp>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/sdma_queue.hpp>

#include "gpu_rig.hpp"
#include "harness.hpp"
#include "scenarios.hpp"
#include "stop_signal.hpp"

namespace xenhsa::frontend::cli {

namespace {

// Packets per round of a repeated vecadd, each on its own slice: several in flight at once.
constexpr uint32_t kRepeatBatch = 4;

// `rounds` rounds (0: until SIGTERM/SIGINT) of the `args.size()` packets; one check.
bool repeat_vector_add(Harness& h, Report& report, GpuRig& rig, const xenhsa_kernel_info& kernel,
                       std::span<const xenhsa_kernarg_vector_add> args, float* c, uint32_t n,
                       amd_signal_t& done, uint32_t rounds) {
    const auto batch = static_cast<uint32_t>(args.size());
    uint32_t round = 0;
    uint32_t wrong = 0;
    std::string failure;
    for (; (rounds == 0 || round < rounds) && !stop_requested() && failure.empty() && wrong == 0;
         ++round) {
        std::fill(c, c + n, -1.0f);
        aql::signal_store(done, batch);
        for (const auto& slice : args) {
            auto sent = rig.queue().dispatch(rig.dispatch_spec(kernel, &slice, slice.n, &done),
                                             h.timeout());
            if (!sent) {
                failure = fmt::format(" round {} dispatch: {}", round, describe(sent.error()));
                break;
            }
        }
        if (failure.empty()) {
            if (auto v = aql::signal_wait(done, HSA_SIGNAL_CONDITION_LT, 1, h.timeout()); !v) {
                failure = fmt::format(" round {} wait: {}", round, describe(v.error()));
            }
        }
        for (uint32_t i = 0; failure.empty() && i < n; ++i) {
            wrong += c[i] == static_cast<float>(3 * i) ? 0 : 1;
        }
        if (round == 0 && rounds != 1) {
            report.info(fmt::format("repeating domid={} batch={} n={}", h.guest().domid, batch, n));
        }
    }
    return report.check(
        "result", failure.empty() && wrong == 0 && round > 0,
        fmt::format("rounds={} batch={} n={} wrong={}{}", round, batch, n, wrong, failure));
}

}  // namespace

bool vector_add(Harness& h, Report& report, uint32_t node, uint32_t n, std::size_t live_after,
                uint32_t rounds) {
    GpuRig rig(h, report);
    bool held = false;
    const uint32_t batch = rounds == 1 ? 1 : std::min(kRepeatBatch, n);
    if (rig.setup(3 * std::size_t{n} * sizeof(float) + 1024, node)) {
        auto kernel = rig.kernel(XENHSA_KERNEL_NAME_VECTOR_ADD, sizeof(xenhsa_kernarg_vector_add));
        float* a = rig.carve<float>(n);
        float* b = rig.carve<float>(n);
        float* c = rig.carve<float>(n);
        auto* args = rig.carve<xenhsa_kernarg_vector_add>(batch);
        amd_signal_t* done = rig.signal(1);
        if (kernel && a && b && c && args && done) {
            for (uint32_t i = 0; i < n; ++i) {
                a[i] = static_cast<float>(i);
                b[i] = static_cast<float>(2 * i);
                c[i] = -1.0f;
            }
            const uint32_t slice = (n + batch - 1) / batch;
            for (uint32_t k = 0; k < batch; ++k) {
                const uint32_t first = std::min(k * slice, n);
                args[k] = {reinterpret_cast<uintptr_t>(a + first),
                           reinterpret_cast<uintptr_t>(b + first),
                           reinterpret_cast<uintptr_t>(c + first), std::min(slice, n - first)};
            }
            if (rounds != 1) {
                held =
                    repeat_vector_add(h, report, rig, *kernel, {args, batch}, c, n, *done, rounds);
            } else if (rig.submit("vector_add", rig.dispatch_spec(*kernel, args, n, done)) &&
                       rig.wait("vector_add", *done)) {
                uint32_t wrong = 0;
                for (uint32_t i = 0; i < n; ++i) {
                    wrong += c[i] == static_cast<float>(3 * i) ? 0 : 1;
                }
                held = report.check("result", wrong == 0, fmt::format("n={} wrong={}", n, wrong));
            }
        }
    }
    rig.teardown(live_after);
    return held;
}

int run_vecadd(const GlobalOptions& options, const GpuOptions& gpu) {
    Report report("vecadd");
    if (gpu.repeat != 1) {
        catch_stop_signals();
    }
    Harness h(options, report);
    if (const auto node = open_gpu(h, report, gpu)) {
        vector_add(h, report, *node, gpu.elements, 0, gpu.repeat);
    }
    return report.finish();
}

int run_saxpy(const GlobalOptions& options, const GpuOptions& gpu) {
    Report report("saxpy");
    Harness h(options, report);
    const auto node = open_gpu(h, report, gpu);
    if (!node) {
        return report.finish();
    }
    GpuRig rig(h, report);
    const uint32_t n = gpu.elements;
    if (rig.setup(2 * std::size_t{n} * sizeof(float) + 1024, *node)) {
        auto kernel = rig.kernel(XENHSA_KERNEL_NAME_SAXPY, sizeof(xenhsa_kernarg_saxpy));
        float* x = rig.carve<float>(n);
        float* y = rig.carve<float>(n);
        auto* args = rig.carve<xenhsa_kernarg_saxpy>(1);
        amd_signal_t* done = rig.signal(1);
        if (kernel && x && y && args && done) {
            std::vector<float> expect(n);
            for (uint32_t i = 0; i < n; ++i) {
                x[i] = static_cast<float>(i % 1000) * 0.5f;
                y[i] = 1.0f + static_cast<float>(i % 7);
                // Not fused, as the kernel computes it: round the product first.
                volatile float product = gpu.a * x[i];
                expect[i] = product + y[i];
            }
            *args = {reinterpret_cast<uintptr_t>(x), reinterpret_cast<uintptr_t>(y), n, gpu.a, 0};
            if (rig.submit("saxpy", rig.dispatch_spec(*kernel, args, n, done)) &&
                rig.wait("saxpy", *done)) {
                uint32_t wrong = 0;
                for (uint32_t i = 0; i < n; ++i) {
                    wrong += std::memcmp(&y[i], &expect[i], sizeof(float)) == 0 ? 0 : 1;
                }
                report.check("result", wrong == 0,
                             fmt::format("n={} a={} wrong={}", n, gpu.a, wrong));
            }
        }
    }
    rig.teardown();
    return report.finish();
}

int run_fill_checksum(const GlobalOptions& options, const GpuOptions& gpu) {
    Report report("fill-checksum");
    Harness h(options, report);
    const auto node = open_gpu(h, report, gpu);
    if (!node) {
        return report.finish();
    }
    GpuRig rig(h, report);
    const uint32_t n = gpu.elements;
    if (rig.setup(std::size_t{n} * sizeof(uint32_t) + 1024, *node)) {
        auto fill = rig.kernel(XENHSA_KERNEL_NAME_FILL, sizeof(xenhsa_kernarg_fill));
        auto sum = rig.kernel(XENHSA_KERNEL_NAME_CHECKSUM, sizeof(xenhsa_kernarg_checksum));
        uint32_t* words = rig.carve<uint32_t>(n);
        uint64_t* result = rig.carve<uint64_t>(1);
        auto* fill_args = rig.carve<xenhsa_kernarg_fill>(1);
        auto* sum_args = rig.carve<xenhsa_kernarg_checksum>(1);
        amd_signal_t* filled = rig.signal(1);
        amd_signal_t* summed = rig.signal(1);
        if (fill && sum && words && result && fill_args && sum_args && filled && summed) {
            *fill_args = {reinterpret_cast<uintptr_t>(words), n, gpu.value, 0};
            *sum_args = {reinterpret_cast<uintptr_t>(words), n,
                         reinterpret_cast<uintptr_t>(result)};
            *result = 0;
            // The checksum's barrier bit orders it after the fill on the same queue.
            auto second = rig.dispatch_spec(*sum, sum_args, n, summed);
            second.barrier = true;
            if (rig.submit("fill", rig.dispatch_spec(*fill, fill_args, n, filled)) &&
                rig.submit("checksum", second) && rig.wait("fill", *filled) &&
                rig.wait("checksum", *summed)) {
                uint32_t wrong = 0;
                for (uint32_t i = 0; i < n; ++i) {
                    wrong += words[i] == gpu.value ? 0 : 1;
                }
                report.check("fill-result", wrong == 0, fmt::format("wrong={}", wrong));
                const uint64_t expect = uint64_t{n} * gpu.value;
                const uint64_t got = __atomic_load_n(result, __ATOMIC_ACQUIRE);
                report.check("checksum-result", got == expect,
                             fmt::format("got={:#x} expect={:#x}", got, expect));
            }
        }
    }
    rig.teardown();
    return report.finish();
}

int run_barrier_chain(const GlobalOptions& options, const GpuOptions& gpu) {
    Report report("barrier-chain");
    Harness h(options, report);
    const auto node = open_gpu(h, report, gpu);
    if (!node) {
        return report.finish();
    }
    GpuRig rig(h, report);
    const uint32_t links = std::clamp<uint32_t>(gpu.links, 1, 16);
    const uint32_t n = std::min<uint32_t>(gpu.elements, 4096);
    if (rig.setup((links + 1) * std::size_t{n} * 4 + 64 * 4 * (links + 2) + 4096, *node)) {
        auto fill = rig.kernel(XENHSA_KERNEL_NAME_FILL, sizeof(xenhsa_kernarg_fill));
        auto copy = rig.kernel(XENHSA_KERNEL_NAME_COPY, sizeof(xenhsa_kernarg_copy));
        std::vector<uint32_t*> bufs;
        std::vector<amd_signal_t*> done;
        bool carved = fill && copy;
        for (uint32_t i = 0; carved && i <= links; ++i) {
            bufs.push_back(rig.carve<uint32_t>(n));
            done.push_back(rig.signal(1));
            carved = bufs.back() != nullptr && done.back() != nullptr;
        }
        amd_signal_t* all_done = carved ? rig.signal(1) : nullptr;
        auto* fill_args = carved ? rig.carve<xenhsa_kernarg_fill>(1) : nullptr;
        auto* copy_args = carved ? rig.carve<xenhsa_kernarg_copy>(links) : nullptr;
        if (carved && all_done && fill_args && copy_args) {
            *fill_args = {reinterpret_cast<uintptr_t>(bufs[0]), n, gpu.value, 0};
            bool ok = rig.submit("fill", rig.dispatch_spec(*fill, fill_args, n, done[0]));
            for (uint32_t k = 0; ok && k < links; ++k) {
                // A barrier-AND waits for the previous link's signal before the next copy.
                aql::BarrierSpec barrier;
                barrier.deps[0] = aql::signal_handle(*done[k]);
                ok = report.check(fmt::format("barrier-and-{}", k),
                                  rig.queue().barrier_and(barrier, h.timeout()));
                copy_args[k] = {reinterpret_cast<uintptr_t>(bufs[k + 1]),
                                reinterpret_cast<uintptr_t>(bufs[k]), std::size_t{n} * 4};
                ok = ok && rig.submit(fmt::format("copy-{}", k),
                                      rig.dispatch_spec(*copy, &copy_args[k], std::size_t{n} * 4,
                                                        done[k + 1]));
            }
            if (ok) {
                // A barrier-OR on the last two signals completes once the chain is done.
                aql::BarrierSpec any;
                any.deps[0] = aql::signal_handle(*done[links]);
                any.deps[1] = aql::signal_handle(*done[links - 1]);
                any.completion_signal = aql::signal_handle(*all_done);
                ok = report.check("barrier-or", rig.queue().barrier_or(any, h.timeout())) &&
                     rig.wait("barrier-or", *all_done) && rig.wait("chain", *done[links]);
            }
            if (ok) {
                uint32_t pending = 0;
                for (amd_signal_t* s : done) {
                    pending += aql::signal_load(*s) == 0 ? 0 : 1;
                }
                report.check("all-links-signalled", pending == 0,
                             fmt::format("pending={}", pending));
                uint32_t wrong = 0;
                for (uint32_t i = 0; i < n; ++i) {
                    wrong += bufs[links][i] == gpu.value ? 0 : 1;
                }
                report.check("chain-result", wrong == 0,
                             fmt::format("links={} n={} wrong={}", links, n, wrong));
            }
        }
    }
    rig.teardown();
    return report.finish();
}

int run_fault(const GlobalOptions& options, const GpuOptions& gpu) {
    Report report("fault");
    Harness h(options, report);
    const auto node = open_gpu(h, report, gpu);
    if (!node) {
        return report.finish();
    }
    Client& client = h.client();
    auto error_event = client.event_create(XENHSA_EVENT_SIGNAL, *node, XENHSA_EVENT_MANUAL_RESET);
    if (!report.check("error-event-create", error_event)) {
        return report.finish();
    }
    const Handle event = error_event.value().handle;
    GpuRig rig(h, report);
    if (rig.setup(4096, *node, event)) {
        if (const auto bad = rig.submit_oob_read()) {
            report.info(fmt::format("faulting-address={:#x}", *bad));
            auto notice = client.wait_notification(XENHSA_NOTIFY_GPU_FAULT, rig.queue().handle(),
                                                   h.timeout());
            if (report.check("gpu-fault-notified", notice)) {
                // The exact address, or the page it lies in.
                const uint64_t got = notice.value().arg0;
                report.check("gpu-fault-address", got == *bad || got == (*bad & ~uint64_t{4095}),
                             fmt::format("reported={:#x}", got));
            }
            report.check("client-knows-faulted", client.faulted(rig.queue().handle()));
            auto fired = client.event_wait(std::span(&event, 1), false, h.options().timeout_ms);
            report.check("error-event-signalled", fired && fired.value() == 1u,
                         fired ? "" : describe(fired.error()));
        }
    }
    rig.teardown(1);  // QUEUE_DESTROY must succeed on a stopped queue (10.2.1)
    report.check("error-event-destroy", client.event_destroy(event));
    report.check("backend-alive", h.device().check_backend());
    return report.finish();
}

int run_sdma_hang(const GlobalOptions& options, const GpuOptions& gpu) {
    Report report("sdma-hang");
    Harness h(options, report);
    const auto node = open_gpu(h, report, gpu, /*sdma=*/true);
    if (!node) {
        return report.finish();
    }
    Client& client = h.client();
    sdma::QueueOptions q;
    q.node = *node;
    auto queue = sdma::SdmaQueue::create(client, q);
    if (report.check("sdma-queue-create", queue)) {
        const Handle handle = queue.value().handle();
        // An opcode no gfx9 SDMA engine decodes, on a queue without an error event (as
        // ROCr's): the engine hangs there, and the guest hears of it as of a GPU's hang.
        const uint32_t bad[] = {0x3F, 0, 0, 0};
        if (report.check("sdma-submit", queue.value().submit(bad, h.timeout()))) {
            auto notice = client.wait_notification(XENHSA_NOTIFY_GPU_FAULT, handle, h.timeout());
            if (report.check("gpu-hang-notified", notice)) {
                report.check(
                    "gpu-hang-flag",
                    notice.value().arg1 == XENHSA_GPU_FAULT_HANG && notice.value().arg0 == 0,
                    fmt::format("arg0={:#x} arg1={}", notice.value().arg0, notice.value().arg1));
            }
            report.check("client-knows-faulted", client.faulted(handle));
        }
        report.check("queue-destroy", queue.value().destroy());
    }
    report.check("backend-alive", h.device().check_backend());
    return report.finish();
}

}  // namespace xenhsa::frontend::cli
