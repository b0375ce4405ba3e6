// How much GPU-visible system memory this guest can really have, and which limit a refused
// system-memory allocation hit. System memory is the guest's own pages granted to the
// backend and MAPped there (or, where the backend's kernel cannot pin grant mappings,
// the backend's pages LENT to the guest), so besides the guest's RAM it is bounded by:
//
//   grants     the guest's grant capacity: on xenhsa-sim its grant table (--grant-frames),
//              on Xen gntalloc's limit (and the guest's max_grant_frames, which a guest
//              cannot read)
//   map share  the backend's max_map_pages for this guest (HELLO), itself at most the
//              device's share of the backend's map pool (--map-pool-pages / --max-guests)
//   lend share the backend's max_lend_pages (HELLO), where system memory is lent
//
// The system heap hsaKmtGetNodeMemoryProperties reports is the smallest of them, read
// again at each call; a refused allocation says once, per limit, which one and what
// raises it.
#ifndef XENHSA_FRONTEND_HSAKMT_MEMORY_LIMITS_HPP
#define XENHSA_FRONTEND_HSAKMT_MEMORY_LIMITS_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

namespace xenhsa::frontend::hsakmt {

struct MemoryLimits {
    std::optional<uint64_t> ram_pages;    // the guest's RAM, when known
    std::optional<uint64_t> grant_pages;  // the guest's grant capacity, when known
    uint64_t map_pages = 0;               // HELLO's max_map_pages
    uint64_t lend_pages = 0;              // HELLO's max_lend_pages
    uint64_t handles = 0;                 // HELLO's max_handles
};

// Bytes of system memory the guest can have at most (`lent`: the backend lends it).
uint64_t system_capacity_bytes(const MemoryLimits& limits, bool lent) noexcept;

// Where a system-memory allocation failed.
enum class SystemStep : uint8_t {
    grant,  // granting the guest's pages (the hypervisor's sharer)
    map,    // MAP of those pages
    lend,   // LEND of the backend's pages
    pin,    // PIN of the allocation
};

// What the guest holds when the step failed, for telling which limit it hit.
struct SystemUse {
    uint64_t bytes = 0;         // the refused allocation
    uint64_t mapped_pages = 0;  // MAPped before it, of this library's allocations
    uint64_t lent_pages = 0;    // LENT before it
    uint64_t step_pages = 0;    // what the failed step asked for
};

struct Refusal {
    std::string limit;  // a short name: "grants", "map share", ...; empty: no limit
    std::string text;   // which limit, and the setting that raises it
};

// The limit a refused step hit; none when the error is none of the limits (a broken
// backend, a bad argument).
Refusal limit_refusal(const MemoryLimits& limits, SystemStep step, const std::error_code& error,
                      const SystemUse& use);

// The refusal's text, at warn level, once per limit for the life of the process.
void tell_limit_once(const Refusal& refusal) noexcept;

}  // namespace xenhsa::frontend::hsakmt

#endif
