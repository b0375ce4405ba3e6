#include "guest_boundary_path.hpp"

namespace xenhsa::bench {

GuestBoundaryPath::GuestBoundaryPath(const std::filesystem::path& bin_dir)
    : services_(bin_dir),
      guest_(std::make_unique<GuestDomain>(services_.sim_dir(), kGuestRamPages)),
      queue_(std::make_unique<FillQueue>(*guest_)) {}

GuestBoundaryPath::~GuestBoundaryPath() {
    // The queue before the session, the session before the services.
    queue_.reset();
    guest_.reset();
}

void GuestBoundaryPath::dispatch_and_wait() { queue_->dispatch_and_wait(); }

void GuestBoundaryPath::dispatch_batch_and_wait(uint32_t count) {
    queue_->dispatch_batch_and_wait(count);
}

}  // namespace xenhsa::bench
