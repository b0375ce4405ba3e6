// xenhsa-bench-rocr-guest: the rocr half of xenhsa-bench-rocr, run by it under xenhsa-run.
// Tiny dispatches (the built-in fill on 64 bytes) through unmodified ROCr: AQL packets
// written into an hsa_queue_t, the doorbell stored through the queue's doorbell signal,
// completion seen through an HSA signal. Nothing of xenhsa's but the kernel handle, taken
// from the environment as any program would (docs/guest-rocm.md).
//
// Prints the `path=...` lines of bench/dispatch's print() for:
//   rocr_active   hsa_signal_wait_scacquire(..., HSA_WAIT_STATE_ACTIVE): the data path
//   rocr_blocked  HSA_WAIT_STATE_BLOCKED, what applications use: ROCr spins 200 us, then
//                 sleeps in hsaKmtWaitOnEvent (an EVENT_WAIT on the ring)
// With --idle-ms MS it instead sets up (queues and all) and stays idle that long between
// the lines "idle start" and "idle end", for the driver to measure what an idle ROCr
// costs the backend.
// With --control N it instead times N of each control-path operation and prints
//   control alloc_free_us_p50=... alloc_free_us_p99=... queue_us_p50=... queue_us_p99=...
//           mmap_mlock_us_p50=... eventfd_rtt_us_p50=... eventfd_rtt_us_p99=...
// alloc_free: hsa_amd_memory_pool_allocate of 4 KiB of fine-grained system memory and its
// free (MAP + PIN and back on the ring); queue: hsa_queue_create + hsa_queue_destroy
// (QUEUE_CREATE/DESTROY); the last three the host's own baselines in this process.
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dispatch_path.hpp"
#include "host_baselines.hpp"

namespace {

using xenhsa::bench::BenchConfig;
using xenhsa::bench::DispatchPath;

void ensure(hsa_status_t s, const char* what) {
    if (s != HSA_STATUS_SUCCESS) {
        const char* msg = nullptr;
        hsa_status_string(s, &msg);
        throw std::runtime_error(std::string(what) + ": " + (msg != nullptr ? msg : "?"));
    }
}

struct FillArgs {  // the built-in fill's kernarg (docs/guest-rocm.md)
    uint64_t dst;
    uint64_t count;
    uint32_t value;
    uint32_t pad;
};

constexpr uint32_t kWords = 16;

hsa_status_t find_gpu(hsa_agent_t agent, void* data) {
    hsa_device_type_t type;
    hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type);
    if (type == HSA_DEVICE_TYPE_GPU) {
        *static_cast<hsa_agent_t*>(data) = agent;
        return HSA_STATUS_INFO_BREAK;
    }
    return HSA_STATUS_SUCCESS;
}

hsa_status_t find_kernarg_pool(hsa_amd_memory_pool_t pool, void* data) {
    uint32_t flags = 0;
    hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
    if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) != 0) {
        *static_cast<hsa_amd_memory_pool_t*>(data) = pool;
        return HSA_STATUS_INFO_BREAK;
    }
    return HSA_STATUS_SUCCESS;
}

hsa_status_t find_fine_pool(hsa_amd_memory_pool_t pool, void* data) {
    uint32_t flags = 0;
    hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
    if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) != 0 &&
        (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) == 0) {
        *static_cast<hsa_amd_memory_pool_t*>(data) = pool;
        return HSA_STATUS_INFO_BREAK;
    }
    return HSA_STATUS_SUCCESS;
}

hsa_status_t find_cpu(hsa_agent_t agent, void* data) {
    hsa_device_type_t type;
    hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type);
    if (type == HSA_DEVICE_TYPE_CPU) {
        *static_cast<hsa_agent_t*>(data) = agent;
        return HSA_STATUS_INFO_BREAK;
    }
    return HSA_STATUS_SUCCESS;
}

class RocrPath final : public DispatchPath {
public:
    RocrPath() {
        ensure(hsa_init(), "hsa_init");
        hsa_iterate_agents(find_gpu, &gpu_);
        hsa_iterate_agents(find_cpu, &cpu_);
        if (gpu_.handle == 0 || cpu_.handle == 0) {
            throw std::runtime_error("no GPU or CPU agent");
        }
        const char* fill = std::getenv("XENHSA_KERNEL_FILL");
        kernel_ = fill != nullptr ? std::strtoull(fill, nullptr, 0) : 0;
        if (kernel_ == 0) {
            throw std::runtime_error("XENHSA_KERNEL_FILL is not set (run under xenhsa-run)");
        }
        hsa_amd_memory_pool_t pool{};
        hsa_amd_agent_iterate_memory_pools(cpu_, find_kernarg_pool, &pool);
        ensure(hsa_amd_memory_pool_allocate(pool, 4096, 0, &arena_), "allocate");
        ensure(hsa_amd_agents_allow_access(1, &gpu_, nullptr, arena_), "allow access");
        auto* args = static_cast<FillArgs*>(arena_);
        *args = FillArgs{reinterpret_cast<uintptr_t>(args + 1), kWords, 0x600d, 0};
        ensure(hsa_queue_create(gpu_, 4096, HSA_QUEUE_TYPE_SINGLE, nullptr, nullptr, UINT32_MAX,
                                UINT32_MAX, &queue_),
               "queue create");
        ensure(hsa_signal_create(1, 0, nullptr, &done_), "signal create");
    }
    ~RocrPath() override {
        hsa_signal_destroy(done_);
        hsa_queue_destroy(queue_);
        hsa_amd_memory_pool_free(arena_);
        hsa_shut_down();
    }

    // One async copy inside the arena (this makes ROCr create its SDMA queue).
    void copy_once() {
        auto* base = static_cast<char*>(arena_);
        hsa_signal_store_relaxed(done_, 1);
        ensure(
            hsa_amd_memory_async_copy(base + 2048, gpu_, base + 1024, cpu_, 512, 0, nullptr, done_),
            "async copy");
        wait();
    }

    // The control path, `n` of each, beside the host's baselines (see the top).
    void control(uint32_t n) {
        using Clock = std::chrono::steady_clock;
        const auto since_us = [](Clock::time_point start) {
            return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
        };
        hsa_amd_memory_pool_t fine{};
        hsa_amd_agent_iterate_memory_pools(cpu_, find_fine_pool, &fine);
        std::vector<double> alloc_free;
        std::vector<double> queues;
        for (uint32_t i = 0; i < n; ++i) {
            auto start = Clock::now();
            void* p = nullptr;
            ensure(hsa_amd_memory_pool_allocate(fine, 4096, 0, &p), "4 KiB allocate");
            ensure(hsa_amd_memory_pool_free(p), "free");
            alloc_free.push_back(since_us(start));
            start = Clock::now();
            hsa_queue_t* q = nullptr;
            ensure(hsa_queue_create(gpu_, 64, HSA_QUEUE_TYPE_SINGLE, nullptr, nullptr, UINT32_MAX,
                                    UINT32_MAX, &q),
                   "queue create");
            ensure(hsa_queue_destroy(q), "queue destroy");
            queues.push_back(since_us(start));
        }
        const auto a = xenhsa::bench::percentiles(alloc_free);
        const auto q = xenhsa::bench::percentiles(queues);
        const auto mm = xenhsa::bench::mmap_mlock_munmap_us(n);
        const auto ev = xenhsa::bench::eventfd_round_trip_us(n);
        std::printf(
            "control alloc_free_us_p50=%.1f alloc_free_us_p99=%.1f queue_us_p50=%.1f "
            "queue_us_p99=%.1f mmap_mlock_us_p50=%.2f eventfd_rtt_us_p50=%.1f "
            "eventfd_rtt_us_p99=%.1f\n",
            a.p50, a.p99, q.p50, q.p99, mm.p50, ev.p50, ev.p99);
    }

    void set_wait(hsa_wait_state_t state, const char* name) {
        wait_ = state;
        name_ = name;
    }
    [[nodiscard]] std::string_view name() const override { return name_; }

    void dispatch_and_wait() override {
        hsa_signal_store_relaxed(done_, 1);
        submit(write_packet());
        wait();
    }

    void dispatch_batch_and_wait(uint32_t count) override {
        hsa_signal_store_relaxed(done_, count);
        uint64_t last = 0;
        for (uint32_t i = 0; i < count; ++i) {
            last = write_packet();
        }
        submit(last);
        wait();
    }

private:
    uint64_t write_packet() {
        const uint64_t index = hsa_queue_add_write_index_relaxed(queue_, 1);
        while (index - hsa_queue_load_read_index_scacquire(queue_) >= queue_->size) {
        }
        auto* packet = static_cast<hsa_kernel_dispatch_packet_t*>(queue_->base_address) +
                       (index & (queue_->size - 1));
        std::memset(reinterpret_cast<char*>(packet) + 4, 0, sizeof *packet - 4);
        packet->workgroup_size_x = kWords;
        packet->workgroup_size_y = packet->workgroup_size_z = 1;
        packet->grid_size_x = kWords;
        packet->grid_size_y = packet->grid_size_z = 1;
        packet->kernel_object = kernel_;
        packet->kernarg_address = arena_;
        packet->completion_signal = done_;
        const uint32_t header =
            (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
            (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
            (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
        const uint32_t setup = 1u << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
        __atomic_store_n(reinterpret_cast<uint32_t*>(packet), header | (setup << 16),
                         __ATOMIC_RELEASE);
        return index;
    }
    void submit(uint64_t index) {
        hsa_signal_store_screlease(queue_->doorbell_signal, static_cast<hsa_signal_value_t>(index));
    }
    void wait() {
        if (hsa_signal_wait_scacquire(done_, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX, wait_) != 0) {
            throw std::runtime_error("completion signal did not reach 0");
        }
    }

    hsa_agent_t gpu_{};
    hsa_agent_t cpu_{};
    uint64_t kernel_ = 0;
    void* arena_ = nullptr;
    hsa_queue_t* queue_ = nullptr;
    hsa_signal_t done_{};
    hsa_wait_state_t wait_ = HSA_WAIT_STATE_ACTIVE;
    const char* name_ = "rocr_active";
};

}  // namespace

int main(int argc, char** argv) {
    BenchConfig config;
    uint32_t idle_ms = 0;
    uint32_t control = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const auto value = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
        if (std::strcmp(argv[i], "--latency-iterations") == 0) {
            config.latency_iterations = value;
        } else if (std::strcmp(argv[i], "--dispatches") == 0) {
            config.throughput_dispatches = value;
        } else if (std::strcmp(argv[i], "--batch") == 0) {
            config.batch = value;
        } else if (std::strcmp(argv[i], "--idle-ms") == 0) {
            idle_ms = value;
        } else if (std::strcmp(argv[i], "--control") == 0) {
            control = value;
        }
    }
    try {
        RocrPath path;
        if (control != 0) {
            path.control(control);
            return 0;
        }
        if (idle_ms != 0) {
            path.dispatch_and_wait();  // every queue made and used once (SDMA too)
            path.copy_once();
            std::printf("idle start\n");
            std::fflush(stdout);
            std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
            std::printf("idle end\n");
            return 0;
        }
        print(measure(path, config));
        path.set_wait(HSA_WAIT_STATE_BLOCKED, "rocr_blocked");
        print(measure(path, config));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "xenhsa-bench-rocr-guest: %s\n", e.what());
        return 1;
    }
    return 0;
}
