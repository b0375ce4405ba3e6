// Options every platform-backed subcommand shares (the global flags of xenhsa-guest).
#ifndef XENHSA_FRONTEND_CLI_OPTIONS_HPP
#define XENHSA_FRONTEND_CLI_OPTIONS_HPP

#include <xenhsa/proto.h>

#include <cstdint>
#include <optional>
#include <string>

namespace xenhsa::frontend::cli {

struct GlobalOptions {
    std::string sim_dir;            // xenhsa-sim directory; empty: not the simulator
    bool xen = false;               // the real libxen* adapters
    std::optional<uint32_t> domid;  // attach to this domain (sim); else create one
    uint32_t backend_domid = 0;
    uint32_t devid = 0;
    uint32_t ring_order = XENHSA_RING_MAX_ORDER;
    uint32_t timeout_ms = 10000;
    uint64_t ram_pages = 262144;  // of a domain the sim creates for us
    bool toolstack = true;        // sim: create the device's xenstore directories
    uint64_t window_gib = 4;      // HELLO va_size
};

}  // namespace xenhsa::frontend::cli

#endif
