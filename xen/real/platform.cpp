// open_real_platform(): every component, each on its own library handle.
#include <xenhsa/xen/real/platform.hpp>

namespace xenhsa::xen::real {

Result<Platform> open_real_platform(const RealOptions& options) {
    Platform p;
    auto grants = open_grant_mapper(options);
    if (!grants) return grants.error();
    p.grants = std::move(grants.value());

    auto sharer = open_grant_sharer(options);
    if (!sharer) return sharer.error();
    p.sharer = std::move(sharer.value());

    auto events = open_event_channel(options);
    if (!events) return events.error();
    p.events = std::move(events.value());

    auto store = open_store(options);
    if (!store) return store.error();
    p.store = std::move(store.value());

    // Domains gets its own xenstore connection: a Store is used by one thread, and
    // Domains may be asked from another.
    auto domains_store = open_store(options);
    if (!domains_store) return domains_store.error();
    auto domains = make_domains(std::move(domains_store.value()), options);
    if (!domains) return domains.error();
    p.domains = std::move(domains.value());

    if (options.want_foreign_memory) {
        auto foreign = open_foreign_memory(options);
        if (!foreign) return foreign.error();
        p.foreign = std::move(foreign.value());
    }
    return p;
}

}  // namespace xenhsa::xen::real
