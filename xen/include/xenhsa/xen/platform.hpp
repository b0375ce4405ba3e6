// The hypervisor seam as one bundle: real Xen or the embedded simulated hypervisor.
#ifndef XENHSA_XEN_PLATFORM_HPP
#define XENHSA_XEN_PLATFORM_HPP

#include <memory>
#include <xenhsa/xen/domains.hpp>
#include <xenhsa/xen/event_channel.hpp>
#include <xenhsa/xen/foreign_memory.hpp>
#include <xenhsa/xen/grant_map.hpp>
#include <xenhsa/xen/grant_share.hpp>
#include <xenhsa/xen/grant_usage.hpp>
#include <xenhsa/xen/store.hpp>

namespace xenhsa::xen {

struct Platform {
    std::unique_ptr<GrantMapper> grants;
    std::unique_ptr<GrantSharer> sharer;
    std::unique_ptr<EventChannel> events;
    std::unique_ptr<Store> store;
    std::unique_ptr<Domains> domains;
    std::unique_ptr<ForeignMemory> foreign;  // may be null: unprivileged
    std::unique_ptr<GrantUsage> usage;       // may be null: opened only where asked for
};

}  // namespace xenhsa::xen

#endif
