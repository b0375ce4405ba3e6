// xenhsa-bench-rocr: tiny dispatches through unmodified ROCr in a guest (Debian's
// libhsa-runtime64 over the guest libhsakmt, xenhsa-bench-rocr-guest under xenhsa-run),
// beside the same work through xenhsa's own guest library (bench/dispatch's guest
// boundary path), in one run, each against its own xenhsa-sim + xenhsa-backend. The
// physical baseline is a raw eventfd round trip between two threads, measured in the
// same run.
//
// Output: the paths' `path=...` lines (median round of --rounds), then
//   baseline eventfd_rtt_us_p50=...
//   rocr_latency_ratio=<rocr_active p50 / guest_library p50>
//   rocr_blocked_latency_ratio=<rocr_blocked p50 / guest_library p50>
//   latency_vs_eventfd=<rocr_active p50 / eventfd round trip>
//   idle_worker_cpu_share=<the backend's CPU share while a ROCm program with live AQL and
//     SDMA queues idles: what noticing doorbell stores without kicks costs; 1.0 would be
//     a core spinning>
//   rocr_kfd_latency_ratio=<rocr_kfd_active p50 / rocr_active p50: the host path, Debian's
//     libhsakmt over the KFD shim in the workers, against the software GPU's; printed when
//     the shim was built (the release preset with its tests)>
//   rocr_kfd_latency_vs_eventfd=<rocr_kfd_active p50 / eventfd round trip>
//   control load=idle|busy(N_spinners) ...: the control path through ROCr (a 4 KiB
//     fine-grained system allocation and its free; hsa_queue_create + destroy) on an idle
//     machine and with every core kept busy by other processes, beside the host's own
//     mmap+mlock+munmap of a page and an eventfd round trip under the same load, then
//   control_alloc_free_loaded_vs_idle=<busy / idle p50; the target is at most 10> and the
//     other ratios
//   rocr_dispatch_ratio=<rocr_active dispatch_per_s / guest_library dispatch_per_s>   (last)
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>
#include <xenhsa/hsa/builtin_kernel_env.hpp>

#include "dispatch_path.hpp"
#include "embedded_services.hpp"
#include "guest_boundary_path.hpp"
#include "host_baselines.hpp"

extern char** environ;

namespace {

using namespace xenhsa::bench;
using Clock = std::chrono::steady_clock;

// key=value words of one `path=...` line.
std::map<std::string, std::string> words(const std::string& line) {
    std::map<std::string, std::string> out;
    std::istringstream in(line);
    std::string w;
    while (in >> w) {
        const auto eq = w.find('=');
        if (eq != std::string::npos) {
            out[w.substr(0, eq)] = w.substr(eq + 1);
        }
    }
    return out;
}

PathResult result_of(const std::map<std::string, std::string>& w) {
    PathResult r;
    r.path = w.at("path");
    r.dispatches_per_s = std::stod(w.at("dispatch_per_s"));
    r.latency_us_p50 = std::stod(w.at("latency_us_p50"));
    r.latency_us_p99 = std::stod(w.at("latency_us_p99"));
    r.latency_us_mean = std::stod(w.at("latency_us_mean"));
    return r;
}

// xenhsa-bench-rocr-guest under xenhsa-run in a new guest domain, its stdout read by line.
class RocrGuest {
public:
    RocrGuest(const std::filesystem::path& bin_dir, const std::filesystem::path& sim_dir,
              const std::vector<std::string>& guest_args) {
        int out[2];
        if (::pipe(out) != 0) {
            throw std::runtime_error("pipe");
        }
        std::vector<std::string> args{(bin_dir / "xenhsa-run").string(), "--sim-dir",
                                      sim_dir.string(), "--",
                                      (bin_dir / "xenhsa-bench-rocr-guest").string()};
        args.insert(args.end(), guest_args.begin(), guest_args.end());
        std::vector<char*> argv;
        for (const auto& a : args) {
            argv.push_back(const_cast<char*>(a.c_str()));
        }
        argv.push_back(nullptr);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
        posix_spawn_file_actions_addclose(&actions, out[0]);
        const int spawned = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        ::close(out[1]);
        fd_ = out[0];
        if (spawned != 0) {
            ::close(fd_);
            throw std::runtime_error("cannot start " + args[0]);
        }
    }
    RocrGuest(const RocrGuest&) = delete;
    RocrGuest& operator=(const RocrGuest&) = delete;
    ~RocrGuest() {
        ::close(fd_);
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }

    // The next line, or nullopt at the end of its output.
    std::optional<std::string> line() {
        for (;;) {
            const auto nl = buffer_.find('\n');
            if (nl != std::string::npos) {
                std::string l = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                return l;
            }
            char buf[4096];
            const ssize_t n = ::read(fd_, buf, sizeof buf);
            if (n <= 0) {
                return std::nullopt;
            }
            buffer_.append(buf, static_cast<std::size_t>(n));
        }
    }
    // Its lines to the end, then its exit; throws unless it exited 0.
    std::vector<std::string> finish() {
        std::vector<std::string> lines;
        while (auto l = line()) {
            lines.push_back(*l);
        }
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            throw std::runtime_error("xenhsa-bench-rocr-guest failed");
        }
        return lines;
    }

private:
    pid_t pid_ = -1;
    int fd_ = -1;
    std::string buffer_;
};

// One measuring run: its two paths.
std::vector<PathResult> rocr_round(const std::filesystem::path& bin_dir,
                                   const std::filesystem::path& sim_dir,
                                   const BenchConfig& config) {
    RocrGuest guest(
        bin_dir, sim_dir,
        {"--latency-iterations", std::to_string(config.latency_iterations), "--dispatches",
         std::to_string(config.throughput_dispatches), "--batch", std::to_string(config.batch)});
    std::vector<PathResult> results;
    for (const std::string& l : guest.finish()) {
        if (l.rfind("path=", 0) == 0) {
            results.push_back(result_of(words(l)));
        }
    }
    if (results.size() != 2) {
        throw std::runtime_error("unexpected output of xenhsa-bench-rocr-guest");
    }
    return results;
}

// CPU seconds of every thread of the processes whose parent is `parent` (schedstat: ns).
double children_cpu_seconds(pid_t parent) {
    double ns = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        std::ifstream stat(entry.path() / "stat");
        std::string text;
        if (!std::getline(stat, text) || text.rfind(')') == std::string::npos) {
            continue;
        }
        // pid (comm) state ppid ...: the fields after the last ')'.
        std::istringstream rest(text.substr(text.rfind(')') + 2));
        std::string state;
        long ppid = 0;
        rest >> state >> ppid;
        if (ppid != parent) {
            continue;
        }
        std::error_code ec;
        for (const auto& task : std::filesystem::directory_iterator(entry.path() / "task", ec)) {
            std::ifstream sched(task.path() / "schedstat");
            double on_cpu = 0;
            if (sched >> on_cpu) {
                ns += on_cpu;
            }
        }
    }
    return ns / 1e9;
}

// The backend's CPU share while a ROCm program with live queues sits idle.
double idle_worker_cpu_share(const std::filesystem::path& bin_dir, const EmbeddedServices& services,
                             uint32_t idle_ms) {
    RocrGuest guest(bin_dir, services.sim_dir(), {"--idle-ms", std::to_string(idle_ms)});
    for (auto l = guest.line(); l && *l != "idle start"; l = guest.line()) {
    }
    // Past the setup's last polling phase: what remains is the idle cost.
    std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms / 4));
    const double cpu0 = children_cpu_seconds(services.backend_pid());
    const auto wall0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms / 2));
    const double cpu = children_cpu_seconds(services.backend_pid()) - cpu0;
    const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
    (void)guest.finish();
    return cpu / wall;
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

// Processes that keep every core busy while they live: the load of a busy host (other
// guests' vCPUs, a build), at the same priority as everything of xenhsa's.
class CpuLoad {
public:
    explicit CpuLoad(unsigned spinners) {
        const char* argv[] = {"/bin/sh", "-c", "while :; do :; done", nullptr};
        for (unsigned i = 0; i < spinners; ++i) {
            pid_t pid = -1;
            if (::posix_spawn(&pid, argv[0], nullptr, nullptr, const_cast<char**>(argv), environ) !=
                0) {
                throw std::runtime_error("cannot start a CPU spinner");
            }
            pids_.push_back(pid);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all of them running
    }
    CpuLoad(const CpuLoad&) = delete;
    CpuLoad& operator=(const CpuLoad&) = delete;
    ~CpuLoad() {
        for (const pid_t pid : pids_) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
    }

private:
    std::vector<pid_t> pids_;
};

// One `control ...` line of xenhsa-bench-rocr-guest --control.
struct ControlFigures {
    double alloc_free_p50 = 0, alloc_free_p99 = 0, queue_p50 = 0, queue_p99 = 0;
    double mmap_mlock_p50 = 0, eventfd_p50 = 0, eventfd_p99 = 0;
};

ControlFigures control_round(const std::filesystem::path& bin_dir,
                             const std::filesystem::path& sim_dir, uint32_t iterations) {
    RocrGuest guest(bin_dir, sim_dir, {"--control", std::to_string(iterations)});
    for (const std::string& l : guest.finish()) {
        if (l.rfind("control ", 0) == 0) {
            const auto w = words(l);
            return {std::stod(w.at("alloc_free_us_p50")), std::stod(w.at("alloc_free_us_p99")),
                    std::stod(w.at("queue_us_p50")),      std::stod(w.at("queue_us_p99")),
                    std::stod(w.at("mmap_mlock_us_p50")), std::stod(w.at("eventfd_rtt_us_p50")),
                    std::stod(w.at("eventfd_rtt_us_p99"))};
        }
    }
    throw std::runtime_error("no control line from xenhsa-bench-rocr-guest");
}

ControlFigures median_control(std::vector<ControlFigures> rounds) {
    std::sort(rounds.begin(), rounds.end(),
              [](const auto& a, const auto& b) { return a.alloc_free_p50 < b.alloc_free_p50; });
    return rounds[rounds.size() / 2];
}

void print_control(const char* load, const ControlFigures& c) {
    std::printf(
        "control load=%s alloc_free_us_p50=%.1f alloc_free_us_p99=%.1f "
        "queue_create_destroy_us_p50=%.1f queue_create_destroy_us_p99=%.1f "
        "baseline_mmap_mlock_munmap_us_p50=%.2f baseline_eventfd_rtt_us_p50=%.1f "
        "baseline_eventfd_rtt_us_p99=%.1f\n",
        load, c.alloc_free_p50, c.alloc_free_p99, c.queue_p50, c.queue_p99, c.mmap_mlock_p50,
        c.eventfd_p50, c.eventfd_p99);
}

// The backend on `--gpu kfd` with the KFD shim preloaded (built beside the binaries, in
// lib/), and the guest able to run the shim GPU's built-in kernels; nullopt without the shim.
std::optional<ServiceArgs> kfd_backend(const std::filesystem::path& bin_dir) {
    const auto shim = bin_dir.parent_path() / "lib" / "libxenhsa-test-kfd-shim.so";
    if (!std::filesystem::exists(shim)) {
        return std::nullopt;
    }
    for (const auto& [name, value] : xenhsa::hsa::builtin_kernel_env()) {
        ::setenv(name.c_str(), value.c_str(), 0);  // the soft path's guest library sets its own
    }
    ServiceArgs args;
    args.gpu = "kfd";
    // A sanitized build's runtime must come first; the shim is preloaded before it.
    const char* asan = std::getenv("ASAN_OPTIONS");
    const std::string asan_options =
        asan != nullptr && *asan != '\0' ? std::string(asan) + ":" : "";
    args.backend_env = {"LD_PRELOAD=" + shim.string(),
                        "ASAN_OPTIONS=" + asan_options + "verify_asan_link_order=0"};
    return args;
}

}  // namespace

int main(int argc, char** argv) {
    BenchConfig config;
    config.latency_iterations = 1000;
    config.throughput_dispatches = 20000;
    std::string bin_dir = own_bin_dir().string();
    uint32_t rounds = 3;
    uint32_t idle_ms = 4000;
    uint32_t control_iterations = 200;
    CLI::App app{"Tiny dispatches through unmodified ROCr in a guest vs xenhsa's guest library"};
    app.add_option("--latency-iterations", config.latency_iterations, "single dispatches timed")
        ->capture_default_str();
    app.add_option("--dispatches", config.throughput_dispatches, "dispatches for throughput")
        ->capture_default_str();
    app.add_option("--batch", config.batch, "dispatches per completion wait")
        ->capture_default_str();
    app.add_option("--rounds", rounds, "alternating rounds per path (median reported)")
        ->check(CLI::Range(1u, 100u))
        ->capture_default_str();
    app.add_option("--idle-ms", idle_ms,
                   "how long a ROCm program with live queues idles (its middle half is measured)")
        ->check(CLI::Range(400u, 600000u))
        ->capture_default_str();
    app.add_option("--control-iterations", control_iterations,
                   "control-path operations timed per round, idle and with every core loaded "
                   "(0: none)")
        ->capture_default_str();
    app.add_option("--bin-dir", bin_dir, "where xenhsa-sim, -backend, -run and the guest are")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    try {
        GuestBoundaryPath library(bin_dir);
        EmbeddedServices rocr_services(bin_dir);
        std::vector<PathResult> lib_rounds, active_rounds, blocked_rounds;
        std::vector<double> eventfd_rounds;
        for (uint32_t round = 0; round < rounds; ++round) {
            eventfd_rounds.push_back(eventfd_round_trip_us(config.latency_iterations).p50);
            PathResult lib = measure(library, config);
            lib.path = "guest_library";
            lib_rounds.push_back(lib);
            auto rocr = rocr_round(bin_dir, rocr_services.sim_dir(), config);
            active_rounds.push_back(rocr[0]);
            blocked_rounds.push_back(rocr[1]);
        }
        const double idle_share = idle_worker_cpu_share(bin_dir, rocr_services, idle_ms);
        std::vector<ControlFigures> control_idle, control_loaded;
        const unsigned spinners = std::max(1u, std::thread::hardware_concurrency());
        for (uint32_t round = 0; control_iterations != 0 && round < rounds; ++round) {
            control_idle.push_back(
                control_round(bin_dir, rocr_services.sim_dir(), control_iterations));
            const CpuLoad load(spinners);
            control_loaded.push_back(
                control_round(bin_dir, rocr_services.sim_dir(), control_iterations));
        }
        std::vector<PathResult> kfd_rounds;
        if (const auto kfd = kfd_backend(bin_dir)) {
            EmbeddedServices kfd_services(bin_dir, *kfd);
            for (uint32_t round = 0; round < rounds; ++round) {
                kfd_rounds.push_back(rocr_round(bin_dir, kfd_services.sim_dir(), config)[0]);
            }
        }
        const PathResult lib = median(lib_rounds);
        const PathResult active = median(active_rounds);
        const PathResult blocked = median(blocked_rounds);
        std::sort(eventfd_rounds.begin(), eventfd_rounds.end());
        const double eventfd = eventfd_rounds[eventfd_rounds.size() / 2];
        print(lib);
        print(active);
        print(blocked);
        std::optional<PathResult> kfd;
        if (!kfd_rounds.empty()) {
            kfd = median(kfd_rounds);
            kfd->path = "rocr_kfd_active";
            print(*kfd);
        }
        std::printf("baseline eventfd_rtt_us_p50=%.1f\n", eventfd);
        // A queue that spun while idle would cost one core: 1.0.
        std::printf("idle_worker_cpu_share=%.4f idle_ms=%u spinning_core=1.0\n", idle_share,
                    idle_ms / 2);
        std::printf("rounds=%u latency_iterations=%u dispatches_per_round=%u batch=%u\n", rounds,
                    config.latency_iterations, config.throughput_dispatches, config.batch);
        std::printf("rocr_latency_ratio=%.3f\n", ratio(active.latency_us_p50, lib.latency_us_p50));
        std::printf("rocr_blocked_latency_ratio=%.3f\n",
                    ratio(blocked.latency_us_p50, lib.latency_us_p50));
        std::printf("latency_vs_eventfd=%.3f\n", ratio(active.latency_us_p50, eventfd));
        if (kfd) {
            std::printf("rocr_kfd_latency_ratio=%.3f\n",
                        ratio(kfd->latency_us_p50, active.latency_us_p50));
            std::printf("rocr_kfd_latency_vs_eventfd=%.3f\n", ratio(kfd->latency_us_p50, eventfd));
        }
        if (!control_idle.empty()) {
            const ControlFigures idle = median_control(control_idle);
            const ControlFigures loaded = median_control(control_loaded);
            print_control("idle", idle);
            const std::string busy = "busy(" + std::to_string(spinners) + "_spinners)";
            print_control(busy.c_str(), loaded);
            std::printf("control_iterations=%u\n", control_iterations);
            // The target: a 4 KiB system allocation under full load within 10x its idle time.
            std::printf("control_alloc_free_loaded_vs_idle=%.2f target=10\n",
                        ratio(loaded.alloc_free_p50, idle.alloc_free_p50));
            std::printf("control_queue_loaded_vs_idle=%.2f\n",
                        ratio(loaded.queue_p50, idle.queue_p50));
            std::printf("control_eventfd_loaded_vs_idle=%.2f\n",
                        ratio(loaded.eventfd_p50, idle.eventfd_p50));
            std::printf("control_alloc_free_vs_mmap_mlock=%.1f loaded=%.1f\n",
                        ratio(idle.alloc_free_p50, idle.mmap_mlock_p50),
                        ratio(loaded.alloc_free_p50, loaded.mmap_mlock_p50));
            std::printf("control_alloc_free_vs_eventfd=%.1f loaded=%.1f\n",
                        ratio(idle.alloc_free_p50, idle.eventfd_p50),
                        ratio(loaded.alloc_free_p50, loaded.eventfd_p50));
        }
        std::printf("rocr_dispatch_ratio=%.3f\n",
                    ratio(active.dispatches_per_s, lib.dispatches_per_s));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "xenhsa-bench-rocr: %s\n", e.what());
        return 1;
    }
    return 0;
}
