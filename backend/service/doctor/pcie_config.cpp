#include "pcie_config.hpp"

namespace xenhsa::backend::doctor {
namespace {

constexpr std::size_t kHeaderBytes = 64;
constexpr std::size_t kStatus = 0x06;
constexpr uint16_t kStatusCapList = 0x10;
constexpr std::size_t kCapPointer = 0x34;
constexpr uint8_t kCapIdPcie = 0x10;
constexpr std::size_t kPcieFlags = 0x02;
constexpr std::size_t kDevCap2 = 0x24;
constexpr int kMaxCaps = 48;

uint16_t le16(std::span<const uint8_t> s, std::size_t at) noexcept {
    return static_cast<uint16_t>(s[at] | s[at + 1] << 8);
}

uint32_t le32(std::span<const uint8_t> s, std::size_t at) noexcept {
    return static_cast<uint32_t>(le16(s, at)) | static_cast<uint32_t>(le16(s, at + 2)) << 16;
}

}  // namespace

ParsedConfig parse_pcie_config(std::span<const uint8_t> space) noexcept {
    if (space.size() <= kHeaderBytes) {
        return {std::nullopt, ConfigProblem::too_short};
    }
    if ((le16(space, kStatus) & kStatusCapList) == 0) {
        return {std::nullopt, ConfigProblem::no_pcie_cap};
    }
    std::size_t at = space[kCapPointer] & 0xFCU;
    for (int seen = 0; at != 0; ++seen) {
        if (seen == kMaxCaps || at < kHeaderBytes || at + 2 > space.size()) {
            return {std::nullopt, ConfigProblem::bad_cap_list};
        }
        if (space[at] == kCapIdPcie) {
            if (at + kDevCtl2Offset + 2 > space.size()) {
                return {std::nullopt, ConfigProblem::too_short};
            }
            PcieConfig c;
            c.type = static_cast<PortType>(le16(space, at + kPcieFlags) >> 4 & 0xFU);
            c.devcap2 = le32(space, at + kDevCap2);
            c.devctl2 = le16(space, at + kDevCtl2Offset);
            return {c, std::nullopt};
        }
        at = space[at + 1] & 0xFCU;
    }
    return {std::nullopt, ConfigProblem::no_pcie_cap};
}

std::string_view port_type_name(PortType type) noexcept {
    switch (type) {
        case PortType::endpoint:
            return "endpoint";
        case PortType::legacy_endpoint:
            return "legacy endpoint";
        case PortType::root_port:
            return "root port";
        case PortType::upstream_port:
            return "switch upstream port";
        case PortType::downstream_port:
            return "switch downstream port";
        case PortType::pcie_to_pci_bridge:
            return "PCIe-to-PCI bridge";
        case PortType::pci_to_pcie_bridge:
            return "PCI-to-PCIe bridge";
        case PortType::rc_integrated_endpoint:
            return "root-complex integrated endpoint";
        case PortType::rc_event_collector:
            return "root-complex event collector";
    }
    return "unknown port type";
}

}  // namespace xenhsa::backend::doctor
