// xenhsa-sim: the simulated hypervisor daemon, and its toolstack commands.
//   xenhsa-sim --sim-dir DIR                       serve until SIGTERM / SIGINT
//   xenhsa-sim --sim-dir DIR create --name N [--pages P]   prints the new domid
//   xenhsa-sim --sim-dir DIR destroy --domid N
//   xenhsa-sim --sim-dir DIR list [--json]
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <xenhsa/xen/sim/client.hpp>

#include "daemon.hpp"

namespace {

namespace sim = xenhsa::xen::sim;

int fail(const char* what, const std::error_code& ec) {
    std::fprintf(stderr, "xenhsa-sim: %s: %s\n", what, ec.message().c_str());
    return 1;
}

// Every domain costs the daemon fds (segments, grant table, event channels).
void raise_fd_limit() {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        (void)::setrlimit(RLIMIT_NOFILE, &lim);
    }
}

int serve(const sim::daemon::Options& options) {
    // SIGTERM/SIGINT arrive through the daemon's signalfd; SIGPIPE never (MSG_NOSIGNAL).
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0)
        return fail("sigprocmask", {errno, std::generic_category()});
    std::signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();

    sim::daemon::Daemon daemon(options);
    if (auto r = daemon.start(); !r) return fail("start", r.error());
    spdlog::info("serving {}", (options.dir / sim::kSocketName).string());
    if (auto r = daemon.run(); !r) return fail("run", r.error());
    return 0;
}

int list(const std::filesystem::path& dir, bool json) {
    auto domains = sim::list_domains(dir);
    if (!domains) return fail("list", domains.error());
    if (json) {
        auto out = nlohmann::json::array();
        for (const auto& d : domains.value()) {
            out.push_back({{"domid", d.domid},
                           {"name", d.name},
                           {"alive", d.alive},
                           {"mapped_pages", d.mapped_pages},
                           {"shared_pages", d.shared_pages},
                           {"bound_ports", d.bound_ports}});
        }
        std::cout << out.dump() << '\n';
        return 0;
    }
    std::printf("%-6s %-24s %s\n", "ID", "NAME", "STATE");
    for (const auto& d : domains.value()) {
        std::printf("%-6u %-24s %s\n", d.domid, d.name.c_str(), d.alive ? "running" : "dying");
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "xenhsa-sim: the embedded simulated hypervisor (hypervisor, toolstack and "
        "xenstored for domains that are processes)"};
    sim::daemon::Options options;
    std::string level = "info";
    uint32_t grant_frames = options.grant_entries / 512;
    app.add_option("--sim-dir", options.dir, "runtime directory (holds xenhsa-sim.sock)")
        ->required()
        ->envname("XENHSA_SIM_DIR");
    app.add_option("--log-level", level, "trace, debug, info, warn, error, off")
        ->capture_default_str();
    app.add_option("--grant-frames", grant_frames, "grant-table frames per domain (512 refs each)")
        ->check(CLI::Range(1u, 4096u))
        ->capture_default_str();
    uint32_t maptrack_frames = static_cast<uint32_t>(options.maptrack_entries / 256);
    app.add_option("--maptrack-frames", maptrack_frames,
                   "maptrack frames per domain: grant pages its processes may map at once, 256 "
                   "per frame (Xen's gnttab_max_maptrack_frames)")
        ->check(CLI::Range(1u, 1u << 20))
        ->capture_default_str();

    auto* create = app.add_subcommand("create", "create a domain; prints its domid");
    std::string name;
    std::size_t pages = 65536;
    create->add_option("--name", name, "domain name")->required();
    create->add_option("--pages", pages, "RAM budget in 4 KiB pages")->capture_default_str();

    auto* destroy = app.add_subcommand("destroy", "destroy a domain (SIGKILLs its processes)");
    unsigned domid = 0;
    destroy->add_option("--domid", domid, "domain id")->required();

    auto* list_cmd = app.add_subcommand("list", "list the domains");
    bool json = false;
    list_cmd->add_flag("--json", json, "JSON output");
    app.require_subcommand(0, 1);

    CLI11_PARSE(app, argc, argv);

    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("xenhsa-sim", sink));
    spdlog::set_level(spdlog::level::from_str(level));

    if (create->parsed()) {
        auto id = sim::create_domain(options.dir, name, pages);
        if (!id) return fail("create", id.error());
        std::printf("%u\n", id.value());
        return 0;
    }
    if (destroy->parsed()) {
        if (domid > UINT16_MAX)
            return fail("destroy", std::make_error_code(std::errc::invalid_argument));
        auto r = sim::destroy_domain(options.dir, static_cast<xenhsa::xen::DomId>(domid));
        if (!r) return fail("destroy", r.error());
        return 0;
    }
    if (list_cmd->parsed()) return list(options.dir, json);
    options.grant_entries = grant_frames * 512;
    options.maptrack_entries = uint64_t{maptrack_frames} * 256;
    return serve(options);
}
