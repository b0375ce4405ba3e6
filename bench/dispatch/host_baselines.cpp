#include "host_baselines.hpp"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace xenhsa::bench {

namespace {

using Clock = std::chrono::steady_clock;

double since_us(Clock::time_point start) {
    return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

}  // namespace

Percentiles percentiles(std::vector<double> samples) {
    if (samples.empty()) {
        return {};
    }
    std::sort(samples.begin(), samples.end());
    const auto at = [&](double p) {
        return samples[static_cast<std::size_t>(p * static_cast<double>(samples.size() - 1))];
    };
    return {at(0.5), at(0.99)};
}

Percentiles eventfd_round_trip_us(uint32_t iterations) {
    const int ping = ::eventfd(0, 0);
    const int pong = ::eventfd(0, 0);
    std::thread echo([&] {
        uint64_t v = 0;
        for (uint32_t i = 0; i < iterations; ++i) {
            if (::read(ping, &v, sizeof v) != sizeof v || ::write(pong, &v, sizeof v) != sizeof v) {
                return;
            }
        }
    });
    std::vector<double> samples;
    uint64_t v = 1;
    for (uint32_t i = 0; i < iterations; ++i) {
        const auto start = Clock::now();
        if (::write(ping, &v, sizeof v) != sizeof v || ::read(pong, &v, sizeof v) != sizeof v) {
            break;
        }
        samples.push_back(since_us(start));
    }
    echo.join();
    ::close(ping);
    ::close(pong);
    return percentiles(std::move(samples));
}

Percentiles mmap_mlock_munmap_us(uint32_t iterations) {
    constexpr std::size_t kPage = 4096;
    std::vector<double> samples;
    for (uint32_t i = 0; i < iterations; ++i) {
        const auto start = Clock::now();
        void* p =
            ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            break;
        }
        const bool locked = ::mlock(p, kPage) == 0;
        if (locked) {
            ::munlock(p, kPage);
        }
        ::munmap(p, kPage);
        if (!locked) {
            break;  // RLIMIT_MEMLOCK: no baseline
        }
        samples.push_back(since_us(start));
    }
    return percentiles(std::move(samples));
}

}  // namespace xenhsa::bench
