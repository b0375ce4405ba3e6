// xenhsa-run: runs an unmodified ROCm program (Debian's rocminfo, a program linked with
// libhsa-runtime64) over the guest libhsakmt. See docs/guest-rocm.md.
//
//   xenhsa-run --sim-dir DIR -- rocminfo     embedded hypervisor: a guest domain is made
//                                            (and its devices plugged, as a toolstack
//                                            would: --devices N, default 1), the program
//                                            runs as that guest, the domain is destroyed
//                                            when it exits
//   xenhsa-run --sim-dir DIR --domid D -- p  another program in that guest, on a free
//                                            device of it
//   xenhsa-run --xen -- rocminfo             in a Xen guest: this domain's xenhsa device
//   xenhsa-run -- rocminfo                   the environment or /etc/xenhsa/guest.json
//
// The exit code is the program's (128 + signal when a signal ended it).
#include <xenhsa/xen/types.hpp>

#include "child_env.hpp"

#if XENHSA_RUN_HAVE_SIM
#include <xenhsa/xen/sim/client.hpp>

#include "sim_toolstack.hpp"
#endif

#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using namespace xenhsa::frontend::run;

volatile sig_atomic_t g_child = 0;

void forward_signal(int sig) {
    if (g_child > 0) {
        ::kill(static_cast<pid_t>(g_child), sig);
    }
}

[[noreturn]] void exec_program(const std::vector<std::string>& command) {
    std::vector<char*> argv;
    for (const std::string& arg : command) {
        argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "xenhsa-run: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
}

int run_and_wait(const std::vector<std::string>& command) {
    const pid_t child = ::fork();
    if (child < 0) {
        std::perror("xenhsa-run: fork");
        return 125;
    }
    if (child == 0) {
        exec_program(command);
    }
    g_child = child;
    struct sigaction sa {};
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
        ::sigaction(sig, &sa, nullptr);
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) {
            std::perror("xenhsa-run: waitpid");
            return 125;
        }
    }
    g_child = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Runs an unmodified ROCm program over xenhsa's guest libhsakmt"};
    DeviceEnv device;
    std::string lib_dir;
    uint64_t ram_pages = 262144;
    std::string domid_file;
    std::vector<std::string> command;
    app.add_option("--sim-dir", device.sim_dir,
                   "embedded hypervisor: run the program as a new guest domain of xenhsa-sim");
    app.add_option("--domid", device.domid,
                   "sim: run in this guest domain (its device already plugged) instead");
    app.add_flag("--xen", device.xen, "real Xen: use this domain's xenhsa device");
    app.add_option("--devid", device.devid,
                   "this device only: device/xenhsa/<devid> (default: a free one of the domain)");
    uint32_t devices = 1;
    app.add_option("--devices", devices,
                   "sim: devices plugged for the domain made for the program (how many ROCm "
                   "processes it may run at once)")
        ->check(CLI::Range(1u, 64u));
    app.add_option("--backend-domid", device.backend_domid, "the backend's domain (default 0)");
    app.add_option("--ram-pages", ram_pages, "sim: RAM pages of the domain made for the program");
    app.add_option("--window-gib", device.window_gib, "the VA window to ask for (default 64)");
    app.add_option("--window-base", device.window_base,
                   "where to ask for it (0x...; default: where the backend proposes)");
    app.add_option("--log-level", device.log_level, "the library's log level (default warn)");
    app.add_option("--domid-file", domid_file,
                   "sim: write the guest domain's id to this file before the program starts");
    app.add_option("--lib-dir", lib_dir, "where libhsakmt.so.1 is (default: next to this binary)");
    app.add_option("command", command, "the program and its arguments (after --)")->required();
    CLI11_PARSE(app, argc, argv);
    if (device.xen && !device.sim_dir.empty()) {
        std::fprintf(stderr, "xenhsa-run: --xen and --sim-dir exclude each other\n");
        return 2;
    }
    apply_child_env(lib_dir.empty() ? default_lib_dir() : std::filesystem::path(lib_dir), device);
    if (device.sim_dir.empty() || device.domid) {
        if (device.domid && device.sim_dir.empty()) {
            std::fprintf(stderr, "xenhsa-run: --domid needs --sim-dir\n");
            return 2;
        }
        exec_program(command);
    }
#if XENHSA_RUN_HAVE_SIM
    namespace sim = xenhsa::xen::sim;
    const std::string name = "run-" + std::to_string(::getpid());
    auto domid = sim::create_domain(device.sim_dir, name, ram_pages);
    if (!domid) {
        std::fprintf(stderr, "xenhsa-run: cannot create a guest domain in %s: %s\n",
                     device.sim_dir.c_str(), domid.error().message().c_str());
        return 125;
    }
    const auto backend = static_cast<xenhsa::xen::DomId>(device.backend_domid.value_or(0));
    const uint32_t first = device.devid.value_or(0);
    for (uint32_t devid = first; devid < first + devices; ++devid) {
        if (auto plugged = xenhsa::frontend::cli::plug_sim_device(device.sim_dir, backend,
                                                                  domid.value(), devid);
            !plugged) {
            std::fprintf(stderr, "xenhsa-run: cannot plug xenhsa device %u: %s\n", devid,
                         plugged.error().message().c_str());
            (void)sim::destroy_domain(device.sim_dir, domid.value());
            return 125;
        }
    }
    ::setenv("XENHSA_DOMID", std::to_string(domid.value()).c_str(), 1);
    if (!domid_file.empty()) {
        std::FILE* f = std::fopen(domid_file.c_str(), "w");
        bool written = f != nullptr;
        if (written) {
            written = std::fprintf(f, "%u\n", static_cast<unsigned>(domid.value())) > 0;
            written = std::fclose(f) == 0 && written;
        }
        if (!written) {
            std::fprintf(stderr, "xenhsa-run: cannot write %s\n", domid_file.c_str());
            (void)sim::destroy_domain(device.sim_dir, domid.value());
            return 125;
        }
    }
    std::fprintf(stderr, "xenhsa-run: %s runs in guest domain %u (%s)\n", command[0].c_str(),
                 static_cast<unsigned>(domid.value()), name.c_str());
    const int code = run_and_wait(command);
    (void)sim::destroy_domain(device.sim_dir, domid.value());
    return code;
#else
    std::fprintf(stderr, "xenhsa-run: this build has no embedded hypervisor\n");
    return 2;
#endif
}
