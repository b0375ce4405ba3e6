#include "fairness.hpp"

#include <unistd.h>
#include <xenhsa/proto/common.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <xenhsa/frontend/gpu_memory.hpp>
#include <xenhsa/frontend/sdma_queue.hpp>

#include "embedded_services.hpp"
#include "guest_domain.hpp"
#include "proc_stats.hpp"
#include "section_stats.hpp"

namespace xenhsa::bench {
namespace {

using std::chrono::milliseconds;
namespace sdma = frontend::sdma;

constexpr milliseconds kSubmitTimeout{10000};
constexpr uint64_t kSdmaFeatures = XENHSA_FEATURES_V1 | XENHSA_FEATURE_SDMA;
constexpr uint64_t kArenaBytes = uint64_t{1} << 20;
// Room for 64 queues (a ring page and a pointer page each) beside the 1 MiB arena.
constexpr std::size_t kHogRamPages = 4096;

uint32_t gpu_node(GuestDomain& guest) {
    const auto node = take(frontend::aql::find_gpu_node(guest.client()), "gpu node");
    if (!node) {
        throw std::runtime_error("the backend has no GPU node");
    }
    return *node;
}

uint32_t lo(uint64_t v) { return static_cast<uint32_t>(v); }
uint32_t hi(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

// COPY_LINEAR_RECT with 16-byte elements, 16384 x 16384 x 2048, both sides at `base` with
// a pitch and a slice of one element: every row overlaps the last.
std::array<uint32_t, 13> worst_rect(uint64_t base) {
    constexpr uint32_t kHeader = 1u | (4u << 8) | (4u << 29);  // COPY, LINEAR_RECT, 2^4 B
    constexpr uint32_t kXy = 16383u | (16383u << 16);
    constexpr uint32_t kZ = 2047u;
    // Per side: address, x/y, z and pitch - 1 (0), slice - 1 (0).
    return {kHeader, lo(base), hi(base), 0, 0, 0, lo(base), hi(base), 0, 0, 0, kXy, kZ};
}

// The victim: copies through its SDMA queue, then waits for a fence, over and over.
class Copier {
public:
    Copier(GuestDomain& guest, uint64_t bytes) : guest_(guest), bytes_(bytes) {
        const std::size_t pages = (2 * bytes + XENHSA_PAGE_SIZE) / XENHSA_PAGE_SIZE;
        const uint32_t node = gpu_node(guest);
        memory_ =
            take(frontend::aql::GpuMemory::create(guest.client(), pages, node), "victim memory");
        src_ = take(memory_.carve(bytes, XENHSA_PAGE_SIZE), "victim src");
        dst_ = take(memory_.carve(bytes, XENHSA_PAGE_SIZE), "victim dst");
        flag_ = take(memory_.carve_array<uint32_t>(1), "victim flag");
        std::memset(src_, 0x5a, bytes);
        sdma::QueueOptions options;
        options.node = node;
        queue_ = take(sdma::SdmaQueue::create(guest.client(), options), "sdma queue");
    }
    ~Copier() {
        (void)queue_.destroy();
        (void)memory_.release(guest_.client());
    }
    Copier(const Copier&) = delete;
    Copier& operator=(const Copier&) = delete;

    // Bytes per second over `window`.
    double rate(milliseconds window) {
        uint64_t moved = 0;
        const auto start = Clock::now();
        while (Clock::now() - start < window) {
            one_copy();
            moved += bytes_;
        }
        return static_cast<double>(moved) / seconds(Clock::now() - start);
    }

private:
    void one_copy() {
        const uint32_t mark = ++fence_;
        ensure(queue_.copy(va(dst_), va(src_), bytes_, kSubmitTimeout), "victim copy");
        ensure(queue_.fence(va(flag_), mark, kSubmitTimeout), "victim fence");
        const auto deadline = Clock::now() + kSubmitTimeout;
        while (std::atomic_ref<uint32_t>(*flag_).load(std::memory_order_acquire) != mark) {
            if (Clock::now() > deadline) {
                throw std::runtime_error("victim copy: no fence in 10 s");
            }
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    }
    static uint64_t va(const void* p) { return reinterpret_cast<uint64_t>(p); }

    GuestDomain& guest_;
    uint64_t bytes_;
    frontend::aql::GpuMemory memory_;
    std::byte* src_ = nullptr;
    std::byte* dst_ = nullptr;
    uint32_t* flag_ = nullptr;
    uint32_t fence_ = 0;
    sdma::SdmaQueue queue_;
};

// The attacker: the worst rectangle on each of its queues, never waited for.
class Hog {
public:
    Hog(GuestDomain& guest, uint32_t queues) : guest_(guest) {
        const uint32_t node = gpu_node(guest);
        arena_ = take(
            frontend::aql::GpuMemory::create(guest.client(), kArenaBytes / XENHSA_PAGE_SIZE, node),
            "hog arena");
        const auto packet = worst_rect(arena_.va());
        for (uint32_t i = 0; i < queues; ++i) {
            sdma::QueueOptions options;
            options.ring_bytes = XENHSA_QUEUE_RING_MIN;
            options.node = node;
            queues_.push_back(take(sdma::SdmaQueue::create(guest.client(), options), "hog queue"));
            ensure(queues_.back().submit(packet, kSubmitTimeout), "hog rectangle");
        }
    }
    ~Hog() {
        stop();
        (void)arena_.release(guest_.client());
    }
    Hog(const Hog&) = delete;
    Hog& operator=(const Hog&) = delete;

    // Destroys the queues (each in the middle of its rectangle); returns how long it took.
    Clock::duration stop() {
        const auto start = Clock::now();
        for (auto& queue : queues_) {
            (void)queue.destroy();
        }
        queues_.clear();
        return Clock::now() - start;
    }

private:
    GuestDomain& guest_;
    frontend::aql::GpuMemory arena_;
    std::vector<sdma::SdmaQueue> queues_;
};

double memcpy_rate(uint64_t bytes, milliseconds window) {
    std::vector<std::byte> a(bytes, std::byte{0x5a}), b(bytes);
    uint64_t moved = 0;
    const auto start = Clock::now();
    while (Clock::now() - start < window) {
        std::memcpy(b.data(), a.data(), bytes);
        moved += bytes;
        a[moved % bytes] = b[(moved / 3) % bytes];  // keep the copies observable
    }
    return static_cast<double>(moved) / seconds(Clock::now() - start);
}

pid_t the_new_worker(const EmbeddedServices& services, const std::vector<pid_t>& known) {
    for (const pid_t pid : children_of(services.backend_pid())) {
        if (std::find(known.begin(), known.end(), pid) == known.end()) {
            return pid;
        }
    }
    throw std::runtime_error("no worker process for the new guest");
}

// "yes" when the worker runs in a CPU group of its own (its cgroup names it).
const char* own_cpu_group(pid_t worker) {
    std::ifstream in("/proc/" + std::to_string(worker) + "/cgroup");
    for (std::string line; std::getline(in, line);) {
        if (line.find("xenhsa-worker-" + std::to_string(worker)) != std::string::npos) {
            return "yes";
        }
    }
    return "no";
}

double cpu_share(pid_t pid, double before, Clock::time_point since) {
    return (schedstat_seconds(pid).value_or(0) - before) / seconds(Clock::now() - since);
}

}  // namespace

void run_fairness(const std::filesystem::path& bin_dir, const FairnessOptions& options) {
    EmbeddedServices services(bin_dir);
    GuestDomain victim_guest(services.sim_dir(), kGuestRamPages, {kGuestTimeout}, kSdmaFeatures);
    const pid_t victim_worker = the_new_worker(services, {});
    Copier victim(victim_guest, options.copy_bytes);
    (void)victim.rate(milliseconds(100));  // warm: pages touched, threads started

    std::vector<double> solo, baseline;
    for (uint32_t r = 0; r < options.rounds; ++r) {
        solo.push_back(victim.rate(options.window));
        baseline.push_back(memcpy_rate(options.copy_bytes, options.window));
    }

    GuestDomain hog_guest(services.sim_dir(), kHogRamPages, {kGuestTimeout}, kSdmaFeatures);
    const pid_t hog_worker = the_new_worker(services, {victim_worker});
    Hog hog(hog_guest, options.hog_queues);
    std::this_thread::sleep_for(milliseconds(200));  // every queue deep in its rectangle
    std::vector<double> loaded, hog_share, victim_share;
    for (uint32_t r = 0; r < options.rounds; ++r) {
        const double hog_before = schedstat_seconds(hog_worker).value_or(0);
        const double victim_before = schedstat_seconds(victim_worker).value_or(0);
        const auto since = Clock::now();
        loaded.push_back(victim.rate(options.window));
        hog_share.push_back(cpu_share(hog_worker, hog_before, since));
        victim_share.push_back(cpu_share(victim_worker, victim_before, since));
    }
    const double teardown_ms = micros(hog.stop()) / 1000;

    const double solo_gb_s = median_of(solo) / 1e9;
    const double loaded_gb_s = median_of(loaded) / 1e9;
    const double memcpy_gb_s = median_of(baseline) / 1e9;
    std::printf(
        "fairness_hog_queues=%u fairness_copy_bytes=%llu cpus=%ld cpu_groups=%s "
        "solo_copy_gb_s=%.3f loaded_copy_gb_s=%.3f hog_worker_cpu_share=%.2f "
        "victim_worker_cpu_share=%.2f hog_queues_destroy_ms=%.1f\n",
        options.hog_queues, static_cast<unsigned long long>(options.copy_bytes),
        sysconf(_SC_NPROCESSORS_ONLN), own_cpu_group(hog_worker), solo_gb_s, loaded_gb_s,
        median_of(hog_share), median_of(victim_share), teardown_ms);
    std::printf("baseline=memcpy memcpy_gb_s=%.3f\n", memcpy_gb_s);
    std::printf("solo_vs_memcpy=%.3f loaded_vs_memcpy=%.3f\n", ratio(solo_gb_s, memcpy_gb_s),
                ratio(loaded_gb_s, memcpy_gb_s));
    std::printf("fairness_loaded_vs_solo=%.3f (target >= 0.4)\n", ratio(loaded_gb_s, solo_gb_s));
    std::fflush(stdout);
}

}  // namespace xenhsa::bench
