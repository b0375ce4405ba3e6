// Seeds of the "aql" target (input format: aql_fuzz.cpp, Rig::step).
#include <hsa/hsa.h>
#include <xenhsa/hsa/builtin_kernels.h>

#include "queue_fuzz_support.hpp"
#include "seeds.hpp"

namespace xenhsa::fuzz {
namespace {

enum Op : uint8_t {
    kPacket = 0,
    kPublish = 2,
    kArenaWrite,
    kSignal,
    kRawWptr,
    kDoorbell,
    kHostStore,
    kRun
};
enum Region : uint64_t { kArena = 0, kSignals = 1, kReadOnly = 2, kCanary = 3 };
enum Mode : uint8_t { kRelocate = 1, kRealKernel = 2, kBoundGrid = 4, kAll = 7 };

// aql_fuzz.cpp's address convention.
constexpr uint64_t at(uint64_t region, uint64_t offset) {
    return (uint64_t{0xA5A5} << 48) | (region << 40) | offset;
}
constexpr uint64_t signal(uint32_t i) { return at(kSignals, i * 64); }

uint16_t header(hsa_packet_type_t type, bool barrier = false) {
    return static_cast<uint16_t>(
        (type << HSA_PACKET_HEADER_TYPE) | ((barrier ? 1 : 0) << HSA_PACKET_HEADER_BARRIER) |
        (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
        (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

hsa_kernel_dispatch_packet_t dispatch(uint32_t kernel, uint64_t kernarg, uint32_t items,
                                      uint64_t completion) {
    hsa_kernel_dispatch_packet_t p{};
    p.header = header(HSA_PACKET_TYPE_KERNEL_DISPATCH);
    p.setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    p.workgroup_size_x = 64;
    p.workgroup_size_y = 1;
    p.workgroup_size_z = 1;
    p.grid_size_x = items;
    p.grid_size_y = 1;
    p.grid_size_z = 1;
    p.kernel_object = kernel;  // a built-in's index, made real by kRealKernel
    p.kernarg_address = reinterpret_cast<void*>(static_cast<uintptr_t>(kernarg));
    p.completion_signal.handle = completion;
    return p;
}

class Script : public QueueScript<Script, Op> {
public:
    explicit Script(uint8_t config = 0) { b_.u8(config); }
    template <class Packet>
    Script& packet(const Packet& p, uint8_t mode = kAll) {
        b_.u8(kPacket).u8(mode).pod(p);
        return *this;
    }
    template <class Kernarg>
    Script& kernarg(uint16_t offset, const Kernarg& k) {
        b_.u8(kArenaWrite).u16(offset).u8(sizeof k).pod(k);
        return *this;
    }
    // A signal of value 1 (kind 0x20), no mailbox, event_id 0.
    Script& signal_one(uint8_t i) {
        b_.u8(kSignal).u8(i).u8(0x20).u32(0);
        return *this;
    }
    // A signal whose completion stores into `mailbox` and sets the error event.
    Script& signal_mailbox(uint8_t i, uint64_t mailbox) {
        b_.u8(kSignal).u8(i).u8(0x20 | 2 | 4).u64(mailbox);
        return *this;
    }
    Script& host_store(uint8_t i, int8_t v) {
        b_.u8(kHostStore).u8(i).u8(static_cast<uint8_t>(v));
        return *this;
    }
};

}  // namespace

void aql_seeds(SeedSet& out) {
    const auto add = [&](const char* name, const Script& s) { out.add("aql", name, s.bytes()); };

    add("fill", Script()
                    .kernarg(0, xenhsa_kernarg_fill{at(kArena, 0x1000), 64, 7, 0})
                    .signal_one(0)
                    .packet(dispatch(XENHSA_KERNEL_FILL, at(kArena, 0), 64, signal(0)))
                    .run());
    add("copy-vector-add-saxpy",
        Script()
            .kernarg(0, xenhsa_kernarg_copy{at(kArena, 0x1000), at(kArena, 0x2000), 256})
            .kernarg(64, xenhsa_kernarg_vector_add{at(kArena, 0x1000), at(kArena, 0x2000),
                                                   at(kArena, 0x3000), 64})
            .kernarg(128, xenhsa_kernarg_saxpy{at(kArena, 0x1000), at(kArena, 0x2000), 64, 2.0f, 0})
            .signal_one(1)
            .packet(dispatch(XENHSA_KERNEL_COPY, at(kArena, 0), 256, 0))
            .packet(dispatch(XENHSA_KERNEL_VECTOR_ADD, at(kArena, 64), 64, 0))
            .packet(dispatch(XENHSA_KERNEL_SAXPY, at(kArena, 128), 64, signal(1)))
            .run());
    add("checksum",
        Script()
            .kernarg(0, xenhsa_kernarg_checksum{at(kArena, 0x1000), 512, at(kArena, 0x800)})
            .kernarg(64, xenhsa_kernarg_checksum{at(kArena, 0x1000), 16, at(kArena, 0x803)})
            .packet(dispatch(XENHSA_KERNEL_CHECKSUM, at(kArena, 0), 512, 0))
            .packet(dispatch(XENHSA_KERNEL_CHECKSUM, at(kArena, 64), 16, 0))
            .run());
    add("oob-read", Script()
                        .kernarg(0, xenhsa_kernarg_oob_read{at(kArena, 0), 5000, at(kArena, 64)})
                        .packet(dispatch(XENHSA_KERNEL_OOB_READ, at(kArena, 0), 1, 0))
                        .packet(dispatch(XENHSA_KERNEL_FILL, at(kArena, 0), 1, 0))
                        .run());
    add("stray-write", Script()
                           .kernarg(0, xenhsa_kernarg_fill{at(kCanary, 0), 16, 1, 0})
                           .packet(dispatch(XENHSA_KERNEL_FILL, at(kArena, 0), 16, 0))
                           .run());
    add("read-only-write", Script()
                               .kernarg(0, xenhsa_kernarg_copy{at(kReadOnly, 8), at(kArena, 0), 8})
                               .packet(dispatch(XENHSA_KERNEL_COPY, at(kArena, 0), 8, 0))
                               .run());
    add("stray-kernarg-and-signal",
        Script().packet(dispatch(XENHSA_KERNEL_FILL, at(kCanary, 0), 4, 0)).run());
    hsa_barrier_and_packet_t and_barrier{};
    and_barrier.header = header(HSA_PACKET_TYPE_BARRIER_AND, true);
    and_barrier.dep_signal[0].handle = signal(2);
    and_barrier.dep_signal[1].handle = signal(3);
    and_barrier.completion_signal.handle = signal(4);
    hsa_barrier_or_packet_t or_barrier{};
    or_barrier.header = header(HSA_PACKET_TYPE_BARRIER_OR);
    or_barrier.dep_signal[0].handle = signal(5);
    or_barrier.dep_signal[4].handle = at(kCanary, 0);
    add("barriers", Script()
                        .signal_one(2)
                        .signal_one(3)
                        .signal_one(4)
                        .signal_one(5)
                        .packet(and_barrier)
                        .run()
                        .host_store(2, 0)
                        .host_store(3, 0)
                        .op(kRun)
                        .packet(or_barrier)
                        .run());
    hsa_kernel_dispatch_packet_t invalid = dispatch(XENHSA_KERNEL_FILL, at(kArena, 0), 4, 0);
    invalid.header = header(HSA_PACKET_TYPE_VENDOR_SPECIFIC);
    invalid.setup = 2;  // AMD's barrier-value format: not run by the agent
    hsa_kernel_dispatch_packet_t waiting = dispatch(XENHSA_KERNEL_FILL, at(kArena, 0), 4, 0);
    waiting.header = header(HSA_PACKET_TYPE_INVALID);
    hsa_kernel_dispatch_packet_t zero_grid = dispatch(XENHSA_KERNEL_FILL, at(kArena, 0), 0, 0);
    add("invalid-packets", Script()
                               .kernarg(0, xenhsa_kernarg_fill{at(kArena, 0x1000), 4, 1, 0})
                               .packet(zero_grid)
                               .run()
                               .packet(invalid)
                               .run());
    add("stalled-header", Script().packet(waiting).run().doorbell(12345));
    // ROCr's PM4 indirect buffer (format 1): a no-op that retires and completes its signal.
    hsa_kernel_dispatch_packet_t pm4 = dispatch(XENHSA_KERNEL_FILL, at(kArena, 0), 4, 0);
    pm4.header = header(HSA_PACKET_TYPE_VENDOR_SPECIFIC);
    pm4.setup = 1;
    pm4.completion_signal.handle = signal(8);
    hsa_kernel_dispatch_packet_t pm4_stray = pm4;
    pm4_stray.completion_signal.handle = at(kCanary, 64);
    add("vendor-pm4",
        Script().signal_one(8).packet(pm4, kRelocate).run().packet(pm4_stray, kRelocate).run());
    add("hostile-write-index", Script()
                                   .kernarg(0, xenhsa_kernarg_fill{at(kArena, 0x1000), 4, 1, 0})
                                   .packet(dispatch(XENHSA_KERNEL_FILL, at(kArena, 0), 4, 0))
                                   .raw_wptr(1000)
                                   .op(kRun)
                                   .raw_wptr(0x8000000000000001ull)
                                   .doorbell(~0ull)
                                   .op(kRun));
    add("mailbox", Script()
                       .kernarg(0, xenhsa_kernarg_fill{at(kArena, 0x1000), 4, 1, 0})
                       .signal_mailbox(6, at(kArena, 0x3000))
                       .signal_mailbox(7, at(kReadOnly, 0))
                       .packet(dispatch(XENHSA_KERNEL_FILL, at(kArena, 0), 4, signal(6)))
                       .packet(dispatch(XENHSA_KERNEL_FILL, at(kArena, 0), 4, signal(7)))
                       .run());
    add("read-only-ring", Script(1)
                              .kernarg(0, xenhsa_kernarg_fill{at(kArena, 0x1000), 4, 1, 0})
                              .packet(dispatch(XENHSA_KERNEL_FILL, at(kArena, 0), 4, 0))
                              .run());
    Script wrap;
    wrap.kernarg(0, xenhsa_kernarg_fill{at(kArena, 0x1000), 64, 3, 0});
    for (int i = 0; i < 70; ++i) {
        wrap.packet(dispatch(XENHSA_KERNEL_FILL, at(kArena, 0), 64, 0));
        if (i % 20 == 19) {
            wrap.run();
        }
    }
    add("ring-wrap", wrap.run());
}

}  // namespace xenhsa::fuzz
