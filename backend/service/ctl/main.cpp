// xenhsa-ctl: asks a running xenhsa-backend over its control socket.
//   xenhsa-ctl --sim-dir DIR status [--json]
//   xenhsa-ctl --sim-dir DIR revoke --domid N
//   xenhsa-ctl --sim-dir DIR quota [--domid N] --set key=value...
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control_client.hpp"

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

    CLI11_PARSE(app, argc, argv);

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
    if (json) {
        nlohmann::json out{{key, devices}};
        if (*status) {
            out["confinement_violations"] = violations;
        }
        std::cout << out.dump() << '\n';
    } else if (*status) {
        print_table(devices);
        if (violations != 0) {
            std::printf("%llu worker(s) killed by their seccomp filter (confinement "
                        "violations; see the backend's log)\n",
                        static_cast<unsigned long long>(violations));
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
