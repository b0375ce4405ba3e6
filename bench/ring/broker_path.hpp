// What a real-Xen worker pays its grant broker (backend/service/src/grant_broker.hpp) per
// MAP batch, LEND, port bind or unbind: a request and a reply over a SOCK_SEQPACKET pair
// to another process, the refs through their shared buffer, the broker's checks and copy.
// The broker's ioctls are answered at once (a stand-in authority), so the figure is the
// broker's alone; the ioctl and the hypercall behind it are the same with or without it.
#ifndef XENHSA_BENCH_RING_BROKER_PATH_HPP
#define XENHSA_BENCH_RING_BROKER_PATH_HPP

#include <cstdint>
#include <memory>

#include "round_trip.hpp"

namespace xenhsa::bench {

class BrokerPath {
public:
    // Starts a broker, confined as a worker's. Throws std::system_error when it cannot.
    BrokerPath();
    ~BrokerPath();
    BrokerPath(const BrokerPath&) = delete;
    BrokerPath& operator=(const BrokerPath&) = delete;

    void pin_broker(int cpu);
    // Round trips of a map of `refs` grant refs.
    RoundTrips measure_map(uint32_t refs, uint32_t iterations, uint32_t warmup);

private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace xenhsa::bench

#endif
