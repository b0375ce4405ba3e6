// The notify page consumer against an honest and a hostile producer.
#include <gtest/gtest.h>

#include <array>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/notify_consumer.hpp>

namespace {

using namespace xenhsa::frontend;

class NotifyConsumerTest : public ::testing::Test {
protected:
    xenhsa_notify_page& page() { return *reinterpret_cast<xenhsa_notify_page*>(bytes_.data()); }

    // What the backend does: write record `index`, then publish prod = index + 1.
    void produce(uint32_t index, xenhsa_notify record) {
        page().slot[index & (XENHSA_NOTIFY_SLOTS - 1)] = record;
        xenhsa_index_store(&page().prod, index + 1);
    }

    alignas(64) std::array<std::byte, XENHSA_PAGE_SIZE> bytes_{};
    NotifyConsumer consumer_{bytes_};
};

TEST_F(NotifyConsumerTest, NothingPublishedNothingConsumed) {
    auto none = consumer_.poll();
    ASSERT_TRUE(none);
    EXPECT_TRUE(none.value().empty());
    EXPECT_EQ(page().cons, 0u);
}

TEST_F(NotifyConsumerTest, RecordsComeInOrderAndAreAcknowledged) {
    produce(0, {XENHSA_NOTIFY_REVOKED, 0, 7, 0x1000, 2});
    produce(1, {XENHSA_NOTIFY_GPU_FAULT, 0, 9, 0xdead000, 0});
    auto got = consumer_.poll();
    ASSERT_TRUE(got);
    ASSERT_EQ(got.value().size(), 2u);
    EXPECT_EQ(got.value()[0].handle, 7u);
    EXPECT_EQ(got.value()[0].arg1, 2u);
    EXPECT_EQ(got.value()[1].type, uint32_t{XENHSA_NOTIFY_GPU_FAULT});
    EXPECT_EQ(page().cons, 2u);
    EXPECT_EQ(consumer_.consumed(), 2u);
}

TEST_F(NotifyConsumerTest, ConsumerIndexIsPrivateNotReadBack) {
    produce(0, {XENHSA_NOTIFY_REVOKED, 0, 1, 0, 1});
    ASSERT_TRUE(consumer_.poll());
    page().cons = 1000;  // the backend scribbles over our index
    produce(1, {XENHSA_NOTIFY_REVOKED, 0, 2, 0, 1});
    auto got = consumer_.poll();
    ASSERT_TRUE(got);
    ASSERT_EQ(got.value().size(), 1u);
    EXPECT_EQ(got.value()[0].handle, 2u);
    EXPECT_EQ(page().cons, 2u);
}

TEST_F(NotifyConsumerTest, ExactlyAFullPageIsAccepted) {
    for (uint32_t i = 0; i < XENHSA_NOTIFY_SLOTS; ++i) {
        produce(i, {XENHSA_NOTIFY_REVOKED, 0, i + 1, 0, 1});
    }
    auto got = consumer_.poll();
    ASSERT_TRUE(got);
    EXPECT_EQ(got.value().size(), std::size_t{XENHSA_NOTIFY_SLOTS});
}

TEST_F(NotifyConsumerTest, ProducerRunningAheadIsBroken) {
    xenhsa_index_store(&page().prod, XENHSA_NOTIFY_SLOTS + 1);
    auto got = consumer_.poll();
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error(), Errc::backend_broken);
    EXPECT_EQ(page().cons, 0u);  // nothing acknowledged
    // Broken for good, even once the producer looks sane again.
    xenhsa_index_store(&page().prod, 0);
    EXPECT_FALSE(consumer_.poll());
    EXPECT_TRUE(consumer_.broken());
}

TEST_F(NotifyConsumerTest, ProducerGoingBackwardsIsBroken) {
    produce(0, {XENHSA_NOTIFY_REVOKED, 0, 1, 0, 1});
    ASSERT_TRUE(consumer_.poll());
    xenhsa_index_store(&page().prod, 0);  // behind cons: prod - cons wraps to 2^32 - 1
    EXPECT_EQ(consumer_.poll().error(), Errc::backend_broken);
}

TEST_F(NotifyConsumerTest, UnknownTypeOrPadIsBrokenAndNothingIsActedOn) {
    produce(0, {XENHSA_NOTIFY_REVOKED, 0, 1, 0, 1});
    produce(1, {XENHSA_NOTIFY_TYPE_COUNT_, 0, 2, 0, 0});
    EXPECT_EQ(consumer_.poll().error(), Errc::backend_broken);
    EXPECT_EQ(page().cons, 0u);
}

TEST_F(NotifyConsumerTest, NonzeroPadIsBroken) {
    produce(0, {XENHSA_NOTIFY_GPU_FAULT, 1, 1, 0, 0});
    EXPECT_EQ(consumer_.poll().error(), Errc::backend_broken);
}

TEST_F(NotifyConsumerTest, TypeZeroIsBroken) {
    produce(0, {0, 0, 1, 0, 0});
    EXPECT_EQ(consumer_.poll().error(), Errc::backend_broken);
}

}  // namespace
