// Doorbell kicks (KfdDevice::track_kicks): the agent keeps the producer's kick_requested
// word at 1 while a queue sleeps and 0 while all poll, and a producer that rings only when
// the word asks for it never strands a packet.
#include <atomic>
#include <random>
#include <thread>
#include <xenhsa/hsa/soft_testing/sdma_producer.hpp>

#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

using namespace std::chrono_literals;

class KickTest : public SoftAgentTest {
protected:
    uint32_t load_word() const { return __atomic_load_n(&word_, __ATOMIC_ACQUIRE); }
    bool word_becomes(uint32_t value) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (load_word() != value) {
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
            std::this_thread::sleep_for(100us);
        }
        return true;
    }

    uint32_t word_ = 0xdeadbeef;
};

TEST_F(KickTest, TheSoftAgentTracksKicksAndAnIdleQueueAsksForThem) {
    ASSERT_TRUE(device().track_kicks(&word_));
    EXPECT_EQ(load_word(), 0u) << "no queue sleeps yet";
    AqlTestQueue queue(device());
    EXPECT_TRUE(word_becomes(1)) << "an idle queue sleeps, so doorbells must kick";
    EXPECT_TRUE(device().track_kicks(nullptr));
}

TEST_F(KickTest, ADetachedWordIsNeverWrittenAgain) {
    ASSERT_TRUE(device().track_kicks(&word_));
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device());
    ASSERT_TRUE(word_becomes(1));
    ASSERT_TRUE(device().track_kicks(nullptr));
    __atomic_store_n(&word_, 7u, __ATOMIC_RELEASE);

    const Va kernarg = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 16, 5, 0});
    for (int i = 0; i < 8; ++i) {  // each one wakes the queue, which sleeps again after
        queue.submit(dispatch_packet(kernel_object(XENHSA_KERNEL_NAME_FILL), kernarg,
                                     grid_1d(16, 16), signals.init(0, 1)));
        ASSERT_TRUE(signals.wait_eq(0, 0));
    }
    EXPECT_EQ(load_word(), 7u);
}

// The guest's side of the protocol (xenhsa_doorbell_ring): store the write index, full
// fence, ring only if the word is set. Random pauses let the queue go to sleep between
// some packets and stay busy across others; a lost wakeup leaves a packet unprocessed and
// the final wait times out.
TEST_F(KickTest, AProducerThatRingsOnlyWhenAskedLosesNoPacket) {
    ASSERT_TRUE(device().track_kicks(&word_));
    GpuBuffer data(device(), kPage), args(device(), kPage);
    SignalPage signals(device());
    AqlTestQueue queue(device(), QueueOptions{.packets = 256});
    const Va kernarg = put_kernarg(args, 0, xenhsa_kernarg_fill{data.va(), 16, 9, 0});
    const uint64_t fill = kernel_object(XENHSA_KERNEL_NAME_FILL);

    constexpr uint32_t kPackets = 2000;
    const uint64_t done = signals.init(0, kPackets);
    std::mt19937 random(12345);
    uint32_t kicks = 0;
    for (uint32_t i = 0; i < kPackets; ++i) {
        const auto packet = dispatch_packet(fill, kernarg, grid_1d(16, 16), done);
        const uint64_t index = queue.reserve();
        queue.write_body(index, packet);
        queue.publish_header(index, packet);
        queue.store_write_index();
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (load_word() != 0) {
            queue.ring_doorbell();
            ++kicks;
        }
        if (random() % 8 == 0) {
            std::this_thread::sleep_for(std::chrono::microseconds(random() % 200));
        }
    }
    EXPECT_TRUE(signals.wait_eq(0, 0)) << "value " << signals.value(0) << " after " << kicks
                                       << " kicks for " << kPackets << " packets";
    EXPECT_EQ(queue.read_index(), kPackets);
    EXPECT_TRUE(device().track_kicks(nullptr));
}

// A producer that never rings (ROCr in a guest: it only stores its write index) is served
// in every phase of the idle queue's wait: spinning, backing off, and blocked.
class NoKickTest : public SoftAgentTest {
protected:
    NoKickTest()
        : SoftAgentTest(SoftAgentOptions{.idle_block_after = std::chrono::milliseconds(100),
                                         .idle_block_recheck = std::chrono::milliseconds(10)}) {}
    uint32_t load_word() const { return __atomic_load_n(&word_, __ATOMIC_ACQUIRE); }

    uint32_t word_ = 0;
};

TEST_F(NoKickTest, AnAqlProducerThatNeverRingsIsServedInEveryPhase) {
    ASSERT_TRUE(device().track_kicks(&word_));
    SignalPage signals(device());
    AqlTestQueue queue(device());
    for (const auto idle : {0ms, 1ms, 30ms, 300ms}) {  // spin, back off, back off, blocked
        std::this_thread::sleep_for(idle);
        if (idle >= 300ms) {
            EXPECT_EQ(load_word(), 1u) << "blocked: it asks for kicks";
        }
        const uint64_t index = queue.reserve();
        const auto packet = barrier_packet({}, signals.init(0, 1));
        queue.write_body(index, packet);
        queue.publish_header(index, packet);
        queue.store_write_index();  // and no doorbell
        EXPECT_TRUE(signals.wait_eq(0, 0, 2s)) << "idle " << idle.count() << " ms";
    }
    EXPECT_TRUE(device().track_kicks(nullptr));
}

TEST_F(NoKickTest, AnSdmaProducerThatNeverRingsIsServedInEveryPhase) {
    ASSERT_TRUE(device().track_kicks(&word_));
    GpuBuffer data(device(), kPage);
    SdmaTestQueue queue(device());
    uint32_t value = 0;
    for (const auto idle : {0ms, 1ms, 30ms, 300ms}) {
        std::this_thread::sleep_for(idle);
        if (idle >= 300ms) {
            EXPECT_EQ(load_word(), 1u);
        }
        const uint64_t end = queue.submit(sdma_fence(data.va(), ++value), /*ring=*/false);
        EXPECT_TRUE(queue.wait_read_index(end, 2s)) << "idle " << idle.count() << " ms";
        EXPECT_EQ(*data.at<uint32_t>(), value);
    }
    EXPECT_TRUE(device().track_kicks(nullptr));
}

TEST_F(NoKickTest, KicksAreAskedForOnlyAfterTheBackoffAndADoorbellWithdrawsThem) {
    ASSERT_TRUE(device().track_kicks(&word_));
    const auto created = std::chrono::steady_clock::now();
    AqlTestQueue queue(device());
    std::this_thread::sleep_for(20ms);
    const uint32_t early = load_word();
    if (std::chrono::steady_clock::now() - created < 100ms) {  // idle_block_after
        EXPECT_EQ(early, 0u) << "backing off: it still polls";
    }
    const auto until_word = [&](uint32_t value) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (load_word() != value && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(100us);
        }
        return load_word() == value;
    };
    ASSERT_TRUE(until_word(1));
    queue.ring_doorbell();  // no new packet: still activity, back to polling
    EXPECT_TRUE(until_word(0));
    EXPECT_TRUE(until_word(1)) << "and blocked again once idle long enough";
    EXPECT_TRUE(device().track_kicks(nullptr));
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
