#include "process_memory.hpp"

#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
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

using namespace std::chrono_literals;

struct Measured {
    std::string name;
    pid_t pid = -1;
    std::vector<double> rss_kib;
    std::vector<double> pss_kib;
};

void read_into(Measured& m) {
    const auto use = memory_use(m.pid);
    if (!use) {
        throw std::runtime_error("cannot read /proc/" + std::to_string(m.pid) + "/smaps_rollup");
    }
    m.rss_kib.push_back(static_cast<double>(use->rss_kib));
    m.pss_kib.push_back(static_cast<double>(use->pss_kib));
}

std::vector<pid_t> workers_of(pid_t backend) {
    std::vector<pid_t> out;
    for (const pid_t child : children_of(backend)) {
        if (command_line(child).find("--worker") != std::string::npos) {
            out.push_back(child);
        }
    }
    return out;
}

}  // namespace

void run_process_memory(const std::filesystem::path& bin_dir, const MemoryOptions& options) {
    EmbeddedServices services(bin_dir);
    GuestDomain guest(services.sim_dir(), kGuestRamPages);
    FillQueue queue(guest);
    queue.dispatch_batch_and_wait(64);  // a queue that has worked, now idle
    const BaselineProcess sleeper = BaselineProcess::sleeping();
    std::this_thread::sleep_for(500ms);

    std::vector<Measured> measured{{"sim", services.sim_pid(), {}, {}},
                                   {"supervisor", services.backend_pid(), {}, {}}};
    const auto workers = workers_of(services.backend_pid());
    if (workers.empty()) {
        throw std::runtime_error("the backend has no worker for the guest");
    }
    for (const pid_t w : workers) {
        measured.push_back({"worker", w, {}, {}});
    }
    Measured baseline{"sleep", sleeper.pid(), {}, {}};
    for (uint32_t r = 0; r < options.rounds; ++r) {
        if (r != 0) {
            std::this_thread::sleep_for(100ms);
        }
        for (auto& m : measured) {
            read_into(m);
        }
        read_into(baseline);
    }
    const double base_rss = median_of(baseline.rss_kib);
    const double base_pss = median_of(baseline.pss_kib);
    std::printf("baseline=/bin/sleep rss_kib=%.0f pss_kib=%.0f\n", base_rss, base_pss);
    for (const auto& m : measured) {
        const double rss = median_of(m.rss_kib);
        const double pss = median_of(m.pss_kib);
        std::printf(
            "process=%s pid=%d rss_kib=%.0f pss_kib=%.0f rss_vs_baseline=%.2f "
            "pss_vs_baseline=%.2f\n",
            m.name.c_str(), m.pid, rss, pss, ratio(rss, base_rss), ratio(pss, base_pss));
    }
    // The first worker (there is one guest).
    const Measured& worker = measured[2];
    const double worker_rss = median_of(worker.rss_kib);
    const double worker_pss = median_of(worker.pss_kib);
    std::printf("memory_rounds=%u\n", options.rounds);
    std::printf("worker_rss_kib=%.0f baseline_rss_kib=%.0f worker_rss_vs_baseline=%.2f\n",
                worker_rss, base_rss, ratio(worker_rss, base_rss));
    std::printf("worker_pss_kib=%.0f baseline_pss_kib=%.0f worker_pss_vs_baseline=%.2f\n",
                worker_pss, base_pss, ratio(worker_pss, base_pss));
}

}  // namespace xenhsa::bench
