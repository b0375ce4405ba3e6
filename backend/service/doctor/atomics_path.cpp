#include "atomics_path.hpp"

#include <array>
#include <charconv>
#include <optional>

namespace xenhsa::backend::doctor {
namespace {

constexpr uint32_t kRootCompleter = kDevCap2AtomicComp32 | kDevCap2AtomicComp64;

std::string describe(const PciFunction& f) {
    return f.address + " (" + std::string(port_type_name(f.config.config->type)) + ")";
}

std::string unreadable(const PciFunction& f) {
    switch (*f.config.problem) {
        case ConfigProblem::too_short:
            return "the config space of " + f.address +
                   " shows only its first 64 bytes (the capabilities need root)";
        case ConfigProblem::no_pcie_cap:
            return f.address + " is not a PCI Express function";
        case ConfigProblem::bad_cap_list:
            return f.address + " has a malformed capability list";
    }
    return f.address + ": unreadable config space";
}

AtomicsVerdict broken(std::string detail, std::string remedy) {
    return {false, std::move(detail), std::move(remedy)};
}

// A switch port or the root port above the GPU that stops AtomicOps, or nothing.
std::optional<AtomicsVerdict> link_breaks(const PciFunction& f) {
    const PcieConfig& c = *f.config.config;
    const bool switch_port =
        c.type == PortType::upstream_port || c.type == PortType::downstream_port;
    if (switch_port && (c.devcap2 & kDevCap2AtomicRoute) == 0) {
        return broken("the chain breaks at " + describe(f) +
                          ": it does not route AtomicOps (DevCap2 bit 6 clear)",
                      "a switch without AtomicOp routing cannot be fixed in software: put "
                      "the GPU in a slot behind another port");
    }
    if (c.type == PortType::root_port && (c.devcap2 & kRootCompleter) != kRootCompleter) {
        return broken("the chain breaks at " + describe(f) +
                          ": it does not complete 32- and 64-bit AtomicOps (DevCap2 bits 7-8)",
                      "use a slot on a root port with AtomicOp completion; check the "
                      "firmware's PCIe settings");
    }
    if (c.type == PortType::upstream_port && (c.devctl2 & kDevCtl2AtomicEgressBlock) != 0) {
        return broken("the chain breaks at " + describe(f) +
                          ": AtomicOp Egress Blocking is set (DevCtl2 bit 7)",
                      "as root: setpci -s " + f.address + " CAP_EXP+28.w=0000:0080");
    }
    return std::nullopt;
}

}  // namespace

AtomicsVerdict check_atomics_path(const std::vector<PciFunction>& path) {
    if (path.empty()) {
        return broken("no PCI function", "");
    }
    for (const PciFunction& f : path) {
        if (!f.config.config) {
            const bool root_needed = f.config.problem == ConfigProblem::too_short;
            return broken(unreadable(f), root_needed ? "run xenhsa-doctor as root" : "");
        }
    }
    const PciFunction& gpu = path.front();
    const PortType gpu_type = gpu.config.config->type;
    if (gpu_type == PortType::rc_integrated_endpoint) {
        return {true, gpu.address + " is integrated in the root complex: no link to check", ""};
    }
    if (gpu_type != PortType::endpoint && gpu_type != PortType::legacy_endpoint) {
        return broken(describe(gpu) + " is not an endpoint", "");
    }
    bool reached_root = false;
    for (std::size_t i = 1; i < path.size() && !reached_root; ++i) {
        if (auto verdict = link_breaks(path[i])) {
            return *verdict;
        }
        reached_root = path[i].config.config->type == PortType::root_port;
    }
    if (!reached_root) {
        return broken("no root port above " + gpu.address +
                          " (a virtual bus, as in a guest with passthrough?): the path "
                          "cannot be checked",
                      "");
    }
    if ((gpu.config.config->devctl2 & kDevCtl2AtomicRequester) == 0) {
        std::array<char, 8> hex{};
        const auto end =
            std::to_chars(hex.data(), hex.data() + hex.size(), gpu.config.config->devctl2, 16).ptr;
        const std::string devctl2(hex.data(), end);
        return broken("the path carries AtomicOps, but " + gpu.address +
                          " does not request them: AtomicOp Requester Enable is clear "
                          "(DevCtl2 0x" +
                          devctl2 + ", bit 6)",
                      "as root: setpci -s " + gpu.address +
                          " CAP_EXP+28.w=0040:0040 (amdgpu sets it itself when it sees the "
                          "path; if it did not, find what hid the path from it)");
    }
    return {true,
            gpu.address +
                ": every link up to the root port carries AtomicOps and the "
                "requester bit is set",
            ""};
}

}  // namespace xenhsa::backend::doctor
