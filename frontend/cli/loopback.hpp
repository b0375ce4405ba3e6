// `xenhsa-guest loopback`: the guest ring library against a validating loopback peer.
#ifndef XENHSA_FRONTEND_CLI_LOOPBACK_HPP
#define XENHSA_FRONTEND_CLI_LOOPBACK_HPP

#include <cstdint>

namespace xenhsa::frontend::cli {

struct LoopbackOptions {
    uint32_t ring_order = 0;
    uint32_t budget = 4;  // requests the peer serves per wake-up
};

// Runs the scenario, prints a table; returns the process exit code (0: every check held).
int run_loopback(const LoopbackOptions& options);

}  // namespace xenhsa::frontend::cli

#endif
