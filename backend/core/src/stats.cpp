#include <nlohmann/json.hpp>
#include <xenhsa/backend/core/stats.hpp>

namespace xenhsa::backend::core {

nlohmann::json stats_to_json(const Stats& stats) {
    return nlohmann::json{{"mapped_pages", stats.mapped_pages},
                          {"pinned_pages", stats.pinned_pages},
                          {"lent_pages", stats.lent_pages},
                          {"queues", stats.queues},
                          {"events", stats.events},
                          {"handles", stats.handles},
                          {"doorbells_forwarded", stats.doorbells_forwarded},
                          {"doorbell_polls", stats.doorbell_polls}};
}

}  // namespace xenhsa::backend::core
