// xenhsa-guest: the synthetic frontend. `loopback` needs no backend; every other
// subcommand runs the guest library against a backend over the simulator (--sim-dir) or
// real Xen (--xen) and prints machine-readable check lines (report.hpp).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <xenhsa/proto/ring.h>

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

#include "loopback.hpp"
#include "options.hpp"
#include "scenarios.hpp"

namespace {

using namespace xenhsa::frontend::cli;

void add_global_options(CLI::App& app, GlobalOptions& g, bool& verbose) {
    auto* sim = app.add_option("--sim-dir", g.sim_dir,
                               "run on the xenhsa-sim simulator in DIR (its socket directory)");
    auto* xen = app.add_flag("--xen", g.xen, "run on real Xen (libxen* adapters)");
    sim->excludes(xen);
    app.add_option("--domid", g.domid,
                   "sim: attach to this existing domain (default: create guest-<pid>)")
        ->check(CLI::Range(1u, 0x7FEFu));
    app.add_option("--backend-domid", g.backend_domid, "the backend's domain")
        ->check(CLI::Range(0u, 0x7FEFu));
    app.add_option("--devid", g.devid, "device index under device/xenhsa/");
    app.add_option("--ring-order", g.ring_order,
                   "ring pages as a power of two (capped by the backend's max)")
        ->check(CLI::Range(0u, unsigned{XENHSA_RING_MAX_ORDER}));
    app.add_option("--timeout-ms", g.timeout_ms, "timeout of each request and handshake step")
        ->check(CLI::Range(1u, 3600000u));
    app.add_option("--ram-pages", g.ram_pages, "sim: RAM pages of the domain created for us")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 24));
    app.add_flag("!--no-toolstack", g.toolstack,
                 "sim: do not create the device's xenstore directories (the toolstack's job)");
    app.add_option("--window-gib", g.window_gib, "VA window size asked for in HELLO (GiB)")
        ->check(CLI::Range(uint64_t{1}, uint64_t{8192}));
    app.add_flag("-v,--verbose", verbose, "debug logging (to stderr)");
}

}  // namespace

int main(int argc, char** argv) {
    spdlog::set_default_logger(spdlog::stderr_color_mt("xenhsa-guest"));
    CLI::App app{
        "xenhsa-guest: the synthetic xenhsa frontend (guest side). Scenario output on "
        "stdout: 'check <name> ok|FAIL [detail]', 'info ...', and a final "
        "'summary <scenario> checks=N failed=M result=ok|FAIL'; exit 0 iff every "
        "check held."};
    app.require_subcommand(1);
    app.fallthrough();

    GlobalOptions global;
    bool verbose = false;
    add_global_options(app, global, verbose);

    std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
    auto command = [&](const char* name, const char* help, std::function<int()> run) {
        CLI::App* sub = app.add_subcommand(name, help);
        commands.emplace_back(sub, std::move(run));
        return sub;
    };

    LoopbackOptions loopback;
    auto* loop = command("loopback",
                         "drive the guest ring library against a validating loopback peer "
                         "(no backend, no hypervisor)",
                         [&] { return run_loopback(loopback); });
    loop->add_option("--ring-order", loopback.ring_order, "ring pages as a power of two")
        ->check(CLI::Range(0u, unsigned{XENHSA_RING_MAX_ORDER}));
    loop->add_option("--budget", loopback.budget, "requests the peer serves per wake-up")
        ->check(CLI::Range(1u, 1024u));

    command("selftest", "handshake, HELLO, QUERY, a small MAP/PIN/UNPIN/UNMAP, close",
            [&] { return run_selftest(global); });

    command("topology", "what QUERY reports: nodes, memory banks, built-in kernels",
            [&] { return run_topology(global); });

    ReconnectOptions reconnect;
    auto* reconnect_cmd = command("reconnect",
                                  "rounds of a small session, then Closing/Closed/Initialising "
                                  "and a new handshake with new pages and a new port",
                                  [&] { return run_reconnect(global, reconnect); });
    reconnect_cmd->add_option("--rounds", reconnect.rounds, "reconnections")
        ->check(CLI::Range(1u, 100u));
    reconnect_cmd->add_flag("--wait-backend-death", reconnect.wait_for_backend_death,
                            "each round, wait until the backend dies (e.g. its worker is "
                            "killed) before reconnecting");

    MapOptions map;
    auto* map_cmd = command("map", "MAP guest pages (indirect beyond 52 pages)",
                            [&] { return run_map(global, map); });
    map_cmd->add_option("--pages", map.pages, "pages to map")
        ->check(CLI::Range(1u, unsigned{XENHSA_MAP_MAX_PAGES}));
    map_cmd->add_flag("--hold", map.hold, "keep the mapping until SIGTERM/SIGINT");
    map_cmd->add_flag("--read-only", map.read_only, "grant and map read-only");

    LendOptions lend;
    auto* lend_cmd = command("lend", "LEND backend pages, map them at their VA, use, UNMAP",
                             [&] { return run_lend(global, lend); });
    lend_cmd->add_option("--pages", lend.pages, "pages to borrow")
        ->check(CLI::Range(1u, unsigned{XENHSA_MAP_MAX_PAGES}));
    lend_cmd->add_flag("!--read-only", lend.writable, "borrow read-only");

    RevokeOptions revoke;
    auto* revoke_cmd = command("revoke",
                               "LEND, wait for the backend's REVOKED, probe the pages (reports "
                               "the fault instead of crashing), acknowledge with UNMAP",
                               [&] { return run_revoke(global, revoke); });
    revoke_cmd->add_option("--pages", revoke.pages, "pages to borrow")
        ->check(CLI::Range(1u, unsigned{XENHSA_MAP_MAX_PAGES}));
    revoke_cmd->add_option("--wait-ms", revoke.wait_ms, "how long to wait for REVOKED");

    DemoOptions demo;
    auto* demo_cmd = command("demo",
                             "script/demo's guest: MAP, vector_add on mapped memory, LEND, wait "
                             "for the operator's revoke, check the lent pages fault",
                             [&] { return run_demo(global, demo); });
    demo_cmd->add_option("--pages", demo.pages, "pages to MAP")
        ->check(CLI::Range(1u, unsigned{XENHSA_MAP_MAX_PAGES}));
    demo_cmd->add_option("--lend-pages", demo.lend_pages, "pages to borrow")
        ->check(CLI::Range(1u, unsigned{XENHSA_MAP_INLINE_GREFS}));
    demo_cmd->add_option("--wait-ms", demo.wait_ms, "how long to wait for the revoke");

    StressOptions stress;
    auto* stress_cmd = command("stress",
                               "MAP/PIN/UNMAP loop over many sizes, a pipelined full ring, "
                               "event waits and cancels",
                               [&] { return run_stress(global, stress); });
    stress_cmd->add_option("--iterations", stress.iterations, "MAP/UNMAP rounds");
    stress_cmd->add_option("--max-pages", stress.max_pages, "largest MAP")
        ->check(CLI::Range(1u, unsigned{XENHSA_MAP_MAX_PAGES}));

    ChurnOptions churn;
    auto* churn_cmd = command("churn",
                              "rounds of mixed work (MAP+PIN, LEND, event waits, vector_add "
                              "left in flight) for the death soak; objects live 3 rounds",
                              [&] { return run_churn(global, churn); });
    churn_cmd->add_option("--rounds", churn.rounds, "rounds (0: until SIGTERM/SIGINT)");
    churn_cmd->add_option("--seed", churn.seed, "random choices (sizes, order of release)");

    SequenceOptions sequence;
    auto* sequence_cmd = command("sequence",
                                 "the sequence fuzzer's guest: a seeded program of typed calls "
                                 "on the resources earlier calls made, one in five hostile",
                                 [&] { return run_sequence(global, sequence); });
    sequence_cmd->add_option("--seed", sequence.seed, "the program");
    sequence_cmd->add_option("--calls", sequence.calls, "its length")
        ->check(CLI::Range(1u, 100000u));
    sequence_cmd->add_flag("--trace", sequence.trace, "print each call and its answer");

    GpuOptions gpu;
    auto gpu_options = [&](CLI::App* sub) {
        sub->add_option("--node", gpu.node, "GPU node (default: the first with GPU cores)")
            ->check(CLI::Range(0u, 63u));
        sub->add_option("--elements", gpu.elements, "elements per buffer")
            ->check(CLI::Range(1u, 1u << 22));
    };
    auto* vecadd = command("vecadd", "c = a + b on the GPU (built-in vector_add)",
                           [&] { return run_vecadd(global, gpu); });
    gpu_options(vecadd);
    vecadd->add_option("--repeat", gpu.repeat,
                       "rounds of several packets in flight, each checked; 0: until "
                       "SIGTERM/SIGINT");
    auto* saxpy = command("saxpy", "y = a * x + y on the GPU (built-in saxpy)",
                          [&] { return run_saxpy(global, gpu); });
    gpu_options(saxpy);
    saxpy->add_option("--a", gpu.a, "the scalar");
    auto* fill =
        command("fill-checksum", "fill a buffer, then checksum it (a barrier bit orders the two)",
                [&] { return run_fill_checksum(global, gpu); });
    gpu_options(fill);
    fill->add_option("--value", gpu.value, "fill value");
    auto* chain = command("barrier-chain",
                          "fill, then copies chained by barrier-AND packets, a barrier-OR at "
                          "the end",
                          [&] { return run_barrier_chain(global, gpu); });
    gpu_options(chain);
    chain->add_option("--links", gpu.links, "copies in the chain")->check(CLI::Range(1u, 16u));
    chain->add_option("--value", gpu.value, "fill value");
    gpu_options(command("fault",
                        "a kernel reads far out of bounds: GPU_FAULT, the queue's error event, "
                        "QUEUE_DESTROY of the stopped queue",
                        [&] { return run_fault(global, gpu); }));
    gpu_options(command("sdma-hang",
                        "an SDMA packet no engine decodes, on a queue without an error event: "
                        "GPU_FAULT with the hang flag, QUEUE_DESTROY of the stopped queue",
                        [&] { return run_sdma_hang(global, gpu); }));

    LoadOptions load;
    auto* load_cmd = command("load",
                             "a heavy, well-behaved guest: big fills on many queues, pending "
                             "event waits, SDMA copies, a fault, queues destroyed under load",
                             [&] { return run_load(global, load); });
    load_cmd->add_option("--queues", load.queues, "AQL queues")->check(CLI::Range(1u, 32u));
    load_cmd->add_option("--elements", load.elements, "words each fill writes")
        ->check(CLI::Range(1u, 1u << 24));
    load_cmd->add_option("--rounds", load.rounds, "checked rounds")->check(CLI::Range(1u, 1000u));
    load_cmd->add_option("--waits", load.waits, "pending event waits")->check(CLI::Range(0u, 100u));
    load_cmd->add_option("--sdma-queues", load.sdma_queues, "SDMA queues")
        ->check(CLI::Range(0u, 8u));
    load_cmd->add_option("--sdma-bytes", load.sdma_bytes, "bytes each SDMA queue copies a round")
        ->check(CLI::Range(4096u, 64u << 20))
        ->check(CLI::Validator(
            [](const std::string& text) {
                return std::stoul(text) % XENHSA_PAGE_SIZE == 0 ? std::string()
                                                                : std::string("not whole pages");
            },
            "PAGES"));
    load_cmd->add_flag("!--no-fault", load.fault, "no faulting queue");
    load_cmd
        ->add_option("--pause-ms", load.pause_ms,
                     "after the first round, with every queue and wait live, print "
                     "'info loaded domid=N' and wait this long")
        ->check(CLI::Range(0u, 600000u));

    HostileOptions hostile;
    auto* hostile_cmd = command("hostile", "a guest that breaks the rules on purpose",
                                [&] { return run_hostile(global, hostile); });
    hostile_cmd->add_option("--mode", hostile.mode, "what to break")
        ->required()
        ->check(CLI::IsMember({"overflow", "garbage", "forged-handle", "bad-grefs", "va-outside",
                               "doorbell-garbage", "hello-again", "notify-scribble", "event-flood",
                               "doorbell-flood"}));
    hostile_cmd->add_option(
        "--count", hostile.count,
        "garbage: requests to send; event-flood, doorbell-flood: thousands of kicks");
    hostile_cmd->add_option("--seed", hostile.seed, "random seed");

    CLI11_PARSE(app, argc, argv);
    spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);
    for (auto& [sub, run] : commands) {
        if (*sub) {
            if (sub != loop && global.sim_dir.empty() && !global.xen) {
                spdlog::error("{} needs a platform: --sim-dir DIR or --xen", sub->get_name());
                return 2;
            }
            return run();
        }
    }
    return 2;
}
