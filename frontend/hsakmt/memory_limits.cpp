#include "memory_limits.hpp"

#include <fmt/format.h>
#include <xenhsa/proto/common.h>
#include <xenhsa/proto/status.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <xenhsa/frontend/errors.hpp>

#include "log.hpp"

namespace xenhsa::frontend::hsakmt {

namespace {

uint64_t mib(uint64_t pages) { return pages * XENHSA_PAGE_SIZE >> 20; }

bool is_errno(const std::error_code& ec, int value) {
    return (ec.category() == std::generic_category() || ec.category() == std::system_category()) &&
           ec.value() == value;
}

std::string handles_refusal(const MemoryLimits& limits, std::string& limit) {
    limit = "handles";
    return fmt::format(
        "this guest's handle quota is used up (max_handles {}); raise it on the backend "
        "(xenhsa-ctl quota --domid N --set max_handles=..., or --set max_handles=... at its "
        "start)",
        limits.handles);
}

struct Share {
    const char* name;   // "map"
    const char* done;   // "mapped"
    const char* quota;  // "max_map_pages"
    const char* pool;   // "--map-pool-pages"
};

// QUOTA on a MAP or LEND: its share when the step would pass it, else the handles.
std::string share_refusal(const Share& share, uint64_t quota, uint64_t used, uint64_t step,
                          const MemoryLimits& limits, std::string& limit) {
    if (used + step <= quota) {
        return handles_refusal(limits, limit);
    }
    limit = std::string(share.name) + " share";
    return fmt::format(
        "the backend's {0} share for this guest is used up ({1} {2}: {3} MiB, {4} MiB {5} "
        "already); raise {1} on the backend (xenhsa-ctl quota --set {1}=...) within the "
        "device's share of its {0} pool (xenhsa-backend {6} / --max-guests)",
        share.name, share.quota, quota, mib(quota), mib(used), share.done, share.pool);
}

}  // namespace

uint64_t system_capacity_bytes(const MemoryLimits& limits, bool lent) noexcept {
    uint64_t pages = lent ? limits.lend_pages : limits.map_pages;
    if (!lent) {
        // The guest's own pages: its RAM and its grants bound them too.
        pages = std::min(pages, limits.ram_pages.value_or(pages));
        pages = std::min(pages, limits.grant_pages.value_or(pages));
    }
    return pages * XENHSA_PAGE_SIZE;
}

Refusal limit_refusal(const MemoryLimits& limits, SystemStep step, const std::error_code& error,
                      const SystemUse& use) {
    const int64_t status = status_of(error);
    std::string limit;
    std::string why;
    switch (step) {
        case SystemStep::grant:
            if (is_errno(error, ENOSPC)) {
                limit = "grants";
                why = fmt::format(
                    "this guest's grants are used up ({} pages in all: {} MiB); raise the "
                    "guest's max_grant_frames (xl.cfg; 512 pages per frame) and, on Xen, "
                    "gntalloc's limit in the guest (xen_gntalloc.limit=PAGES); on xenhsa-sim "
                    "--grant-frames",
                    limits.grant_pages ? std::to_string(*limits.grant_pages) : "?",
                    limits.grant_pages ? std::to_string(mib(*limits.grant_pages)) : "?");
            } else if (is_errno(error, ENOMEM)) {
                limit = "guest memory";
                why =
                    "this guest's memory is used up; give it more (xl.cfg memory=; "
                    "xenhsa-run --ram-pages)";
            }
            break;
        case SystemStep::map:
            if (status == XENHSA_STATUS_QUOTA) {
                why = share_refusal({"map", "mapped", "max_map_pages", "--map-pool-pages"},
                                    limits.map_pages, use.mapped_pages, use.step_pages, limits,
                                    limit);
            } else if (status == XENHSA_STATUS_NO_MEMORY) {
                limit = "backend maps";
                why =
                    "the backend domain could not map the pages: its grant maps are used up "
                    "(dom0's maptrack table: gnttab_max_maptrack_frames= on Xen's command "
                    "line, 256 pages per frame; xenhsa-sim --maptrack-frames) or its memory";
            }
            break;
        case SystemStep::lend:
            if (status == XENHSA_STATUS_QUOTA) {
                why =
                    share_refusal({"lend", "lent", "max_lend_pages", "--lend-pool-pages"},
                                  limits.lend_pages, use.lent_pages, use.step_pages, limits, limit);
            } else if (status == XENHSA_STATUS_NO_MEMORY) {
                limit = "backend lends";
                why =
                    "the backend domain could not lend the pages: gntalloc's limit there "
                    "(xen_gntalloc.limit=PAGES), dom0's grant table (gnttab_max_frames= on "
                    "Xen's command line) or dom0's memory";
            }
            break;
        case SystemStep::pin:
            if (status == XENHSA_STATUS_QUOTA) {
                limit = "pins";
                why =
                    "the backend's pinned-page quota for this guest or its handle quota is "
                    "used up; raise max_pinned_pages or max_handles on the backend "
                    "(xenhsa-ctl quota --set max_pinned_pages=...)";
            } else if (status == XENHSA_STATUS_NO_MEMORY) {
                limit = "backend pins";
                why =
                    "the backend's kernel could not pin the pages for the GPU (the backend's "
                    "memory, or its locked-memory limit: LimitMEMLOCK=infinity)";
            }
            break;
    }
    if (why.empty()) {
        return {};
    }
    return {limit, fmt::format("a system memory allocation of {} MiB was refused ({}): {}",
                               (use.bytes + (1u << 20) - 1) >> 20, error.message(), why)};
}

void tell_limit_once(const Refusal& refusal) noexcept {
    static std::mutex mutex;
    static std::set<std::string> told;
    try {
        std::lock_guard lock(mutex);
        if (!refusal.limit.empty() && told.insert(refusal.limit).second) {
            log().warn("{}", refusal.text);
        }
    } catch (...) {
    }
}

}  // namespace xenhsa::frontend::hsakmt
