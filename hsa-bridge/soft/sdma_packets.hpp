// The gfx9 SDMA ("SDMA v4") packets the engine runs: the ones ROCr 5.2.3's BlitSdmaV4
// writes (amd_blit_sdma.cpp), described here as arrays of little-endian dwords with the
// fields each dword holds. A packet is a whole number of dwords; its first dword (the
// header) names it: opcode in bits 0..7, sub-opcode in bits 8..15.
//
// Counts are "minus one" in v4: a linear copy of n bytes has count n - 1, a dword fill of
// n dwords has count 4n - 4 (the engine reads the count as bytes - 1 and fills
// count / 4 + 1 dwords, which is also what the kernel's n - 1 gives).
#ifndef XENHSA_HSA_SOFT_SDMA_PACKETS_HPP
#define XENHSA_HSA_SOFT_SDMA_PACKETS_HPP

#include <cstdint>
#include <optional>

namespace xenhsa::hsa::soft::sdma {

inline constexpr uint32_t kOpNop = 0;
inline constexpr uint32_t kOpCopy = 1;
inline constexpr uint32_t kOpFence = 5;
inline constexpr uint32_t kOpTrap = 6;
inline constexpr uint32_t kOpPollRegMem = 8;
inline constexpr uint32_t kOpAtomic = 10;
inline constexpr uint32_t kOpConstFill = 11;
inline constexpr uint32_t kOpTimestamp = 13;
inline constexpr uint32_t kOpGcr = 17;

inline constexpr uint32_t kSubCopyLinear = 0;
inline constexpr uint32_t kSubCopyLinearRect = 4;
inline constexpr uint32_t kSubTimestampGetGlobal = 2;
inline constexpr uint32_t kSubGcrUser = 1;

inline constexpr uint32_t kAtomicAdd64 = 47;
inline constexpr uint32_t kFillDword = 2;

// `width` bits of `word` from bit `shift` (width < 32).
constexpr uint32_t bits(uint32_t word, unsigned shift, unsigned width) noexcept {
    return (word >> shift) & ((1U << width) - 1);
}
constexpr uint32_t opcode(uint32_t header) noexcept { return bits(header, 0, 8); }
constexpr uint32_t sub_opcode(uint32_t header) noexcept { return bits(header, 8, 8); }
constexpr uint64_t address(uint32_t lo, uint32_t hi) noexcept { return (uint64_t{hi} << 32) | lo; }

// NOP: the header alone, followed by `count` (bits 16..29) dwords that are skipped. The
// zero padding ROCr writes up to the ring's end is a run of one-dword NOPs.
constexpr uint32_t nop_skip(uint32_t header) noexcept { return bits(header, 16, 14); }

struct CopyLinear {
    uint32_t header;
    uint32_t count;      // bits 0..21: bytes - 1
    uint32_t parameter;  // dst_swap bits 16..17, src_swap bits 24..25
    uint32_t src_lo;
    uint32_t src_hi;
    uint32_t dst_lo;
    uint32_t dst_hi;

    [[nodiscard]] uint64_t bytes() const noexcept { return uint64_t{bits(count, 0, 22)} + 1; }
    [[nodiscard]] bool swaps() const noexcept {
        return bits(parameter, 16, 2) != 0 || bits(parameter, 24, 2) != 0;
    }
};
static_assert(sizeof(CopyLinear) == 7 * sizeof(uint32_t));

// A 3-D sub-rectangle copy in elements of 1 << element bytes. Offsets are in elements;
// pitch (row length) and slice pitch (rows times pitch) are in elements, minus one.
struct CopyLinearRect {
    uint32_t header;  // element (log2 of its bytes, 0..4) in bits 29..31
    uint32_t src_lo;
    uint32_t src_hi;
    uint32_t src_offset_xy;       // x bits 0..13, y bits 16..29
    uint32_t src_offset_z_pitch;  // z bits 0..10, pitch - 1 bits 13..31
    uint32_t src_slice_pitch;     // slice pitch - 1 bits 0..27
    uint32_t dst_lo;
    uint32_t dst_hi;
    uint32_t dst_offset_xy;
    uint32_t dst_offset_z_pitch;
    uint32_t dst_slice_pitch;
    uint32_t rect_xy;  // x - 1 bits 0..13, y - 1 bits 16..29
    uint32_t rect_z;   // z - 1 bits 0..10, dst_swap bits 16..17, src_swap bits 24..25

    [[nodiscard]] uint32_t element_log2() const noexcept { return bits(header, 29, 3); }
    [[nodiscard]] bool swaps() const noexcept {
        return bits(rect_z, 16, 2) != 0 || bits(rect_z, 24, 2) != 0;
    }
};
static_assert(sizeof(CopyLinearRect) == 13 * sizeof(uint32_t));

// One side of a rect copy, decoded.
struct RectSide {
    uint64_t base = 0;
    uint64_t x = 0;  // offsets, in elements
    uint64_t y = 0;
    uint64_t z = 0;
    uint64_t pitch = 0;  // in elements
    uint64_t slice = 0;
};

inline RectSide rect_src(const CopyLinearRect& p) noexcept {
    return {address(p.src_lo, p.src_hi),
            bits(p.src_offset_xy, 0, 14),
            bits(p.src_offset_xy, 16, 14),
            bits(p.src_offset_z_pitch, 0, 11),
            uint64_t{bits(p.src_offset_z_pitch, 13, 19)} + 1,
            uint64_t{bits(p.src_slice_pitch, 0, 28)} + 1};
}

inline RectSide rect_dst(const CopyLinearRect& p) noexcept {
    return {address(p.dst_lo, p.dst_hi),
            bits(p.dst_offset_xy, 0, 14),
            bits(p.dst_offset_xy, 16, 14),
            bits(p.dst_offset_z_pitch, 0, 11),
            uint64_t{bits(p.dst_offset_z_pitch, 13, 19)} + 1,
            uint64_t{bits(p.dst_slice_pitch, 0, 28)} + 1};
}

struct ConstFill {
    uint32_t header;  // swap bits 16..17, fill size bits 30..31 (2: dwords)
    uint32_t dst_lo;
    uint32_t dst_hi;
    uint32_t data;
    uint32_t count;  // bits 0..21: bytes - 1 (ROCr: bytes - 4)

    [[nodiscard]] uint32_t fill_size() const noexcept { return bits(header, 30, 2); }
    [[nodiscard]] bool swaps() const noexcept { return bits(header, 16, 2) != 0; }
    [[nodiscard]] uint64_t dwords() const noexcept { return bits(count, 0, 22) / 4 + 1; }
};
static_assert(sizeof(ConstFill) == 5 * sizeof(uint32_t));

// Stores `data` (32 bits) at a dword-aligned address.
struct Fence {
    uint32_t header;
    uint32_t addr_lo;
    uint32_t addr_hi;
    uint32_t data;
};
static_assert(sizeof(Fence) == 4 * sizeof(uint32_t));

// An interrupt whose context ROCr sets to the signal's event id.
struct Trap {
    uint32_t header;
    uint32_t int_context;  // bits 0..27

    [[nodiscard]] uint32_t context() const noexcept { return bits(int_context, 0, 28); }
};
static_assert(sizeof(Trap) == 2 * sizeof(uint32_t));

// Waits until (memory & mask) <func> value. mem_poll 0 polls a register instead: ROCr's
// HDP flush packet, which has nothing to do on a software GPU.
struct PollRegMem {
    uint32_t header;  // hdp_flush bit 26, func bits 28..30, mem_poll bit 31
    uint32_t addr_lo;
    uint32_t addr_hi;
    uint32_t value;
    uint32_t mask;
    uint32_t interval_retry;  // interval bits 0..15, retry count bits 16..27 (0xfff: forever)

    [[nodiscard]] bool memory() const noexcept { return bits(header, 31, 1) != 0; }
    [[nodiscard]] uint32_t function() const noexcept { return bits(header, 28, 3); }
};
static_assert(sizeof(PollRegMem) == 6 * sizeof(uint32_t));

// The compare functions of POLL_REGMEM (as the CP's WAIT_REG_MEM): 0 always, 1 <, 2 <=,
// 3 ==, 4 !=, 5 >=, 6 >. 7 is reserved: nullopt.
constexpr std::optional<bool> poll_compare(uint32_t function, uint32_t masked,
                                           uint32_t reference) noexcept {
    switch (function) {
        case 0:
            return true;
        case 1:
            return masked < reference;
        case 2:
            return masked <= reference;
        case 3:
            return masked == reference;
        case 4:
            return masked != reference;
        case 5:
            return masked >= reference;
        case 6:
            return masked > reference;
        default:
            return std::nullopt;
    }
}

struct Atomic {
    uint32_t header;  // loop bit 16, operation bits 25..31
    uint32_t addr_lo;
    uint32_t addr_hi;
    uint32_t src_lo;
    uint32_t src_hi;
    uint32_t cmp_lo;
    uint32_t cmp_hi;
    uint32_t loop_interval;

    [[nodiscard]] uint32_t operation() const noexcept { return bits(header, 25, 7); }
    [[nodiscard]] uint64_t source() const noexcept { return address(src_lo, src_hi); }
};
static_assert(sizeof(Atomic) == 8 * sizeof(uint32_t));

// Stores the 64-bit global timestamp.
struct Timestamp {
    uint32_t header;
    uint32_t addr_lo;
    uint32_t addr_hi;
};
static_assert(sizeof(Timestamp) == 3 * sizeof(uint32_t));

// The cache writeback/invalidate of gfx10 (a no-op here).
inline constexpr uint32_t kGcrDwords = 5;

// The longest packet copied out of the ring (a NOP's skipped dwords never are).
inline constexpr uint32_t kMaxPacketDwords = 13;

template <class Packet>
inline constexpr uint32_t kDwords = sizeof(Packet) / sizeof(uint32_t);
static_assert(kMaxPacketDwords == kDwords<CopyLinearRect>);

// Dwords of the packet `header` starts, or nullopt for an opcode or sub-opcode the
// engine does not run.
constexpr std::optional<uint32_t> packet_dwords(uint32_t header) noexcept {
    const uint32_t sub = sub_opcode(header);
    const auto only_if = [](bool known, uint32_t dwords) {
        return known ? std::optional<uint32_t>(dwords) : std::nullopt;
    };
    switch (opcode(header)) {
        case kOpNop:
            return only_if(sub == 0, 1 + nop_skip(header));
        case kOpCopy:
            if (sub == kSubCopyLinear) {
                return kDwords<CopyLinear>;
            }
            return only_if(sub == kSubCopyLinearRect, kDwords<CopyLinearRect>);
        case kOpFence:
            return kDwords<Fence>;
        case kOpTrap:
            return kDwords<Trap>;
        case kOpPollRegMem:
            return kDwords<PollRegMem>;
        case kOpAtomic:
            return kDwords<Atomic>;
        case kOpConstFill:
            return kDwords<ConstFill>;
        case kOpTimestamp:
            return only_if(sub == kSubTimestampGetGlobal, kDwords<Timestamp>);
        case kOpGcr:
            return only_if(sub == kSubGcrUser, kGcrDwords);
        default:
            return std::nullopt;
    }
}

}  // namespace xenhsa::hsa::soft::sdma

#endif
