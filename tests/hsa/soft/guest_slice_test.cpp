// GuestSlice (hsa-bridge/soft/guest_slice.hpp), the agent's one accessor of guest memory,
// on an AddressSpace of its own: a slice is handed out only for a range the GPU may reach
// (else the first address it may not), its accessors touch nothing outside it, atomics
// need an aligned address, and a read slice cannot write.
#include "guest_slice.hpp"

#include <gtest/gtest.h>
#include <xenhsa/proto/common.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <xenhsa/hsa/soft_testing/aql_producer.hpp>

#include "address_space.hpp"

namespace xenhsa::hsa::soft_test {
namespace {

using soft::Access;
using soft::AddressSpace;
using soft::GuestAtomic;
using soft::GuestSlice;
using soft_testing::HostMemory;
using soft_testing::kGpuNodeMask;
using soft_testing::kPage;

constexpr std::byte kSentinel{0xAA};

// Five pages of worker memory: [0, 2) registered and GPU-mapped read-write, 2 registered
// read-only, 3 GPU-mapped read-only, 4 registered but not GPU-mapped; the page after them
// is not in the space at all. Every byte starts as kSentinel.
class GuestSliceTest : public ::testing::Test {
protected:
    GuestSliceTest() {
        std::memset(memory_.at<std::byte>(), static_cast<int>(kSentinel), memory_.size());
        EXPECT_TRUE(space_.register_user(va(0), 2 * kPage, false));
        EXPECT_TRUE(space_.map_to_gpu(va(0), kGpuNodeMask, false));
        EXPECT_TRUE(space_.register_user(va(2 * kPage), kPage, /*read_only=*/true));
        EXPECT_TRUE(space_.map_to_gpu(va(2 * kPage), kGpuNodeMask, false));
        EXPECT_TRUE(space_.register_user(va(3 * kPage), kPage, false));
        EXPECT_TRUE(space_.map_to_gpu(va(3 * kPage), kGpuNodeMask, /*read_only=*/true));
        EXPECT_TRUE(space_.register_user(va(4 * kPage), kPage, false));
    }

    [[nodiscard]] Va va(uint64_t offset) const { return memory_.va(offset); }
    [[nodiscard]] std::byte byte_at(uint64_t offset) const {
        return *memory_.at<std::byte>(offset);
    }
    // The bytes in [from, to) of the memory are all kSentinel.
    [[nodiscard]] bool untouched(uint64_t from, uint64_t to) const {
        for (uint64_t i = from; i < to; ++i) {
            if (byte_at(i) != kSentinel) {
                return false;
            }
        }
        return true;
    }

    HostMemory memory_{6 * kPage};
    AddressSpace space_{kGpuNodeMask, 0};
};

TEST_F(GuestSliceTest, ASliceCoversAReachableRangeAcrossRanges) {
    const auto view = space_.view();
    // Read: the read-write pages, the read-only registration and the read-only mapping.
    const auto read = view.slice<Access::read>(va(8), 4 * kPage - 8);
    ASSERT_TRUE(read);
    EXPECT_EQ(read.fault(), std::nullopt);
    EXPECT_EQ(read->va(), va(8));
    EXPECT_EQ(read->size(), 4 * kPage - 8);
    const auto write = view.slice<Access::write>(va(0), 2 * kPage);
    ASSERT_TRUE(write);
    EXPECT_EQ(write->size(), 2 * kPage);
}

TEST_F(GuestSliceTest, AnUnreachableRangeGivesItsFirstFaultingAddress) {
    const auto view = space_.view();
    // Registered but not GPU-mapped.
    const auto unmapped = view.slice<Access::read>(va(4 * kPage - 8), 16);
    EXPECT_FALSE(unmapped);
    EXPECT_EQ(unmapped.fault(), va(4 * kPage));
    // Not in the space at all, from its first byte.
    const auto outside = view.slice<Access::read>(va(5 * kPage + 100), 8);
    EXPECT_FALSE(outside);
    EXPECT_EQ(outside.fault(), va(5 * kPage + 100));
    // Starting before the space's first range.
    const auto before = view.slice<Access::read>(va(0) - 8, 16);
    EXPECT_FALSE(before);
    EXPECT_EQ(before.fault(), va(0) - 8);
}

TEST_F(GuestSliceTest, AReadOnlyRangeGivesNoWriteSlice) {
    const auto view = space_.view();
    // A read-only registration.
    const auto registration = view.slice<Access::write>(va(2 * kPage - 8), 16);
    EXPECT_FALSE(registration);
    EXPECT_EQ(registration.fault(), va(2 * kPage));
    EXPECT_TRUE(view.slice<Access::read>(va(2 * kPage - 8), 16));
    // A read-only GPU mapping.
    const auto mapping = view.slice<Access::write>(va(3 * kPage), 8);
    EXPECT_FALSE(mapping);
    EXPECT_EQ(mapping.fault(), va(3 * kPage));
    EXPECT_TRUE(view.slice<Access::read>(va(3 * kPage), 8));
}

TEST_F(GuestSliceTest, AnAddressOutsideTheVaWindowFaultsThere) {
    const auto view = space_.view();
    const auto at_limit = view.slice<Access::read>(XENHSA_VA_LIMIT, 8);
    EXPECT_FALSE(at_limit);
    EXPECT_EQ(at_limit.fault(), XENHSA_VA_LIMIT);
    const Va high = uint64_t{1} << 63;
    const auto above = view.slice<Access::write>(high, std::numeric_limits<uint64_t>::max());
    EXPECT_FALSE(above);
    EXPECT_EQ(above.fault(), high);
}

TEST_F(GuestSliceTest, AMisalignedAlignedSliceFaultsAtItsAddress) {
    const auto view = space_.view();
    // Reachable, but misaligned: a fault at the address itself, not where memory ends.
    const auto misaligned = view.aligned_slice<Access::write>(va(2 * kPage - 60), 64, 8);
    EXPECT_FALSE(misaligned);
    EXPECT_EQ(misaligned.fault(), va(2 * kPage - 60));
    // Aligned: the reachability check as slice.
    const auto aligned = view.aligned_slice<Access::write>(va(2 * kPage - 32), 64, 8);
    EXPECT_FALSE(aligned);
    EXPECT_EQ(aligned.fault(), va(2 * kPage));
    EXPECT_TRUE(view.aligned_slice<Access::write>(va(64), 64, 8));
}

TEST_F(GuestSliceTest, AFaultDereferencesToASliceThatRefusesEverything) {
    const auto view = space_.view();
    const auto fault = view.slice<Access::write>(va(5 * kPage), 8);
    ASSERT_FALSE(fault);
    EXPECT_EQ(fault->size(), 0u);
    std::array<std::byte, 1> byte{};
    EXPECT_FALSE(fault->read(0, byte));
    EXPECT_FALSE(fault->write(0, byte));
    EXPECT_FALSE(fault->fill(0, 1, 0));
    EXPECT_FALSE(fault->atomic<uint8_t>(0));
}

TEST_F(GuestSliceTest, BytesGoInAndOutAtTheirOffset) {
    const auto view = space_.view();
    const auto slice = view.slice<Access::write>(va(100), 16);
    ASSERT_TRUE(slice);
    const std::array<std::byte, 4> in{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
    ASSERT_TRUE(slice->write(12, in));
    EXPECT_EQ(byte_at(112), std::byte{1});
    EXPECT_EQ(byte_at(115), std::byte{4});
    std::array<std::byte, 4> out{};
    ASSERT_TRUE(slice->read(12, out));
    EXPECT_EQ(out, in);
    ASSERT_TRUE(slice->store<uint32_t>(0, 0x01020304u));
    EXPECT_EQ(slice->load<uint32_t>(0), 0x01020304u);
    ASSERT_TRUE(slice->store<uint16_t>(5, 0xBEEF));  // no alignment needed
    EXPECT_EQ(slice->load<uint16_t>(5), 0xBEEF);
    EXPECT_TRUE(untouched(0, 100));
    EXPECT_TRUE(untouched(116, 2 * kPage));
}

TEST_F(GuestSliceTest, AccessorsRefuseWhatLiesOutsideTheSlice) {
    const auto view = space_.view();
    // The slice's neighbours are reachable too: only the slice's bounds stop an access.
    const auto slice = view.slice<Access::write>(va(100), 16);
    ASSERT_TRUE(slice);
    std::array<std::byte, 8> out{};
    out.fill(std::byte{0x55});
    const std::array<std::byte, 8> in{};
    constexpr uint64_t kHuge = std::numeric_limits<uint64_t>::max();

    EXPECT_FALSE(slice->read(9, out));  // one byte past the end
    EXPECT_FALSE(slice->read(17, std::span<std::byte>()));
    EXPECT_FALSE(slice->read(kHuge, out));  // offset + len wraps
    EXPECT_EQ(out[0], std::byte{0x55});     // nothing copied
    EXPECT_FALSE(slice->write(9, in));
    EXPECT_FALSE(slice->write(kHuge - 2, in));
    EXPECT_FALSE(slice->load<uint64_t>(9));
    EXPECT_FALSE(slice->store<uint64_t>(9, 0));
    EXPECT_FALSE(slice->fill(0, 17, 0));
    EXPECT_FALSE(slice->fill(8, kHuge, 0x01020304));
    EXPECT_FALSE(slice->fill(17, 0, 0));
    EXPECT_FALSE(slice->atomic<uint64_t>(16));
    EXPECT_FALSE(slice->atomic<uint64_t>(kHuge - 7));

    const auto source = view.slice<Access::read>(va(200), 16);
    ASSERT_TRUE(source);
    EXPECT_FALSE(slice->move_from(1, *source));  // 16 bytes do not fit at 1
    EXPECT_TRUE(slice->move_from(0, *source));

    // Still the slice's bytes exactly (the sentinel, copied from 200) and none around.
    EXPECT_TRUE(untouched(0, 2 * kPage));
    // In bounds, every accessor works up to the last byte.
    EXPECT_TRUE(slice->read(8, out));
    EXPECT_TRUE(slice->fill(15, 1, 0));
    EXPECT_TRUE(slice->read(16, std::span<std::byte>()));
    EXPECT_EQ(byte_at(115), std::byte{0});
    EXPECT_TRUE(untouched(116, 2 * kPage));
}

TEST_F(GuestSliceTest, AtomicsNeedAnAlignedAddress) {
    const auto view = space_.view();
    const auto slice = view.slice<Access::write>(va(64), 32);
    ASSERT_TRUE(slice);
    EXPECT_FALSE(slice->atomic<uint64_t>(4));
    EXPECT_FALSE(slice->atomic<uint32_t>(2));
    EXPECT_FALSE(slice->atomic<uint16_t>(1));
    const auto word = slice->atomic<uint64_t>(8);
    ASSERT_TRUE(word);
    word->store(5, std::memory_order_relaxed);
    EXPECT_EQ(word->fetch_add(2, std::memory_order_relaxed), 5u);
    EXPECT_EQ(word->fetch_sub(1, std::memory_order_relaxed), 7u);
    EXPECT_EQ(word->load(std::memory_order_relaxed), 6u);
    EXPECT_EQ(*memory_.at<uint64_t>(72), 6u);
    EXPECT_TRUE(untouched(0, 72));
    EXPECT_TRUE(untouched(80, 2 * kPage));

    // The address must be aligned, not the offset.
    const auto odd = view.slice<Access::read>(va(65), 16);
    ASSERT_TRUE(odd);
    EXPECT_FALSE(odd->atomic<uint16_t>(0));
    ASSERT_TRUE(odd->atomic<uint16_t>(1));
    EXPECT_FALSE(odd->atomic<uint64_t>(1));
    EXPECT_TRUE(odd->atomic<uint64_t>(7));
}

TEST_F(GuestSliceTest, FillRepeatsThePatternOverTheRangeOnly) {
    const auto view = space_.view();
    const auto slice = view.slice<Access::write>(va(0), 2 * kPage);
    ASSERT_TRUE(slice);
    // Past one copy block (8 KiB doubles up to it), at an odd offset, an odd length.
    const uint64_t offset = 3;
    const uint64_t len = 2 * kPage - 10;
    ASSERT_TRUE(slice->fill(offset, len, 0x04030201u));
    EXPECT_TRUE(untouched(0, offset));
    for (uint64_t i = 0; i < len; ++i) {
        ASSERT_EQ(byte_at(offset + i), std::byte(1 + i % 4)) << i;
    }
    EXPECT_TRUE(untouched(offset + len, 3 * kPage));
    // Equal bytes: memset.
    ASSERT_TRUE(slice->fill(8, 8, 0x07070707u));
    EXPECT_EQ(*memory_.at<uint64_t>(8), 0x0707070707070707u);
    EXPECT_EQ(byte_at(16), std::byte(1 + (16 - offset) % 4));
}

TEST_F(GuestSliceTest, MoveFromIsAMemmoveBetweenSlices) {
    const auto view = space_.view();
    for (uint8_t i = 0; i < 16; ++i) {
        *memory_.at<uint8_t>(i) = i;
    }
    const auto src = view.slice<Access::read>(va(0), 12);
    const auto dst = view.slice<Access::write>(va(4), 12);
    ASSERT_TRUE(src && dst);
    ASSERT_TRUE(dst->move_from(0, *src));  // overlapping, forward
    for (uint8_t i = 0; i < 12; ++i) {
        EXPECT_EQ(*memory_.at<uint8_t>(4 + i), i);
    }
    // From a read-only registration into writable memory.
    const auto read_only = view.slice<Access::read>(va(2 * kPage), 8);
    ASSERT_TRUE(read_only);
    ASSERT_TRUE(dst->move_from(4, *read_only));
    EXPECT_EQ(*memory_.at<uint64_t>(8), 0xAAAAAAAAAAAAAAAAu);
}

// What a slice allows by its access, and that only the address space makes slices:
// evaluated at compile time, reported by the test.
template <class Slice>
constexpr bool kHasWrite = requires(const Slice& s, std::span<const std::byte> in) {
    s.write(0, in);
};
template <class Slice>
constexpr bool kHasStore = requires(const Slice& s) {
    s.store(0, uint32_t{0});
};
template <class Slice>
constexpr bool kHasFill = requires(const Slice& s) {
    s.fill(0, 0, 0);
};
template <class Slice>
constexpr bool kHasMoveFrom = requires(const Slice& s, const GuestSlice<Access::read>& src) {
    s.move_from(0, src);
};
template <class Atomic>
constexpr bool kAtomicHasStore = requires(const Atomic& a) {
    a.store(0, std::memory_order_relaxed);
};
template <class Atomic>
constexpr bool kAtomicHasAdd = requires(const Atomic& a) {
    a.fetch_add(0, std::memory_order_relaxed);
};
template <class Atomic>
constexpr bool kAtomicHasSub = requires(const Atomic& a) {
    a.fetch_sub(0, std::memory_order_relaxed);
};
template <class Atomic>
constexpr bool kAtomicReadable = requires(const Atomic& a) {
    a.load(std::memory_order_relaxed);
};

TEST(GuestSliceAccess, AReadSliceCannotWriteAndNoOneButTheSpaceMakesSlices) {
    using Read = GuestSlice<Access::read>;
    using Write = GuestSlice<Access::write>;
    using ReadAtomic = GuestAtomic<uint64_t, Access::read>;
    using WriteAtomic = GuestAtomic<uint64_t, Access::write>;
    EXPECT_FALSE(kHasWrite<Read>);
    EXPECT_FALSE(kHasStore<Read>);
    EXPECT_FALSE(kHasFill<Read>);
    EXPECT_FALSE(kHasMoveFrom<Read>);
    EXPECT_TRUE(kHasWrite<Write> && kHasStore<Write> && kHasFill<Write> && kHasMoveFrom<Write>);
    EXPECT_FALSE(kAtomicHasStore<ReadAtomic>);
    EXPECT_FALSE(kAtomicHasAdd<ReadAtomic>);
    EXPECT_FALSE(kAtomicHasSub<ReadAtomic>);
    EXPECT_TRUE(kAtomicReadable<ReadAtomic>);
    EXPECT_TRUE(kAtomicHasStore<WriteAtomic> && kAtomicHasAdd<WriteAtomic> &&
                kAtomicHasSub<WriteAtomic>);
    EXPECT_FALSE((std::is_convertible_v<Read, Write>));
    EXPECT_TRUE((std::is_convertible_v<Write, Read>));
    EXPECT_FALSE((std::is_constructible_v<Read, Va, uint64_t>));
    EXPECT_FALSE((std::is_constructible_v<Write, Va, uint64_t>));
    EXPECT_FALSE(std::is_default_constructible_v<Read>);
    EXPECT_FALSE((std::is_constructible_v<WriteAtomic, uint64_t*>));
}

TEST_F(GuestSliceTest, AHeldQueueGetsSlicesOfItsRingAndPointers) {
    const soft::QueueMemory memory{va(0), kPage, va(kPage), va(kPage + 8)};
    auto held = space_.hold_queue_memory(memory, kGpuNodeMask);
    ASSERT_TRUE(held);
    EXPECT_EQ(held.value().ring.va(), va(0));
    EXPECT_EQ(held.value().ring.size(), kPage);
    ASSERT_TRUE(held.value().writable_ring);
    EXPECT_EQ(held.value().writable_ring->va(), va(0));
    held.value().rptr.store(42, std::memory_order_relaxed);
    EXPECT_EQ(*memory_.at<uint64_t>(kPage), 42u);
    *memory_.at<uint64_t>(kPage + 8) = 43;
    EXPECT_EQ(held.value().wptr.load(std::memory_order_relaxed), 43u);
    space_.release_queue_memory(memory);

    // A ring the GPU may only read: no write slice of it.
    const soft::QueueMemory read_only{va(3 * kPage), kPage, va(kPage), va(kPage + 8)};
    auto ring_read_only = space_.hold_queue_memory(read_only, kGpuNodeMask);
    ASSERT_TRUE(ring_read_only);
    EXPECT_FALSE(ring_read_only.value().writable_ring);
    EXPECT_EQ(ring_read_only.value().ring.va(), va(3 * kPage));
    space_.release_queue_memory(read_only);

    // A read pointer the GPU may not write, or misaligned pointers: none.
    const auto bad_address = std::make_error_code(std::errc::bad_address);
    auto rptr_read_only =
        space_.hold_queue_memory({va(0), kPage, va(2 * kPage), va(kPage)}, kGpuNodeMask);
    ASSERT_FALSE(rptr_read_only);
    EXPECT_EQ(rptr_read_only.error(), bad_address);
    auto misaligned =
        space_.hold_queue_memory({va(0), kPage, va(kPage + 4), va(kPage + 16)}, kGpuNodeMask);
    ASSERT_FALSE(misaligned);
    EXPECT_EQ(misaligned.error(), bad_address);
    // Nothing held: the ranges unmap.
    EXPECT_TRUE(space_.unmap_from_gpu(va(0)));
}

}  // namespace
}  // namespace xenhsa::hsa::soft_test
