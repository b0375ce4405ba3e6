#include "packet_loop_path.hpp"

#include <cstring>

namespace xenhsa::bench {

namespace {

constexpr uint16_t kInvalid = 1;   // HSA_PACKET_TYPE_INVALID
constexpr uint16_t kDispatch = 2;  // HSA_PACKET_TYPE_KERNEL_DISPATCH

void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

}  // namespace

PacketLoopPath::PacketLoopPath() : ring_(std::make_unique<Slot[]>(kSlots)) {
    for (uint32_t i = 0; i < kSlots; ++i) {
        ring_[i].header.store(kInvalid, std::memory_order_relaxed);
    }
}

PacketLoopPath::~PacketLoopPath() { end_round(); }

void PacketLoopPath::start_round() {
    if (!consumer_.joinable()) {
        consumer_ = std::jthread([this](std::stop_token stop) { consume(stop); });
    }
}

void PacketLoopPath::end_round() {
    if (consumer_.joinable()) {
        consumer_.request_stop();
        consumer_.join();
    }
}

void PacketLoopPath::consume(std::stop_token stop) noexcept {
    uint64_t read = read_.load(std::memory_order_relaxed);
    while (!stop.stop_requested()) {
        if (write_.load(std::memory_order_acquire) == read) {
            relax();
            continue;
        }
        Slot& slot = ring_[read % kSlots];
        if (slot.header.load(std::memory_order_acquire) == kInvalid) {
            relax();
            continue;
        }
        // One copy of the body, as an agent must (the producer may rewrite the slot).
        Slot packet;
        std::memcpy(reinterpret_cast<std::byte*>(&packet) + 4,
                    reinterpret_cast<const std::byte*>(&slot) + 4, sizeof(Slot) - 4);
        slot.header.store(kInvalid, std::memory_order_relaxed);
        read_.store(++read, std::memory_order_release);
        for (size_t i = 0; i < 16; ++i) {
            std::memcpy(packet.dst + 4 * i, &packet.value, 4);
        }
        packet.signal->fetch_sub(1, std::memory_order_release);
    }
}

void PacketLoopPath::write(std::atomic<int64_t>& signal) {
    while (next_ - read_.load(std::memory_order_acquire) >= kSlots) {
        write_.store(next_, std::memory_order_release);  // a batch larger than the ring
        relax();
    }
    Slot& slot = ring_[next_ % kSlots];
    slot.value = 0x600d;
    slot.signal = &signal;
    slot.dst = data_.data();
    slot.header.store(kDispatch, std::memory_order_release);
    ++next_;
}

void PacketLoopPath::wait_zero(const std::atomic<int64_t>& signal) const {
    while (signal.load(std::memory_order_acquire) != 0) {
        relax();
    }
}

void PacketLoopPath::dispatch_and_wait() {
    signal_.store(1, std::memory_order_relaxed);
    write(signal_);
    write_.store(next_, std::memory_order_release);
    wait_zero(signal_);
}

void PacketLoopPath::dispatch_batch_and_wait(uint32_t count) {
    signal_.store(count, std::memory_order_relaxed);
    for (uint32_t i = 0; i < count; ++i) {
        write(signal_);
    }
    write_.store(next_, std::memory_order_release);
    wait_zero(signal_);
}

}  // namespace xenhsa::bench
