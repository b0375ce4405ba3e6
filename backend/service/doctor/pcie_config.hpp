// The parts of a PCI function's configuration space that decide whether it can take part
// in PCIe AtomicOps (PCIe r4.0 §6.15): the PCI Express capability's port type, Device
// Capabilities 2 and Device Control 2. Read from a copy of the config space (sysfs
// `config`), never from the device.
#ifndef XENHSA_BACKEND_SERVICE_DOCTOR_PCIE_CONFIG_HPP
#define XENHSA_BACKEND_SERVICE_DOCTOR_PCIE_CONFIG_HPP

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace xenhsa::backend::doctor {

// Device/Port Type (PCI Express Capabilities register, bits 7:4).
enum class PortType : uint8_t {
    endpoint = 0x0,
    legacy_endpoint = 0x1,
    root_port = 0x4,
    upstream_port = 0x5,
    downstream_port = 0x6,
    pcie_to_pci_bridge = 0x7,
    pci_to_pcie_bridge = 0x8,
    rc_integrated_endpoint = 0x9,
    rc_event_collector = 0xa,
};

inline constexpr uint32_t kDevCap2AtomicRoute = 0x040;
inline constexpr uint32_t kDevCap2AtomicComp32 = 0x080;
inline constexpr uint32_t kDevCap2AtomicComp64 = 0x100;
inline constexpr uint16_t kDevCtl2AtomicRequester = 0x040;
inline constexpr uint16_t kDevCtl2AtomicEgressBlock = 0x080;
// Offset of Device Control 2 in the PCI Express capability (setpci's CAP_EXP+28).
inline constexpr uint32_t kDevCtl2Offset = 0x28;

struct PcieConfig {
    PortType type = PortType::endpoint;
    uint32_t devcap2 = 0;
    uint16_t devctl2 = 0;
};

enum class ConfigProblem : uint8_t {
    too_short,     // the first 64 bytes only: sysfs shows no more to an unprivileged reader
    no_pcie_cap,   // not a PCI Express function
    bad_cap_list,  // a pointer out of range or a loop
};

struct ParsedConfig {
    std::optional<PcieConfig> config;
    std::optional<ConfigProblem> problem;
};

// Walks the capability list (at most 48 entries) to the PCI Express capability.
ParsedConfig parse_pcie_config(std::span<const uint8_t> space) noexcept;

std::string_view port_type_name(PortType type) noexcept;

}  // namespace xenhsa::backend::doctor

#endif
