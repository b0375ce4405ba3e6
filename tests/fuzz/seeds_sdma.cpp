// Seeds of the "sdma" target (input format: sdma_fuzz.cpp, Rig::step).
#include <xenhsa/hsa/soft_testing/sdma_producer.hpp>

#include "queue_fuzz_support.hpp"
#include "seeds.hpp"

namespace xenhsa::fuzz {
namespace {

using hsa::soft_testing::concat;
using hsa::soft_testing::RectSide;
using hsa::soft_testing::SdmaPacket;
namespace sdma = hsa::soft_testing;

enum Op : uint8_t { kPacket = 0, kPublish = 2, kArenaWrite, kRawWptr, kDoorbell, kHostStore, kRun };
enum Region : uint64_t { kArena = 0, kReadOnly = 1, kCanary = 2, kUnregistered = 3 };
enum Mode : uint8_t { kRelocate = 1, kPad = 2 };
enum Config : uint8_t { kBigRing = 1, kNearEnd = 2 };

// sdma_fuzz.cpp's address convention.
constexpr uint64_t at(uint64_t region, uint64_t offset) {
    return (uint64_t{0xA5A5} << 48) | (region << 40) | offset;
}

class Script : public QueueScript<Script, Op> {
public:
    explicit Script(uint8_t config = 0) { b_.u8(config); }
    Script& packet(const SdmaPacket& dwords, uint8_t mode = kRelocate | kPad) {
        b_.u8(kPacket).u8(mode).u8(static_cast<uint8_t>(dwords.size() - 1));
        for (uint32_t d : dwords) {
            b_.u32(d);
        }
        return *this;
    }
    Script& arena(uint16_t offset, uint8_t byte, uint8_t n) {
        b_.u8(kArenaWrite).u16(offset).u8(n);
        for (uint8_t i = 0; i < n; ++i) {
            b_.u8(byte);
        }
        return *this;
    }
    Script& host_store(uint16_t word, uint32_t value) {
        b_.u8(kHostStore).u16(word).u32(value);
        return *this;
    }
};

}  // namespace

void sdma_seeds(SeedSet& out) {
    const auto add = [&](const char* name, const Script& s) { out.add("sdma", name, s.bytes()); };

    add("fill-copy-fence", Script()
                               .arena(0x100, 0x77, 64)
                               .packet(sdma::sdma_fill(at(kArena, 0x1000), 0xABCD1234U, 16))
                               .packet(sdma::sdma_copy(at(kArena, 0x2000), at(kArena, 0x100), 64))
                               .packet(sdma::sdma_fence(at(kArena, 0x3000), 1))
                               .run());
    add("atomic-trap-timestamp",
        Script()
            .packet(sdma::sdma_atomic(at(kArena, 0x40), ~uint64_t{0}))
            .packet(sdma::sdma_trap(1))
            .packet(sdma::sdma_timestamp(at(kArena, 0x80)))
            .packet(concat({sdma::sdma_hdp_flush(), sdma::sdma_gcr(), sdma::sdma_nop(2)}))
            .run());
    add("poll-then-store", Script()
                               .packet(sdma::sdma_poll(at(kArena, 0x200), 5))
                               .packet(sdma::sdma_fence(at(kArena, 0x204), 1))
                               .run()
                               .host_store(0x200 / 4, 5)
                               .op(kRun));
    add("rect-copy",
        Script()
            .packet(sdma::sdma_copy_rect(RectSide{at(kArena, 0x2000), 1, 0, 0, 16, 64},
                                         RectSide{at(kArena, 0), 2, 1, 0, 32, 128}, 2, 4, 3, 2))
            .run());
    Script wrap(kNearEnd);
    for (int i = 0; i < 40; ++i) {
        wrap.packet(sdma::sdma_fence(at(kArena, 4 * (i % 8)), i),
                    i % 2 == 0 ? kRelocate : kRelocate | kPad);
        if (i % 10 == 9) {
            wrap.run();
        }
    }
    add("ring-wrap", wrap.run());
    add("stray-copy", Script()
                          .packet(sdma::sdma_copy(at(kCanary, 0), at(kArena, 0), 32))
                          .packet(sdma::sdma_fence(at(kArena, 0), 1))
                          .run());
    add("read-only-and-unregistered",
        Script(kBigRing)
            .packet(sdma::sdma_fence(at(kReadOnly, 8), 1))
            .run()
            .packet(sdma::sdma_copy(at(kArena, 0), at(kUnregistered, 0), 8))
            .run());
    add("misaligned-atomic", Script().packet(sdma::sdma_atomic(at(kArena, 4), 1)).run());
    add("malformed",
        Script().packet({0x3F, 0, 0}).run().packet(sdma::sdma_atomic(at(kArena, 0), 1, 15)).run());
    add("hostile-write-index", Script()
                                   .packet(sdma::sdma_fence(at(kArena, 0), 1))
                                   .raw_wptr(8)
                                   .op(kRun)
                                   .raw_wptr(0x8000000000000001ULL)
                                   .doorbell(~0ULL)
                                   .op(kRun)
                                   .raw_wptr(1u << 20)
                                   .op(kRun));
    add("half-a-packet", Script()
                             .packet(sdma::sdma_fence(at(kArena, 0), 1))
                             .raw_wptr(8)
                             .op(kRun)
                             .raw_wptr(16)
                             .op(kRun));
}

}  // namespace xenhsa::fuzz
