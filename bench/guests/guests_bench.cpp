// xenhsa-bench-guests: what guests cost the service side, each figure beside a physical
// baseline measured in the same run and the ratio (absolute times on a shared machine
// drift; ratios much less). Every section starts its own xenhsa-sim and
// `xenhsa-backend --gpu soft` (bench/dispatch's EmbeddedServices) and makes its guests in
// this process, each its own domain with its device plugged. Output: key=value lines.
//
//   map        a guest MAPs granted pages at its VA and revokes them (UNMAP), 1 to
//              262144 pages (1 GiB), through the guest library; baseline mmap(MAP_SHARED |
//              MAP_POPULATE) and munmap of as many pages of a memfd. A MAP request carries
//              at most XENHSA_MAP_MAX_PAGES (53248) pages: larger sizes take several
//              requests (`map_requests=`), timed together.
//     map_pages=N map_requests=R map_us=... mmap_populate_us=... map_vs_mmap=<map / mmap>
//       revoke_us=... munmap_us=... revoke_vs_munmap=<revoke / munmap> grant_us=...
//   aggregate  tiny dispatches (the built-in 64-byte fill, batches of --batch) from 1, 4
//              and 16 guests at once, each its own domain, device, worker, queue and
//              thread here; baseline the minimal packet loop (bench/dispatch).
//     guests=N aggregate_dispatch_per_s=... slowest_guest_per_s=... fastest_guest_per_s=...
//     baseline=packet_loop dispatch_per_s=...
//     aggregate_N_vs_packet_loop=<aggregate / packet loop>
//     aggregate_16_vs_4=<16 guests' aggregate / 4 guests'>            (target >= 0.9)
//   idle       4 guests connected, each holding an idle AQL queue: CPU of the sim, the
//              supervisor and its workers over a window; baseline one core (a spinning
//              process measured the same way).
//     idle_guests=4 ... idle_cpu_share=<of one core> sim_/supervisor_/workers_/guests_cpu_share=
//     baseline=one_core spinning_cpu_share=... cpu_share_resolution=<one clock tick>
//     idle_vs_one_core=<idle / spinning>                              (target ~ 0)
//   memory     RSS and PSS of the worker of one connected idle guest, the supervisor and
//              the sim; baseline /bin/sleep.
//     process=NAME pid=... rss_kib=... pss_kib=...
//     baseline=/bin/sleep rss_kib=... pss_kib=...
//     worker_pss_kib=... baseline_pss_kib=... worker_pss_vs_baseline=<worker / sleep>
//   fairness   one guest's SDMA copies (4 MiB and a fence, again and again) alone, then
//              while another guest keeps --hog-queues SDMA queues on the worst rectangle
//              copy a packet can describe (8 TiB of overlapping rows over 1 MiB);
//              baseline memcpy of as many bytes on one thread.
//     fairness_hog_queues=64 ... cpu_groups=yes|no solo_copy_gb_s=... loaded_copy_gb_s=...
//       hog_worker_cpu_share=... victim_worker_cpu_share=... hog_queues_destroy_ms=...
//     baseline=memcpy memcpy_gb_s=...   solo_vs_memcpy=... loaded_vs_memcpy=...
//     fairness_loaded_vs_solo=<loaded / solo>                          (target >= 0.4)
//
// Ratios of times and of memory are ours over the baseline: lower is better. Ratios of
// throughput are ours over the baseline: higher is better. --rounds rounds per section,
// medians reported; in `map` and `aggregate` ours and the baseline take turns.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "aggregate.hpp"
#include "embedded_services.hpp"
#include "fairness.hpp"
#include "idle_cpu.hpp"
#include "map_revoke.hpp"
#include "process_memory.hpp"

int main(int argc, char** argv) {
    using namespace xenhsa::bench;
    std::string bin_dir = own_bin_dir().string();
    std::vector<std::string> sections;
    uint32_t rounds = 3;
    MapRevokeOptions map;
    AggregateOptions aggregate;
    IdleOptions idle;
    uint32_t aggregate_ms = 1000;
    uint32_t idle_settle_ms = 500;
    uint32_t idle_window_ms = 2000;
    FairnessOptions fairness;
    uint32_t fairness_ms = 1000;

    CLI::App app{
        "What guests cost the service side (MAP/revoke, aggregate dispatch, idle CPU, fairness, "
        "memory), each figure beside a physical baseline measured in the same run"};
    app.add_option("--section", sections, "run only these sections (repeatable; default: all)")
        ->check(CLI::IsMember({"map", "aggregate", "idle", "memory", "fairness"}));
    app.add_option("--rounds", rounds, "rounds per section (median reported)")
        ->check(CLI::Range(1u, 100u))
        ->capture_default_str();
    app.add_option("--map-pages", map.pages, "map: page counts (4 KiB pages)")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 21))
        ->capture_default_str();
    app.add_option("--guests", aggregate.guests, "aggregate: guest counts")
        ->check(CLI::Range(1u, 64u))
        ->capture_default_str();
    app.add_option("--aggregate-ms", aggregate_ms, "aggregate: measured time per count and round")
        ->check(CLI::Range(50u, 600000u))
        ->capture_default_str();
    app.add_option("--batch", aggregate.batch, "aggregate: dispatches per completion wait")
        ->check(CLI::Range(1u, 1024u))
        ->capture_default_str();
    app.add_option("--idle-guests", idle.guests, "idle: guests holding an idle queue")
        ->check(CLI::Range(1u, 16u))
        ->capture_default_str();
    app.add_option("--idle-settle-ms", idle_settle_ms, "idle: wait before each window")
        ->check(CLI::Range(0u, 600000u))
        ->capture_default_str();
    app.add_option("--idle-window-ms", idle_window_ms, "idle: measured window")
        ->check(CLI::Range(100u, 600000u))
        ->capture_default_str();
    app.add_option("--hog-queues", fairness.hog_queues, "fairness: the attacker's SDMA queues")
        ->check(CLI::Range(1u, 64u))
        ->capture_default_str();
    app.add_option("--fairness-ms", fairness_ms, "fairness: measured window per round")
        ->check(CLI::Range(100u, 600000u))
        ->capture_default_str();
    app.add_option("--bin-dir", bin_dir, "where xenhsa-sim and xenhsa-backend are")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    map.rounds = rounds;
    aggregate.rounds = rounds;
    aggregate.duration = std::chrono::milliseconds(aggregate_ms);
    idle.rounds = rounds;
    idle.settle = std::chrono::milliseconds(idle_settle_ms);
    idle.window = std::chrono::milliseconds(idle_window_ms);
    fairness.rounds = rounds;
    fairness.window = std::chrono::milliseconds(fairness_ms);
    const auto wanted = [&](const std::string& name) {
        return sections.empty() ||
               std::find(sections.begin(), sections.end(), name) != sections.end();
    };
    try {
        if (wanted("map")) {
            std::printf("section=map\n");
            std::fflush(stdout);
            run_map_revoke(bin_dir, map);
        }
        if (wanted("aggregate")) {
            std::printf("section=aggregate\n");
            std::fflush(stdout);
            run_aggregate(bin_dir, aggregate);
        }
        if (wanted("idle")) {
            std::printf("section=idle\n");
            std::fflush(stdout);
            run_idle_cpu(bin_dir, idle);
        }
        if (wanted("memory")) {
            std::printf("section=memory\n");
            std::fflush(stdout);
            run_process_memory(bin_dir, MemoryOptions{rounds});
        }
        if (wanted("fairness")) {
            std::printf("section=fairness\n");
            std::fflush(stdout);
            run_fairness(bin_dir, fairness);
        }
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "xenhsa-bench-guests: %s\n", e.what());
        return 1;
    }
    return 0;
}
