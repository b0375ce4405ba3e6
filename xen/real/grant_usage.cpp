// GrantUsage on real Xen: held_by() reads this domain's own grant table (own_grant_table
// .hpp); in dom0 the entries naming a guest are the pages a backend lent it, and after
// the lender let go, gntalloc ends access for pages the guest no longer maps and defers
// the rest, so entries still permitted or still mapped are the pages the guest holds.
// share_pool_pages() is gntalloc's global page limit, which counts those deferred pages
// too. Where the table cannot be read, held_by() fails with ENOTSUP.
#include <fstream>
#include <limits>
#include <new>
#include <string>
#include <xenhsa/xen/real/platform.hpp>
#include <xenhsa/xen/store.hpp>

#include "own_grant_table.hpp"

namespace xenhsa::xen::real {

namespace {

constexpr const char* kGntallocLimit = "/sys/module/xen_gntalloc/parameters/limit";

class RealGrantUsage final : public GrantUsage {
public:
    explicit RealGrantUsage(std::unique_ptr<OwnGrantTable> table) noexcept
        : table_(std::move(table)) {}

    Result<uint32_t> held_by(DomId peer) noexcept override {
        if (!table_) {
            return errno_code(ENOTSUP);
        }
        return table_->held_by(peer);
    }

    Result<uint32_t> share_pool_pages() noexcept override { return gntalloc_limit(); }

private:
    std::unique_ptr<OwnGrantTable> table_;  // null: held_by() cannot tell
};

}  // namespace

Result<uint32_t> gntalloc_limit() noexcept {
    try {
        std::ifstream in(kGntallocLimit);
        std::string value;
        if (!std::getline(in, value)) {
            return errno_code(ENOTSUP);  // no gntalloc module loaded, or not readable
        }
        auto limit = parse_store_uint(value, std::numeric_limits<uint32_t>::max());
        if (!limit) {
            return limit.error();
        }
        return static_cast<uint32_t>(limit.value());
    } catch (const std::exception&) {
        return errno_code(ENOMEM);
    }
}

Result<std::unique_ptr<GrantUsage>> open_grant_usage() {
    auto usage =
        std::unique_ptr<GrantUsage>(new (std::nothrow) RealGrantUsage(OwnGrantTable::open()));
    if (!usage) {
        return errno_code(ENOMEM);
    }
    return usage;
}

}  // namespace xenhsa::xen::real
