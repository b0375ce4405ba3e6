// The physical baseline for tiny dispatches (issue 12): the least an AQL-style packet
// processor can do. A producer writes 64-byte packets into a ring in host memory and
// publishes a write index; a consumer thread polls it, reads each packet, fills 64 bytes,
// retires the slot and decrements the packet's signal atomically. No address checks, no
// workers, no kernels: what is left is the cost of moving a packet between two cores.
//
// The consumer polls only during a round (start_round .. end_round), so that it does not
// steal a core from the other paths while they are measured.
#ifndef XENHSA_BENCH_PACKET_LOOP_PATH_HPP
#define XENHSA_BENCH_PACKET_LOOP_PATH_HPP

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#include "dispatch_path.hpp"

namespace xenhsa::bench {

class PacketLoopPath final : public DispatchPath {
public:
    PacketLoopPath();
    ~PacketLoopPath() override;

    [[nodiscard]] std::string_view name() const override { return "packet_loop"; }
    void start_round() override;
    void end_round() override;
    void dispatch_and_wait() override;
    void dispatch_batch_and_wait(uint32_t count) override;

    static constexpr uint32_t kSlots = 1024;

    struct alignas(64) Slot {
        std::atomic<uint16_t> header{0};
        uint16_t setup = 0;
        uint32_t value = 0;
        std::atomic<int64_t>* signal = nullptr;
        std::byte* dst = nullptr;
        std::array<std::byte, 40> rest{};
    };
    static_assert(sizeof(Slot) == 64);

private:
    void consume(std::stop_token stop) noexcept;
    void write(std::atomic<int64_t>& signal);
    void wait_zero(const std::atomic<int64_t>& signal) const;

    std::unique_ptr<Slot[]> ring_;
    alignas(64) std::atomic<uint64_t> write_{0};
    alignas(64) std::atomic<uint64_t> read_{0};
    alignas(64) std::atomic<int64_t> signal_{0};
    alignas(64) std::array<std::byte, 64> data_{};
    uint64_t next_ = 0;
    std::jthread consumer_;
};

}  // namespace xenhsa::bench

#endif
