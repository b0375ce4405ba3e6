// The scenarios of xenhsa-guest over a real (or simulated) backend. Each prints check
// lines and a summary (report.hpp) and returns the exit code: 0 iff every check held.
#ifndef XENHSA_FRONTEND_CLI_SCENARIOS_HPP
#define XENHSA_FRONTEND_CLI_SCENARIOS_HPP

#include <cstdint>
#include <optional>
#include <string>

#include "options.hpp"

namespace xenhsa::frontend::cli {

// Handshake, HELLO, QUERY, a small MAP/PIN/UNPIN/UNMAP, close.
int run_selftest(const GlobalOptions& options);
int run_topology(const GlobalOptions& options);

struct ReconnectOptions {
    uint32_t rounds = 2;
    bool wait_for_backend_death = false;  // each round: wait until the backend goes away
};
// Rounds of: a small session, then GuestDevice::reconnect() (new pages, new port).
int run_reconnect(const GlobalOptions& options, const ReconnectOptions& reconnect);

struct MapOptions {
    uint32_t pages = 16;
    bool hold = false;  // keep the mapping until SIGTERM/SIGINT
    bool read_only = false;
};
int run_map(const GlobalOptions& options, const MapOptions& map);

struct LendOptions {
    uint32_t pages = 4;
    bool writable = true;
};
int run_lend(const GlobalOptions& options, const LendOptions& lend);

struct RevokeOptions {
    uint32_t pages = 4;
    uint32_t wait_ms = 60000;  // for the REVOKED notification
};
int run_revoke(const GlobalOptions& options, const RevokeOptions& revoke);

struct StressOptions {
    uint32_t iterations = 20;
    uint32_t max_pages = 3000;
};
int run_stress(const GlobalOptions& options, const StressOptions& stress);

struct ChurnOptions {
    uint32_t rounds = 0;  // 0: until SIGTERM/SIGINT
    uint32_t seed = 1;
};
int run_churn(const GlobalOptions& options, const ChurnOptions& churn);

struct SequenceOptions {
    uint64_t seed = 1;
    uint32_t calls = 200;
    bool trace = false;  // print each call and its answer
};
int run_sequence(const GlobalOptions& options, const SequenceOptions& sequence);

struct GpuOptions {
    std::optional<uint32_t> node;  // default: the first node with GPU cores
    uint32_t elements = 4096;      // vecadd, saxpy, fill-checksum
    float a = 2.5f;                // saxpy
    uint32_t value = 0x01020304;   // fill-checksum, barrier-chain
    uint32_t links = 4;            // barrier-chain
    uint32_t repeat = 1;           // vecadd rounds; 0: until SIGTERM/SIGINT
};
int run_vecadd(const GlobalOptions& options, const GpuOptions& gpu);
int run_saxpy(const GlobalOptions& options, const GpuOptions& gpu);
int run_fill_checksum(const GlobalOptions& options, const GpuOptions& gpu);
int run_barrier_chain(const GlobalOptions& options, const GpuOptions& gpu);
int run_fault(const GlobalOptions& options, const GpuOptions& gpu);
int run_sdma_hang(const GlobalOptions& options, const GpuOptions& gpu);

// One guest keeping its worker busy: big fills on many queues, pending waits, SDMA
// copies, a fault, and queues destroyed with work running (scenario_load.cpp).
struct LoadOptions {
    uint32_t queues = 8;             // AQL queues filling at once
    uint32_t elements = 1u << 20;    // words a fill writes (4 MiB: the agent's pool)
    uint32_t rounds = 3;             // rounds of fills and copies, each checked
    uint32_t waits = 32;             // EVENT_WAITs kept pending meanwhile
    uint32_t sdma_queues = 2;        // SDMA queues copying meanwhile
    uint32_t sdma_bytes = 8u << 20;  // bytes each copies a round
    bool fault = true;               // a queue that faults while the others run
    uint32_t pause_ms = 0;           // after round 1, everything live: prints
                                     // `info loaded domid=N`, then waits this long
};
int run_load(const GlobalOptions& options, const LoadOptions& load);

struct DemoOptions {
    uint32_t pages = 64;  // the MAPped buffer
    uint32_t lend_pages = 4;
    uint32_t elements = 4096;  // vector_add
    uint32_t wait_ms = 60000;  // for the operator's revoke
};
// script/demo's guest: MAP, vector_add on mapped memory, LEND, then wait for the
// operator's revoke and check the lent pages fault.
int run_demo(const GlobalOptions& options, const DemoOptions& demo);

struct HostileOptions {
    std::string mode;  // overflow, garbage, forged-handle, bad-grefs, va-outside,
                       // doorbell-garbage, hello-again, notify-scribble, event-flood,
                       // doorbell-flood
    uint32_t count = 200;
    uint32_t seed = 1;
};
int run_hostile(const GlobalOptions& options, const HostileOptions& hostile);

}  // namespace xenhsa::frontend::cli

#endif
