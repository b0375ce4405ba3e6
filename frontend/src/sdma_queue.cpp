#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <thread>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/sdma_queue.hpp>

namespace xenhsa::frontend::sdma {

namespace {

// gfx9 SDMA v4 opcodes (the header's low byte) and the copy's sub-opcode (the next byte).
constexpr uint32_t kOpCopy = 1;
constexpr uint32_t kOpFence = 5;
constexpr uint32_t kSubCopyLinear = 0;
constexpr uint64_t kMaxCopyBytes = uint64_t{1} << 22;  // count is bytes - 1 in 22 bits

constexpr uint32_t lo(uint64_t v) { return static_cast<uint32_t>(v); }
constexpr uint32_t hi(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

}  // namespace

Result<SdmaQueue> SdmaQueue::create(Client& client, const QueueOptions& options) {
    QueueSpec spec;
    spec.type = XENHSA_QUEUE_SDMA;
    spec.node = options.node;
    spec.ring_bytes = options.ring_bytes;
    spec.error_event = options.error_event;
    auto queue = QueueMemory::create(client, spec);
    if (!queue) {
        return queue.error();
    }
    SdmaQueue sdma;
    sdma.queue_ = std::move(queue.value());
    return sdma;
}

Result<void> SdmaQueue::wait_for_room(uint64_t bytes,
                                      std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        // The engine writes the read index: a value past what we wrote frees nothing.
        const uint64_t read = read_index();
        const uint64_t done = read <= next_ ? read : 0;
        if (next_ - done + bytes <= queue_.ring_bytes()) {
            return boost::outcome_v2::success();
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            return std::error_code(ETIMEDOUT, std::generic_category());
        }
        if (auto alive = queue_.check_backend(); !alive) {
            return alive.error();
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

Result<void> SdmaQueue::submit(std::span<const uint32_t> packet,
                               std::chrono::milliseconds timeout) {
    if (queue_.handle() == 0) {
        return Errc::not_connected;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const uint64_t size = queue_.ring_bytes();
    const uint64_t bytes = packet.size_bytes();
    const uint64_t at = next_ & (size - 1);
    // A packet never wraps: the rest of the ring becomes one-dword NOPs (zero dwords).
    const uint64_t pad = size - at < bytes ? size - at : 0;
    if (auto room = wait_for_room(pad + bytes, deadline); !room) {
        return room;
    }
    std::memset(queue_.ring() + at, 0, pad);
    std::memcpy(queue_.ring() + ((next_ + pad) & (size - 1)), packet.data(), bytes);
    next_ += pad + bytes;
    return queue_.publish(next_);
}

Result<void> SdmaQueue::copy(uint64_t dst, uint64_t src, uint64_t bytes,
                             std::chrono::milliseconds timeout) {
    for (uint64_t done = 0; done < bytes;) {
        const uint64_t n = std::min(bytes - done, kMaxCopyBytes);
        const std::array<uint32_t, 7> packet{kOpCopy | (kSubCopyLinear << 8),
                                             static_cast<uint32_t>(n - 1),
                                             0,
                                             lo(src + done),
                                             hi(src + done),
                                             lo(dst + done),
                                             hi(dst + done)};
        if (auto sent = submit(packet, timeout); !sent) {
            return sent;
        }
        done += n;
    }
    return boost::outcome_v2::success();
}

Result<void> SdmaQueue::fence(uint64_t address, uint32_t value, std::chrono::milliseconds timeout) {
    const std::array<uint32_t, 4> packet{kOpFence, lo(address), hi(address), value};
    return submit(packet, timeout);
}

}  // namespace xenhsa::frontend::sdma
