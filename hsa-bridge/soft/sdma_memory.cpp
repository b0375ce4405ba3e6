#include "sdma_memory.hpp"

#include <algorithm>
#include <cstring>

namespace xenhsa::hsa::soft::sdma {

namespace {

bool halted_now(const std::atomic<bool>& halted) noexcept {
    return halted.load(std::memory_order_acquire);
}

// The address of row (y, z) of one side of a rect copy; nullopt past 2^64.
std::optional<Va> row_address(const RectSide& side, uint64_t y, uint64_t z,
                              uint32_t element_log2) noexcept {
    // Each term is below 2^41 elements (field widths), so only the final add can wrap.
    const uint64_t elements = (side.z + z) * side.slice + (side.y + y) * side.pitch + side.x;
    Va row = 0;
    if (__builtin_add_overflow(side.base, elements << element_log2, &row)) {
        return std::nullopt;
    }
    return row;
}

template <class T>
std::optional<Va> check_aligned(const AddressSpace::View& view, Va address, Access access) {
    if (address % sizeof(T) != 0) {
        return address;
    }
    return view.check(address, sizeof(T), access);
}

}  // namespace

OpEnd copy_linear(const AddressSpace& space, Va dst, Va src, uint64_t bytes,
                  const std::atomic<bool>& halted) {
    // The first chunk is checked at src and dst themselves, so a later src + done (inside
    // checked ranges, below the VA limit) cannot wrap.
    for (uint64_t done = 0; done < bytes;) {
        if (halted_now(halted)) {
            return OpEnd{true, std::nullopt};
        }
        const uint64_t n = std::min(bytes - done, kChunkBytes);
        const auto view = space.view();
        if (auto fault = view.check(src + done, n, Access::read)) {
            return OpEnd::at(*fault);
        }
        if (auto fault = view.check(dst + done, n, Access::write)) {
            return OpEnd::at(*fault);
        }
        std::memmove(host_ptr(dst + done), host_ptr(src + done), n);
        done += n;
    }
    return {};
}

OpEnd copy_rect(const AddressSpace& space, const CopyLinearRect& packet,
                const std::atomic<bool>& halted) {
    const uint32_t element = packet.element_log2();
    const RectSide src = rect_src(packet);
    const RectSide dst = rect_dst(packet);
    const uint64_t row_bytes = (uint64_t{bits(packet.rect_xy, 0, 14)} + 1) << element;
    const uint64_t rows = uint64_t{bits(packet.rect_xy, 16, 14)} + 1;
    const uint64_t slices = uint64_t{bits(packet.rect_z, 0, 11)} + 1;
    for (uint64_t z = 0; z < slices; ++z) {
        for (uint64_t y = 0; y < rows; ++y) {
            if (halted_now(halted)) {
                return OpEnd{true, std::nullopt};
            }
            const auto from = row_address(src, y, z, element);
            if (!from) {
                return OpEnd::at(src.base);
            }
            const auto to = row_address(dst, y, z, element);
            if (!to) {
                return OpEnd::at(dst.base);
            }
            const auto view = space.view();
            if (auto fault = view.check(*from, row_bytes, Access::read)) {
                return OpEnd::at(*fault);
            }
            if (auto fault = view.check(*to, row_bytes, Access::write)) {
                return OpEnd::at(*fault);
            }
            std::memmove(host_ptr(*to), host_ptr(*from), row_bytes);
        }
    }
    return {};
}

OpEnd fill_dwords(const AddressSpace& space, Va dst, uint32_t value, uint64_t dwords,
                  const std::atomic<bool>& halted) {
    if (dst % sizeof(uint32_t) != 0) {
        return OpEnd::at(dst);
    }
    const uint64_t bytes = dwords * sizeof(uint32_t);
    for (uint64_t done = 0; done < bytes;) {
        if (halted_now(halted)) {
            return OpEnd{true, std::nullopt};
        }
        const uint64_t n = std::min(bytes - done, kChunkBytes);
        const auto view = space.view();
        if (auto fault = view.check(dst + done, n, Access::write)) {
            return OpEnd::at(*fault);
        }
        std::byte* out = host_ptr(dst + done);
        for (uint64_t i = 0; i < n; i += sizeof value) {
            std::memcpy(out + i, &value, sizeof value);
        }
        done += n;
    }
    return {};
}

OpEnd store32(const AddressSpace& space, Va address, uint32_t value) {
    const auto view = space.view();
    if (auto fault = check_aligned<uint32_t>(view, address, Access::write)) {
        return OpEnd::at(*fault);
    }
    guest_atomic<uint32_t>(address).store(value, std::memory_order_release);
    return {};
}

OpEnd store64(const AddressSpace& space, Va address, uint64_t value) {
    const auto view = space.view();
    if (auto fault = check_aligned<uint64_t>(view, address, Access::write)) {
        return OpEnd::at(*fault);
    }
    guest_atomic<uint64_t>(address).store(value, std::memory_order_release);
    return {};
}

OpEnd add64(const AddressSpace& space, Va address, uint64_t value) {
    const auto view = space.view();
    if (auto fault = check_aligned<uint64_t>(view, address, Access::write)) {
        return OpEnd::at(*fault);
    }
    guest_atomic<uint64_t>(address).fetch_add(value, std::memory_order_acq_rel);
    return {};
}

Load32 load32(const AddressSpace& space, Va address) {
    const auto view = space.view();
    if (auto fault = check_aligned<uint32_t>(view, address, Access::read)) {
        return Load32{0, fault};
    }
    return Load32{guest_atomic<uint32_t>(address).load(std::memory_order_acquire), std::nullopt};
}

}  // namespace xenhsa::hsa::soft::sdma
