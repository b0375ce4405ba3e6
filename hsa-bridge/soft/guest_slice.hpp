// GuestSlice: the one way the software agent touches guest memory, and the only place a
// guest VA becomes a host reference (the backend mirrors guest VAs in the worker, so the
// address is the same number).
//
// A slice is [va, va + size) as the address space checked it for one kind of access. It
// comes only from AddressSpace: from a View (View::slice: valid while that View holds the
// space, i.e. until it ends or lets a writer in), or from the memory a queue holds
// (HeldQueueMemory: valid while the queue holds it). Every accessor is bounds-checked
// against the slice and refuses (false or nullopt, nothing touched) what lies outside;
// atomics refuse a misaligned address too. A read slice has no way to write: stores,
// fills, copies into it and read-modify-write atomics exist only on a write slice (which
// converts to a read slice). Accessors take no lock and allocate nothing: a bounds check,
// then memcpy, memmove, memset or an atomic_ref on the mirrored memory.
#ifndef XENHSA_HSA_SOFT_GUEST_SLICE_HPP
#define XENHSA_HSA_SOFT_GUEST_SLICE_HPP

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <type_traits>
#include <xenhsa/hsa/types.hpp>

namespace xenhsa::hsa::soft {

enum class Access : uint8_t { read, write };

class AddressSpace;
template <Access A>
class GuestSlice;
template <Access A>
class SliceOrFault;

// A naturally aligned T in a slice, for atomic operations: loads from any slice, stores
// and read-modify-writes only from a write slice.
template <class T, Access A>
class GuestAtomic {
public:
    [[nodiscard]] T load(std::memory_order order) const noexcept { return ref().load(order); }
    void store(T value, std::memory_order order) const noexcept requires(A == Access::write) {
        ref().store(value, order);
    }
    T fetch_add(T value, std::memory_order order) const noexcept requires(A == Access::write) {
        return ref().fetch_add(value, order);
    }
    T fetch_sub(T value, std::memory_order order) const noexcept requires(A == Access::write) {
        return ref().fetch_sub(value, order);
    }

private:
    friend class GuestSlice<A>;
    explicit GuestAtomic(T* object) noexcept : object_(object) {}
    [[nodiscard]] std::atomic_ref<T> ref() const noexcept { return std::atomic_ref<T>(*object_); }

    T* object_;  // as atomic_ref: a pointer (which, unlike atomic_ref, can be reassigned)
};

template <Access A>
class GuestSlice {
public:
    // A write slice may be read.
    operator GuestSlice<Access::read>() const noexcept  // NOLINT: widening is safe
        requires(A == Access::write) {
        return GuestSlice<Access::read>(va_, size_);
    }

    [[nodiscard]] Va va() const noexcept { return va_; }
    [[nodiscard]] uint64_t size() const noexcept { return size_; }
    // [offset, offset + len) lies in the slice.
    [[nodiscard]] bool contains(uint64_t offset, uint64_t len) const noexcept {
        return offset <= size_ && len <= size_ - offset;
    }

    // Copies out.size() bytes from `offset` into out.
    [[nodiscard]] bool read(uint64_t offset, std::span<std::byte> out) const noexcept {
        if (!contains(offset, out.size())) {
            return false;
        }
        if (!out.empty()) {
            std::memcpy(out.data(), at(offset), out.size());
        }
        return true;
    }
    // A T at `offset`, whatever its alignment (not atomic).
    template <class T>
    requires std::is_trivially_copyable_v<T>
    [[nodiscard]] std::optional<T> load(uint64_t offset) const noexcept {
        if (!contains(offset, sizeof(T))) {
            return std::nullopt;
        }
        T value;
        std::memcpy(&value, at(offset), sizeof value);
        return value;
    }

    // Copies in into the slice at `offset`.
    [[nodiscard]] bool write(uint64_t offset, std::span<const std::byte> in) const noexcept
        requires(A == Access::write) {
        if (!contains(offset, in.size())) {
            return false;
        }
        if (!in.empty()) {
            std::memcpy(at(offset), in.data(), in.size());
        }
        return true;
    }
    // Stores `value` at `offset`, whatever its alignment (not atomic).
    template <class T>
    requires(A == Access::write && std::is_trivially_copyable_v<T>)
        [[nodiscard]] bool store(uint64_t offset, const T& value) const noexcept {
        if (!contains(offset, sizeof(T))) {
            return false;
        }
        std::memcpy(at(offset), &value, sizeof value);
        return true;
    }
    // `len` bytes from `offset` of the 4-byte pattern repeated (its bytes in memory
    // order; a last partial copy when len is not a multiple of 4). memset when the
    // pattern's bytes are equal; else the pattern doubles in place up to a block that
    // stays in L1, which is then copied on: memcpy speed, whatever the alignment.
    [[nodiscard]] bool fill(uint64_t offset, uint64_t len, uint32_t pattern) const noexcept
        requires(A == Access::write) {
        if (!contains(offset, len)) {
            return false;
        }
        if (len == 0) {
            return true;
        }
        std::byte* dst = at(offset);
        std::array<unsigned char, sizeof pattern> bytes{};
        std::memcpy(bytes.data(), &pattern, sizeof pattern);
        if (bytes[0] == bytes[1] && bytes[1] == bytes[2] && bytes[2] == bytes[3]) {
            std::memset(dst, bytes[0], len);
            return true;
        }
        constexpr uint64_t kBlock = 8192;
        uint64_t done = std::min<uint64_t>(len, sizeof pattern);
        std::memcpy(dst, bytes.data(), done);
        while (done < len) {
            const uint64_t step = std::min({done, len - done, kBlock});
            std::memcpy(dst + done, dst, step);
            done += step;
        }
        return true;
    }
    // Copies all of `src` into the slice at `offset`, as memmove (they may overlap).
    [[nodiscard]] bool move_from(uint64_t offset,
                                 const GuestSlice<Access::read>& src) const noexcept
        requires(A == Access::write) {
        if (!contains(offset, src.size())) {
            return false;
        }
        if (src.size() != 0) {
            std::memmove(at(offset), src.at(0), src.size());
        }
        return true;
    }

    // The T at `offset`, for atomic operations: nullopt unless it lies in the slice and
    // its address is aligned as std::atomic_ref<T> requires.
    template <class T>
    requires std::is_trivially_copyable_v<T>
    [[nodiscard]] std::optional<GuestAtomic<T, A>> atomic(uint64_t offset) const noexcept {
        if (!contains(offset, sizeof(T)) ||
            (va_ + offset) % std::atomic_ref<T>::required_alignment != 0) {
            return std::nullopt;
        }
        return GuestAtomic<T, A>(reinterpret_cast<T*>(at(offset)));
    }

private:
    friend class AddressSpace;               // checks, then makes slices
    friend class GuestSlice<Access::write>;  // converts to a read slice
    friend class GuestSlice<Access::read>;   // move_from reads the source
    friend class SliceOrFault<A>;            // its empty slice

    GuestSlice() noexcept = default;  // empty: refuses every access
    GuestSlice(Va va, uint64_t size) noexcept : va_(va), size_(size) {}

    // The host address of the byte at `offset` (in the slice: checked by the caller).
    [[nodiscard]] std::byte* at(uint64_t offset) const noexcept {
        return reinterpret_cast<std::byte*>(static_cast<uintptr_t>(va_ + offset));
    }

    Va va_ = 0;
    uint64_t size_ = 0;
};

// A slice, or the first address the GPU may not access that way (View::slice). A fault
// dereferences to an empty slice, which refuses every access.
template <Access A>
class SliceOrFault {
public:
    explicit SliceOrFault(GuestSlice<A> slice) noexcept : slice_(slice) {}
    static SliceOrFault at(Va fault) noexcept { return SliceOrFault(fault); }

    [[nodiscard]] explicit operator bool() const noexcept { return !fault_; }
    [[nodiscard]] std::optional<Va> fault() const noexcept { return fault_; }
    [[nodiscard]] const GuestSlice<A>& operator*() const noexcept { return slice_; }
    [[nodiscard]] const GuestSlice<A>* operator->() const noexcept { return &slice_; }

private:
    explicit SliceOrFault(Va fault) noexcept : fault_(fault) {}

    GuestSlice<A> slice_;
    std::optional<Va> fault_;
};

}  // namespace xenhsa::hsa::soft

#endif
