// xenhsa-ctl: asks a running xenhsa-backend over its control socket, and takes the
// toolstack's step for a xenhsa device (xl knows nothing of xenhsa) over xenstore.
//   xenhsa-ctl --sim-dir DIR status [--json]
//   xenhsa-ctl --sim-dir DIR revoke --domid N
//   xenhsa-ctl --sim-dir DIR quota [--domid N] --set key=value...
//   xenhsa-ctl [--sim-dir DIR] plug --domid N [--devid D] [--devices C] [--backend-domid B]
//   xenhsa-ctl [--sim-dir DIR] unplug --domid N [--devid D] [--devices C] [--timeout S]
// Without --sim-dir, plug and unplug use this domain's xenstore (libxenstore).
#include <xenhsa/proto/xenbus.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <xenhsa/xen/device_plug.hpp>

#include "control_client.hpp"
#if XENHSA_CTL_HAVE_SIM
#include <xenhsa/xen/sim/client.hpp>
#endif
#if XENHSA_CTL_HAVE_REAL
#include <xenhsa/xen/real/platform.hpp>
#endif

namespace {

constexpr const char* kDefaultRealSocket = "/run/xenhsa/backend.sock";

uint64_t counter(const nlohmann::json& entry, const char* key) {
    const auto it = entry.find(key);
    return it != entry.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

std::string text(const nlohmann::json& entry, const char* key) {
    const auto it = entry.find(key);
    return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

void print_table(const nlohmann::json& devices) {
    std::printf("%-6s %-6s %-13s %8s %8s %8s %7s %7s %8s\n", "DOMID", "DEVID", "STATE", "MAPPED",
                "PINNED", "LENT", "QUEUES", "EVENTS", "HANDLES");
    for (const auto& d : devices) {
        std::printf("%-6llu %-6llu %-13s %8llu %8llu %8llu %7llu %7llu %8llu",
                    static_cast<unsigned long long>(counter(d, "domid")),
                    static_cast<unsigned long long>(counter(d, "devid")), text(d, "state").c_str(),
                    static_cast<unsigned long long>(counter(d, "mapped_pages")),
                    static_cast<unsigned long long>(counter(d, "pinned_pages")),
                    static_cast<unsigned long long>(counter(d, "lent_pages")),
                    static_cast<unsigned long long>(counter(d, "queues")),
                    static_cast<unsigned long long>(counter(d, "events")),
                    static_cast<unsigned long long>(counter(d, "handles")));
        if (const auto error = text(d, "error"); !error.empty()) {
            std::printf("  (%s)", error.c_str());
        }
        std::printf("\n");
    }
}

// The store plug and unplug write through: the simulator's dom0, or this domain's.
xenhsa::xen::Result<std::unique_ptr<xenhsa::xen::Store>> open_store(const std::string& sim_dir) {
    if (!sim_dir.empty()) {
#if XENHSA_CTL_HAVE_SIM
        auto dom0 = xenhsa::xen::sim::attach(sim_dir, 0);
        if (!dom0) {
            return dom0.error();
        }
        return std::move(dom0.value().store);
#else
        return xenhsa::xen::errc(std::errc::not_supported);
#endif
    }
#if XENHSA_CTL_HAVE_REAL
    return xenhsa::xen::real::open_store();
#else
    return xenhsa::xen::errc(std::errc::not_supported);
#endif
}

// plug or unplug one device; an exit status.
int toolstack_one(xenhsa::xen::Store& store, bool plug, const xenhsa::xen::PvDevice& device,
                  unsigned timeout_s) {
    const std::string name = std::to_string(device.frontend) + "/" + std::to_string(device.devid);
    if (plug) {
        auto plugged = xenhsa::xen::plug_device(store, device);
        if (!plugged) {
            std::fprintf(stderr, "xenhsa-ctl: plug %s: %s\n", name.c_str(),
                         plugged.error().message().c_str());
            return 1;
        }
        if (!plugged.value()) {
            std::fprintf(stderr, "xenhsa-ctl: device %s is plugged already\n", name.c_str());
            return 1;
        }
        std::printf("plugged device %s: %s\n", name.c_str(), device.frontend_dir().c_str());
        return 0;
    }
    auto unplugged = xenhsa::xen::unplug_device(store, device, std::chrono::seconds(timeout_s));
    if (!unplugged) {
        std::fprintf(stderr, "xenhsa-ctl: unplug %s: %s\n", name.c_str(),
                     unplugged.error().message().c_str());
        return 1;
    }
    if (!unplugged.value()) {
        std::fprintf(stderr,
                     "xenhsa-ctl: the backend did not close device %s within %u s; its "
                     "directories are removed anyway\n",
                     name.c_str(), timeout_s);
        return 1;
    }
    std::printf("unplugged device %s\n", name.c_str());
    return 0;
}

// plug or unplug `count` devices from device.devid on; an exit status.
int toolstack(const std::string& sim_dir, bool plug, xenhsa::xen::PvDevice device, uint32_t count,
              unsigned timeout_s) {
    auto store = open_store(sim_dir);
    if (!store) {
        std::fprintf(stderr, "xenhsa-ctl: cannot open xenstore: %s\n",
                     store.error().message().c_str());
        return 1;
    }
    int rc = 0;
    const uint32_t first = device.devid;
    for (uint32_t i = 0; i < count; ++i) {
        device.devid = first + i;
        rc = std::max(rc, toolstack_one(*store.value(), plug, device, timeout_s));
    }
    return rc;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"xenhsa-ctl: status and operator commands for a running xenhsa-backend"};
    app.require_subcommand(1);
    std::string sim_dir;
    std::string socket_path;
    auto* sim_opt = app.add_option("--sim-dir", sim_dir,
                                   "the backend runs on the simulated hypervisor in DIR "
                                   "(its socket is DIR/backend.sock)")
                        ->type_name("DIR");
    auto* sock_opt = app.add_option("--socket", socket_path,
                                    std::string("the backend's control socket (default ") +
                                        kDefaultRealSocket + ")")
                         ->type_name("PATH");
    sim_opt->excludes(sock_opt);

    auto* status = app.add_subcommand("status", "every device: state and what its guest holds");
    bool json = false;
    status->add_flag("--json", json,
                     "print one JSON object {\"domains\": [...], \"confinement_violations\": N}");

    auto* revoke = app.add_subcommand("revoke", "revoke everything a guest holds");
    unsigned domid = 0;
    revoke->add_option("--domid", domid, "the guest domain")
        ->required()
        ->check(CLI::Range(1u, 0x7FEFu));
    uint64_t handle = 0;
    auto* handle_opt = revoke->add_option("--handle", handle,
                                          "only this MAP or LEND handle (as 0x... or decimal)");
    revoke->add_flag("--json", json, "print the answer as JSON");

    auto* quota = app.add_subcommand(
        "quota",
        "change quotas (of one guest, or of all); guests over them lose their newest "
        "MAPs and LENDs");
    unsigned quota_domid = 0;
    std::vector<std::string> settings;
    quota->add_option("--domid", quota_domid, "only this guest")->check(CLI::Range(1u, 0x7FEFu));
    quota->add_option("--set", settings, "key=value (repeatable)")
        ->type_name("KEY=VALUE")
        ->required()
        ->take_all();
    quota->add_flag("--json", json, "print the answer as JSON");

    xenhsa::xen::PvDevice device;
    device.type = XENHSA_XS_DEVICE_TYPE;
    unsigned timeout_s = 10;
    uint32_t device_count = 1;
    auto* plug = app.add_subcommand(
        "plug", "the toolstack's step: a xenhsa device for a guest (both xenstore directories)");
    auto* unplug = app.add_subcommand(
        "unplug", "set a device offline, wait for the backend to close it, remove its directories");
    for (auto* cmd : {plug, unplug}) {
        cmd->add_option("--domid", device.frontend, "the guest domain")
            ->required()
            ->check(CLI::Range(1u, 0x7FEFu));
        cmd->add_option("--devid", device.devid, "the device number")->capture_default_str();
        cmd->add_option("--backend-domid", device.backend, "the backend's domain")
            ->capture_default_str();
        cmd->add_option("--devices", device_count,
                        "this many devices from --devid on (a guest runs as many ROCm "
                        "processes at once as it has devices)")
            ->capture_default_str()
            ->check(CLI::Range(1u, 1024u));
    }
    unplug->add_option("--timeout", timeout_s, "seconds to wait for the backend's Closed")
        ->capture_default_str();

    CLI11_PARSE(app, argc, argv);
    if (plug->parsed() || unplug->parsed()) {
        return toolstack(sim_dir, plug->parsed(), device, device_count, timeout_s);
    }

    std::filesystem::path path = socket_path;
    if (path.empty()) {
        path = sim_dir.empty() ? std::filesystem::path(kDefaultRealSocket)
                               : std::filesystem::path(sim_dir) / "backend.sock";
    }

    nlohmann::json request;
    if (*status) {
        request = {{"op", "status"}};
    } else if (*revoke) {
        request = {{"op", "revoke"}, {"domid", domid}};
        if (*handle_opt) {
            request["handle"] = handle;
        }
    } else {
        request = {{"op", "quotas"}, {"set", settings}};
        if (quota_domid != 0) {
            request["domid"] = quota_domid;
        }
    }
    std::string error;
    const auto answer = xenhsa::ctl::ask(path, request, error);
    if (!answer) {
        std::fprintf(stderr, "xenhsa-ctl: %s: %s\n", path.c_str(), error.c_str());
        return 1;
    }
    const auto ok = answer->find("ok");
    if (ok == answer->end() || !ok->is_boolean() || !ok->get<bool>()) {
        std::fprintf(stderr, "xenhsa-ctl: %s\n",
                     text(*answer, "error").empty() ? "the backend refused"
                                                    : text(*answer, "error").c_str());
        return 1;
    }
    const char* key = *status ? "domains" : *revoke ? "revoked" : "updated";
    const auto list = answer->find(key);
    const nlohmann::json devices =
        list != answer->end() && list->is_array() ? *list : nlohmann::json::array();
    const uint64_t violations = counter(*answer, "confinement_violations");
    const nlohmann::json cpu_groups = answer->value("cpu_groups", nlohmann::json());
    if (json) {
        nlohmann::json out{{key, devices}};
        if (*status) {
            out["confinement_violations"] = violations;
            if (cpu_groups.is_object()) {
                out["cpu_groups"] = cpu_groups;
            }
        }
        std::cout << out.dump() << '\n';
    } else if (*status) {
        print_table(devices);
        if (violations != 0) {
            std::printf(
                "%llu worker(s) killed by their seccomp filter (confinement "
                "violations; see the backend's log)\n",
                static_cast<unsigned long long>(violations));
        }
        if (cpu_groups.is_object() && !cpu_groups.value("enabled", true)) {
            std::printf("CPU not shared out per guest: %s\n",
                        cpu_groups.value("why", std::string("?")).c_str());
        }
    } else if (*revoke) {
        if (*handle_opt) {
            std::printf("revoked handle %#llx of domain %u\n",
                        static_cast<unsigned long long>(handle), domid);
        } else {
            std::printf("revoked everything domain %u holds (%zu device(s))\n", domid,
                        devices.size());
        }
    } else {
        for (const auto& d : devices) {
            std::printf("device %llu/%llu: %llu object(s) revoked over quota\n",
                        static_cast<unsigned long long>(counter(d, "domid")),
                        static_cast<unsigned long long>(counter(d, "devid")),
                        static_cast<unsigned long long>(counter(d, "revoked")));
        }
    }
    return 0;
}
