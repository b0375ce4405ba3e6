// The GPU commands through the real GpuContext over a recording device: the backend's own
// checks (coverage, nodes, handles), deferral of UNMAP under a live queue, doorbells.
#include <cstring>

#include "gpu_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

TEST(Pin, MustLieInWritableMapsUnlessReadOnly) {
    GpuHarness h;
    const uint64_t b = h.base;
    h.map_ok(b, 2, 0);
    h.map_ok(b + 0x2000, 2, 2);                 // adjacent
    h.map_ok(b + 0x10000, 1, 8, /*rw=*/false);  // read-only
    xenhsa_pin_req p{};
    p.va = b;
    p.size = 0x4000;  // across both adjacent MAPs
    EXPECT_EQ(h.status(XENHSA_CMD_PIN, p), XENHSA_STATUS_OK);
    p.va = b + 0x3000;
    p.size = 0x2000;  // runs past the second MAP
    EXPECT_EQ(h.status(XENHSA_CMD_PIN, p), XENHSA_STATUS_BAD_ADDRESS);
    p.va = b + 0x10000;
    p.size = 0x1000;
    EXPECT_EQ(h.status(XENHSA_CMD_PIN, p), XENHSA_STATUS_BAD_ADDRESS);  // RW over a RO MAP
    p.flags = XENHSA_PIN_READ_ONLY;
    EXPECT_EQ(h.status(XENHSA_CMD_PIN, p), XENHSA_STATUS_OK);
    EXPECT_NE(h.log.find("register_user "), EventLog::npos);
    EXPECT_EQ(h.requests->stats().pinned_pages, 5u);
}

TEST(Pin, UnmapOfAPinnedMapIsBusyUntilUnpinned) {
    GpuHarness h;
    const hsa::Handle m = h.map_ok(h.base, 2, 0);
    const hsa::Handle p = h.pin_ok(h.base + 0x1000, 0x1000);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, m), XENHSA_STATUS_BAD_STATE);
    EXPECT_EQ(h.mapper.live_mappings(), 1u);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNPIN, p), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNPIN, p), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, m), XENHSA_STATUS_OK);
}

TEST(MapToGpu, NodesAndState) {
    GpuHarness h;
    h.map_ok(h.base, 1, 0);
    const hsa::Handle p = h.pin_ok(h.base, 0x1000);
    EXPECT_EQ(h.map_to_gpu(p, 1), XENHSA_STATUS_BAD_ARGUMENT);          // node 0 is a CPU
    EXPECT_EQ(h.map_to_gpu(p, 1ull << 9), XENHSA_STATUS_BAD_ARGUMENT);  // no node 9
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP_FROM_GPU, p), XENHSA_STATUS_BAD_STATE);
    xenhsa_map_to_gpu_req g{};
    g.handle = p;
    g.node_mask = kGpuMask;
    auto r = h.send(XENHSA_CMD_MAP_TO_GPU, g);
    ASSERT_TRUE(r && r->status == XENHSA_STATUS_OK);
    EXPECT_EQ(payload_of<xenhsa_map_to_gpu_rsp>(*r).gpu_va, h.base);        // mirrored
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNPIN, p), XENHSA_STATUS_BAD_STATE);  // still on the GPU
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP_FROM_GPU, p), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNPIN, p), XENHSA_STATUS_OK);
}

TEST(Alloc, PlacedInTheWindowAndReleasedOnFree) {
    GpuHarness h;
    h.map_ok(h.base, 4, 0);
    xenhsa_alloc_req a{};
    a.size = 0x3000;
    a.node = kGpuNode;
    a.flags = XENHSA_ALLOC_DEVICE_LOCAL;
    auto r = h.send(XENHSA_CMD_ALLOC, a);
    ASSERT_TRUE(r && r->status == XENHSA_STATUS_OK);
    const auto rsp = payload_of<xenhsa_alloc_rsp>(*r);
    EXPECT_EQ(rsp.va, h.base + 0x4000);  // the first free range after the MAP
    EXPECT_NE(h.log.find("alloc "), EventLog::npos);
    // Its range is taken.
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(rsp.va + 0x1000, 1, 10)),
              XENHSA_STATUS_BAD_ADDRESS);
    a.va = h.base;  // over the MAP
    EXPECT_EQ(h.status(XENHSA_CMD_ALLOC, a), XENHSA_STATUS_BAD_ADDRESS);
    a.va = h.base + 0x100000;
    a.node = 0;  // DEVICE_LOCAL on a node without local memory
    EXPECT_EQ(h.status(XENHSA_CMD_ALLOC, a), XENHSA_STATUS_BAD_ARGUMENT);
    a.flags = 0;  // system memory on node 0 is fine
    EXPECT_EQ(h.status(XENHSA_CMD_ALLOC, a), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_FREE, rsp.handle), XENHSA_STATUS_OK);
    EXPECT_EQ(protection_at(at(rsp.va)), "---p");
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(rsp.va + 0x1000, 1, 10)), XENHSA_STATUS_OK);
}

TEST(Alloc, NoFreeRangeIsNoMemory) {
    GpuHarness h;
    xenhsa_alloc_req a{};
    a.size = kWindowSize;
    a.node = kGpuNode;
    h.map_ok(h.base, 1, 0);
    EXPECT_EQ(h.status(XENHSA_CMD_ALLOC, a), XENHSA_STATUS_NO_MEMORY);
}

TEST(Queue, NeedsGpuMappedPinsOnItsNode) {
    GpuHarness h;
    h.map_ok(h.base, 2, 0);
    const hsa::Handle p = h.pin_ok(h.base, 0x2000);
    auto q = h.queue_req(h.base, h.base + 0x1000);
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ADDRESS);  // not on the GPU
    ASSERT_EQ(h.map_to_gpu(p), XENHSA_STATUS_OK);
    q.node = 0;
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ADDRESS);  // mapped on 1
    q.node = kGpuNode;
    q.wptr_va = h.base + 0x2000;  // past the PIN
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_BAD_ADDRESS);
    q.wptr_va = h.base + 0x1008;
    auto r = h.send(XENHSA_CMD_QUEUE_CREATE, q);
    ASSERT_TRUE(r && r->status == XENHSA_STATUS_OK);
    EXPECT_EQ(h.requests->stats().queues, 1u);
}

TEST(Queue, UnmapUnderALiveQueueIsDeferredUntilQueueDestroy) {
    GpuHarness h;
    const auto s = h.map_pin_queue(h.base);
    // The guest releases everything under the queue: each is answered OK at once.
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP_FROM_GPU, s.pin), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNPIN, s.pin), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, s.map), XENHSA_STATUS_OK);
    // ... but nothing is gone yet: the queue holds it.
    EXPECT_EQ(h.mapper.live_mappings(), 1u);
    EXPECT_EQ(h.kfd.registered(), 1u);
    EXPECT_EQ(h.log.count("grant_unmap"), 0u);
    // The handles are stale at once.
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP, s.map), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNPIN, s.pin), XENHSA_STATUS_BAD_HANDLE);
    // The range is still taken.
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(h.base, 1, 20)), XENHSA_STATUS_BAD_ADDRESS);

    h.log.clear();
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_QUEUE_DESTROY, s.queue), XENHSA_STATUS_OK);
    const auto q = h.log.find("destroy_queue");
    const auto u = h.log.find("unmap_from_gpu");
    const auto d = h.log.find("deregister_user");
    const auto g = h.log.find("grant_unmap");
    ASSERT_NE(q, EventLog::npos);
    ASSERT_NE(u, EventLog::npos);
    ASSERT_NE(d, EventLog::npos);
    ASSERT_NE(g, EventLog::npos);
    EXPECT_LT(q, u);
    EXPECT_LT(u, d);
    EXPECT_LT(d, g);
    EXPECT_EQ(h.mapper.live_mappings(), 0u);
    EXPECT_EQ(protection_at(at(h.base)), "---p");
    EXPECT_EQ(h.requests->stats().mapped_pages, 0u);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(h.base, 1, 20)), XENHSA_STATUS_OK);
}

TEST(Queue, FreeUnderALiveQueueKeepsTheRangeUntilTheQueueGoes) {
    GpuHarness h;
    xenhsa_alloc_req a{};
    a.va = h.base + 0x100000;
    a.size = 0x2000;
    a.node = kGpuNode;
    auto r = h.send(XENHSA_CMD_ALLOC, a);
    ASSERT_TRUE(r && r->status == XENHSA_STATUS_OK);
    const hsa::Handle alloc = payload_of<xenhsa_alloc_rsp>(*r).handle;
    ASSERT_EQ(h.map_to_gpu(alloc), XENHSA_STATUS_OK);
    const hsa::Handle q = h.queue_ok(a.va, a.va + 0x1000);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_UNMAP_FROM_GPU, alloc), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_FREE, alloc), XENHSA_STATUS_OK);
    EXPECT_EQ(h.kfd.allocations(), 1u);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(a.va, 1, 0)), XENHSA_STATUS_BAD_ADDRESS);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_QUEUE_DESTROY, q), XENHSA_STATUS_OK);
    EXPECT_EQ(h.kfd.allocations(), 0u);
    EXPECT_EQ(h.status(XENHSA_CMD_MAP, h.map_req(a.va, 1, 0)), XENHSA_STATUS_OK);
}

TEST(Queue, DoorbellsAreForwardedWhenTheyMove) {
    GpuHarness h;
    h.map_pin_queue(h.base);
    auto page = std::make_unique<xenhsa_doorbell_page>();
    std::memset(page.get(), 0, sizeof *page);
    page->doorbell[h.doorbell] = 5;
    page->doorbell[h.doorbell + 1] = 9;  // no queue there: ignored
    h.requests->doorbells(*page);
    EXPECT_EQ(h.kfd.last_doorbell(), 5u);
    EXPECT_EQ(h.log.count("doorbell"), 1u);
    h.requests->doorbells(*page);  // unchanged: not forwarded again
    EXPECT_EQ(h.log.count("doorbell"), 1u);
    page->doorbell[h.doorbell] = 6;
    h.requests->doorbells(*page);
    EXPECT_EQ(h.kfd.last_doorbell(), 6u);
}

// A new queue on the doorbell index a destroyed queue used: the old queue's value still
// in the slot is no news, and the new queue's first doorbell is never lost, whatever value
// it carries (issue 11, item 4).
TEST(Queue, AReusedDoorbellIndexNeverLosesItsFirstDoorbell) {
    GpuHarness h;
    xenhsa_doorbell_page& page = *h.doorbell_page;
    const auto s = h.map_pin_queue(h.base);
    const uint32_t index = h.doorbell;
    page.doorbell[index] = 1;  // the old queue's one packet
    EXPECT_EQ(h.requests->doorbells(page), 1u);
    ASSERT_EQ(h.handle_cmd(XENHSA_CMD_QUEUE_DESTROY, s.queue), XENHSA_STATUS_OK);
    ASSERT_NE(h.queue_ok(h.base, h.base + 4096), 0u);
    ASSERT_EQ(h.doorbell, index);  // the freed index again
    // Any request in between rescans the page: nothing new for the new queue yet.
    EXPECT_EQ(h.requests->doorbells(page), 0u);
    // Its first packet: write index 1, the very value the old queue left there.
    __atomic_store_n(&page.doorbell[index], 1u, __ATOMIC_RELEASE);
    EXPECT_EQ(h.requests->doorbells(page), 1u);
    EXPECT_EQ(h.kfd.last_doorbell(), 1u);
}

// Two live queues on the same memory would have the GPU side fetch, retire and write one
// ring twice over (issue 11, item 4).
TEST(Queue, TwoLiveQueuesMayNotShareRingOrPointers) {
    GpuHarness h;
    const uint64_t b = h.base;
    constexpr uint64_t kP = 4096;
    h.map_ok(b, 8, 0);
    ASSERT_EQ(h.map_to_gpu(h.pin_ok(b, 8 * kP)), XENHSA_STATUS_OK);
    const hsa::Handle first = h.queue_ok(b, b + kP);  // ring page 0, pointers at page 1
    ASSERT_NE(first, 0u);
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, h.queue_req(b, b + 2 * kP)),
              XENHSA_STATUS_BAD_ADDRESS);  // the same ring
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, h.queue_req(b + 3 * kP, b + kP)),
              XENHSA_STATUS_BAD_ADDRESS);  // the same pointers
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, h.queue_req(b + 3 * kP, b + kP + 8)),
              XENHSA_STATUS_BAD_ADDRESS);  // its read index on the other's write index
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, h.queue_req(b + kP, b + 2 * kP)),
              XENHSA_STATUS_BAD_ADDRESS);  // a ring over the other's pointers
    EXPECT_EQ(h.log.count("create_queue"), 1u);
    const hsa::Handle second = h.queue_ok(b + 3 * kP, b + 2 * kP);  // disjoint
    EXPECT_NE(second, 0u);
    ASSERT_EQ(h.handle_cmd(XENHSA_CMD_QUEUE_DESTROY, first), XENHSA_STATUS_OK);
    EXPECT_NE(h.queue_ok(b, b + kP), 0u);  // free again once the first is gone
}

HarnessOptions with_sdma() {
    HarnessOptions o;
    o.features = XENHSA_FEATURES_KNOWN;
    return o;
}

TEST(Queue, SdmaQueuesNeedTheirFeature) {
    GpuHarness h;  // asked for the v1 bits only
    ASSERT_EQ(h.requests->features() & XENHSA_FEATURE_SDMA, 0u);
    h.map_ok(h.base, 2, 0);
    ASSERT_EQ(h.map_to_gpu(h.pin_ok(h.base, 0x2000)), XENHSA_STATUS_OK);
    auto q = h.queue_req(h.base, h.base + 0x1000);
    q.type = XENHSA_QUEUE_SDMA;
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_UNSUPPORTED);
    q.error_event = 0x777;  // the feature step comes before the handle step
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_UNSUPPORTED);
    EXPECT_EQ(h.log.count("create_queue"), 0u);
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, h.queue_req(h.base, h.base + 0x1000)),
              XENHSA_STATUS_OK);  // AQL still works
}

TEST(Queue, SdmaQueuesReachTheDeviceAsSdma) {
    GpuHarness h(with_sdma());
    ASSERT_NE(h.requests->features() & XENHSA_FEATURE_SDMA, 0u);
    h.map_ok(h.base, 2, 0);
    ASSERT_EQ(h.map_to_gpu(h.pin_ok(h.base, 0x2000)), XENHSA_STATUS_OK);
    auto q = h.queue_req(h.base, h.base + 0x1000);
    q.type = XENHSA_QUEUE_SDMA;
    q.priority = XENHSA_QUEUE_PRIORITY_MAX;
    auto r = h.send(XENHSA_CMD_QUEUE_CREATE, q);
    ASSERT_TRUE(r && r->status == XENHSA_STATUS_OK);
    EXPECT_EQ(h.kfd.last_queue_type(), hsa::QueueType::sdma);
    const auto rsp = payload_of<xenhsa_queue_create_rsp>(*r);
    EXPECT_EQ(xenhsa_check_queue_create_rsp(&rsp), XENHSA_STATUS_OK);
    // Its doorbell is forwarded like an AQL queue's (the value is the new write index).
    auto page = std::make_unique<xenhsa_doorbell_page>();
    std::memset(page.get(), 0, sizeof *page);
    page->doorbell[rsp.doorbell_index] = 0x1000;
    EXPECT_EQ(h.requests->doorbells(*page), 1u);
    EXPECT_EQ(h.kfd.last_doorbell(), 0x1000u);
    EXPECT_EQ(h.requests->stats().doorbells_forwarded, 1u);
}

TEST(Queue, ADeviceThatRefusesSdmaAnswersUnsupported) {
    GpuHarness h(with_sdma());
    // The seam changed its mind after HELLO (or a guest tries anyway): the device's
    // EOPNOTSUPP is UNSUPPORTED too.
    h.kfd.set_sdma(false);
    h.map_ok(h.base, 2, 0);
    ASSERT_EQ(h.map_to_gpu(h.pin_ok(h.base, 0x2000)), XENHSA_STATUS_OK);
    auto q = h.queue_req(h.base, h.base + 0x1000);
    q.type = XENHSA_QUEUE_SDMA;
    EXPECT_EQ(h.status(XENHSA_CMD_QUEUE_CREATE, q), XENHSA_STATUS_UNSUPPORTED);
    EXPECT_EQ(h.requests->stats().queues, 0u);
}

TEST(Queue, GpuFaultIsNotifiedOnce) {
    GpuHarness h;
    const auto s = h.map_pin_queue(h.base);
    h.kfd.fault(h.kfd.last_queue(), h.base + 0x2000);
    h.kfd.fault(h.kfd.last_queue(), h.base + 0x3000);
    ASSERT_TRUE(h.run_until([&] { return h.notify_page->prod >= 1; }));
    h.io.restart();
    h.io.poll();
    EXPECT_EQ(h.notify_page->prod, 1u);
    const xenhsa_notify& n = h.notify_page->slot[0];
    EXPECT_EQ(n.type, XENHSA_NOTIFY_GPU_FAULT);
    EXPECT_EQ(n.handle, s.queue);
    EXPECT_EQ(n.arg0, h.base + 0x2000);
    EXPECT_EQ(n.arg1, 0u) << "a fault, not a hang";
    // The guest destroys the stopped queue.
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_QUEUE_DESTROY, s.queue), XENHSA_STATUS_OK);
}

TEST(Queue, AHungQueueIsNotifiedWithTheHangFlagAndNoAddress) {
    GpuHarness h;
    const auto s = h.map_pin_queue(h.base);
    h.kfd.fault(h.kfd.last_queue(), 0, /*hang=*/true);
    ASSERT_TRUE(h.run_until([&] { return h.notify_page->prod >= 1; }));
    const xenhsa_notify& n = h.notify_page->slot[0];
    EXPECT_EQ(n.type, XENHSA_NOTIFY_GPU_FAULT);
    EXPECT_EQ(n.handle, s.queue);
    EXPECT_EQ(n.arg0, 0u);
    EXPECT_EQ(n.arg1, XENHSA_GPU_FAULT_HANG);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_QUEUE_DESTROY, s.queue), XENHSA_STATUS_OK);
}

TEST(Events, NodeAndQuotaChecks) {
    HarnessOptions o;
    o.quotas.max_handles = 2;
    GpuHarness h(o);
    xenhsa_event_create_req e{};
    e.node = 5;
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_CREATE, e), XENHSA_STATUS_BAD_ARGUMENT);
    e.node = kGpuNode;
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_CREATE, e), XENHSA_STATUS_OK);
    h.map_ok(h.base, 1, 0);  // MAP handles count too
    EXPECT_EQ(h.status(XENHSA_CMD_EVENT_CREATE, e), XENHSA_STATUS_QUOTA);
    EXPECT_EQ(h.requests->stats().handles, 2u);
}

TEST(Events, SetResetDestroy) {
    GpuHarness h;
    const hsa::Handle ev = h.event_ok();
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_EVENT_SET, ev), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_EVENT_RESET, ev), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_EVENT_DESTROY, ev), XENHSA_STATUS_OK);
    EXPECT_EQ(h.handle_cmd(XENHSA_CMD_EVENT_SET, ev), XENHSA_STATUS_BAD_HANDLE);
    EXPECT_EQ(h.requests->stats().events, 0u);
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
