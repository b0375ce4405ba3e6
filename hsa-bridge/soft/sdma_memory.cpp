#include "sdma_memory.hpp"

#include <algorithm>

namespace xenhsa::hsa::soft::sdma {

namespace {

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

// One naturally aligned T at `address`: misaligned is a fault there.
template <class T, Access A>
SliceOrFault<A> single(const AddressSpace::View& view, Va address) {
    return view.aligned_slice<A>(address, sizeof(T), sizeof(T));
}

// A copy of `bytes` from src to dst, each checked first (a fault at the first address the
// GPU may not reach, the source first).
OpEnd copy_checked(const AddressSpace::View& view, Va dst, Va src, uint64_t bytes) {
    const auto from = view.slice<Access::read>(src, bytes);
    if (!from) {
        return OpEnd{false, from.fault()};
    }
    const auto to = view.slice<Access::write>(dst, bytes);
    if (!to || !to->move_from(0, *from)) {
        return OpEnd{false, to.fault().value_or(dst)};  // move_from: not refused
    }
    return {};
}

}  // namespace

OpEnd copy_linear(const AddressSpace& space, Va dst, Va src, uint64_t bytes, Pace& pace) {
    // The first chunk is checked at src and dst themselves, so a later src + done (inside
    // checked ranges, below the VA limit) cannot wrap.
    for (uint64_t done = 0; done < bytes;) {
        if (!pace.go()) {
            return OpEnd{true, std::nullopt};
        }
        const uint64_t n = std::min(bytes - done, kChunkBytes);
        if (const OpEnd end = copy_checked(space.view(), dst + done, src + done, n); !end.done()) {
            return end;
        }
        done += n;
    }
    return {};
}

OpEnd copy_rect(const AddressSpace& space, const CopyLinearRect& packet, Pace& pace) {
    const uint32_t element = packet.element_log2();
    const RectSide src = rect_src(packet);
    const RectSide dst = rect_dst(packet);
    const uint64_t row_bytes = (uint64_t{bits(packet.rect_xy, 0, 14)} + 1) << element;
    const uint64_t rows = uint64_t{bits(packet.rect_xy, 16, 14)} + 1;
    const uint64_t slices = uint64_t{bits(packet.rect_z, 0, 11)} + 1;
    for (uint64_t z = 0; z < slices; ++z) {
        for (uint64_t y = 0; y < rows; ++y) {
            if (!pace.go()) {
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
            if (const OpEnd end = copy_checked(space.view(), *to, *from, row_bytes); !end.done()) {
                return end;
            }
        }
    }
    return {};
}

OpEnd fill_dwords(const AddressSpace& space, Va dst, uint32_t value, uint64_t dwords, Pace& pace) {
    if (dst % sizeof(uint32_t) != 0) {
        return OpEnd::at(dst);
    }
    const uint64_t bytes = dwords * sizeof(uint32_t);
    for (uint64_t done = 0; done < bytes;) {
        if (!pace.go()) {
            return OpEnd{true, std::nullopt};
        }
        const uint64_t n = std::min(bytes - done, kChunkBytes);
        const auto view = space.view();
        const auto out = view.slice<Access::write>(dst + done, n);
        if (!out || !out->fill(0, n, value)) {
            return OpEnd::at(out.fault().value_or(dst + done));  // fill: not refused
        }
        done += n;
    }
    return {};
}

OpEnd store32(const AddressSpace& space, Va address, uint32_t value) {
    const auto view = space.view();
    const auto word = single<uint32_t, Access::write>(view, address);
    const auto atomic = word->atomic<uint32_t>(0);
    if (!atomic) {
        return OpEnd::at(word.fault().value_or(address));  // an aligned slice: not refused
    }
    atomic->store(value, std::memory_order_release);
    return {};
}

OpEnd store64(const AddressSpace& space, Va address, uint64_t value) {
    const auto view = space.view();
    const auto word = single<uint64_t, Access::write>(view, address);
    const auto atomic = word->atomic<uint64_t>(0);
    if (!atomic) {
        return OpEnd::at(word.fault().value_or(address));
    }
    atomic->store(value, std::memory_order_release);
    return {};
}

OpEnd add64(const AddressSpace& space, Va address, uint64_t value) {
    const auto view = space.view();
    const auto word = single<uint64_t, Access::write>(view, address);
    const auto atomic = word->atomic<uint64_t>(0);
    if (!atomic) {
        return OpEnd::at(word.fault().value_or(address));
    }
    atomic->fetch_add(value, std::memory_order_acq_rel);
    return {};
}

Load32 load32(const AddressSpace& space, Va address) {
    const auto view = space.view();
    const auto word = single<uint32_t, Access::read>(view, address);
    const auto atomic = word->atomic<uint32_t>(0);
    if (!atomic) {
        return Load32{0, word.fault().value_or(address)};
    }
    return Load32{atomic->load(std::memory_order_acquire), std::nullopt};
}

}  // namespace xenhsa::hsa::soft::sdma
