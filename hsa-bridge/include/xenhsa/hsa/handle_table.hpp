// Opaque per-guest handles: what a guest names its objects by. A handle encodes a slot,
// the slot's generation and the object's kind, scrambled with a per-table key so that
// guests cannot guess other values; a stale, forged or other-kind handle finds nothing.
// Never a host pointer, never an fd. Single-threaded, like the worker that owns it.
#ifndef XENHSA_HSA_HANDLE_TABLE_HPP
#define XENHSA_HSA_HANDLE_TABLE_HPP

#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <vector>

namespace xenhsa::hsa {

using Handle = uint64_t; // 0 is never a valid handle

template <class T>
class HandleTable {
public:
    // `kind` (1..255) tells tables of one guest apart: a handle of one kind is unknown to
    // every other table. `capacity` bounds the live handles (the guest's quota).
    HandleTable(uint8_t kind, uint32_t capacity) : kind_(kind), capacity_(capacity)
    {
        std::random_device rd;
        key_ = (uint64_t{rd()} << 32 | rd()) & ~(uint64_t{0xFF} << 56);
    }

    // nullopt when full.
    std::optional<Handle> insert(T value)
    {
        if (live_ >= capacity_) {
            return std::nullopt;
        }
        uint32_t index = 0;
        if (!free_.empty()) {
            index = free_.back();
            free_.pop_back();
        } else {
            index = static_cast<uint32_t>(slots_.size());
            slots_.emplace_back();
        }
        Slot &slot = slots_[index];
        slot.value.emplace(std::move(value));
        ++live_;
        return encode(index, slot.generation);
    }

    [[nodiscard]] T *find(Handle h) noexcept
    {
        auto index = decode(h);
        return index ? &*slots_[*index].value : nullptr;
    }
    [[nodiscard]] const T *find(Handle h) const noexcept
    {
        auto index = decode(h);
        return index ? &*slots_[*index].value : nullptr;
    }

    // The value, or nullopt for an unknown handle. The slot's generation moves on, so
    // the handle is stale from now on.
    std::optional<T> erase(Handle h)
    {
        auto index = decode(h);
        if (!index) {
            return std::nullopt;
        }
        Slot &slot = slots_[*index];
        std::optional<T> out(std::move(slot.value));
        slot.value.reset();
        slot.generation = (slot.generation + 1) & kGenerationMask;
        free_.push_back(*index);
        --live_;
        return out;
    }

    [[nodiscard]] uint32_t size() const noexcept { return live_; }
    [[nodiscard]] uint32_t capacity() const noexcept { return capacity_; }

    // Visits (handle, value&) for every live entry, in slot order.
    template <class F>
    void for_each(F &&f)
    {
        for (uint32_t i = 0; i < slots_.size(); ++i) {
            if (slots_[i].value) {
                f(encode(i, slots_[i].generation), *slots_[i].value);
            }
        }
    }

private:
    static constexpr uint32_t kGenerationMask = 0xFFFFFF;
    struct Slot {
        std::optional<T> value;
        uint32_t generation = 1;
    };

    [[nodiscard]] Handle encode(uint32_t index, uint32_t generation) const noexcept
    {
        uint64_t raw = uint64_t{kind_} << 56 | uint64_t{generation} << 32 | index;
        return raw ^ key_;
    }
    [[nodiscard]] std::optional<uint32_t> decode(Handle h) const noexcept
    {
        uint64_t raw = h ^ key_;
        if ((raw >> 56) != kind_) {
            return std::nullopt;
        }
        auto index = static_cast<uint32_t>(raw);
        auto generation = static_cast<uint32_t>(raw >> 32) & kGenerationMask;
        if (index >= slots_.size() || !slots_[index].value ||
            slots_[index].generation != generation) {
            return std::nullopt;
        }
        return index;
    }

    uint8_t kind_;
    uint32_t capacity_;
    uint64_t key_ = 0;
    uint32_t live_ = 0;
    std::vector<Slot> slots_;
    std::vector<uint32_t> free_;
};

}  // namespace xenhsa::hsa

#endif
