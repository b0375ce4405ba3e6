// A minimal scripted frontend for the service tests: runs in a forked child attached to
// its guest domain and obeys one command at a time from the test over a Link. It grants
// the pages, allocates the port, writes (good or deliberately bad) keys and states, reads
// be_alive, and can send a HELLO, connect and QUERY the GPU node through the ring.
#ifndef XENHSA_TESTS_BACKEND_SERVICE_SCRIPTED_FRONTEND_HPP
#define XENHSA_TESTS_BACKEND_SERVICE_SCRIPTED_FRONTEND_HPP

#include <child_process.hpp>
#include <cstdint>
#include <filesystem>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::test {

enum FrontendCmd : uint64_t {
    kPublish = 1,         // grant pages, bind a port, write every key, state Initialised
    kPublishBadRingRef,   // as kPublish but ring-ref = "12abc"
    kPublishBadOrder,     // as kPublish but ring-page-order = "9"
    kPublishMissingKeys,  // as kPublish without notify-ref and doorbell-ref
    kPublishOrder2,       // as kPublish with a four-page ring (ring-ref0..ring-ref3)
    kClose,               // Closing, wait for the backend's Closed, drop pages and port, Closed
    kInitialise,          // state Initialising (reconnect)
    kBeAlive,             // answers be_alive of the ring (0 when nothing is granted)
    kHello,               // one HELLO on the ring: answers the response status
    kHelloMaxHandles,     // max_handles of the last HELLO response
    kConnectAll,          // HELLO for every known feature, then the confirming HELLO:
                          // answers the granted features (kFailed + line on a failure)
    kGpuVersion,          // after kConnectAll: QUERY NODE 1, answers its ISA version
                          // from engine_id: major << 16 | minor << 8 | stepping
    kExit,
};

// Answers: 0 (or the asked value) on success; kFailed + line on a failed step.
inline constexpr uint64_t kFailed = 1u << 20;
inline constexpr uint64_t kNoAnswer = 1u << 21;

// The child's body: serves commands until kExit or until the test goes away.
int run_scripted_frontend(const std::filesystem::path& sim_dir, xen::DomId self, uint32_t devid,
                          testing::Link& link);

}  // namespace xenhsa::test

#endif
