// Opaque per-guest handles: what a guest names its objects by. A handle is the object's
// kind, its slot's generation and the slot, put through a keyed permutation with a random
// key of the table's own (HandleCipher), so that handles reveal neither each other nor the
// slots; a stale, forged or other-kind handle finds nothing. 0 is never issued, and no
// value is issued twice by a table (a slot whose generations are used up is retired).
// Never a host pointer, never an fd. Single-threaded, like the worker that owns it.
#ifndef XENHSA_HSA_HANDLE_TABLE_HPP
#define XENHSA_HSA_HANDLE_TABLE_HPP

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>
#include <xenhsa/hsa/handle_cipher.hpp>

namespace xenhsa::hsa {

using Handle = uint64_t;  // 0 is never a valid handle

template <class T>
class HandleTable {
public:
    // How many handles one slot issues before it is retired (at most 2^24 - 1).
    static constexpr uint32_t kMaxGenerations = 0xFFFFFF;

    // `kind` (1..255) tells tables of one guest apart: a handle of one kind is unknown to
    // every other table. `capacity` bounds the live handles (the guest's quota);
    // `generations` (tests) how many handles a slot issues. Throws std::system_error when
    // the OS has no randomness for the key.
    HandleTable(uint8_t kind, uint32_t capacity, uint32_t generations = kMaxGenerations)
        : kind_(kind),
          capacity_(capacity),
          retired_(std::clamp<uint32_t>(generations, 2, kMaxGenerations)),
          cipher_(HandleCipher::random()) {}

    // nullopt when full.
    std::optional<Handle> insert(T value) {
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
        Slot& slot = slots_[index];
        slot.value.emplace(std::move(value));
        ++live_;
        Handle handle = encode(index, slot.generation);
        if (handle == 0) {  // one value in 2^64: skip that generation
            ++slot.generation;
            handle = encode(index, slot.generation);
        }
        return handle;
    }

    [[nodiscard]] T* find(Handle h) noexcept {
        auto index = decode(h);
        return index ? &*slots_[*index].value : nullptr;
    }
    [[nodiscard]] const T* find(Handle h) const noexcept {
        auto index = decode(h);
        return index ? &*slots_[*index].value : nullptr;
    }

    // The value, or nullopt for an unknown handle. The slot's generation moves on, so
    // the handle is stale from now on.
    std::optional<T> erase(Handle h) {
        auto index = decode(h);
        if (!index) {
            return std::nullopt;
        }
        Slot& slot = slots_[*index];
        std::optional<T> out(std::move(slot.value));
        slot.value.reset();
        --live_;
        // A slot whose generations are used up is never used again: wrapping would give
        // a value it gave before. (One slot's memory per 2^24 handles issued.)
        if (++slot.generation < retired_) {
            free_.push_back(*index);
        }
        return out;
    }

    [[nodiscard]] uint32_t size() const noexcept { return live_; }
    [[nodiscard]] uint32_t capacity() const noexcept { return capacity_; }

    // Visits (handle, value&) for every live entry, in slot order.
    template <class F>
    void for_each(F&& f) {
        for (uint32_t i = 0; i < slots_.size(); ++i) {
            if (slots_[i].value) {
                f(encode(i, slots_[i].generation), *slots_[i].value);
            }
        }
    }
    template <class F>
    void for_each(F&& f) const {
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
        uint32_t generation = 0;
    };

    [[nodiscard]] Handle encode(uint32_t index, uint32_t generation) const noexcept {
        return cipher_.encrypt(uint64_t{kind_} << 56 | uint64_t{generation} << 32 | index);
    }
    [[nodiscard]] std::optional<uint32_t> decode(Handle h) const noexcept {
        if (h == 0) {
            return std::nullopt;
        }
        const uint64_t raw = cipher_.decrypt(h);
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
    uint32_t retired_;  // a slot at this generation is never used again
    HandleCipher cipher_;
    uint32_t live_ = 0;
    std::vector<Slot> slots_;
    std::vector<uint32_t> free_;
};

}  // namespace xenhsa::hsa

#endif
