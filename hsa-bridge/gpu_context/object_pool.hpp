// A fixed-capacity pool of objects addressed by slot index. Everything is allocated at
// construction, so acquiring and releasing slots never allocates: the release paths
// (revoke_range, teardown) use it without touching the heap.
#ifndef XENHSA_HSA_GPU_CONTEXT_OBJECT_POOL_HPP
#define XENHSA_HSA_GPU_CONTEXT_OBJECT_POOL_HPP

#include <cerrno>
#include <cstdint>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

namespace xenhsa::hsa::detail {

// EDQUOT (a quota of GpuLimits); std::errc has no name for it.
inline std::error_code quota_exceeded() noexcept { return {EDQUOT, std::generic_category()}; }

template <class T>
class ObjectPool {
public:
    explicit ObjectPool(uint32_t capacity) : slots_(capacity) {
        free_.reserve(capacity);
        for (uint32_t i = capacity; i-- > 0;) {
            free_.push_back(i);  // slot 0 is handed out first
        }
    }

    // nullopt when full.
    std::optional<uint32_t> acquire(T value) noexcept {
        if (free_.empty()) {
            return std::nullopt;
        }
        const uint32_t index = free_.back();
        free_.pop_back();
        slots_[index].value = std::move(value);
        slots_[index].live = true;
        return index;
    }

    // Never allocates: free_ has room for every slot.
    void release(uint32_t index) noexcept {
        slots_[index].live = false;
        slots_[index].value = T{};
        free_.push_back(index);
    }

    [[nodiscard]] bool live(uint32_t index) const noexcept {
        return index < slots_.size() && slots_[index].live;
    }
    T& operator[](uint32_t index) noexcept { return slots_[index].value; }
    const T& operator[](uint32_t index) const noexcept { return slots_[index].value; }

    [[nodiscard]] uint32_t size() const noexcept {
        return static_cast<uint32_t>(slots_.size() - free_.size());
    }

    // Visits (index, value&) for every live slot, in index order.
    template <class F>
    void for_each(F&& f) {
        for (uint32_t i = 0; i < slots_.size(); ++i) {
            if (slots_[i].live) {
                f(i, slots_[i].value);
            }
        }
    }
    template <class F>
    void for_each(F&& f) const {
        for (uint32_t i = 0; i < slots_.size(); ++i) {
            if (slots_[i].live) {
                f(i, slots_[i].value);
            }
        }
    }

private:
    struct Slot {
        T value{};
        bool live = false;
    };
    std::vector<Slot> slots_;
    std::vector<uint32_t> free_;
};

}  // namespace xenhsa::hsa::detail

#endif
