#include "aggregate.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdio>
#include <exception>
#include <memory>
#include <thread>

#include "dispatch_path.hpp"
#include "embedded_services.hpp"
#include "fill_queue.hpp"
#include "guest_domain.hpp"
#include "packet_loop_path.hpp"
#include "proc_stats.hpp"
#include "section_stats.hpp"

namespace xenhsa::bench {

namespace {

using namespace std::chrono_literals;

constexpr uint32_t kWarmupBatches = 20;

struct Guest {
    explicit Guest(const std::filesystem::path& sim_dir)
        : domain(sim_dir, kGuestRamPages), queue(domain) {}
    GuestDomain domain;
    FillQueue queue;
};

struct AggregateRound {
    double per_s = 0;          // all guests together
    double slowest_guest = 0;  // dispatches/s of the slowest guest
    double fastest_guest = 0;
};

// After a set of guests is gone: waits until the backend has reaped their workers.
void wait_for_no_workers(pid_t backend) {
    const auto deadline = Clock::now() + 20s;
    while (!children_of(backend).empty()) {
        if (Clock::now() > deadline) {
            throw std::runtime_error("the backend's workers did not end");
        }
        std::this_thread::sleep_for(20ms);
    }
}

AggregateRound measure_guests(const EmbeddedServices& services, uint32_t count,
                              const AggregateOptions& options) {
    AggregateRound result;
    {
        std::vector<std::unique_ptr<Guest>> guests;
        for (uint32_t i = 0; i < count; ++i) {
            guests.push_back(std::make_unique<Guest>(services.sim_dir()));
        }
        std::vector<uint64_t> done(count, 0);
        std::vector<std::exception_ptr> errors(count);
        std::atomic<bool> stop{false};
        std::barrier start(static_cast<std::ptrdiff_t>(count) + 1);
        std::vector<std::jthread> threads;
        for (uint32_t i = 0; i < count; ++i) {
            threads.emplace_back([&, i] {
                FillQueue& queue = guests[i]->queue;
                try {
                    for (uint32_t w = 0; w < kWarmupBatches; ++w) {
                        queue.dispatch_batch_and_wait(options.batch);
                    }
                } catch (...) {
                    errors[i] = std::current_exception();
                }
                start.arrive_and_wait();
                if (errors[i]) {
                    return;
                }
                try {
                    while (!stop.load(std::memory_order_relaxed)) {
                        queue.dispatch_batch_and_wait(options.batch);
                        done[i] += options.batch;
                    }
                } catch (...) {
                    errors[i] = std::current_exception();
                }
            });
        }
        start.arrive_and_wait();
        const auto t0 = Clock::now();
        std::this_thread::sleep_for(options.duration);
        stop.store(true, std::memory_order_relaxed);
        threads.clear();  // joins
        const double took = seconds(Clock::now() - t0);
        for (const auto& e : errors) {
            if (e) {
                std::rethrow_exception(e);
            }
        }
        uint64_t total = 0;
        for (const uint64_t d : done) {
            total += d;
        }
        const auto [lo, hi] = std::minmax_element(done.begin(), done.end());
        result.per_s = static_cast<double>(total) / took;
        result.slowest_guest = static_cast<double>(*lo) / took;
        result.fastest_guest = static_cast<double>(*hi) / took;
    }
    wait_for_no_workers(services.backend_pid());
    return result;
}

}  // namespace

void run_aggregate(const std::filesystem::path& bin_dir, const AggregateOptions& options) {
    const uint32_t most = *std::max_element(options.guests.begin(), options.guests.end());
    // Room for a set of guests while the previous set's slots are still being freed.
    ServiceArgs args;
    args.backend = {"--max-guests", std::to_string(std::max(16u, 2 * most))};
    EmbeddedServices services(bin_dir, args);
    PacketLoopPath loop;
    BenchConfig loop_config;
    loop_config.batch = options.batch;

    std::vector<std::vector<AggregateRound>> rounds(options.guests.size());
    std::vector<double> loop_rounds;
    for (uint32_t r = 0; r < options.rounds; ++r) {
        loop_rounds.push_back(bench::measure(loop, loop_config).dispatches_per_s);
        for (std::size_t i = 0; i < options.guests.size(); ++i) {
            rounds[i].push_back(measure_guests(services, options.guests[i], options));
        }
    }
    const double baseline = median_of(loop_rounds);
    std::vector<double> aggregate(options.guests.size());
    for (std::size_t i = 0; i < options.guests.size(); ++i) {
        auto& r = rounds[i];
        std::sort(r.begin(), r.end(), [](const AggregateRound& a, const AggregateRound& b) {
            return a.per_s < b.per_s;
        });
        const AggregateRound& m = r[r.size() / 2];
        aggregate[i] = m.per_s;
        std::printf(
            "guests=%u aggregate_dispatch_per_s=%.0f slowest_guest_per_s=%.0f "
            "fastest_guest_per_s=%.0f\n",
            options.guests[i], m.per_s, m.slowest_guest, m.fastest_guest);
    }
    std::printf("baseline=packet_loop dispatch_per_s=%.0f\n", baseline);
    for (std::size_t i = 0; i < options.guests.size(); ++i) {
        std::printf("aggregate_%u_vs_packet_loop=%.3f\n", options.guests[i],
                    ratio(aggregate[i], baseline));
    }
    std::printf("aggregate_rounds=%u aggregate_ms=%lld batch=%u\n", options.rounds,
                static_cast<long long>(options.duration.count()), options.batch);
    const auto at = [&](uint32_t n) -> const double* {
        const auto it = std::find(options.guests.begin(), options.guests.end(), n);
        return it == options.guests.end() ? nullptr : &aggregate[it - options.guests.begin()];
    };
    if (at(16) != nullptr && at(4) != nullptr) {
        std::printf("aggregate_16_vs_4=%.3f\n", ratio(*at(16), *at(4)));
    }
}

}  // namespace xenhsa::bench
