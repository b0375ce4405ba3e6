// The physical baselines of a request round trip between two processes, measured in the
// same run as the figures held to them:
//   shm_ping_pong  two processes polling one cache line each of a shared page: the floor
//                  of any polling ring;
//   eventfd        two processes blocked in read() on an eventfd each, woken by the
//                  other's write(): the floor of any event-driven ring (two wake-ups);
//   unix_datagram  the same over an AF_UNIX datagram socket pair, whose send wakes the
//                  receiver as a synchronous hand-over (the scheduler may run it on the
//                  sender's CPU, which is about to sleep): the floor of an event-driven
//                  ring whose notifications are socket messages, as the simulator's are.
#ifndef XENHSA_BENCH_RING_PHYSICAL_BASELINES_HPP
#define XENHSA_BENCH_RING_PHYSICAL_BASELINES_HPP

#include <cstdint>

#include "round_trip.hpp"

namespace xenhsa::bench {

// The other end is a child process pinned to `child_cpu` (this process stays where it
// is). They throw std::system_error when the child or its resources cannot be made.
RoundTrips shm_ping_pong(uint32_t iterations, uint32_t warmup, int child_cpu);
RoundTrips eventfd_round_trip(uint32_t iterations, uint32_t warmup, int child_cpu);
RoundTrips unix_datagram_round_trip(uint32_t iterations, uint32_t warmup, int child_cpu);

}  // namespace xenhsa::bench

#endif
