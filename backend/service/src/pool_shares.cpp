#include <algorithm>
#include <limits>
#include <xenhsa/backend/service/pool_shares.hpp>

namespace xenhsa::backend::service {

namespace {

uint32_t clamp32(uint64_t v) noexcept {
    return static_cast<uint32_t>(std::min<uint64_t>(v, std::numeric_limits<uint32_t>::max()));
}

std::string too_small(const char* pool, uint64_t size, uint64_t needed, uint32_t max_guests) {
    return std::string("the ") + pool + " pool (" + std::to_string(size) + ") cannot serve " +
           std::to_string(max_guests) + " guests: they need " + std::to_string(needed) +
           "; lower --max-guests or give a larger pool";
}

}  // namespace

std::optional<std::string> PoolShares::check(const PoolSizes& pools, uint32_t max_guests) {
    if (max_guests == 0) {
        return std::string("--max-guests must be at least 1");
    }
    if (pools.lend_pages < max_guests) {
        return too_small("LEND page", pools.lend_pages, max_guests, max_guests);
    }
    if (pools.map_pages < max_guests) {
        return too_small("map page", pools.map_pages, max_guests, max_guests);
    }
    const uint64_t ports = uint64_t{max_guests} * kEventChannelsPerGuest;
    if (pools.event_channels < ports) {
        return too_small("event channel", pools.event_channels, ports, max_guests);
    }
    const uint64_t watches = kSupervisorWatches + uint64_t{max_guests} * kWatchesPerGuest;
    if (pools.store_watches < watches) {
        return too_small("xenstore watch", pools.store_watches, watches, max_guests);
    }
    return std::nullopt;
}

PoolShares::PoolShares(const PoolSizes& pools, uint32_t max_guests) noexcept
    : pools_(pools), max_guests_(max_guests) {}

QuotaCeilings PoolShares::ceilings(uint64_t held) const noexcept {
    const uint64_t lend = lend_share();
    return {clamp32(map_share()), clamp32(held >= lend ? 0 : lend - held)};
}

bool PoolShares::admit(const DeviceId& device) {
    if (admitted_.contains(device)) {
        return true;
    }
    if (admitted_.size() >= max_guests_) {
        return false;
    }
    admitted_.insert(device);
    return true;
}

void PoolShares::leave(const DeviceId& device) noexcept { admitted_.erase(device); }

}  // namespace xenhsa::backend::service
