// Fuzz target "sdma": arbitrary bytes in an SDMA queue of the software GPU agent
// (hsa-bridge/soft through the KfdDevice interface, with the soft_testing producer
// helpers). The harness is a hostile guest that owns the queue: it writes the byte ring,
// its write index and doorbell any way it likes (packets straddling the ring's end
// included), while a second SDMA queue of the same agent belongs to a well-behaved user.
//
// Input: a config byte (bit 0: a 64 KiB ring instead of 4 KiB; bit 1: the indexes start
// 8 bytes before the ring's end), then operations (see Rig::step): packet dwords
// (a count, then the dwords; optionally NOP padding to the ring's end first, as ROCr
// does), publish the write index, write the arena, write a raw write index, ring the
// doorbell with any value, store a word of the arena from the host, let the queue run.
// Two consecutive packet dwords (lo, hi) whose top 16 bits are 0xA5A5 name region
// (bits 40-41 of the pair: arena, GPU read-only page, unmapped canary, unregistered
// memory) plus offset (bits 0-19); anything else is used as it is.
//
// Invariants:
//   * the process and the agent survive every packet (sanitizers watch the engine);
//   * the GPU never writes memory it was not given: a registered but unmapped page, an
//     unregistered page and a GPU read-only page keep their contents;
//   * the read index never passes the furthest write index the guest published;
//   * a queue fault is reported at most once, for the faulting queue only, and its
//     error event is signalled; after the fault the queue runs nothing more;
//   * the other queue goes on: a fence on it lands afterwards;
//   * destroying the queue releases its memory (unmap and deregister succeed), and
//     destroying the agent ends every thread it started.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#include <xenhsa/hsa/soft_agent.hpp>
#include <xenhsa/hsa/soft_testing/sdma_producer.hpp>

#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "queue_fuzz_support.hpp"

namespace xenhsa::fuzz {
namespace {

using namespace hsa::soft_testing;  // NOLINT: the producer vocabulary
using hsa::EventId;
using hsa::KfdDevice;
using hsa::QueueId;
using hsa::Va;

constexpr uint64_t kArenaBytes = 4 * kPage;
constexpr int kMaxOps = 96;
constexpr uint32_t kMaxDwords = 32;
constexpr uint8_t kCanaryByte = 0xC3;
constexpr uint8_t kReadOnlyByte = 0x5A;
constexpr auto kStuck = std::chrono::milliseconds(15);
constexpr auto kRunCap = std::chrono::seconds(2);

class Rig {
public:
    explicit Rig(FuzzInput& in)
        : device_(hsa::make_soft_agent({.worker_threads = 1})),
          arena_(*device_, kArenaBytes),
          read_only_(*device_, kPage, /*gpu_read_only=*/true),
          unregistered_(kPage),
          canary_(kPage),
          healthy_flag_(*device_, kPage) {
        const uint8_t config = in.u8();
        std::memset(read_only_.at<uint8_t>(), kReadOnlyByte, kPage);
        std::memset(canary_.at<uint8_t>(), kCanaryByte, kPage);
        std::memset(unregistered_.at<uint8_t>(), kCanaryByte, kPage);
        check(device_->register_user(canary_.va(), kPage, false), "register canary");
        device_->set_fault_handler([this](const hsa::GpuFault& f) {
            faults_.record(f, queue_ ? queue_->read_index() : 0);
        });
        hsa::EventSpec spec;
        spec.manual_reset = true;
        auto ev = device_->create_event(spec);
        check(ev, "create_event");
        error_event_ = ev.value().id;
        const uint64_t ring = (config & 1U) != 0 ? 64 * 1024 : 4096;
        start_ = (config & 2U) != 0 ? ring - 8 : 0;
        healthy_ = std::make_unique<SdmaTestQueue>(*device_);
        queue_ = std::make_unique<SdmaTestQueue>(
            *device_, SdmaQueueOptions{
                          .ring_bytes = ring, .error_event = error_event_, .start_index = start_});
        write_index_ = start_;
    }

    void run(FuzzInput& in) {
        for (int i = 0; i < kMaxOps && !in.empty(); ++i) {
            step(in);
        }
        publish(write_index_);
        let_run();
        finish();
    }

private:
    Va region_base(uint32_t region) const {
        switch (region & 3U) {
            case 0:
                return arena_.va();
            case 1:
                return read_only_.va();
            case 2:
                return canary_.va();
            default:
                return unregistered_.va();
        }
    }

    // Address pairs that follow the input's convention point into the regions.
    void relocate(std::vector<uint32_t>& dwords) const {
        for (std::size_t i = 0; i + 1 < dwords.size(); ++i) {
            const uint64_t raw = (uint64_t{dwords[i + 1]} << 32) | dwords[i];
            if ((raw >> 48) != 0xA5A5U) {
                continue;
            }
            const uint64_t va = region_base(static_cast<uint32_t>(raw >> 40)) + (raw & 0xFFFFFU);
            dwords[i] = static_cast<uint32_t>(va);
            dwords[i + 1] = static_cast<uint32_t>(va >> 32);
            ++i;
        }
    }

    // mode bit 0: relocate addresses; bit 1: NOP padding instead of straddling the end.
    void packet(FuzzInput& in) {
        const uint8_t mode = in.u8();
        const uint32_t count = 1 + in.u8() % kMaxDwords;
        std::vector<uint32_t> dwords(count);
        for (auto& d : dwords) {
            d = in.u32();
        }
        if ((mode & 1U) != 0) {
            relocate(dwords);
        }
        const uint64_t ring = queue_->ring_bytes();
        const uint64_t offset = write_index_ % ring;
        const uint64_t bytes = uint64_t{count} * sizeof(uint32_t);
        if ((mode & 2U) != 0 && offset + bytes > ring) {
            const std::vector<uint32_t> zeros((ring - offset) / sizeof(uint32_t), 0);
            queue_->write(write_index_, zeros);
            write_index_ += ring - offset;
        }
        queue_->write(write_index_, dwords);
        write_index_ += bytes;
    }

    void publish(uint64_t value) {
        queue_->publish(value, /*ring=*/false);
        const uint64_t ahead = value - start_;
        if (static_cast<int64_t>(ahead) >= 0 && ahead > furthest_) {
            furthest_ = ahead;
        }
        (void)device_->ring_doorbell(queue_->id(), value);
    }

    void arena(FuzzInput& in) {
        const uint32_t offset = in.u16() % kArenaBytes;
        const uint32_t n = std::min<uint32_t>(in.u8(), kArenaBytes - offset);
        if (n != 0) {
            in.fill(arena_.at<uint8_t>(offset), n);
        }
    }

    void step(FuzzInput& in) {
        switch (in.u8() % 8) {
            case 0:
            case 1:
                packet(in);
                break;
            case 2:
                publish(write_index_);
                break;
            case 3:
                arena(in);
                break;
            case 4:
                publish(in.u64());  // a hostile write index
                break;
            case 5:
                (void)device_->ring_doorbell(queue_->id(), in.u64());
                break;
            case 6: {  // the host stores a word a poll may wait for
                const uint32_t word = in.u16() % (kArenaBytes / 4);
                std::atomic_ref<uint32_t>(arena_.at<uint32_t>()[word])
                    .store(in.u32(), std::memory_order_release);
                break;
            }
            default:
                let_run();
                break;
        }
    }

    bool error_fired() {
        const EventId events[] = {error_event_};
        auto mask = device_->wait_events(events, false, 0);
        return mask && mask.value() == 1;
    }

    void check_read_index() {
        XENHSA_FUZZ_CHECK(queue_->read_index() - start_ <= furthest_,
                          "the read index passed every write index the guest published");
    }

    // Until the queue caught up, stopped, or is stuck (a poll nobody satisfies, half a
    // packet): bounded, never judged.
    void let_run() {
        const auto start = std::chrono::steady_clock::now();
        auto last_move = start;
        uint64_t last = queue_->read_index();
        for (;;) {
            check_read_index();
            const uint64_t r = queue_->read_index();
            const auto now = std::chrono::steady_clock::now();
            if (r != last) {
                last = r;
                last_move = now;
            }
            const uint64_t w =
                std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(queue_->wptr_va()))
                    .load(std::memory_order_acquire);
            if (r == w || error_fired() || now - last_move > kStuck || now - start > kRunCap) {
                return;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }

    template <class Memory>
    static void unchanged(const Memory& m, uint8_t byte, const char* what) {
        const auto* p = m.template at<uint8_t>();
        for (uint64_t i = 0; i < m.size(); ++i) {
            XENHSA_FUZZ_CHECK(p[i] == byte, what);
        }
    }

    void finish() {
        check_read_index();
        // Another queue of the same agent still runs packets.
        const uint64_t end = healthy_->submit(sdma_fence(healthy_flag_.va(), 0x600dc0de));
        XENHSA_FUZZ_CHECK(
            healthy_->wait_read_index(end) && *healthy_flag_.at<uint32_t>() == 0x600dc0deU,
            "the other queue stopped working");

        const QueueId fuzzed = queue_->id();
        const QueueId healthy = healthy_->id();
        queue_->destroy();  // joins the engine: no more packets or reports
        const uint64_t final_rptr = queue_->read_index();
        const auto faults = faults_.faults();
        XENHSA_FUZZ_CHECK(faults.size() <= 1, "a queue fault reported more than once");
        for (const auto& f : faults) {
            XENHSA_FUZZ_CHECK(f.queue == fuzzed && f.queue != healthy,
                              "a fault reported for a queue that did not fault");
            XENHSA_FUZZ_CHECK(error_fired(), "a fault without the queue's error event");
            XENHSA_FUZZ_CHECK(final_rptr == faults_.rptr_at_fault(),
                              "the queue ran packets after its fault");
        }
        if (sabotage()) {
            canary_.at<uint8_t>()[17] = 0;  // what a stray GPU write would do
        }
        unchanged(canary_, kCanaryByte, "the GPU wrote memory that was never GPU-mapped");
        unchanged(unregistered_, kCanaryByte, "the GPU wrote memory the device never knew");
        unchanged(read_only_, kReadOnlyByte, "the GPU wrote a GPU read-only page");

        check(device_->unmap_from_gpu(arena_.va()), "unmap the arena");
        check(device_->deregister_user(arena_.va()), "deregister the arena");
        check(device_->deregister_user(canary_.va()), "deregister the canary");
        healthy_->destroy();
    }

    template <class T>
    static void check(const hsa::Result<T>& r, const char* what) {
        XENHSA_FUZZ_CHECK(r.has_value(), what);
    }

    FaultLog faults_;  // before the device: it reports until it is gone
    std::unique_ptr<KfdDevice> device_;
    GpuBuffer arena_;
    GpuBuffer read_only_;
    HostMemory unregistered_;
    HostMemory canary_;
    GpuBuffer healthy_flag_;
    std::unique_ptr<SdmaTestQueue> healthy_;
    std::unique_ptr<SdmaTestQueue> queue_;
    EventId error_event_ = 0;
    uint64_t start_ = 0;
    uint64_t write_index_ = 0;
    uint64_t furthest_ = 0;  // the furthest published write index, from start_
};

}  // namespace
}  // namespace xenhsa::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace xenhsa::fuzz;
    const std::size_t before = threads();
    {
        FuzzInput in(data, size);
        Rig rig(in);
        rig.run(in);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (threads() != before && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    XENHSA_FUZZ_CHECK(threads() == before, "a thread of the agent outlived it");
    return 0;
}
