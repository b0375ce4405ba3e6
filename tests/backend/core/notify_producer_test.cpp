#include <gtest/gtest.h>
#include <xenhsa/proto.h>

#include <cstring>
#include <memory>
#include <xenhsa/backend/core/notify_producer.hpp>

namespace xenhsa::backend::core {
namespace {

class NotifyProducerTest : public ::testing::Test {
protected:
    void SetUp() override {
        page = std::make_unique<xenhsa_notify_page>();
        std::memset(page.get(), 0, sizeof *page);
    }
    std::unique_ptr<xenhsa_notify_page> page;
};

TEST_F(NotifyProducerTest, PublishesWholeRecordsAndKicks) {
    NotifyProducer p(page.get(), 8);
    int kicks = 0;
    p.set_kick([&] { ++kicks; });
    std::memset(&page->slot[0], 0xFF, sizeof page->slot[0]);  // stale bytes
    ASSERT_TRUE(p.post(NotifyProducer::revoked(0x1234, 0x7000, 3)));
    EXPECT_EQ(page->prod, 1u);
    EXPECT_EQ(kicks, 1);
    const xenhsa_notify& n = page->slot[0];
    EXPECT_EQ(n.type, XENHSA_NOTIFY_REVOKED);
    EXPECT_EQ(n.pad, 0u);
    EXPECT_EQ(n.handle, 0x1234u);
    EXPECT_EQ(n.arg0, 0x7000u);
    EXPECT_EQ(n.arg1, 3u);
    ASSERT_TRUE(p.post(NotifyProducer::gpu_fault(0x55, 0xdead000)));
    EXPECT_EQ(page->slot[1].type, XENHSA_NOTIFY_GPU_FAULT);
    EXPECT_EQ(page->slot[1].arg1, 0u);
}

TEST_F(NotifyProducerTest, FullPageQueuesInOrderAndNeverDrops) {
    NotifyProducer p(page.get(), 128);
    for (uint64_t i = 0; i < 70; ++i) {
        ASSERT_TRUE(p.post(NotifyProducer::revoked(i + 1, i, 1)));
    }
    EXPECT_EQ(page->prod, 64u);
    EXPECT_EQ(p.backlog(), 6u);
    // The guest consumes 10; the next flush publishes what fits, in order.
    page->cons = 10;
    p.flush();
    EXPECT_EQ(page->prod, 70u);
    EXPECT_EQ(p.backlog(), 0u);
    // Records 64..69 went into slots 0..5 after the guest consumed those.
    for (uint32_t slot = 0; slot < 64; ++slot) {
        const uint64_t record = slot < 6 ? 64 + slot : slot;
        EXPECT_EQ(page->slot[slot].handle, record + 1) << slot;
    }
}

TEST_F(NotifyProducerTest, HostileConsIsFull) {
    NotifyProducer p(page.get(), 8);
    page->cons = 5;  // ahead of the producer
    ASSERT_TRUE(p.post(NotifyProducer::revoked(1, 0, 1)));
    EXPECT_EQ(page->prod, 0u);
    EXPECT_EQ(p.backlog(), 1u);
    page->cons = 0xFFFF0000u;  // far behind
    p.flush();
    EXPECT_EQ(page->prod, 0u);
    page->cons = 0;
    p.flush();
    EXPECT_EQ(page->prod, 1u);
}

TEST_F(NotifyProducerTest, FullBacklogIsReportedNotDropped) {
    NotifyProducer p(page.get(), 2);
    for (uint64_t i = 0; i < 64 + 2; ++i) {
        ASSERT_TRUE(p.post(NotifyProducer::revoked(i + 1, 0, 1)));
    }
    EXPECT_FALSE(p.post(NotifyProducer::revoked(999, 0, 1)));
    EXPECT_TRUE(p.overflowed());
    EXPECT_EQ(p.backlog(), 2u);
}

TEST_F(NotifyProducerTest, WithoutAPageEverythingWaits) {
    NotifyProducer p(nullptr, 4);
    ASSERT_TRUE(p.post(NotifyProducer::revoked(1, 0, 1)));
    EXPECT_EQ(p.backlog(), 1u);
    p.attach(page.get());
    p.flush();
    EXPECT_EQ(page->prod, 1u);
}

}  // namespace
}  // namespace xenhsa::backend::core
