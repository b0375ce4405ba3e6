// xenhsa-bench-ring: the round trip of a null request (QUERY VERSION) through the request
// ring, beside the physical baselines of a round trip between two processes measured in
// the same run (physical_baselines.hpp), each end pinned (placement.hpp):
//   null_polling       both ends poll before they sleep (the defaults), the guest and its
//                      worker on CPUs of their own: held to the shared-memory ping-pong,
//                      `null_polling_vs_shm_ping_pong=` (p50 over p50, target <= 4);
//   null_event_driven  both ends sleep at once (worker --ring-spin-us 0, guest library
//                      reply_spin 0), measured on one CPU and on two: held to the eventfd
//                      round trip in the same placement,
//                      `null_event_driven_vs_eventfd_<placement>=` (target <= 1.3), and to
//                      an AF_UNIX datagram round trip (`..._vs_unix_datagram_<placement>=`):
//                      the simulator's notifications are datagrams, whose wake-ups the
//                      scheduler may hand over on the waker's CPU (on real Xen the event
//                      channel device wakes its reader as an eventfd does).
//   grant_broker_map<N> what a real-Xen worker's MAP of N pages (1, 1024) adds for its grant
//                      broker (broker_path.hpp), the broker on the other CPU or the same:
//                      held to the AF_UNIX datagram round trip,
//                      `grant_broker_map<N>_vs_unix_datagram_<placement>=` (one message
//                      each way, as the broker's).
// Each path has its own xenhsa-sim and xenhsa-backend. All figures take turns for
// --rounds rounds and each one's median round is printed: `baseline=<name> us_p50=..
// us_p99=.. us_mean=..` and `path=<name> ...`, then the ratios (lower is better).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#if XENHSA_BENCH_BROKER
#include "broker_path.hpp"
#endif
#include "embedded_services.hpp"
#include "null_request_path.hpp"
#include "physical_baselines.hpp"
#include "placement.hpp"
#include "round_trip.hpp"

namespace {

using namespace xenhsa::bench;

// Rounds of one figure, under a name that says where it ran.
class Figures {
public:
    void add(const std::string& name, RoundTrips r) {
        r.name = name;
        rounds_[name].push_back(std::move(r));
    }
    [[nodiscard]] bool has(const std::string& name) const { return rounds_.contains(name); }
    [[nodiscard]] RoundTrips get(const std::string& name) const { return median(rounds_.at(name)); }

private:
    std::map<std::string, std::vector<RoundTrips>> rounds_;
};

void print_ratio(const Figures& f, const std::string& ours, const std::string& baseline,
                 const std::string& label) {
    if (!f.has(ours) || !f.has(baseline)) {
        return;
    }
    const double base = f.get(baseline).us_p50;
    std::printf("%s=%.3f\n", label.c_str(), base > 0 ? f.get(ours).us_p50 / base : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
    std::string bin_dir = own_bin_dir().string();
    uint32_t iterations = 20000;
    uint32_t rounds = 5;
    CLI::App app{"Null request round trip through the ring vs two-process baselines"};
    app.add_option("--iterations", iterations, "round trips per figure per round")
        ->check(CLI::Range(100u, 10000000u))
        ->capture_default_str();
    app.add_option("--rounds", rounds, "alternating rounds (median reported)")
        ->check(CLI::Range(1u, 1000u))
        ->capture_default_str();
    app.add_option("--bin-dir", bin_dir, "where xenhsa-sim and xenhsa-backend are")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    try {
        NullRequestPath polling(bin_dir, NullRequestPath::Mode::polling);
        NullRequestPath event_driven(bin_dir, NullRequestPath::Mode::event_driven);
        const uint32_t warmup = std::max(100u, iterations / 20);
        const auto where = placements();
#if XENHSA_BENCH_BROKER
        BrokerPath broker;
#endif
        Figures f;
        for (uint32_t round = 0; round < rounds; ++round) {
            for (const Placement& p : where) {
                pin_process(0, p.own_cpu);
                const std::string at = "_" + p.name;
                f.add("eventfd" + at, eventfd_round_trip(iterations, warmup, p.peer_cpu));
                f.add("unix_datagram" + at,
                      unix_datagram_round_trip(iterations, warmup, p.peer_cpu));
                event_driven.pin_worker(p.peer_cpu);
                f.add("null_event_driven" + at, event_driven.measure(iterations, warmup));
#if XENHSA_BENCH_BROKER
                broker.pin_broker(p.peer_cpu);
                f.add("grant_broker_map1" + at, broker.measure_map(1, iterations, warmup));
                f.add("grant_broker_map1024" + at, broker.measure_map(1024, iterations, warmup));
#endif
                if (p.own_cpu == p.peer_cpu) {
                    continue;  // two polling ends on one CPU only take turns
                }
                f.add("shm_ping_pong", shm_ping_pong(iterations, warmup, p.peer_cpu));
                polling.pin_worker(p.peer_cpu);
                f.add("null_polling", polling.measure(iterations, warmup));
            }
        }
        for (const char* name : {"shm_ping_pong", "eventfd_same_cpu", "eventfd_cross_cpu",
                                 "unix_datagram_same_cpu", "unix_datagram_cross_cpu"}) {
            if (f.has(name)) {
                print("baseline=", f.get(name));
            }
        }
        for (const char* name :
             {"null_polling", "null_event_driven_same_cpu", "null_event_driven_cross_cpu",
              "grant_broker_map1_same_cpu", "grant_broker_map1_cross_cpu",
              "grant_broker_map1024_same_cpu", "grant_broker_map1024_cross_cpu"}) {
            if (f.has(name)) {
                print("path=", f.get(name));
            }
        }
        std::printf("rounds=%u iterations=%u\n", rounds, iterations);
        print_ratio(f, "null_polling", "shm_ping_pong", "null_polling_vs_shm_ping_pong");
        for (const Placement& p : where) {
            const std::string at = "_" + p.name;
            print_ratio(f, "null_event_driven" + at, "eventfd" + at,
                        "null_event_driven_vs_eventfd" + at);
            print_ratio(f, "null_event_driven" + at, "unix_datagram" + at,
                        "null_event_driven_vs_unix_datagram" + at);
            for (const char* map : {"grant_broker_map1", "grant_broker_map1024"}) {
                print_ratio(f, map + at, "unix_datagram" + at,
                            std::string(map) + "_vs_unix_datagram" + at);
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "xenhsa-bench-ring: %s\n", e.what());
        return 1;
    }
    return 0;
}
