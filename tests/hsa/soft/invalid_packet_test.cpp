// Invalid packets stop the queue with an error (no fault report); an INVALID header
// makes the queue wait, as the hardware does, until the producer stores it.
#include <hsa/hsa_ext_amd.h>

#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

class InvalidPacketTest : public SoftAgentTest {};

// A dispatch of fill (4 words into a GPU buffer) with one field broken by `breaker`.
struct BadPacket {
    const char* name;
    void (*breaker)(hsa_kernel_dispatch_packet_t& packet);
};

const BadPacket kBadPackets[] = {
    // Vendor packets: only AMD's PM4 indirect buffer (format 1) runs (vendor_test.cpp).
    {"vendor_barrier_value",
     [](hsa_kernel_dispatch_packet_t& p) {
         p.header = packet_header(HSA_PACKET_TYPE_VENDOR_SPECIFIC);
         p.setup = HSA_AMD_PACKET_TYPE_BARRIER_VALUE;  // AMD's format word
     }},
    {"vendor_unknown_format",
     [](hsa_kernel_dispatch_packet_t& p) {
         p.header = packet_header(HSA_PACKET_TYPE_VENDOR_SPECIFIC);
         p.setup = 0x77;
     }},
    {"agent_dispatch_type",
     [](hsa_kernel_dispatch_packet_t& p) {
         p.header = packet_header(HSA_PACKET_TYPE_AGENT_DISPATCH);
     }},
    {"reserved_type", [](hsa_kernel_dispatch_packet_t& p) { p.header = 0x17; }},
    {"unknown_kernel_object", [](hsa_kernel_dispatch_packet_t& p) { p.kernel_object += 8; }},
    {"null_kernel_object", [](hsa_kernel_dispatch_packet_t& p) { p.kernel_object = 0; }},
    {"zero_dimensions", [](hsa_kernel_dispatch_packet_t& p) { p.setup = 0; }},
    {"zero_grid", [](hsa_kernel_dispatch_packet_t& p) { p.grid_size_x = 0; }},
    {"zero_workgroup", [](hsa_kernel_dispatch_packet_t& p) { p.workgroup_size_x = 0; }},
    {"unused_dimension_not_one", [](hsa_kernel_dispatch_packet_t& p) { p.grid_size_y = 2; }},
    {"workgroup_too_large",
     [](hsa_kernel_dispatch_packet_t& p) {
         p.setup = 2;
         p.workgroup_size_x = 64;
         p.workgroup_size_y = 32;
         p.grid_size_y = 32;
     }},
    {"grid_over_2_32_items",
     [](hsa_kernel_dispatch_packet_t& p) {
         p.setup = 2;
         p.grid_size_x = 0x10000;
         p.grid_size_y = 0x10000;
     }},
    {"group_segment_too_large",
     [](hsa_kernel_dispatch_packet_t& p) { p.group_segment_size = 1u << 20; }},
};

class BadPacketTest : public InvalidPacketTest, public ::testing::WithParamInterface<BadPacket> {};

TEST_P(BadPacketTest, StopsTheQueueWithAnErrorAndNoFault) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
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
    EXPECT_TRUE(log().faults().empty());
}

INSTANTIATE_TEST_SUITE_P(Packets, BadPacketTest, ::testing::ValuesIn(kBadPackets),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

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
