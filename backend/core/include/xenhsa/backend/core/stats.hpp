// What the control socket reports for one guest.
#ifndef XENHSA_BACKEND_CORE_STATS_HPP
#define XENHSA_BACKEND_CORE_STATS_HPP

#include <cstdint>
#include <nlohmann/json_fwd.hpp>

namespace xenhsa::backend::core {

struct Stats {
    uint64_t mapped_pages = 0;  // MAPped guest pages (deferred UNMAPs included)
    uint64_t pinned_pages = 0;  // pages registered with the GPU
    uint64_t lent_pages = 0;    // backend pages lent (revoked, unacknowledged ones included)
    uint64_t queues = 0;
    uint64_t events = 0;
    uint64_t handles = 0;  // live guest handles of every kind
    // Doorbell slot changes forwarded to the GPU seam (kicks and the doorbell watch), and
    // the watch's polls of the doorbell page (a GPU seam that does not track kicks).
    uint64_t doorbells_forwarded = 0;
    uint64_t doorbell_polls = 0;
};

// {"mapped_pages": .., "pinned_pages": .., "lent_pages": .., "queues": .., "events": ..,
//  "handles": .., "doorbells_forwarded": .., "doorbell_polls": ..}
nlohmann::json stats_to_json(const Stats& stats);

}  // namespace xenhsa::backend::core

#endif
