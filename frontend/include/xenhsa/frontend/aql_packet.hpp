// AQL packets as the guest writes them into a queue's ring (HSA runtime spec 2.9; layouts
// from ROCm's <hsa/hsa.h>). The body is written first; the header (with the setup word)
// goes last, as one 32-bit store with release order, as ROCr does: once the packet
// processor sees a valid header, the whole packet is there.
#ifndef XENHSA_FRONTEND_AQL_PACKET_HPP
#define XENHSA_FRONTEND_AQL_PACKET_HPP

#include <hsa/hsa.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace xenhsa::frontend::aql {

static_assert(sizeof(hsa_kernel_dispatch_packet_t) == 64);
static_assert(sizeof(hsa_barrier_and_packet_t) == 64);
static_assert(sizeof(hsa_barrier_or_packet_t) == 64);

inline constexpr std::size_t kPacketSize = 64;
inline constexpr std::size_t kBarrierDeps = 5;

// The 16-bit packet header.
[[nodiscard]] constexpr uint16_t header(
    hsa_packet_type_t type, bool barrier = false,
    hsa_fence_scope_t acquire = HSA_FENCE_SCOPE_SYSTEM,
    hsa_fence_scope_t release = HSA_FENCE_SCOPE_SYSTEM) noexcept {
    return static_cast<uint16_t>((unsigned{type} << HSA_PACKET_HEADER_TYPE) |
                                 (unsigned{barrier ? 1u : 0u} << HSA_PACKET_HEADER_BARRIER) |
                                 (unsigned{acquire} << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                                 (unsigned{release} << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

// The packet type encoded in a header.
[[nodiscard]] constexpr hsa_packet_type_t header_type(uint16_t h) noexcept {
    return static_cast<hsa_packet_type_t>((h >> HSA_PACKET_HEADER_TYPE) &
                                          ((1u << HSA_PACKET_HEADER_WIDTH_TYPE) - 1u));
}

struct DispatchSpec {
    uint64_t kernel_object = 0;      // from QUERY KERNEL
    uint64_t kernarg_address = 0;    // guest VA of the kernel arguments (GPU-mapped)
    uint64_t completion_signal = 0;  // signal handle (amd_signal_t address), 0 for none
    uint32_t dimensions = 1;         // 1..3
    std::array<uint32_t, 3> grid{1, 1, 1};
    std::array<uint16_t, 3> workgroup{1, 1, 1};
    uint32_t private_segment_size = 0;
    uint32_t group_segment_size = 0;
    bool barrier = false;
    hsa_fence_scope_t acquire = HSA_FENCE_SCOPE_SYSTEM;
    hsa_fence_scope_t release = HSA_FENCE_SCOPE_SYSTEM;
};

struct BarrierSpec {
    std::array<uint64_t, kBarrierDeps> deps{};  // signal handles; 0 entries are ignored
    uint64_t completion_signal = 0;
    bool barrier = true;
    hsa_fence_scope_t acquire = HSA_FENCE_SCOPE_SYSTEM;
    hsa_fence_scope_t release = HSA_FENCE_SCOPE_SYSTEM;
};

// Stores `header | setup << 16` into the first 32 bits of `slot` with release order.
void publish_header(void* slot, uint16_t header, uint16_t setup) noexcept;

// Marks a slot free (type INVALID), as a ring is initialised and as a packet processor
// leaves a consumed slot.
void invalidate(void* slot) noexcept;

// The header word of a slot, loaded with acquire order.
[[nodiscard]] uint16_t load_header(const void* slot) noexcept;

// Everything but the header/setup word, then the header last. `slot` is a 64-byte
// ring slot whose header currently reads INVALID.
void write_dispatch_body(void* slot, const DispatchSpec& spec) noexcept;
void write_dispatch(void* slot, const DispatchSpec& spec) noexcept;
void write_barrier_and(void* slot, const BarrierSpec& spec) noexcept;
void write_barrier_or(void* slot, const BarrierSpec& spec) noexcept;

}  // namespace xenhsa::frontend::aql

#endif
