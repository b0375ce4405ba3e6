// The producer's side of an SDMA queue, for tests and benchmarks: gfx9 SDMA packets
// encoded from the field positions of the hardware format (as ROCr's BlitSdmaV4 writes
// them), and a queue whose byte ring and 64-bit read/write byte indexes live in
// GPU-mapped host memory, written the way ROCr writes them (packets, NOP padding to the
// ring's end instead of a straddling packet, then the write index, then the doorbell).
// Errors throw std::runtime_error.
#ifndef XENHSA_HSA_SOFT_TESTING_SDMA_PRODUCER_HPP
#define XENHSA_HSA_SOFT_TESTING_SDMA_PRODUCER_HPP

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <thread>
#include <utility>
#include <vector>
#include <xenhsa/hsa/soft_testing/aql_producer.hpp>

namespace xenhsa::hsa::soft_testing {

using SdmaPacket = std::vector<uint32_t>;

namespace sdma_encode {

constexpr uint32_t header(uint32_t op, uint32_t sub_op = 0, uint32_t extra = 0) {
    return op | (sub_op << 8) | extra;
}
constexpr uint32_t lo(uint64_t v) { return static_cast<uint32_t>(v); }
constexpr uint32_t hi(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

}  // namespace sdma_encode

// NOP: one dword, plus `skip` dwords the engine passes over.
inline SdmaPacket sdma_nop(uint32_t skip = 0) {
    SdmaPacket p(1 + skip, 0);
    p[0] = sdma_encode::header(0, 0, skip << 16);
    return p;
}

// COPY LINEAR: `bytes` (1 .. 4 MiB) from src to dst; count holds bytes - 1.
inline SdmaPacket sdma_copy(Va dst, Va src, uint64_t bytes) {
    using namespace sdma_encode;
    return {header(1, 0), static_cast<uint32_t>(bytes - 1), 0, lo(src), hi(src), lo(dst), hi(dst)};
}

// One side of a COPY LINEAR_RECT, in elements of 1 << element_log2 bytes.
struct RectSide {
    Va base = 0;
    uint32_t x = 0;
    uint32_t y = 0;
    uint32_t z = 0;
    uint32_t pitch = 1;  // elements per row
    uint32_t slice = 1;  // elements per slice
};

inline SdmaPacket sdma_copy_rect(const RectSide& dst, const RectSide& src, uint32_t element_log2,
                                 uint32_t width, uint32_t height, uint32_t depth) {
    using namespace sdma_encode;
    const auto side = [](const RectSide& s) {
        return std::array<uint32_t, 5>{lo(s.base), hi(s.base), s.x | (s.y << 16),
                                       s.z | ((s.pitch - 1) << 13), s.slice - 1};
    };
    const auto d = side(dst);
    const auto s = side(src);
    return {header(1, 4, element_log2 << 29),
            s[0],
            s[1],
            s[2],
            s[3],
            s[4],
            d[0],
            d[1],
            d[2],
            d[3],
            d[4],
            (width - 1) | ((height - 1) << 16),
            depth - 1};
}

// CONSTANT FILL of `dwords` dwords (as ROCr: fill size 2, count = bytes - 4).
inline SdmaPacket sdma_fill(Va dst, uint32_t value, uint32_t dwords) {
    using namespace sdma_encode;
    return {header(11, 0, 2u << 30), lo(dst), hi(dst), value, (dwords - 1) * 4};
}

inline SdmaPacket sdma_fence(Va address, uint32_t value) {
    using namespace sdma_encode;
    return {header(5), lo(address), hi(address), value};
}

inline SdmaPacket sdma_trap(uint32_t event_id) { return {sdma_encode::header(6), event_id}; }

// POLL_REGMEM on memory: until (*address & mask) <function> reference.
inline SdmaPacket sdma_poll(Va address, uint32_t reference, uint32_t function = 3,
                            uint32_t mask = 0xFFFFFFFFu) {
    using namespace sdma_encode;
    return {header(8, 0, (function << 28) | (1u << 31)),
            lo(address),
            hi(address),
            reference,
            mask,
            0x4 | (0xFFFu << 16)};
}

// ROCr's HDP flush: a POLL_REGMEM of registers (mem_poll 0).
inline SdmaPacket sdma_hdp_flush() { return {0x8, 0, 0x80000000u, 0, 0, 0}; }

// ATOMIC (operation 47: 64-bit add; ROCr adds -1 to decrement a signal).
inline SdmaPacket sdma_atomic(Va address, uint64_t value, uint32_t operation = 47) {
    using namespace sdma_encode;
    return {
        header(10, 0, operation << 25), lo(address), hi(address), lo(value), hi(value), 0, 0, 0};
}

inline SdmaPacket sdma_timestamp(Va address) {
    using namespace sdma_encode;
    return {header(13, 2), lo(address), hi(address)};
}

// GCR (sub-op 1, gfx10's cache control): write back and invalidate.
inline SdmaPacket sdma_gcr() { return {sdma_encode::header(17, 1), 0, 0x3u << 30, 0, 0}; }

inline SdmaPacket concat(std::initializer_list<SdmaPacket> packets) {
    SdmaPacket all;
    for (const auto& p : packets) {
        all.insert(all.end(), p.begin(), p.end());
    }
    return all;
}

struct SdmaQueueOptions {
    uint64_t ring_bytes = 64 * 1024;  // a power of two, >= 4096
    EventId error_event = 0;
    uint64_t start_index = 0;  // the read and write indexes the queue starts at
    uint32_t percentage = 100;
};

// An SDMA queue whose byte ring and read/write indexes live in GPU-mapped host memory.
// One producer thread at a time.
class SdmaTestQueue {
public:
    SdmaTestQueue(KfdDevice& device, SdmaQueueOptions options = {})
        : device_(device),
          ring_(device, options.ring_bytes),
          pointers_(device, kPage),
          next_(options.start_index) {
        index_ref(kReadOffset).store(options.start_index, std::memory_order_release);
        index_ref(kWriteOffset).store(options.start_index, std::memory_order_release);
        QueueSpec spec;
        spec.type = QueueType::sdma;
        spec.node = kSoftGpuNode;
        spec.percentage = options.percentage;
        spec.priority = 3;  // ROCr's HSA_QUEUE_PRIORITY_MAXIMUM
        spec.ring = ring_.va();
        spec.ring_size = ring_.size();
        spec.rptr = rptr_va();
        spec.wptr = wptr_va();
        spec.error_event = options.error_event;
        auto id = device_.create_queue(spec);
        check(id, "create_queue (SDMA)");
        id_ = id.value();
    }
    ~SdmaTestQueue() { destroy(); }
    SdmaTestQueue(const SdmaTestQueue&) = delete;
    SdmaTestQueue& operator=(const SdmaTestQueue&) = delete;

    void destroy() {
        if (id_ != 0) {
            (void)device_.destroy_queue(std::exchange(id_, 0));
        }
    }

    [[nodiscard]] QueueId id() const { return id_; }
    [[nodiscard]] uint64_t ring_bytes() const { return ring_.size(); }
    [[nodiscard]] Va rptr_va() const { return pointers_.va(kReadOffset); }
    [[nodiscard]] Va wptr_va() const { return pointers_.va(kWriteOffset); }
    [[nodiscard]] uint64_t read_index() const {
        return index_ref(kReadOffset).load(std::memory_order_acquire);
    }
    [[nodiscard]] uint64_t write_index() const { return next_; }

    // As ROCr: NOP padding to the ring's end when the packets would straddle it, the
    // packets, then the write index and (with `ring`) the doorbell. Returns the write
    // index after the packets.
    uint64_t submit(std::span<const uint32_t> dwords, bool ring = true) {
        const uint64_t bytes = dwords.size() * sizeof(uint32_t);
        const uint64_t offset = next_ % ring_.size();
        if (offset + bytes > ring_.size()) {
            reserve(ring_.size() - offset);
            std::memset(ring_.at<std::byte>(offset), 0, ring_.size() - offset);  // NOPs
            next_ += ring_.size() - offset;
        }
        reserve(bytes);
        write(next_, dwords);
        next_ += bytes;
        publish(next_, ring);
        return next_;
    }
    uint64_t submit(const SdmaPacket& packet, bool ring = true) {
        return submit(std::span<const uint32_t>(packet), ring);
    }

    // The steps, for tests that break the rules: bytes at any index (wrapping at the
    // ring's end), and any write index.
    void write(uint64_t index, std::span<const uint32_t> dwords) {
        const auto* bytes = reinterpret_cast<const std::byte*>(dwords.data());
        for (uint64_t i = 0; i < dwords.size_bytes(); ++i) {
            *ring_.at<std::byte>((index + i) % ring_.size()) = bytes[i];
        }
    }
    void publish(uint64_t write_index, bool ring = true) {
        index_ref(kWriteOffset).store(write_index, std::memory_order_release);
        if (ring) {
            ring_doorbell(write_index);
        }
    }
    void ring_doorbell(uint64_t value) { check(device_.ring_doorbell(id_, value), "doorbell"); }
    void set_next(uint64_t index) { next_ = index; }

    // Polls until the read index reaches `index`; false after `timeout`.
    bool wait_read_index(uint64_t index,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (read_index() < index) {
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
            std::this_thread::yield();
        }
        return true;
    }

private:
    static constexpr uint64_t kReadOffset = 0;
    static constexpr uint64_t kWriteOffset = 64;  // another cache line, as ROCr's thunk

    [[nodiscard]] std::atomic_ref<uint64_t> index_ref(uint64_t offset) const {
        return std::atomic_ref<uint64_t>(*pointers_.at<uint64_t>(offset));
    }
    // Waits until the engine has consumed enough for `bytes` more.
    void reserve(uint64_t bytes) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (next_ + bytes - read_index() >= ring_.size()) {
            if (std::chrono::steady_clock::now() > deadline) {
                fail("SDMA ring stayed full");
            }
            std::this_thread::yield();
        }
    }

    KfdDevice& device_;
    GpuBuffer ring_;
    GpuBuffer pointers_;
    QueueId id_ = 0;
    uint64_t next_ = 0;
};

}  // namespace xenhsa::hsa::soft_testing

#endif
