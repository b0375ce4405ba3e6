// Upper bounds the supervisor puts on one worker's quotas: its device's share of the
// backend domain's pools (pool_shares.hpp). They apply after the quota file and every
// override, the operator's run-time changes included.
#ifndef XENHSA_BACKEND_SERVICE_QUOTA_CEILINGS_HPP
#define XENHSA_BACKEND_SERVICE_QUOTA_CEILINGS_HPP

#include <cstdint>
#include <optional>

namespace xenhsa::backend::service {

struct QuotaCeilings {
    std::optional<uint32_t> max_map_pages;   // unset: no bound
    std::optional<uint32_t> max_lend_pages;  // unset: no bound
};

}  // namespace xenhsa::backend::service

#endif
