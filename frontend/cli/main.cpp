// xenhsa-guest: the synthetic frontend.
#include "loopback.hpp"

#include <xenhsa/proto/ring.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

int main(int argc, char **argv)
{
    CLI::App app{"xenhsa-guest: the synthetic xenhsa frontend (guest side)"};
    app.require_subcommand(1);

    xenhsa::frontend::cli::LoopbackOptions loopback;
    auto *loop = app.add_subcommand(
        "loopback", "drive the guest ring library against a validating loopback peer");
    loop->add_option("--ring-order", loopback.ring_order, "ring pages as a power of two")
        ->check(CLI::Range(0u, unsigned{XENHSA_RING_MAX_ORDER}));
    loop->add_option("--budget", loopback.budget, "requests the peer serves per wake-up")
        ->check(CLI::Range(1u, 1024u));

    CLI11_PARSE(app, argc, argv);
    if (*loop) {
        return xenhsa::frontend::cli::run_loopback(loopback);
    }
    return 2;
}
