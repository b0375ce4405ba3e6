// AQL packet writers: ROCm's layouts, every field in place, the header written last.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <xenhsa/frontend/aql_packet.hpp>

namespace {

using namespace xenhsa::frontend::aql;

struct alignas(64) Slot {
    std::array<std::byte, kPacketSize> bytes{};
    template <class Packet>
    Packet as() const {
        Packet p;
        std::memcpy(&p, bytes.data(), sizeof p);
        return p;
    }
    uint16_t header16() const { return load_header(bytes.data()); }
};

const uint16_t kInvalid =
    header(HSA_PACKET_TYPE_INVALID, false, HSA_FENCE_SCOPE_NONE, HSA_FENCE_SCOPE_NONE);

TEST(AqlPacket, HeaderBitsFollowHsaH) {
    const uint16_t h = header(HSA_PACKET_TYPE_KERNEL_DISPATCH, true, HSA_FENCE_SCOPE_AGENT,
                              HSA_FENCE_SCOPE_SYSTEM);
    EXPECT_EQ(h & 0xFF, HSA_PACKET_TYPE_KERNEL_DISPATCH);
    EXPECT_EQ((h >> 8) & 1, 1);
    EXPECT_EQ((h >> 9) & 3, HSA_FENCE_SCOPE_AGENT);
    EXPECT_EQ((h >> 11) & 3, HSA_FENCE_SCOPE_SYSTEM);
    EXPECT_EQ(header_type(h), HSA_PACKET_TYPE_KERNEL_DISPATCH);
    EXPECT_EQ(header_type(kInvalid), HSA_PACKET_TYPE_INVALID);
}

DispatchSpec sample_dispatch() {
    DispatchSpec spec;
    spec.kernel_object = 0x1122334455667788ull;
    spec.kernarg_address = 0x100000001000ull;
    spec.completion_signal = 0x100000002000ull;
    spec.dimensions = 2;
    spec.grid = {1024, 4, 1};
    spec.workgroup = {64, 2, 1};
    spec.private_segment_size = 16;
    spec.group_segment_size = 256;
    return spec;
}

TEST(AqlPacket, BodyLeavesTheHeaderAloneUntilPublished) {
    Slot slot;
    invalidate(slot.bytes.data());
    write_dispatch_body(slot.bytes.data(), sample_dispatch());
    // The packet processor still sees a free slot...
    EXPECT_EQ(slot.header16(), kInvalid);
    const auto p = slot.as<hsa_kernel_dispatch_packet_t>();
    EXPECT_EQ(p.setup, 0u);
    // ...although the whole body is already in place.
    EXPECT_EQ(p.kernel_object, 0x1122334455667788ull);
    EXPECT_EQ(p.grid_size_x, 1024u);
    EXPECT_EQ(p.workgroup_size_y, 2u);
}

TEST(AqlPacket, KernelDispatchLayout) {
    Slot slot;
    invalidate(slot.bytes.data());
    write_dispatch(slot.bytes.data(), sample_dispatch());
    const auto p = slot.as<hsa_kernel_dispatch_packet_t>();
    EXPECT_EQ(header_type(p.header), HSA_PACKET_TYPE_KERNEL_DISPATCH);
    EXPECT_EQ((p.header >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3, HSA_FENCE_SCOPE_SYSTEM);
    EXPECT_EQ(p.setup, 2u);  // dimensions
    EXPECT_EQ(p.workgroup_size_x, 64u);
    EXPECT_EQ(p.workgroup_size_y, 2u);
    EXPECT_EQ(p.workgroup_size_z, 1u);
    EXPECT_EQ(p.reserved0, 0u);
    EXPECT_EQ(p.grid_size_x, 1024u);
    EXPECT_EQ(p.grid_size_y, 4u);
    EXPECT_EQ(p.grid_size_z, 1u);
    EXPECT_EQ(p.private_segment_size, 16u);
    EXPECT_EQ(p.group_segment_size, 256u);
    EXPECT_EQ(p.kernel_object, 0x1122334455667788ull);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.kernarg_address), 0x100000001000ull);
    EXPECT_EQ(p.reserved2, 0u);
    EXPECT_EQ(p.completion_signal.handle, 0x100000002000ull);
    // The offsets the software agent reads (HSA runtime spec, table 2-7).
    EXPECT_EQ(offsetof(hsa_kernel_dispatch_packet_t, grid_size_x), 12u);
    EXPECT_EQ(offsetof(hsa_kernel_dispatch_packet_t, kernel_object), 32u);
    EXPECT_EQ(offsetof(hsa_kernel_dispatch_packet_t, kernarg_address), 40u);
    EXPECT_EQ(offsetof(hsa_kernel_dispatch_packet_t, completion_signal), 56u);
}

TEST(AqlPacket, StaleBytesAreOverwritten) {
    Slot slot;
    std::memset(slot.bytes.data(), 0xFF, slot.bytes.size());
    invalidate(slot.bytes.data());
    DispatchSpec spec;
    spec.kernel_object = 1;
    write_dispatch(slot.bytes.data(), spec);
    const auto p = slot.as<hsa_kernel_dispatch_packet_t>();
    EXPECT_EQ(p.reserved0, 0u);
    EXPECT_EQ(p.reserved2, 0u);
    EXPECT_EQ(p.kernarg_address, nullptr);
    EXPECT_EQ(p.completion_signal.handle, 0u);
}

TEST(AqlPacket, BarrierAndLayout) {
    Slot slot;
    std::memset(slot.bytes.data(), 0xEE, slot.bytes.size());
    invalidate(slot.bytes.data());
    BarrierSpec spec;
    spec.deps = {0x10, 0x20, 0, 0, 0x50};
    spec.completion_signal = 0x60;
    write_barrier_and(slot.bytes.data(), spec);
    const auto p = slot.as<hsa_barrier_and_packet_t>();
    EXPECT_EQ(header_type(p.header), HSA_PACKET_TYPE_BARRIER_AND);
    EXPECT_EQ((p.header >> HSA_PACKET_HEADER_BARRIER) & 1, 1);
    EXPECT_EQ(p.reserved0, 0u);
    EXPECT_EQ(p.reserved1, 0u);
    EXPECT_EQ(p.dep_signal[0].handle, 0x10u);
    EXPECT_EQ(p.dep_signal[1].handle, 0x20u);
    EXPECT_EQ(p.dep_signal[2].handle, 0u);
    EXPECT_EQ(p.dep_signal[4].handle, 0x50u);
    EXPECT_EQ(p.reserved2, 0u);
    EXPECT_EQ(p.completion_signal.handle, 0x60u);
    EXPECT_EQ(offsetof(hsa_barrier_and_packet_t, dep_signal), 8u);
    EXPECT_EQ(offsetof(hsa_barrier_and_packet_t, completion_signal), 56u);
}

TEST(AqlPacket, BarrierOrLayout) {
    Slot slot;
    invalidate(slot.bytes.data());
    BarrierSpec spec;
    spec.deps = {0x10, 0, 0, 0, 0};
    spec.barrier = false;
    write_barrier_or(slot.bytes.data(), spec);
    const auto p = slot.as<hsa_barrier_or_packet_t>();
    EXPECT_EQ(header_type(p.header), HSA_PACKET_TYPE_BARRIER_OR);
    EXPECT_EQ((p.header >> HSA_PACKET_HEADER_BARRIER) & 1, 0);
    EXPECT_EQ(p.dep_signal[0].handle, 0x10u);
    EXPECT_EQ(p.completion_signal.handle, 0u);
}

TEST(AqlPacket, PublishStoresHeaderAndSetupTogether) {
    Slot slot;
    publish_header(slot.bytes.data(), 0x1234, 0xABCD);
    uint32_t word = 0;
    std::memcpy(&word, slot.bytes.data(), 4);
    EXPECT_EQ(word, 0xABCD1234u);  // little-endian: header in the low half
}

}  // namespace
