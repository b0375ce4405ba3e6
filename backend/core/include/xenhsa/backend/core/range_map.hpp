// Which parts of a guest's VA window are taken, and by what kind of object: the
// placement checks of MAP, LEND and ALLOC (overlap -> BAD_ADDRESS, overlap with a revoked
// LEND -> REVOKED) and ALLOC's choice of a free range. Ranges never overlap.
#ifndef XENHSA_BACKEND_CORE_RANGE_MAP_HPP
#define XENHSA_BACKEND_CORE_RANGE_MAP_HPP

#include <cstdint>
#include <map>
#include <optional>

namespace xenhsa::backend::core {

enum class RangeKind : uint8_t { map, lend, lend_revoked, alloc };

struct Range {
    uint64_t va = 0;
    uint64_t size = 0;
    RangeKind kind = RangeKind::map;
    [[nodiscard]] uint64_t end() const noexcept { return va + size; }
};

class RangeMap {
public:
    // What a new range [va, va + size) would collide with.
    enum class Overlap : uint8_t { none, object, revoked_lend };
    [[nodiscard]] Overlap overlap(uint64_t va, uint64_t size) const noexcept;

    // The range that contains `va`, if any.
    [[nodiscard]] const Range* containing(uint64_t va) const noexcept;
    // The range that starts exactly at `va`, if any.
    [[nodiscard]] const Range* at(uint64_t va) const noexcept;

    // The caller has checked overlap(); claiming an overlapping range is refused (false).
    bool claim(uint64_t va, uint64_t size, RangeKind kind);
    // Never allocates.
    void release(uint64_t va) noexcept;
    // Removes every range of `kind`, `gone(const Range &)` running for each first.
    template <class F>
    void release_all(RangeKind kind, F&& gone) noexcept {
        for (auto it = ranges_.begin(); it != ranges_.end();) {
            if (it->second.kind == kind) {
                gone(it->second);
                it = ranges_.erase(it);
            } else {
                ++it;
            }
        }
    }
    void set_kind(uint64_t va, RangeKind kind) noexcept;

    // The lowest free page-aligned range of `size` bytes inside [lo, hi).
    [[nodiscard]] std::optional<uint64_t> find_free(uint64_t lo, uint64_t hi,
                                                    uint64_t size) const noexcept;

    [[nodiscard]] bool empty() const noexcept { return ranges_.empty(); }
    [[nodiscard]] std::size_t count() const noexcept { return ranges_.size(); }

private:
    std::map<uint64_t, Range> ranges_;  // by start
};

}  // namespace xenhsa::backend::core

#endif
