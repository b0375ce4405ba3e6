// The kernel's memory rules: alloc at a fixed VA, registration, GPU mapping, and the
// memory a live queue holds.
#include <string>

#include "soft_fixture.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

const std::error_code kBusy = std::make_error_code(std::errc::device_or_resource_busy);
const std::error_code kFault = std::make_error_code(std::errc::bad_address);
const std::error_code kNoMem = std::make_error_code(std::errc::not_enough_memory);

template <class T>
std::error_code error_of(const Result<T>& result) {
    return result ? std::error_code() : result.error();
}

class MemoryRulesTest : public SoftAgentTest {};

TEST_F(MemoryRulesTest, AllocPlacesZeroedMemoryAtTheVaAndFreeReservesItAgain) {
    HostMemory reservation(4 * kPage, /*reserve_only=*/true);
    const Va va = reservation.va();
    EXPECT_EQ(protection_at(va), "---p");
    ASSERT_TRUE(device().alloc(kSoftCpuNode, va, 4 * kPage, 0));
    EXPECT_EQ(protection_at(va).substr(0, 2), "rw");
    for (uint32_t i = 0; i < 4 * kPage / 8; ++i) {
        ASSERT_EQ(reservation.at<uint64_t>()[i], 0u);
    }
    reservation.at<uint64_t>()[1] = 42;  // the backend's (worker's) view of it
    ASSERT_TRUE(device().free(va));
    EXPECT_EQ(protection_at(va), "---p");
    // Free gave the range back: it can be allocated again, zeroed.
    ASSERT_TRUE(device().alloc(kSoftGpuNode, va, 4 * kPage, XENHSA_ALLOC_DEVICE_LOCAL));
    EXPECT_EQ(reservation.at<uint64_t>()[1], 0u);
    EXPECT_EQ(error_of(device().alloc(kSoftGpuNode, va + kPage, kPage, 0)), kInval);  // overlap
    ASSERT_TRUE(device().free(va));
}

TEST_F(MemoryRulesTest, AllocAndRegisterRejectBadArguments) {
    HostMemory reservation(4 * kPage, true);
    const Va va = reservation.va();
    EXPECT_EQ(error_of(device().alloc(kSoftCpuNode, va + 8, kPage, 0)), kInval);
    EXPECT_EQ(error_of(device().alloc(kSoftCpuNode, va, 0, 0)), kInval);
    EXPECT_EQ(error_of(device().alloc(kSoftCpuNode, va, kPage + 1, 0)), kInval);
    EXPECT_EQ(error_of(device().alloc(kSoftCpuNode, va, kPage, 1u << 7)), kInval);
    EXPECT_EQ(error_of(device().alloc(kSoftCpuNode, va, kPage, XENHSA_ALLOC_DEVICE_LOCAL)), kInval);
    EXPECT_EQ(error_of(device().alloc(7, va, kPage, 0)), kInval);
    EXPECT_EQ(error_of(device().alloc(kSoftCpuNode, 0, kPage, 0)), kInval);
    EXPECT_EQ(error_of(device().alloc(kSoftCpuNode, XENHSA_VA_LIMIT, kPage, 0)), kInval);

    HostMemory memory(2 * kPage);
    EXPECT_EQ(error_of(device().register_user(memory.va() + 16, kPage, false)), kInval);
    EXPECT_EQ(error_of(device().register_user(memory.va(), 100, false)), kInval);
    ASSERT_TRUE(device().register_user(memory.va(), 2 * kPage, false));
    EXPECT_EQ(error_of(device().register_user(memory.va() + kPage, kPage, false)), kInval);
    EXPECT_EQ(error_of(device().map_to_gpu(memory.va(), 0, false)), kInval);
    EXPECT_EQ(error_of(device().map_to_gpu(memory.va(), 1u << kSoftCpuNode, false)), kInval);
    ASSERT_TRUE(device().deregister_user(memory.va()));
}

TEST_F(MemoryRulesTest, RegisteringAHoleFails) {
    HostMemory memory(kPage);
    void* page = memory.at<void>();
    ASSERT_EQ(::munmap(page, kPage), 0);  // a hole: nothing the GPU could pin
    EXPECT_EQ(error_of(device().register_user(memory.va(), kPage, false)), kFault);
}

TEST_F(MemoryRulesTest, MappingNeedsAnAllocationOrRegistration) {
    HostMemory memory(kPage);
    EXPECT_EQ(error_of(device().map_to_gpu(memory.va(), kGpuNodeMask, false)), kNoEnt);
    EXPECT_EQ(error_of(device().unmap_from_gpu(memory.va())), kNoEnt);
    EXPECT_EQ(error_of(device().deregister_user(memory.va())), kNoEnt);
    EXPECT_EQ(error_of(device().free(memory.va())), kNoEnt);
    ASSERT_TRUE(device().register_user(memory.va(), kPage, false));
    EXPECT_EQ(error_of(device().free(memory.va())), kNoEnt);            // not an allocation
    EXPECT_EQ(error_of(device().unmap_from_gpu(memory.va())), kInval);  // not mapped
    ASSERT_TRUE(device().map_to_gpu(memory.va(), kGpuNodeMask, false));
    ASSERT_TRUE(device().map_to_gpu(memory.va(), kGpuNodeMask, false));  // again: fine
    EXPECT_EQ(error_of(device().map_to_gpu(memory.va(), kGpuNodeMask, true)), kInval);
    ASSERT_TRUE(device().unmap_from_gpu(memory.va()));
    ASSERT_TRUE(device().deregister_user(memory.va()));
}

TEST_F(MemoryRulesTest, GpuMappedMemoryCannotBeDeregisteredOrFreed) {
    HostMemory memory(kPage);
    ASSERT_TRUE(device().register_user(memory.va(), kPage, false));
    ASSERT_TRUE(device().map_to_gpu(memory.va(), kGpuNodeMask, false));
    EXPECT_EQ(error_of(device().deregister_user(memory.va())), kBusy);
    ASSERT_TRUE(device().unmap_from_gpu(memory.va()));
    ASSERT_TRUE(device().deregister_user(memory.va()));

    HostMemory reservation(kPage, true);
    ASSERT_TRUE(device().alloc(kSoftCpuNode, reservation.va(), kPage, 0));
    ASSERT_TRUE(device().map_to_gpu(reservation.va(), kGpuNodeMask, false));
    EXPECT_EQ(error_of(device().free(reservation.va())), kBusy);
    ASSERT_TRUE(device().unmap_from_gpu(reservation.va()));
    ASSERT_TRUE(device().free(reservation.va()));
}

TEST_F(MemoryRulesTest, LiveQueueHoldsItsRingAndPointers) {
    auto queue = std::make_unique<AqlTestQueue>(device());
    const Va ring = queue->ring_va();
    const Va pointers = queue->pointers_va();
    EXPECT_EQ(error_of(device().unmap_from_gpu(ring)), kBusy);
    EXPECT_EQ(error_of(device().unmap_from_gpu(pointers)), kBusy);
    EXPECT_EQ(error_of(device().deregister_user(ring)), kBusy);
    EXPECT_EQ(error_of(device().deregister_user(pointers)), kBusy);
    queue->destroy();
    EXPECT_TRUE(device().unmap_from_gpu(ring));
    EXPECT_TRUE(device().unmap_from_gpu(pointers));
    EXPECT_TRUE(device().deregister_user(ring));
    EXPECT_TRUE(device().deregister_user(pointers));
    queue.reset();  // its own cleanup finds nothing left to undo
}

TEST_F(MemoryRulesTest, LiveQueueHoldsAllocatedRing) {
    HostMemory reservation(2 * kPage, true);
    const Va ring = reservation.va();
    const Va pointers = reservation.va(kPage);
    ASSERT_TRUE(device().alloc(kSoftGpuNode, ring, kPage, XENHSA_ALLOC_DEVICE_LOCAL));
    ASSERT_TRUE(device().alloc(kSoftCpuNode, pointers, kPage, 0));
    ASSERT_TRUE(device().map_to_gpu(ring, kGpuNodeMask, false));
    ASSERT_TRUE(device().map_to_gpu(pointers, kGpuNodeMask, false));
    QueueSpec spec;
    spec.node = kSoftGpuNode;
    spec.ring = ring;
    spec.ring_size = kPage;
    spec.rptr = pointers;
    spec.wptr = pointers + 8;
    auto id = device().create_queue(spec);
    ASSERT_TRUE(id);
    EXPECT_EQ(error_of(device().unmap_from_gpu(ring)), kBusy);
    EXPECT_EQ(error_of(device().free(ring)), kBusy);
    EXPECT_EQ(error_of(device().free(pointers)), kBusy);
    ASSERT_TRUE(device().destroy_queue(id.value()));
    EXPECT_TRUE(device().unmap_from_gpu(ring));
    EXPECT_TRUE(device().free(ring));
    EXPECT_TRUE(device().unmap_from_gpu(pointers));
    EXPECT_TRUE(device().free(pointers));
}

TEST_F(MemoryRulesTest, QueueMemoryMustBeGpuMapped) {
    GpuBuffer ring(device(), kPage), pointers(device(), kPage);
    GpuBuffer read_only(device(), kPage, /*gpu_read_only=*/true);
    HostMemory unregistered(kPage);
    HostMemory unmapped(kPage);
    ASSERT_TRUE(device().register_user(unmapped.va(), kPage, false));
    QueueSpec good;
    good.node = kSoftGpuNode;
    good.ring = ring.va();
    good.ring_size = kPage;
    good.rptr = pointers.va();
    good.wptr = pointers.va(8);

    auto expect = [&](QueueSpec spec, std::error_code code, const char* what) {
        EXPECT_EQ(error_of(device().create_queue(spec)), code) << what;
    };
    QueueSpec s = good;
    s.ring = unregistered.va();
    expect(s, kFault, "ring not registered");
    s = good;
    s.ring = unmapped.va();
    expect(s, kFault, "ring registered, not GPU-mapped");
    s = good;
    s.rptr = unregistered.va();
    expect(s, kFault, "rptr not registered");
    s = good;
    s.wptr = unmapped.va(8);
    expect(s, kFault, "wptr not GPU-mapped");
    s = good;
    s.rptr = read_only.va();
    expect(s, kFault, "rptr GPU read-only");
    s = good;
    s.ring_size = 2 * kPage;
    expect(s, kFault, "ring runs past its mapping");

    s = good;
    s.ring_size = 3 * kPage;
    expect(s, kInval, "ring size not a power of two");
    s = good;
    s.ring_size = 1024;
    expect(s, kInval, "ring too small");
    s = good;
    s.ring = ring.va(64);
    expect(s, kInval, "ring not page aligned");
    s = good;
    s.rptr = pointers.va(4);
    expect(s, kInval, "rptr misaligned");
    s = good;
    s.wptr = 0;
    expect(s, kInval, "no wptr");
    s = good;
    s.node = kSoftCpuNode;
    expect(s, kInval, "CPU node");
    s = good;
    s.percentage = 101;
    expect(s, kInval, "percentage");
    s = good;
    s.priority = 4;
    expect(s, kInval, "priority");
    s = good;
    s.error_event = 12345;
    expect(s, kNoEnt, "unknown error event");

    auto id = device().create_queue(good);
    ASSERT_TRUE(id);
    ASSERT_TRUE(device().destroy_queue(id.value()));
    ASSERT_TRUE(device().deregister_user(unmapped.va()));
}

// The agent writes a queue's read index and retires its packets: that memory must be the
// queue's alone (issue 11, item 4).
TEST_F(MemoryRulesTest, QueueMemoryIsNotSharedOrOverlapping) {
    GpuBuffer memory(device(), 4 * kPage);
    QueueSpec good;
    good.node = kSoftGpuNode;
    good.ring = memory.va();
    good.ring_size = kPage;
    good.rptr = memory.va(kPage);
    good.wptr = memory.va(kPage + 8);

    QueueSpec s = good;
    s.rptr = memory.va(64);
    EXPECT_EQ(error_of(device().create_queue(s)), kInval) << "rptr inside the ring";
    s = good;
    s.wptr = good.rptr;
    EXPECT_EQ(error_of(device().create_queue(s)), kInval) << "rptr on wptr";

    auto first = device().create_queue(good);
    ASSERT_TRUE(first);
    s = good;
    s.rptr = memory.va(2 * kPage);
    s.wptr = memory.va(2 * kPage + 8);
    EXPECT_EQ(error_of(device().create_queue(s)), kBusy) << "the same ring";
    s = good;
    s.ring = memory.va(3 * kPage);
    EXPECT_EQ(error_of(device().create_queue(s)), kBusy) << "the same pointers";
    s.rptr = memory.va(2 * kPage);
    s.wptr = memory.va(2 * kPage + 8);
    auto second = device().create_queue(s);
    ASSERT_TRUE(second) << "disjoint";
    ASSERT_TRUE(device().destroy_queue(first.value()));
    ASSERT_TRUE(device().destroy_queue(second.value()));
}

TEST_F(MemoryRulesTest, UnknownQueuesAreNotFound) {
    EXPECT_EQ(error_of(device().destroy_queue(99)), kNoEnt);
    EXPECT_EQ(error_of(device().ring_doorbell(99, 1)), kNoEnt);
}

class SmallDeviceTest : public SoftAgentTest {
protected:
    SmallDeviceTest() : SoftAgentTest(SoftAgentOptions{.local_mem_size = 64 * 1024}) {}
};

TEST_F(SmallDeviceTest, DeviceLocalMemoryIsLimited) {
    HostMemory reservation(128 * 1024, true);
    EXPECT_EQ(error_of(device().alloc(kSoftGpuNode, reservation.va(), 128 * 1024,
                                      XENHSA_ALLOC_DEVICE_LOCAL)),
              kNoMem);
    ASSERT_TRUE(
        device().alloc(kSoftGpuNode, reservation.va(), 64 * 1024, XENHSA_ALLOC_DEVICE_LOCAL));
    EXPECT_EQ(error_of(device().alloc(kSoftGpuNode, reservation.va(64 * 1024), kPage,
                                      XENHSA_ALLOC_DEVICE_LOCAL)),
              kNoMem);
    ASSERT_TRUE(device().alloc(kSoftGpuNode, reservation.va(64 * 1024), 64 * 1024, 0));
    ASSERT_TRUE(device().free(reservation.va()));
    ASSERT_TRUE(device().free(reservation.va(64 * 1024)));
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
