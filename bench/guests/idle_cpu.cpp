#include "idle_cpu.hpp"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "baseline_process.hpp"
#include "embedded_services.hpp"
#include "fill_queue.hpp"
#include "guest_domain.hpp"
#include "proc_stats.hpp"
#include "section_stats.hpp"

namespace xenhsa::bench {

namespace {

constexpr uint32_t kBatch = 64;

struct IdleGuest {
    explicit IdleGuest(const std::filesystem::path& sim_dir)
        : domain(sim_dir, kGuestRamPages), queue(domain) {
        queue.dispatch_batch_and_wait(kBatch);  // a queue that has worked, now idle
    }
    GuestDomain domain;
    FillQueue queue;
};

// CPU seconds so far, per party.
struct CpuTotals {
    double sim = 0;
    double supervisor = 0;    // with its reaped children
    double workers = 0;       // its live children
    double guests = 0;        // this process: the guests' side
    double service_fine = 0;  // sim, supervisor and workers from schedstat (live threads)
    std::size_t worker_count = 0;
};

double tree_seconds(pid_t pid) { return cpu_seconds(pid, true).value_or(0); }
double fine_seconds(pid_t pid) { return schedstat_seconds(pid).value_or(0); }

CpuTotals sample(const EmbeddedServices& services) {
    CpuTotals t;
    t.sim = tree_seconds(services.sim_pid());
    t.service_fine = fine_seconds(services.sim_pid());
    for (const pid_t child : children_of(services.sim_pid())) {
        t.sim += tree_seconds(child);
        t.service_fine += fine_seconds(child);
    }
    t.supervisor = tree_seconds(services.backend_pid());
    t.service_fine += fine_seconds(services.backend_pid());
    const auto workers = children_of(services.backend_pid());
    for (const pid_t child : workers) {
        t.workers += tree_seconds(child);
        t.service_fine += fine_seconds(child);
    }
    t.worker_count = workers.size();
    t.guests = cpu_seconds(getpid(), false).value_or(0);
    return t;
}

// Shares of one core over a window.
struct IdleRound {
    double sim = 0;
    double supervisor = 0;
    double workers = 0;
    double guests = 0;
    double service_fine = 0;
    double spinning = 0;
    double spinning_fine = 0;
    std::size_t worker_count = 0;
    [[nodiscard]] double service() const { return sim + supervisor + workers; }
};

IdleRound measure_round(const EmbeddedServices& services, const IdleOptions& options) {
    IdleRound r;
    std::this_thread::sleep_for(options.settle);
    const CpuTotals a = sample(services);
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(options.window);
    const CpuTotals b = sample(services);
    const double wall = seconds(Clock::now() - t0);
    r.sim = (b.sim - a.sim) / wall;
    r.supervisor = (b.supervisor - a.supervisor) / wall;
    r.workers = (b.workers - a.workers) / wall;
    r.guests = (b.guests - a.guests) / wall;
    r.service_fine = (b.service_fine - a.service_fine) / wall;
    r.worker_count = b.worker_count;

    // The baseline, the same ways over the same window: one core's worth.
    const BaselineProcess spinner = BaselineProcess::spinning();
    const double s0 = cpu_seconds(spinner.pid(), false).value_or(0);
    const double f0 = fine_seconds(spinner.pid());
    const auto s_t0 = Clock::now();
    std::this_thread::sleep_for(options.window);
    const double s1 = cpu_seconds(spinner.pid(), false).value_or(0);
    const double f1 = fine_seconds(spinner.pid());
    const double s_wall = seconds(Clock::now() - s_t0);
    r.spinning = (s1 - s0) / s_wall;
    r.spinning_fine = (f1 - f0) / s_wall;
    return r;
}

double median_field(const std::vector<IdleRound>& rounds, double (*field)(const IdleRound&)) {
    std::vector<double> v;
    for (const auto& r : rounds) {
        v.push_back(field(r));
    }
    return median_of(std::move(v));
}

}  // namespace

void run_idle_cpu(const std::filesystem::path& bin_dir, const IdleOptions& options) {
    EmbeddedServices services(bin_dir);
    std::vector<std::unique_ptr<IdleGuest>> guests;
    for (uint32_t i = 0; i < options.guests; ++i) {
        guests.push_back(std::make_unique<IdleGuest>(services.sim_dir()));
    }
    std::vector<IdleRound> rounds;
    for (uint32_t r = 0; r < options.rounds; ++r) {
        rounds.push_back(measure_round(services, options));
    }
    const auto med = [&](double (*field)(const IdleRound&)) { return median_field(rounds, field); };
    const double idle = med([](const IdleRound& r) { return r.service(); });
    const double idle_fine = med([](const IdleRound& r) { return r.service_fine; });
    const double spinning = med([](const IdleRound& r) { return r.spinning; });
    const double spinning_fine = med([](const IdleRound& r) { return r.spinning_fine; });
    const double window_s = std::chrono::duration<double>(options.window).count();
    std::printf(
        "idle_guests=%u idle_workers=%zu idle_window_ms=%lld idle_cpu_share=%.4f "
        "sim_cpu_share=%.4f supervisor_cpu_share=%.4f workers_cpu_share=%.4f "
        "guests_cpu_share=%.4f idle_cpu_share_schedstat=%.5f\n",
        options.guests, rounds.back().worker_count, static_cast<long long>(options.window.count()),
        idle, med([](const IdleRound& r) { return r.sim; }),
        med([](const IdleRound& r) { return r.supervisor; }),
        med([](const IdleRound& r) { return r.workers; }),
        med([](const IdleRound& r) { return r.guests; }), idle_fine);
    std::printf(
        "baseline=one_core spinning_cpu_share=%.4f spinning_cpu_share_schedstat=%.5f "
        "cpu_share_resolution=%.4f\n",
        spinning, spinning_fine, 1.0 / (static_cast<double>(sysconf(_SC_CLK_TCK)) * window_s));
    std::printf("idle_rounds=%u\n", options.rounds);
    std::printf("idle_vs_one_core=%.4f idle_vs_one_core_schedstat=%.5f\n", ratio(idle, spinning),
                ratio(idle_fine, spinning_fine));
}

}  // namespace xenhsa::bench
