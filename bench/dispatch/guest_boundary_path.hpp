// Dispatches from a guest: the guest library over the embedded hypervisor, talking to a
// real `xenhsa-backend` worker process whose software agent runs the packets. Setup goes
// through the request ring (HELLO, MAP, PIN, MAP_TO_GPU, QUEUE_CREATE); each dispatch is
// an AQL packet the guest writes into its ring in guest memory (granted and mapped by the
// worker at the same VA) and a doorbell write, kicking the event channel only when the
// agent asks for it, as a guest's ROCr would.
#ifndef XENHSA_BENCH_GUEST_BOUNDARY_PATH_HPP
#define XENHSA_BENCH_GUEST_BOUNDARY_PATH_HPP

#include <filesystem>
#include <memory>

#include "dispatch_path.hpp"
#include "embedded_services.hpp"
#include "fill_queue.hpp"
#include "guest_domain.hpp"

namespace xenhsa::bench {

class GuestBoundaryPath final : public DispatchPath {
public:
    // Starts xenhsa-sim and xenhsa-backend from `bin_dir`, creates and plugs a guest
    // domain, attaches this process to it and sets up one queue. Throws on failure.
    explicit GuestBoundaryPath(const std::filesystem::path& bin_dir);
    ~GuestBoundaryPath() override;

    [[nodiscard]] std::string_view name() const override { return "guest_boundary"; }
    void dispatch_and_wait() override;
    void dispatch_batch_and_wait(uint32_t count) override;

private:
    EmbeddedServices services_;
    std::unique_ptr<GuestDomain> guest_;
    std::unique_ptr<FillQueue> queue_;
};

}  // namespace xenhsa::bench

#endif
