// AMD's vendor-specific AQL packet for a PM4 indirect buffer (ROCr's ExecutePM4, the
// cache invalidation it submits on gfx9): a no-op on a software GPU that still retires
// the packet and completes its signal. Other vendor formats: invalid_packet_test.cpp.
#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

// ROCr 5.2.3's amd_aql_pm4_ib, built field by field.
hsa_kernel_dispatch_packet_t pm4_ib_packet(Va ib, uint64_t completion_signal,
                                           bool barrier = false) {
    std::array<uint32_t, 16> words{};
    words[0] = packet_header(HSA_PACKET_TYPE_VENDOR_SPECIFIC, barrier) | (1u << 16);  // format 1
    words[1] = 0xC0023F00;                      // PM4 INDIRECT_BUFFER header
    words[2] = static_cast<uint32_t>(ib >> 2);  // IB base, dword address
    words[3] = static_cast<uint32_t>(ib >> 32);
    words[4] = 8u | (1u << 23);  // 8 dwords, valid
    words[5] = 0xA;              // dw_cnt_remain
    std::memcpy(&words[14], &completion_signal, sizeof completion_signal);
    hsa_kernel_dispatch_packet_t packet;
    std::memcpy(&packet, words.data(), sizeof packet);
    return packet;
}

class VendorPacketTest : public SoftAgentTest {};

TEST_F(VendorPacketTest, APm4IndirectBufferIsRetiredAndCompletesItsSignal) {
    GpuBuffer ib(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    const uint64_t index = queue.submit(pm4_ib_packet(ib.va(), signals.init(0, 1)));
    ASSERT_TRUE(signals.wait_eq(0, 0));
    EXPECT_TRUE(queue.wait_read_index(index + 1));
    EXPECT_EQ(queue.slot(index)->header & 0xFF, HSA_PACKET_TYPE_INVALID) << "the slot went back";
    EXPECT_TRUE(log().faults().empty());
}

// ExecutePM4 submits without a signal and waits for the read index instead; the queue
// then goes on with the next packet.
TEST_F(VendorPacketTest, WithoutASignalTheQueueGoesOn) {
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    queue.submit(pm4_ib_packet(0x1000, 0));  // the IB's memory is never read
    const Va fill = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 4, 6, 0});
    queue.submit(pm4_ib_packet(0x1000, 0, /*barrier=*/true));
    queue.submit(dispatch_packet(kernel_object(XENHSA_KERNEL_NAME_FILL), fill, grid_1d(4, 4),
                                 signals.init(0, 1)));
    ASSERT_TRUE(signals.wait_eq(0, 0));
    EXPECT_EQ(data.at<uint32_t>()[3], 6u);
    EXPECT_EQ(queue.read_index(), 3u);
}

TEST_F(VendorPacketTest, AStrayCompletionSignalIsAFault) {
    HostMemory stray(kPage);
    const EventId error = make_event();
    AqlTestQueue queue(device(), QueueOptions{.error_event = error});
    queue.submit(pm4_ib_packet(0x1000, stray.va(64)));
    ASSERT_TRUE(fired(error));
    const QueueId id = queue.id();
    queue.destroy();
    const auto faults = log().faults();
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0].queue, id);
    EXPECT_EQ(faults[0].address, stray.va(64));
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
