#include "fill_bandwidth.hpp"

#include <xenhsa/hsa/builtin_kernels.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>
#include <xenhsa/hsa/soft_testing/aql_producer.hpp>

namespace xenhsa::bench {

namespace {

using namespace hsa::soft_testing;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

double gb_s(uint64_t bytes, Clock::duration took) {
    return static_cast<double>(bytes) / std::chrono::duration<double>(took).count() / 1e9;
}

}  // namespace

FillBandwidth measure_fill_bandwidth(const hsa::SoftAgentOptions& options, uint64_t bytes,
                                     uint32_t repetitions) {
    auto device = hsa::make_soft_agent(options);
    FillBandwidth result;
    {
        GpuBuffer data(*device, bytes);
        GpuBuffer kernarg(*device, kPage);
        SignalPage signals(*device);
        AqlTestQueue queue(*device, QueueOptions{.packets = 64});
        const auto words = static_cast<uint32_t>(data.size() / 4);
        result.bytes = uint64_t{words} * 4;
        // Not one repeated byte: the general path, not a memset in disguise.
        const xenhsa_kernarg_fill args{data.va(), words, 0x600d'f00du, 0};
        std::memcpy(kernarg.at<void>(), &args, sizeof args);
        const uint64_t fill = find_builtin(*device, XENHSA_KERNEL_NAME_FILL).kernel_object;
        std::memset(data.at<void>(), 0, data.size());  // every page touched before timing

        std::vector<double> fills;
        std::vector<double> memsets;
        for (uint32_t i = 0; i < repetitions; ++i) {
            const uint64_t signal = signals.init(0, 1);
            const auto start = Clock::now();
            queue.submit(dispatch_packet(fill, kernarg.va(), grid_1d(words, 256), signal));
            if (!signals.wait_eq(0, 0, std::chrono::seconds(60))) {
                fail("fill dispatch did not complete");
            }
            fills.push_back(gb_s(result.bytes, Clock::now() - start));
            if (*data.at<uint32_t>(result.bytes - 4) != args.value) {
                fail("fill did not reach the end of the buffer");
            }

            const auto mstart = Clock::now();
            std::memset(data.at<void>(), 0x5a, result.bytes);
            asm volatile("" : : "r"(data.at<void>()) : "memory");  // the stores stay
            memsets.push_back(gb_s(result.bytes, Clock::now() - mstart));
        }
        if (*data.at<uint32_t>(result.bytes - 4) != 0x5a5a'5a5au) {
            fail("memset did not run");
        }
        result.fill_gb_s = median(fills);
        result.memset_gb_s = median(memsets);
    }
    return result;
}

}  // namespace xenhsa::bench
