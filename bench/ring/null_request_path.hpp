// A null request through the ring: QUERY VERSION from a guest (the guest library over
// the embedded hypervisor) to its xenhsa-backend worker and back, with both ends either
// polling before they sleep (the defaults: the worker's --ring-spin-us, the guest
// library's reply_spin) or sleeping at once (both 0: every request and every answer is
// an event-channel notification and a wake-up).
#ifndef XENHSA_BENCH_RING_NULL_REQUEST_PATH_HPP
#define XENHSA_BENCH_RING_NULL_REQUEST_PATH_HPP

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "embedded_services.hpp"
#include "guest_domain.hpp"
#include "round_trip.hpp"

namespace xenhsa::bench {

class NullRequestPath {
public:
    enum class Mode { polling, event_driven };

    // Starts its own xenhsa-sim and xenhsa-backend from `bin_dir` and one guest. Throws
    // on failure.
    NullRequestPath(const std::filesystem::path& bin_dir, Mode mode);

    [[nodiscard]] const std::string& name() const { return name_; }
    // Pins the guest's worker process to `cpu`.
    void pin_worker(int cpu);
    RoundTrips measure(uint32_t iterations, uint32_t warmup);

private:
    std::string name_;
    EmbeddedServices services_;
    std::unique_ptr<GuestDomain> guest_;
};

}  // namespace xenhsa::bench

#endif
