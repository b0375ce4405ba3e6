// Bandwidth of the built-in fill kernel on the software agent against memset of the same
// buffer: one big dispatch (256-item workgroups, as a guest would launch it), timed from
// submit to completion signal, beside std::memset on one thread.
#ifndef XENHSA_BENCH_FILL_BANDWIDTH_HPP
#define XENHSA_BENCH_FILL_BANDWIDTH_HPP

#include <cstdint>
#include <xenhsa/hsa/soft_agent.hpp>

namespace xenhsa::bench {

struct FillBandwidth {
    uint64_t bytes = 0;
    double fill_gb_s = 0;    // median of the repetitions
    double memset_gb_s = 0;  // median of the repetitions
};

FillBandwidth measure_fill_bandwidth(const hsa::SoftAgentOptions& options, uint64_t bytes,
                                     uint32_t repetitions);

}  // namespace xenhsa::bench

#endif
