#include <xenhsa/backend/core/range_map.hpp>

namespace xenhsa::backend::core {

RangeMap::Overlap RangeMap::overlap(uint64_t va, uint64_t size) const noexcept {
    Overlap found = Overlap::none;
    const uint64_t end = va + size;
    auto it = ranges_.upper_bound(va);
    if (it != ranges_.begin()) {
        --it;
        if (it->second.end() <= va) {
            ++it;
        }
    }
    for (; it != ranges_.end() && it->first < end; ++it) {
        if (it->second.kind == RangeKind::lend_revoked) {
            return Overlap::revoked_lend;
        }
        found = Overlap::object;
    }
    return found;
}

const Range* RangeMap::containing(uint64_t va) const noexcept {
    auto it = ranges_.upper_bound(va);
    if (it == ranges_.begin()) {
        return nullptr;
    }
    --it;
    return va < it->second.end() ? &it->second : nullptr;
}

const Range* RangeMap::at(uint64_t va) const noexcept {
    auto it = ranges_.find(va);
    return it != ranges_.end() ? &it->second : nullptr;
}

bool RangeMap::claim(uint64_t va, uint64_t size, RangeKind kind) {
    if (size == 0 || overlap(va, size) != Overlap::none) {
        return false;
    }
    ranges_.emplace(va, Range{va, size, kind});
    return true;
}

void RangeMap::release(uint64_t va) noexcept {
    auto it = ranges_.find(va);
    if (it != ranges_.end()) {
        ranges_.erase(it);
    }
}

void RangeMap::set_kind(uint64_t va, RangeKind kind) noexcept {
    auto it = ranges_.find(va);
    if (it != ranges_.end()) {
        it->second.kind = kind;
    }
}

std::optional<uint64_t> RangeMap::find_free(uint64_t lo, uint64_t hi,
                                            uint64_t size) const noexcept {
    if (size == 0 || hi < lo || hi - lo < size) {
        return std::nullopt;
    }
    uint64_t cursor = lo;
    for (auto it = ranges_.lower_bound(0); it != ranges_.end(); ++it) {
        const Range& r = it->second;
        if (r.end() <= cursor) {
            continue;
        }
        if (r.va >= hi) {
            break;
        }
        if (r.va > cursor && r.va - cursor >= size) {
            return cursor;
        }
        cursor = r.end();
        if (cursor >= hi) {
            return std::nullopt;
        }
    }
    if (hi - cursor >= size) {
        return cursor;
    }
    return std::nullopt;
}

}  // namespace xenhsa::backend::core
