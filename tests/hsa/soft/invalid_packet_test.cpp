// Invalid packets stop the queue with an error (no fault report), whose code is stored in
// the queue's inactive signal as a command processor stores it (queue_errors.hpp); an
// INVALID header makes the queue wait, as the hardware does, until the producer stores it.
#include <hsa/hsa_ext_amd.h>

#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

class InvalidPacketTest : public SoftAgentTest {};

// A dispatch of fill (4 words into a GPU buffer) with one field broken by `breaker`, and
// the code ROCr is told (its DynamicScratchHandler's: 2 invalid dimensions, 4 invalid
// group memory, 8 invalid code, 32 invalid packet format, 64 group too large, 256 vendor
// packet).
struct BadPacket {
    const char* name;
    void (*breaker)(hsa_kernel_dispatch_packet_t& packet);
    int64_t code;
};

const BadPacket kBadPackets[] = {
    // Vendor packets: only AMD's PM4 indirect buffer (format 1) runs (vendor_test.cpp).
    {"vendor_barrier_value",
     [](hsa_kernel_dispatch_packet_t& p) {
         p.header = packet_header(HSA_PACKET_TYPE_VENDOR_SPECIFIC);
         p.setup = HSA_AMD_PACKET_TYPE_BARRIER_VALUE;  // AMD's format word
     },
     256},
    {"vendor_unknown_format",
     [](hsa_kernel_dispatch_packet_t& p) {
         p.header = packet_header(HSA_PACKET_TYPE_VENDOR_SPECIFIC);
         p.setup = 0x77;
     },
     256},
    {"agent_dispatch_type",
     [](hsa_kernel_dispatch_packet_t& p) {
         p.header = packet_header(HSA_PACKET_TYPE_AGENT_DISPATCH);
     },
     32},
    {"reserved_type", [](hsa_kernel_dispatch_packet_t& p) { p.header = 0x17; }, 32},
    {"unknown_kernel_object", [](hsa_kernel_dispatch_packet_t& p) { p.kernel_object += 8; }, 8},
    {"null_kernel_object", [](hsa_kernel_dispatch_packet_t& p) { p.kernel_object = 0; }, 8},
    {"zero_dimensions", [](hsa_kernel_dispatch_packet_t& p) { p.setup = 0; }, 2},
    {"zero_grid", [](hsa_kernel_dispatch_packet_t& p) { p.grid_size_x = 0; }, 2},
    {"zero_workgroup", [](hsa_kernel_dispatch_packet_t& p) { p.workgroup_size_x = 0; }, 2},
    {"unused_dimension_not_one", [](hsa_kernel_dispatch_packet_t& p) { p.grid_size_y = 2; }, 2},
    {"workgroup_too_large",
     [](hsa_kernel_dispatch_packet_t& p) {
         p.setup = 2;
         p.workgroup_size_x = 64;
         p.workgroup_size_y = 32;
         p.grid_size_y = 32;
     },
     64},
    {"grid_over_2_32_items",
     [](hsa_kernel_dispatch_packet_t& p) {
         p.setup = 2;
         p.grid_size_x = 0x10000;
         p.grid_size_y = 0x10000;
     },
     2},
    {"group_segment_too_large",
     [](hsa_kernel_dispatch_packet_t& p) { p.group_segment_size = 1u << 20; }, 4},
};

class BadPacketTest : public InvalidPacketTest, public ::testing::WithParamInterface<BadPacket> {};

TEST_P(BadPacketTest, StopsTheQueueWithAnErrorAndNoFault) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    const EventId error = make_event();
    AqlTestQueue queue(device(),
                       QueueOptions{.error_event = error, .inactive_signal = signals.init(3, 0)});
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 1, 0});

    // A good packet first: it runs.
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), signals.init(0, 1)));
    auto bad = dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), signals.init(1, 1));
    GetParam().breaker(bad);
    queue.submit(bad);
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), signals.init(2, 1)));

    ASSERT_TRUE(fired(error));
    EXPECT_TRUE(signals.wait_eq(0, 0));
    queue.destroy();
    EXPECT_EQ(queue.read_index(), 1u);  // the bad packet was not consumed
    EXPECT_EQ(signals.value(1), 1);
    EXPECT_EQ(signals.value(2), 1);  // nothing after it ran
    EXPECT_EQ(signals.value(3), GetParam().code) << "the code in the queue's inactive signal";
    EXPECT_TRUE(log().faults().empty());
}

INSTANTIATE_TEST_SUITE_P(Packets, BadPacketTest, ::testing::ValuesIn(kBadPackets),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// A write index no producer can publish: more than a ring ahead of the read index with no
// packet there to run, or behind where it was. The queue stops with an error, as for an
// invalid packet (issue 11, item 4).
struct HostileIndex {
    const char* name;
    uint64_t (*index)(uint64_t read);
};

const HostileIndex kHostileIndexes[] = {
    {"one_past_a_full_ring", [](uint64_t read) { return read + 65; }},
    {"two_to_the_40_ahead", [](uint64_t read) -> uint64_t { return read + (1ull << 40); }},
    {"two_to_the_63_ahead", [](uint64_t read) -> uint64_t { return read + (1ull << 63); }},
    {"all_ones", [](uint64_t) -> uint64_t { return ~0ull; }},
    {"backwards", [](uint64_t read) { return read - 1; }},
};

class HostileWriteIndexTest : public InvalidPacketTest,
                              public ::testing::WithParamInterface<HostileIndex> {};

TEST_P(HostileWriteIndexTest, StopsTheQueueWithAnErrorAndNoFault) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    const EventId error = make_event();
    AqlTestQueue queue(device(),
                       QueueOptions{.error_event = error, .inactive_signal = signals.init(3, 0)});
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 1, 0});
    queue.submit(dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), signals.init(0, 1)));
    ASSERT_TRUE(signals.wait_eq(0, 0));
    ASSERT_TRUE(queue.wait_read_index(1));

    // Nothing more written, but the write index says something else.
    const uint64_t hostile = GetParam().index(1);
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(queue.wptr_va()))
        .store(hostile, std::memory_order_release);
    ASSERT_TRUE(device().ring_doorbell(queue.id(), hostile));

    EXPECT_TRUE(fired(error, 2000)) << "no queue error";
    // The queue fetches nothing more, even once a packet is there.
    const auto late =
        dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), signals.init(1, 1));
    queue.write_body(1, late);
    queue.publish_header(1, late);
    ASSERT_TRUE(device().ring_doorbell(queue.id(), hostile));
    EXPECT_FALSE(signals.wait_eq(1, 0, std::chrono::milliseconds(50)));
    queue.destroy();
    EXPECT_EQ(queue.read_index(), 1u);
    EXPECT_EQ(signals.value(3), 32) << "an invalid packet format, in the queue's inactive signal";
    EXPECT_TRUE(log().faults().empty());
}

INSTANTIATE_TEST_SUITE_P(Indexes, HostileWriteIndexTest, ::testing::ValuesIn(kHostileIndexes),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// ROCr takes a slot by adding to the write index before it waits for room (BlitKernel's
// AcquireWriteIndex, HIP's dispatch): a burst that fills the ring leaves the index one
// past it while every packet from the read index on is there to run. No error.
TEST_F(InvalidPacketTest, AProducerReservingPastAFullRingIsNoError) {
    SignalPage signals(device());
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    for (uint64_t i = 0; i < 64; ++i) {
        const auto packet = barrier_packet({}, signals.init(static_cast<uint32_t>(i % 8), 1));
        queue.write_body(i, packet);
        queue.publish_header(i, packet);
    }
    const uint64_t reserved = 65;  // 64 packets written, a 65th slot taken
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(queue.wptr_va()))
        .store(reserved, std::memory_order_release);
    ASSERT_TRUE(device().ring_doorbell(queue.id(), reserved));
    ASSERT_TRUE(queue.wait_read_index(64)) << queue.read_index() << " " << fired(error, 0);
    // The waiting producer finds room and writes its packet.
    const auto last = barrier_packet({}, signals.init(9, 1));
    queue.write_body(64, last);
    queue.publish_header(64, last);
    ASSERT_TRUE(device().ring_doorbell(queue.id(), reserved));
    ASSERT_TRUE(signals.wait_eq(9, 0));
    EXPECT_FALSE(fired(error, 0));
}

// A full ring is a producer's ordinary state, not an error: 64 packets published on a
// 64-slot ring while the first one blocks.
TEST_F(InvalidPacketTest, AFullRingIsNoError) {
    SignalPage signals(device());
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    const uint64_t gate = signals.init(0, 1);
    queue.submit(barrier_packet({gate}, 0));
    for (uint32_t i = 1; i < 64; ++i) {
        queue.submit(barrier_packet({}, signals.init(1 + i % 8, 1)));
    }
    EXPECT_EQ(queue.write_index(), 64u);
    EXPECT_FALSE(fired(error, 100));
    signals.store(0, 0);
    ASSERT_TRUE(queue.wait_read_index(64));
    EXPECT_FALSE(fired(error, 0));
}

TEST_F(InvalidPacketTest, InvalidHeaderWaitsUntilTheProducerStoresIt) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 6, 0});
    const auto packet =
        dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), signals.init(0, 1));

    // Reserved, body written, write index published and doorbell rung: header INVALID.
    const uint64_t index = queue.reserve();
    queue.write_body(index, packet);
    queue.publish_write_index();
    EXPECT_EQ(queue.read_index(), 0u);
    EXPECT_EQ(signals.value(0), 1);

    // The header alone, without another doorbell: the queue re-checks on its own.
    queue.publish_header(index, packet);
    ASSERT_TRUE(signals.wait_eq(0, 0));
    EXPECT_EQ(data.at<uint32_t>()[3], 6u);
    EXPECT_TRUE(queue.wait_read_index(1));
}

TEST_F(InvalidPacketTest, PacketsAreProcessedOnlyUpToTheWriteIndex) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 6, 0});
    const auto packet =
        dispatch_packet(kernel_object("fill"), fill, grid_1d(4, 4), signals.init(0, 1));
    // A valid packet in the slot, but the write index not yet moved.
    const uint64_t index = queue.reserve();
    queue.write_body(index, packet);
    queue.publish_header(index, packet);
    queue.ring_doorbell();
    // A barrier on another queue completing shows the agent has been running meanwhile.
    AqlTestQueue other(device());
    other.submit(barrier_packet({}, signals.init(1, 1)));
    ASSERT_TRUE(signals.wait_eq(1, 0));
    EXPECT_EQ(signals.value(0), 1);

    queue.publish_write_index();
    ASSERT_TRUE(signals.wait_eq(0, 0));
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
