// The backend domain's global pools and each guest device's share of them. Every worker
// draws from pools the whole backend domain shares: the pages it may lend (gntalloc's
// limit on Linux, dom0's grant table on xenhsa-sim), the pages it may map (gntdev, Xen's
// maptrack table), event channels and xenstore watches. One guest must not exhaust them
// for the others, so each of at most `max_guests` devices gets pool / max_guests of the
// page pools, and the supervisor refuses to start when the fixed use per device of the
// other two does not fit. Pages a guest still maps after its connection ended stay out
// of the LEND pool until it unmaps them, so they count against that guest's share.
#ifndef XENHSA_BACKEND_SERVICE_POOL_SHARES_HPP
#define XENHSA_BACKEND_SERVICE_POOL_SHARES_HPP

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <xenhsa/backend/service/connector_config.hpp>
#include <xenhsa/backend/service/xenbus.hpp>

namespace xenhsa::backend::service {

// The supervisor's options (xenhsa-backend --max-guests, --lend-pool-pages, ...).
struct PoolOptions {
    uint32_t max_guests = 16;
    std::optional<uint64_t> lend_pages;       // unset: what the platform says (GrantUsage)
    uint64_t map_pages = uint64_t{16} << 18;  // 16 guests at the default max_map_pages
    uint64_t event_channels = 1024;
    uint64_t store_watches = 128;  // C xenstored's default watches per domain
};

// When the platform cannot tell the LEND pool: gntalloc's default limit.
inline constexpr uint64_t kFallbackLendPoolPages = 1024;

struct PoolSizes {
    uint64_t lend_pages = 0;
    uint64_t map_pages = 0;
    uint64_t event_channels = 0;
    uint64_t store_watches = 0;
};

// What the code uses of the pools that are not quotas (count them again when a worker or
// the supervisor binds a port or watches a path more).
inline constexpr uint64_t kEventChannelsPerGuest = 1;  // the ring's interdomain port
// The frontend state: watched by the device's worker, or by the supervisor while the
// device has none (never both at once).
inline constexpr uint64_t kWatchesPerGuest = 1;
inline constexpr uint64_t kSupervisorWatches = 2;  // the backend directory, @releaseDomain

class PoolShares {
public:
    // A readable reason why `max_guests` devices cannot each have a share of `pools`, or
    // nullopt.
    static std::optional<std::string> check(const PoolSizes& pools, uint32_t max_guests);
    // `pools` and `max_guests` must pass check().
    PoolShares(const PoolSizes& pools, uint32_t max_guests) noexcept;

    [[nodiscard]] const PoolSizes& pools() const noexcept { return pools_; }
    [[nodiscard]] uint32_t max_guests() const noexcept { return max_guests_; }
    [[nodiscard]] uint64_t lend_share() const noexcept { return pools_.lend_pages / max_guests_; }
    [[nodiscard]] uint64_t map_share() const noexcept { return pools_.map_pages / max_guests_; }

    // The quota ceilings of a device whose guest still holds `held` lent pages from
    // earlier connections.
    [[nodiscard]] QuotaCeilings ceilings(uint64_t held) const noexcept;

    // Gives `device` one of the max_guests slots; false when every slot is taken by
    // other devices. A device keeps its slot until leave().
    bool admit(const DeviceId& device);
    void leave(const DeviceId& device) noexcept;
    [[nodiscard]] bool admitted(const DeviceId& device) const noexcept {
        return admitted_.contains(device);
    }
    [[nodiscard]] std::size_t guests() const noexcept { return admitted_.size(); }

private:
    PoolSizes pools_;
    uint32_t max_guests_;
    std::set<DeviceId> admitted_;
};

}  // namespace xenhsa::backend::service

#endif
