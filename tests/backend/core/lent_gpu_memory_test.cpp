// GPU memory in LENDs, where the backend's kernel cannot pin grant mappings (a PV dom0):
// PIN answers UNSUPPORTED over refused MAPs, a LEND pins like a MAP, stays lent while the
// GPU uses it, and its revoke quiesces the GPU before the pages go (docs/protocol.md §5.5).
#include "gpu_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

xenhsa_lend_req lent_gpu_lend(uint64_t va, uint32_t npages) {
    xenhsa_lend_req r{};
    r.va = va;
    r.npages = npages;
    r.flags = XENHSA_MAP_RW;
    return r;
}

xenhsa_pin_req lent_gpu_pin(uint64_t va, uint64_t size) {
    xenhsa_pin_req p{};
    p.va = va;
    p.size = size;
    return p;
}

TEST(LentGpuMemory, APinTheKernelRefusesOverMapsIsUnsupportedWithNothingLeft) {
    GpuHarness h;
    const uint64_t va = h.base + 0x100000;
    h.map_ok(va, 2, 0);
    h.kfd.refuse_pin_at(va);
    EXPECT_EQ(h.status(XENHSA_CMD_PIN, lent_gpu_pin(va, 2 * 4096)), XENHSA_STATUS_UNSUPPORTED);
    EXPECT_EQ(h.kfd.registered(), 0u);
    EXPECT_EQ(h.requests->stats().pinned_pages, 0u);
}

TEST(LentGpuMemory, ALendPinsAndCarriesAQueueAndStaysLentWhileUsed) {
    GpuHarness h;
    const uint64_t va = h.base + 0x100000;
    const auto lend = payload_of<xenhsa_lend_rsp>(*h.send(XENHSA_CMD_LEND, lent_gpu_lend(va, 4)));
    ASSERT_NE(lend.handle, 0u);
    const hsa::Handle pin = h.pin_ok(va, 4 * 4096);
    ASSERT_EQ(h.map_to_gpu(pin), XENHSA_STATUS_OK);
    const hsa::Handle queue = h.queue_ok(va, va + 4096);
    ASSERT_NE(queue, 0u);

    // Lent pages the GPU uses are not given back under it.
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, lend.handle), XENHSA_STATUS_BAD_STATE);
    EXPECT_EQ(h.requests->stats().lent_pages, 4u);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_QUEUE_DESTROY, queue), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, lend.handle), XENHSA_STATUS_BAD_STATE);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP_FROM_GPU, pin), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNPIN, pin), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, lend.handle), XENHSA_STATUS_OK);
    EXPECT_EQ(h.requests->stats().lent_pages, 0u);
    EXPECT_EQ(h.kfd.registered(), 0u);
}

TEST(LentGpuMemory, APinMayCoverAdjacentMapsAndLends) {
    GpuHarness h;
    const uint64_t va = h.base + 0x100000;
    h.map_ok(va, 1, 0);
    ASSERT_EQ(h.status(XENHSA_CMD_LEND, lent_gpu_lend(va + 4096, 1)), XENHSA_STATUS_OK);
    EXPECT_NE(h.pin_ok(va, 2 * 4096), 0u);
    // Not past the LEND's end.
    EXPECT_EQ(h.status(XENHSA_CMD_PIN, lent_gpu_pin(va + 4096, 2 * 4096)),
              XENHSA_STATUS_BAD_ADDRESS);
}

TEST(LentGpuMemory, RevokingAPinnedLendQuiescesTheGpuBeforeThePagesGo) {
    GpuHarness h;
    const uint64_t va = h.base + 0x100000;
    const auto lend = payload_of<xenhsa_lend_rsp>(*h.send(XENHSA_CMD_LEND, lent_gpu_lend(va, 4)));
    const hsa::Handle pin = h.pin_ok(va, 4 * 4096);
    ASSERT_EQ(h.map_to_gpu(pin), XENHSA_STATUS_OK);
    const hsa::Handle queue = h.queue_ok(va, va + 4096);
    h.log.clear();

    ASSERT_TRUE(h.requests->revoke_handle(lend.handle));

    const auto q = h.log.find("destroy_queue");
    const auto u = h.log.find("unmap_from_gpu");
    const auto d = h.log.find("deregister_user");
    const auto r = h.log.find("share_revoke");
    ASSERT_NE(q, EventLog::npos);
    ASSERT_NE(u, EventLog::npos);
    ASSERT_NE(d, EventLog::npos);
    ASSERT_NE(r, EventLog::npos);
    EXPECT_LT(q, u);
    EXPECT_LT(u, d);
    EXPECT_LT(d, r);
    EXPECT_EQ(h.kfd.live_queues(), 0u);
    EXPECT_EQ(h.kfd.registered(), 0u);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNPIN, pin), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_QUEUE_DESTROY, queue), XENHSA_STATUS_BAD_HANDLE);
    // The guest's acknowledgement ends it.
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, lend.handle), XENHSA_STATUS_OK);
    EXPECT_EQ(h.requests->stats().lent_pages, 0u);
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
