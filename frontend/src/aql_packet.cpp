#include <cstring>
#include <xenhsa/frontend/aql_packet.hpp>

namespace xenhsa::frontend::aql {

namespace {

// Writes everything past the first 32 bits of `packet` into the slot.
template <class Packet>
void write_tail(void* slot, const Packet& packet) noexcept {
    static_assert(sizeof(Packet) == kPacketSize);
    std::memcpy(static_cast<std::byte*>(slot) + 4, reinterpret_cast<const std::byte*>(&packet) + 4,
                kPacketSize - 4);
}

template <class Packet>
void write_barrier(void* slot, const BarrierSpec& spec, hsa_packet_type_t type) noexcept {
    Packet packet;
    std::memset(&packet, 0, sizeof packet);
    for (std::size_t i = 0; i < kBarrierDeps; ++i) {
        packet.dep_signal[i].handle = spec.deps[i];
    }
    packet.completion_signal.handle = spec.completion_signal;
    write_tail(slot, packet);
    publish_header(slot, header(type, spec.barrier, spec.acquire, spec.release), 0);
}

}  // namespace

void publish_header(void* slot, uint16_t h, uint16_t setup) noexcept {
    const uint32_t word = uint32_t{h} | (uint32_t{setup} << 16);
    __atomic_store_n(static_cast<uint32_t*>(slot), word, __ATOMIC_RELEASE);
}

void invalidate(void* slot) noexcept {
    __atomic_store_n(
        static_cast<uint16_t*>(slot),
        header(HSA_PACKET_TYPE_INVALID, false, HSA_FENCE_SCOPE_NONE, HSA_FENCE_SCOPE_NONE),
        __ATOMIC_RELEASE);
}

uint16_t load_header(const void* slot) noexcept {
    return __atomic_load_n(static_cast<const uint16_t*>(slot), __ATOMIC_ACQUIRE);
}

void write_dispatch_body(void* slot, const DispatchSpec& spec) noexcept {
    hsa_kernel_dispatch_packet_t packet;
    std::memset(&packet, 0, sizeof packet);
    packet.workgroup_size_x = spec.workgroup[0];
    packet.workgroup_size_y = spec.workgroup[1];
    packet.workgroup_size_z = spec.workgroup[2];
    packet.grid_size_x = spec.grid[0];
    packet.grid_size_y = spec.grid[1];
    packet.grid_size_z = spec.grid[2];
    packet.private_segment_size = spec.private_segment_size;
    packet.group_segment_size = spec.group_segment_size;
    packet.kernel_object = spec.kernel_object;
    packet.kernarg_address = reinterpret_cast<void*>(static_cast<uintptr_t>(spec.kernarg_address));
    packet.completion_signal.handle = spec.completion_signal;
    write_tail(slot, packet);
}

void write_dispatch(void* slot, const DispatchSpec& spec) noexcept {
    write_dispatch_body(slot, spec);
    const auto setup =
        static_cast<uint16_t>(spec.dimensions << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
    publish_header(
        slot, header(HSA_PACKET_TYPE_KERNEL_DISPATCH, spec.barrier, spec.acquire, spec.release),
        setup);
}

void write_barrier_and(void* slot, const BarrierSpec& spec) noexcept {
    write_barrier<hsa_barrier_and_packet_t>(slot, spec, HSA_PACKET_TYPE_BARRIER_AND);
}

void write_barrier_or(void* slot, const BarrierSpec& spec) noexcept {
    write_barrier<hsa_barrier_or_packet_t>(slot, spec, HSA_PACKET_TYPE_BARRIER_OR);
}

}  // namespace xenhsa::frontend::aql
