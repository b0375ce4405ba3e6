// xenhsa-doctor: checks whether this host can run xenhsa's backend with ROCm, and says
// what to do about each requirement that fails. Reads sysfs, /dev and /proc only; never
// writes config space (it prints the setpci command instead).
//   xenhsa-doctor [--json] [--lend-pages N] [--max-guests N] [--map-pages N]
//                 [--map-pool-pages N] [--sysfs-root DIR]
// In dom0 it also asks Xen (libxenctrl) for the domain's grant table and maptrack sizes;
// on Xen it counts the xenhsa devices plugged with this domain as backend (xenstore).
// Exit status: 0 when no requirement fails, 1 when one does, 2 on a usage error.
#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "host_checks.hpp"

#if XENHSA_DOCTOR_HAVE_XEN
#include <xenhsa/xen/real/grant_limits.hpp>
#include <xenhsa/xen/real/platform.hpp>
#endif

namespace {

using xenhsa::backend::doctor::Check;

void print_table(const std::vector<Check>& checks) {
    std::size_t width = 0;
    for (const Check& c : checks) {
        width = std::max(width, c.name.size());
    }
    for (const Check& c : checks) {
        std::printf("%-4s  %-*s  %s\n", std::string(status_name(c.status)).c_str(),
                    static_cast<int>(width), c.name.c_str(), c.detail.c_str());
        if (!c.remedy.empty()) {
            std::printf("%-4s  %-*s  -> %s\n", "", static_cast<int>(width), "", c.remedy.c_str());
        }
    }
}

void print_json(const std::vector<Check>& checks) {
    nlohmann::json list = nlohmann::json::array();
    for (const Check& c : checks) {
        list.push_back({{"name", c.name},
                        {"status", std::string(status_name(c.status))},
                        {"detail", c.detail},
                        {"remedy", c.remedy}});
    }
    const nlohmann::json out{{"ok", !any_failed(checks)}, {"checks", list}};
    std::cout << out.dump(2) << '\n';
}

#if XENHSA_DOCTOR_HAVE_XEN
// The devices under this domain's backend/xenhsa in xenstore; nullopt off Xen or when
// xenstore cannot be read.
std::optional<xenhsa::backend::doctor::BackendDevices> backend_devices() {
    std::string type;
    if (!(std::ifstream("/sys/hypervisor/type") >> type) || type != "xen") {
        return std::nullopt;
    }
    auto store = xenhsa::xen::real::open_store();
    if (!store) {
        return std::nullopt;
    }
    xenhsa::backend::doctor::BackendDevices found;
    auto guests = store.value()->directory(xenhsa::xen::kNoTx, "backend/xenhsa");
    if (!guests) {
        if (guests.error().value() == ENOENT) {
            return found;
        }
        return std::nullopt;
    }
    for (const std::string& guest : guests.value()) {
        auto devices = store.value()->directory(xenhsa::xen::kNoTx, "backend/xenhsa/" + guest);
        if (devices && !devices.value().empty()) {
            ++found.guests;
            found.devices += static_cast<uint32_t>(devices.value().size());
        }
    }
    return found;
}
#endif

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"xenhsa-doctor: can this host run the xenhsa backend with ROCm?"};
    xenhsa::backend::doctor::DoctorOptions options;
    bool json = false;
    app.add_flag("--json", json, "print the checks as JSON");
    app.add_option("--lend-pages", options.lend_pages,
                   "the max_lend_pages quota guests get (held against gntalloc's limit)")
        ->capture_default_str();
    app.add_option("--max-guests", options.max_guests, "the backend's --max-guests")
        ->check(CLI::Range(uint64_t{1}, uint64_t{0x7FEF}))
        ->capture_default_str();
    app.add_option("--map-pages", options.map_pages, "the max_map_pages quota guests get")
        ->capture_default_str();
    app.add_option("--map-pool-pages", options.map_pool_pages, "the backend's --map-pool-pages")
        ->capture_default_str();
    app.add_option("--sysfs-root", options.root,
                   "read /sys, /dev and /proc under DIR instead of / (for tests)")
        ->type_name("DIR");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
#if XENHSA_DOCTOR_HAVE_XEN
    if (options.root == "/") {
        if (auto limits = xenhsa::xen::real::read_grant_limits()) {
            options.grant_limits = xenhsa::backend::doctor::XenGrantLimits{
                limits.value().grant_frames, limits.value().maptrack_frames,
                limits.value().maptrack_default};
        }
        options.backend_devices = backend_devices();
    }
#endif
    const auto checks = xenhsa::backend::doctor::run_checks(options);
    if (json) {
        print_json(checks);
    } else {
        print_table(checks);
    }
    return xenhsa::backend::doctor::any_failed(checks) ? 1 : 0;
}
