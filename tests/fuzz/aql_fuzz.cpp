// Fuzz target "aql": arbitrary AQL packets in a queue of the software GPU agent
// (hsa-bridge/soft through the KfdDevice interface, with the soft_testing producer
// helpers that tests/hsa/soft uses). The harness is a hostile guest that owns the queue:
// it writes packets, kernargs and signals, its write index and its doorbell, any way it
// likes, while a second queue of the same agent belongs to a well-behaved user.
//
// Input: a config byte (bit 0: the ring is GPU read-only), then operations (see
// Rig::step): a packet (64 bytes; optionally with its addresses moved into the
// harness's memory regions (dispatch, barrier and vendor packets), a real built-in
// kernel object and a bounded grid), publish the write index, write the arena, set up
// a signal, write a raw write index, ring the doorbell with any value, store a signal
// value from the host, let the queue run.
// An address field whose top 16 bits are 0xA5A5 names region (bits 40-41: arena,
// signals, GPU read-only page, unmapped canary) plus offset (bits 0-19); anything else
// is used as it is.
//
// Invariants:
//   * the process and the agent survive every packet (sanitizers watch the agent);
//   * the GPU never writes memory it was not given: a registered but unmapped page, an
//     unregistered page and a GPU read-only page keep their contents;
//   * the read index never passes the write index the guest published;
//   * a queue fault is reported at most once, for the faulting queue only, and its
//     error event is signalled; after the fault the queue fetches nothing more;
//   * the other queue goes on: a dispatch on it completes correctly afterwards;
//   * destroying the queue releases its memory (unmap and deregister succeed), and
//     destroying the agent ends every thread it started.
#include <dirent.h>
#include <xenhsa/hsa/builtin_kernels.h>
#include <xenhsa/proto/event.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>
#include <xenhsa/hsa/soft_agent.hpp>
#include <xenhsa/hsa/soft_testing/aql_producer.hpp>

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
constexpr uint32_t kPackets = 64;
constexpr int kMaxOps = 96;
constexpr uint8_t kCanaryByte = 0xC3;
constexpr uint8_t kReadOnlyByte = 0x5A;
// Letting the queue run: it is quiet when caught up, stopped, or stuck this long.
constexpr auto kStuck = std::chrono::milliseconds(15);
constexpr auto kRunCap = std::chrono::seconds(2);

class Rig {
public:
    explicit Rig(FuzzInput& in)
        : device_(hsa::make_soft_agent({.worker_threads = 2})),
          arena_(*device_, kArenaBytes),
          signals_(*device_, kPage),
          read_only_(*device_, kPage, /*gpu_read_only=*/true),
          unregistered_(kPage),
          canary_(kPage),
          healthy_buffer_(*device_, kPage),
          healthy_signals_(*device_) {
        const uint8_t config = in.u8();
        std::memset(read_only_.at<uint8_t>(), kReadOnlyByte, kPage);
        std::memset(canary_.at<uint8_t>(), kCanaryByte, kPage);
        std::memset(unregistered_.at<uint8_t>(), kCanaryByte, kPage);
        // The canary is known to the device but never mapped for the GPU.
        check(device_->register_user(canary_.va(), kPage, false), "register canary");
        device_->set_fault_handler([this](const hsa::GpuFault& f) {
            faults_.record(f, queue_ ? queue_->read_index() : 0);
        });
        hsa::EventSpec spec;
        spec.manual_reset = true;
        auto ev = device_->create_event(spec);
        check(ev, "create_event");
        error_event_ = ev.value().id;
        error_event_id_ = ev.value().event_id;
        healthy_ = std::make_unique<AqlTestQueue>(*device_);
        queue_ = std::make_unique<AqlTestQueue>(
            *device_, QueueOptions{.packets = kPackets,
                                   .error_event = error_event_,
                                   .ring_gpu_read_only = (config & 1u) != 0});
        for (uint32_t i = 0; i < SignalPage::kSignals; ++i) {
            init_signal(i, 1, 0, 0);
        }
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
        switch (region & 3u) {
            case 0:
                return arena_.va();
            case 1:
                return signals_.va();
            case 2:
                return read_only_.va();
            default:
                return canary_.va();
        }
    }
    // The address convention of the input (see the top of the file).
    uint64_t relocate(uint64_t raw) const {
        if ((raw >> 48) != 0xA5A5u) {
            return raw;
        }
        return region_base(static_cast<uint32_t>(raw >> 40)) + (raw & 0xFFFFFu);
    }

    // amd_signal_t's value is volatile; the host stores to it atomically, as ROCr does.
    std::atomic_ref<int64_t> value_of(uint32_t i) const {
        auto* s = signals_.at<amd_signal_t>(i * sizeof(amd_signal_t));
        return std::atomic_ref<int64_t>(*const_cast<int64_t*>(&s->value));
    }

    void init_signal(uint32_t i, int64_t value, uint64_t mailbox, uint32_t event_id) {
        auto* s = signals_.at<amd_signal_t>(i * sizeof(amd_signal_t));
        std::memset(static_cast<void*>(s), 0, sizeof *s);
        s->kind = AMD_SIGNAL_KIND_USER;
        s->event_mailbox_ptr = mailbox;
        s->event_id = event_id;
        value_of(i).store(value, std::memory_order_release);
    }

    // mode bit 0: relocate the addresses; bit 1: a real kernel object; bit 2: bound the grid.
    void packet(FuzzInput& in) {
        const uint8_t mode = in.u8();
        std::array<uint8_t, 64> bytes{};
        in.fill(bytes.data(), bytes.size());
        uint16_t header = 0;
        std::memcpy(&header, bytes.data(), 2);
        const uint32_t type = (header >> HSA_PACKET_HEADER_TYPE) & 0xFFu;
        if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH) {
            hsa_kernel_dispatch_packet_t p;
            std::memcpy(&p, bytes.data(), sizeof p);
            if ((mode & 1u) != 0) {
                p.kernarg_address = reinterpret_cast<void*>(static_cast<uintptr_t>(
                    relocate(reinterpret_cast<uintptr_t>(p.kernarg_address))));
                p.completion_signal.handle = relocate(p.completion_signal.handle);
            }
            if ((mode & 2u) != 0) {
                auto info = device_->kernel(static_cast<uint32_t>(p.kernel_object % 6));
                check(info, "kernel");
                p.kernel_object = info.value().kernel_object;
            }
            if ((mode & 4u) != 0) {
                // Keeps one input's CPU time small; the agent's own bound is 2^32 items.
                p.grid_size_x %= 1025;
                p.grid_size_y %= 3;
                p.grid_size_z %= 2;
            }
            std::memcpy(bytes.data(), &p, sizeof p);
        } else if ((type == HSA_PACKET_TYPE_BARRIER_AND || type == HSA_PACKET_TYPE_BARRIER_OR) &&
                   (mode & 1u) != 0) {
            hsa_barrier_and_packet_t p;
            std::memcpy(&p, bytes.data(), sizeof p);
            for (auto& dep : p.dep_signal) {
                dep.handle = relocate(dep.handle);
            }
            p.completion_signal.handle = relocate(p.completion_signal.handle);
            std::memcpy(bytes.data(), &p, sizeof p);
        } else if (type == HSA_PACKET_TYPE_VENDOR_SPECIFIC && (mode & 1u) != 0) {
            // AMD's vendor packets keep their completion signal where dispatches do.
            uint64_t signal = 0;
            std::memcpy(&signal, bytes.data() + 56, sizeof signal);
            signal = relocate(signal);
            std::memcpy(bytes.data() + 56, &signal, sizeof signal);
        }
        // As ROCr writes a slot: the body, then header and setup with one release store.
        auto* slot = reinterpret_cast<uint8_t*>(queue_->slot(write_index_));
        std::memcpy(slot + 4, bytes.data() + 4, 60);
        uint32_t word = 0;
        std::memcpy(&word, bytes.data(), 4);
        std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(slot))
            .store(word, std::memory_order_release);
        ++write_index_;
    }

    void publish(uint64_t value) {
        std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(queue_->wptr_va()))
            .store(value, std::memory_order_release);
        if (static_cast<int64_t>(value - max_published_) > 0) {
            max_published_ = value;
        }
        (void)device_->ring_doorbell(queue_->id(), value);
    }

    void arena(FuzzInput& in) {
        const uint32_t offset = in.u16() % kArenaBytes;
        const uint32_t n = std::min<uint32_t>(in.u8(), kArenaBytes - offset);
        if (n == 0) {
            return;
        }
        std::vector<uint8_t> bytes(n);
        in.fill(bytes.data(), n);
        // Whole 8-byte words that follow the address convention are relocated.
        for (uint32_t at = 0; at + 8 <= n; at += 8) {
            uint64_t v;
            std::memcpy(&v, bytes.data() + at, 8);
            v = relocate(v);
            std::memcpy(bytes.data() + at, &v, 8);
        }
        std::memcpy(arena_.at<uint8_t>(offset), bytes.data(), n);
    }

    void signal(FuzzInput& in) {
        const uint32_t i = in.u8() % SignalPage::kSignals;
        const uint8_t kind = in.u8();
        const int64_t value = (kind & 1u) != 0 ? static_cast<int64_t>(in.u64()) : kind >> 5;
        const uint64_t mailbox = (kind & 2u) != 0 ? relocate(in.u64()) : 0;
        const uint32_t event_id = (kind & 4u) != 0 ? error_event_id_ : in.u32();
        init_signal(i, value, mailbox, event_id);
    }

    void step(FuzzInput& in) {
        const uint8_t op = in.u8();
        switch (op % 9) {
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
                signal(in);
                break;
            case 5:
                publish(in.u64());
                break;  // a hostile write index
            case 6:
                (void)device_->ring_doorbell(queue_->id(), in.u64());
                break;
            case 7: {  // the host stores a signal (unblocks barriers)
                const uint32_t i = in.u8() % SignalPage::kSignals;
                value_of(i).store(static_cast<int8_t>(in.u8()), std::memory_order_release);
                (void)device_->ring_doorbell(queue_->id(), write_index_);
                break;
            }
            default:
                let_run();
                break;
        }
    }

    void trace_run(const char* when) {
        if (tracing()) {
            std::fprintf(
                stderr, "aql: %s running: read %lu, write %lu, error event %s, %zu fault(s)\n",
                when, static_cast<unsigned long>(queue_->read_index()),
                static_cast<unsigned long>(
                    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(queue_->wptr_va()))
                        .load()),
                error_fired() ? "set" : "clear", faults_.faults().size());
        }
    }

    bool error_fired() {
        const EventId events[] = {error_event_};
        auto mask = device_->wait_events(events, false, 0);
        return mask && mask.value() == 1;
    }

    // Until the queue caught up with what was published, stopped, or is stuck (an
    // INVALID header, a barrier on a signal nobody completes): bounded, never judged.
    void let_run() {
        trace_run("before");
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
            if (r == std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(queue_->wptr_va()))
                         .load(std::memory_order_acquire) ||
                error_fired() || now - last_move > kStuck || now - start > kRunCap) {
                trace_run("after");
                return;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }

    void check_read_index() {
        XENHSA_FUZZ_CHECK(queue_->read_index() <= max_published_,
                          "the read index passed every write index the guest published");
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
        // Another queue of the same agent still computes.
        const Va out = healthy_buffer_.va();
        std::memset(healthy_buffer_.at<uint8_t>(), 0, kPage);
        auto* args = healthy_buffer_.at<xenhsa_kernarg_fill>(kPage - 64);
        *args = xenhsa_kernarg_fill{out, 64, 0x600dc0de, 0};
        healthy_->submit(dispatch_packet(find_builtin(*device_, "fill").kernel_object,
                                         healthy_buffer_.va(kPage - 64), grid_1d(64, 64),
                                         healthy_signals_.init(0, 1)));
        XENHSA_FUZZ_CHECK(healthy_signals_.wait_eq(0, 0), "the other queue stopped working");
        for (uint32_t i = 0; i < 64; ++i) {
            XENHSA_FUZZ_CHECK(healthy_buffer_.at<uint32_t>()[i] == 0x600dc0de,
                              "the other queue computed a wrong result");
        }

        const QueueId fuzzed = queue_->id();
        const QueueId healthy = healthy_->id();
        queue_->destroy();  // joins its packet processor: no more fetches or reports
        const uint64_t final_rptr = queue_->read_index();
        const auto faults = faults_.faults();
        XENHSA_FUZZ_CHECK(faults.size() <= 1, "a queue fault reported more than once");
        for (const auto& f : faults) {
            XENHSA_FUZZ_CHECK(f.queue == fuzzed && f.queue != healthy,
                              "a fault reported for a queue that did not fault");
            XENHSA_FUZZ_CHECK(error_fired(), "a fault without the queue's error event");
            XENHSA_FUZZ_CHECK(final_rptr == faults_.rptr_at_fault(),
                              "the queue fetched packets after its fault");
        }
        if (sabotage()) {
            canary_.at<uint8_t>()[17] = 0;  // what a stray GPU write would do
        }
        unchanged(canary_, kCanaryByte, "the GPU wrote memory that was never GPU-mapped");
        unchanged(unregistered_, kCanaryByte, "the GPU wrote memory the device never knew");
        unchanged(read_only_, kReadOnlyByte, "the GPU wrote a GPU read-only page");

        // With its queue gone, the queue's memory is free to release.
        check(device_->unmap_from_gpu(queue_->ring_va()), "unmap a destroyed queue's ring");
        check(device_->deregister_user(queue_->ring_va()), "deregister a destroyed queue's ring");
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
    GpuBuffer signals_;
    GpuBuffer read_only_;
    HostMemory unregistered_;  // mapped before the canary: usually just above it
    HostMemory canary_;
    GpuBuffer healthy_buffer_;
    SignalPage healthy_signals_;
    std::unique_ptr<AqlTestQueue> healthy_;
    std::unique_ptr<AqlTestQueue> queue_;
    EventId error_event_ = 0;
    uint32_t error_event_id_ = 0;
    uint64_t write_index_ = 0;
    uint64_t max_published_ = 0;
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
    // A joined thread may stay listed for a moment while the kernel reaps it; a leaked
    // one stays for good.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (threads() != before && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    XENHSA_FUZZ_CHECK(threads() == before, "a thread of the agent outlived it");
    return 0;
}
