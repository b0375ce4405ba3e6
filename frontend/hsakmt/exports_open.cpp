// hsaKmt* exports: open/close, version, runtime and per-node state calls.
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <xenhsa/frontend/errors.hpp>

#include "thunk.hpp"

using namespace xenhsa::frontend::hsakmt;
using xenhsa::frontend::Result;

namespace {

constexpr HSAuint64 kNanosecondsPerSecond = 1'000'000'000;

uint64_t clock_ns(clockid_t clock) noexcept {
    timespec ts{};
    ::clock_gettime(clock, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * kNanosecondsPerSecond +
           static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

extern "C" {

HSAKMT_STATUS HSAKMTAPI hsaKmtOpenKFD(void) {
    Thunk& t = thunk();
    try {
        std::lock_guard serial(t.open_close);
        std::unique_lock lock(t.mutex);
        if (t.forked_child()) {
            // As the real thunk, a child opens anew: a device of its own, never its
            // parent's (whose claim it gave up at the fork).
            t.abandon_parents();
        }
        if (t.opens > 0) {
            ++t.opens;
            return HSAKMT_STATUS_KERNEL_ALREADY_OPENED;  // as the thunk answers
        }
        std::string why;
        t.session = Session::open(t.mutex, why);
        if (!t.session) {
            log().error("hsaKmtOpenKFD: {}", why);
            return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
        }
        t.opens = 1;
        t.owner = ::getpid();
        return HSAKMT_STATUS_SUCCESS;
    } catch (const std::bad_alloc&) {
        return HSAKMT_STATUS_NO_MEMORY;
    } catch (...) {
        return HSAKMT_STATUS_ERROR;
    }
}

HSAKMT_STATUS HSAKMTAPI hsaKmtCloseKFD(void) {
    Thunk& t = thunk();
    try {
        std::lock_guard serial(t.open_close);
        std::unique_lock lock(t.mutex);
        if (t.forked_child()) {
            t.abandon_parents();
            return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
        }
        if (t.opens == 0) {
            return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
        }
        if (--t.opens == 0) {
            // New calls find no session; threads waiting in the old one leave it first.
            std::unique_ptr<Session> closing = std::move(t.session);
            closing->quiesce();
            closing.reset();  // queues, events, memory, then the device closes
        }
        return HSAKMT_STATUS_SUCCESS;
    } catch (...) {
        return HSAKMT_STATUS_ERROR;
    }
}

HSAKMT_STATUS HSAKMTAPI hsaKmtGetVersion(HsaVersionInfo* VersionInfo) {
    return call("hsaKmtGetVersion", [&](Session& s) {
        if (VersionInfo == nullptr) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        *VersionInfo = s.topology().version;
        return HSAKMT_STATUS_SUCCESS;
    });
}

// The debugger runtime needs KFD's debug interface, which is not forwarded. This is also
// what the real 5.2.3 thunk answers on a stock kernel; ROCr then uses no exception queues.
// Every ROCr start asks, so the notice is at info level.
HSAKMT_STATUS HSAKMTAPI hsaKmtRuntimeEnable(void* rDebug, bool setupTtmp) {
    (void)rDebug;
    (void)setupTtmp;
    return call("hsaKmtRuntimeEnable", [&](Session&) {
        return refuse("hsaKmtRuntimeEnable", kNoDebugger, spdlog::level::info);
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtRuntimeDisable(void) {
    return call("hsaKmtRuntimeDisable", [&](Session&) {
        return refuse("hsaKmtRuntimeDisable", kNoDebugger, spdlog::level::info);
    });
}

// XNACK is always off: every buffer the GPU uses is pinned (protocol 5.2).
HSAKMT_STATUS HSAKMTAPI hsaKmtGetXNACKMode(HSAint32* enable) {
    return call("hsaKmtGetXNACKMode", [&](Session&) {
        if (enable == nullptr) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        *enable = 0;
        return HSAKMT_STATUS_SUCCESS;
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtSetXNACKMode(HSAint32 enable) {
    return call("hsaKmtSetXNACKMode", [&](Session&) {
        return enable == 0 ? HSAKMT_STATUS_SUCCESS
                           : refuse("hsaKmtSetXNACKMode(1)",
                                    "xenhsa pins guest memory and never relies on XNACK");
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtGetClockCounters(HSAuint32 NodeId, HsaClockCounters* Counters) {
    return call("hsaKmtGetClockCounters", [&](Session& s) {
        if (Counters == nullptr || NodeId >= s.topology().nodes.size()) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        // The GPU's counter is the backend's; the CPU and system counters are this
        // domain's clocks, as the KFD's: CLOCK_MONOTONIC_RAW and CLOCK_BOOTTIME (which
        // ROCr's HSA_SYSTEM_INFO_TIMESTAMP reads: ROCr 5 through this call, ROCr 6
        // itself), taken halfway through the round trip, so that ROCr converts GPU
        // timestamps into its own time. Of a few samples the one with the shortest round
        // trip, whose halfway point is the closest (a busy host delays some answers).
        constexpr int kSamples = 4;
        uint64_t best_trip = UINT64_MAX;
        for (int i = 0; i < kSamples; ++i) {
            const uint64_t before = clock_ns(CLOCK_MONOTONIC_RAW);
            const uint64_t boot_before = clock_ns(CLOCK_BOOTTIME);
            auto bytes = s.client().query(XENHSA_QUERY_CLOCK, NodeId, 0);
            const uint64_t boot_after = clock_ns(CLOCK_BOOTTIME);
            const uint64_t after = clock_ns(CLOCK_MONOTONIC_RAW);
            if (!bytes) {
                return to_status(bytes.error());
            }
            xenhsa_clock_counters c{};
            if (bytes.value().size() != sizeof c) {
                return HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR;
            }
            std::memcpy(&c, bytes.value().data(), sizeof c);
            if (c.system_clock_frequency_hz == 0) {
                return HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR;  // never 0 (5.2); ROCr asserts
            }
            if (after - before < best_trip) {
                best_trip = after - before;
                Counters->GPUClockCounter = c.gpu_clock_counter;
                Counters->CPUClockCounter = before + (after - before) / 2;
                Counters->SystemClockCounter = boot_before + (boot_after - boot_before) / 2;
                Counters->SystemClockFrequencyHz = kNanosecondsPerSecond;
            }
        }
        return HSAKMT_STATUS_SUCCESS;
    });
}

// Kept: the trap handler runs only on a GPU exception, and the backend's GPU takes none
// that a handler could resolve (a fault stops the queue). ROCr asserts on failure.
HSAKMT_STATUS HSAKMTAPI hsaKmtSetTrapHandler(HSAuint32 NodeId, void* TrapHandlerBaseAddress,
                                             HSAuint64 TrapHandlerSizeInBytes,
                                             void* TrapBufferBaseAddress,
                                             HSAuint64 TrapBufferSizeInBytes) {
    (void)TrapHandlerSizeInBytes;
    (void)TrapBufferSizeInBytes;
    return call("hsaKmtSetTrapHandler", [&](Session& s) {
        if (!s.topology().is_gpu(NodeId)) {
            return HSAKMT_STATUS_INVALID_NODE_UNIT;
        }
        s.trap_handler = reinterpret_cast<uintptr_t>(TrapHandlerBaseAddress);
        s.trap_buffer = reinterpret_cast<uintptr_t>(TrapBufferBaseAddress);
        return HSAKMT_STATUS_SUCCESS;
    });
}

// The backend's GPU's, as the KFD reports them: ROCr's image support (which HIP
// initialises) asserts that this succeeds. As the kernel, it copies at most the entries
// the caller has room for, and says how many it copied.
HSAKMT_STATUS HSAKMTAPI hsaKmtGetTileConfig(HSAuint32 NodeId, HsaGpuTileConfig* config) {
    return call("hsaKmtGetTileConfig", [&](Session& s) {
        if (config == nullptr || NodeId >= s.topology().nodes.size()) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        auto queried = s.client().query_tile_config(NodeId);
        if (!queried) {
            return to_status(queried.error());
        }
        const xenhsa_tile_config& t = queried.value();
        if (t.num_tile_configs > XENHSA_TILE_CONFIGS_MAX ||
            t.num_macro_tile_configs > XENHSA_MACRO_TILE_CONFIGS_MAX) {
            return HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR;
        }
        const uint32_t tiles =
            config->TileConfig ? std::min(config->NumTileConfigs, t.num_tile_configs) : 0;
        const uint32_t macros = config->MacroTileConfig ? std::min(config->NumMacroTileConfigs,
                                                                   t.num_macro_tile_configs)
                                                        : 0;
        std::copy_n(t.tile_config, tiles, config->TileConfig);
        std::copy_n(t.macro_tile_config, macros, config->MacroTileConfig);
        config->NumTileConfigs = tiles;
        config->NumMacroTileConfigs = macros;
        config->GbAddrConfig = t.gb_addr_config;
        config->NumBanks = t.num_banks;
        config->NumRanks = t.num_ranks;
        return HSAKMT_STATUS_SUCCESS;
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtGetKernelDebugTrapVersionInfo(HSAuint32* Major, HSAuint32* Minor) {
    (void)Major;
    (void)Minor;
    return call("hsaKmtGetKernelDebugTrapVersionInfo", [&](Session&) {
        return refuse("hsaKmtGetKernelDebugTrapVersionInfo", kNoDebugger);
    });
}

}  // extern "C"
