#include "sdma_queue.hpp"

#include <algorithm>
#include <cstring>

#include "clock.hpp"
#include "sdma_memory.hpp"

namespace xenhsa::hsa::soft {

namespace {

constexpr uint32_t kMaxElementLog2 = 4;  // 16-byte elements

template <class Packet>
Packet as(const std::array<uint32_t, sdma::kMaxPacketDwords>& dwords) noexcept {
    static_assert(sizeof(Packet) <= sizeof dwords);
    Packet packet{};
    std::memcpy(&packet, dwords.data(), sizeof packet);
    return packet;
}

}  // namespace

SdmaQueue::SdmaQueue(AgentShared& agent, QueueId id, const QueueSpec& spec,
                     const HeldQueueMemory& held)
    : agent_(agent),
      id_(id),
      held_(held),
      error_event_(spec.error_event),
      ring_mask_(spec.ring_size - 1),
      active_(spec.percentage > 0) {
    // Where the guest left the read index (zero for a fresh queue): read once.
    read_ = held_.rptr.load(std::memory_order_acquire);
}

SdmaQueue::~SdmaQueue() { stop(); }

void SdmaQueue::start() {
    if (active_) {
        thread_ = std::thread([this] { run(); });
    }
}

void SdmaQueue::doorbell() noexcept {
    std::lock_guard lock(mutex_);
    ++doorbells_;
    cv_.notify_one();
}

void SdmaQueue::stop() noexcept {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        halted_.store(true, std::memory_order_release);
        cv_.notify_all();
    }
    agent_.sdma.interrupt();  // it may wait for an engine
    agent_.signals.bump();    // a poll sleeps on the hub
    if (!thread_.joinable()) {
        return;
    }
    if (thread_.get_id() == std::this_thread::get_id()) {
        agent_.errors.adopt_thread(std::move(thread_));  // destroyed from its FaultHandler
    } else {
        thread_.join();
    }
}

void SdmaQueue::fail(std::optional<Va> fault) noexcept {
    std::lock_guard lock(mutex_);
    if (!failed_) {
        failed_ = true;
        fault_ = fault;
    }
    halted_.store(true, std::memory_order_release);
    cv_.notify_all();
}

uint64_t SdmaQueue::load_wptr() const noexcept {
    return held_.wptr.load(std::memory_order_acquire);
}

bool SdmaQueue::wait_doorbell(uint64_t seen, std::chrono::microseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return doorbells_ != seen || stopping_ || failed_; });
}

// The ring is held by the queue (it cannot be unmapped meanwhile) and only read.
bool SdmaQueue::copy_from_ring(uint64_t index, std::span<std::byte> out) const noexcept {
    const uint64_t offset = index & ring_mask_;
    const uint64_t first = std::min<uint64_t>(out.size(), held_.ring.size() - offset);
    return held_.ring.read(offset, out.first(first)) && held_.ring.read(0, out.subspan(first));
}

void SdmaQueue::run() noexcept {
    try {
        process_packets();
    } catch (...) {
        fail(std::nullopt);
    }
    bool failed = false;
    std::optional<Va> fault;
    {
        std::lock_guard lock(mutex_);
        failed = failed_;
        fault = fault_;
    }
    if (failed) {
        // Last: the handler may destroy this queue.
        // An error no event of the queue reports would leave its users waiting: what an
        // engine does on a packet it cannot decode, a hang (an AQL queue raises its
        // amd_queue_t's inactive signal instead).
        agent_.errors.queue_failed(id_, error_event_, fault, !fault && error_event_ == 0);
    }
}

void SdmaQueue::process_packets() {
    IdleWait idle(agent_.idle, agent_.kicks);
    uint64_t stuck = read_;  // a write index that gave nothing (more) to run
    for (;;) {
        uint64_t seen = 0;
        {
            std::lock_guard lock(mutex_);
            if (stopping_ || failed_) {
                return;
            }
            seen = doorbells_;  // before the wptr load: a later doorbell wakes the wait
        }
        const uint64_t wptr = load_wptr();
        if (wptr == stuck) {
            idle.step(
                [&] { return load_wptr() != stuck; },
                [&](std::chrono::microseconds timeout) { return wait_doorbell(seen, timeout); });
            continue;
        }
        idle.busy();
        stuck = wptr;
        // The write index is guest-written: not ahead means nothing to run.
        const uint64_t ahead = wptr - read_;
        if (static_cast<int64_t>(ahead) <= 0) {
            continue;
        }
        if (ahead > held_.ring.size()) {
            fail(std::nullopt);  // more than a ring ahead: not a producer's index
            return;
        }
        while (read_ != wptr && !halted_.load(std::memory_order_acquire)) {
            const Step step = process(wptr - read_);
            if (step == Step::stop) {
                return;
            }
            if (step == Step::incomplete) {
                break;  // until the write index moves again
            }
        }
    }
}

SdmaQueue::Step SdmaQueue::process(uint64_t available) {
    Dwords packet{};
    const auto packet_bytes = std::as_writable_bytes(std::span(packet));
    if (!copy_from_ring(read_, packet_bytes.first(sizeof(uint32_t)))) {
        return malformed();
    }
    const auto dwords = sdma::packet_dwords(packet[0]);
    if (!dwords) {
        return malformed();  // an opcode or sub-opcode this engine does not run
    }
    const uint64_t bytes = uint64_t{*dwords} * sizeof(uint32_t);
    if (bytes > held_.ring.size()) {
        return malformed();  // a NOP longer than the ring can never be complete
    }
    if (bytes > available) {
        return Step::incomplete;
    }
    // One copy of the rest; the guest may rewrite the ring meanwhile. A NOP's skipped
    // dwords are never read.
    const uint32_t copied = std::min<uint32_t>(*dwords, sdma::kMaxPacketDwords);
    if (!copy_from_ring(read_ + sizeof(uint32_t),
                        packet_bytes.subspan(sizeof(uint32_t), (copied - 1) * sizeof(uint32_t)))) {
        return malformed();
    }

    const Step step = execute(packet);
    if (step != Step::next) {
        return step;
    }
    read_ += bytes;
    held_.rptr.store(read_, std::memory_order_release);
    agent_.packets_taken.fetch_add(1, std::memory_order_relaxed);
    return Step::next;
}

SdmaQueue::Step SdmaQueue::malformed() {
    fail(std::nullopt);
    return Step::stop;
}

SdmaQueue::Step SdmaQueue::finish(const sdma::OpEnd& end) {
    if (end.fault) {
        fail(end.fault);
        return Step::stop;
    }
    return end.stopped ? Step::stop : Step::next;
}

SdmaQueue::Step SdmaQueue::execute(const Dwords& packet) {
    using namespace sdma;
    const AddressSpace& space = agent_.memory;
    const uint32_t header = packet[0];
    switch (opcode(header)) {
        case kOpNop:
        case kOpGcr:  // caches: a software GPU has none to write back or invalidate
            return Step::next;
        case kOpCopy: {
            if (sub_opcode(header) == kSubCopyLinear) {
                const auto p = as<CopyLinear>(packet);
                if (p.swaps()) {
                    return malformed();  // byte swapping is not modelled
                }
                EngineTurn turn(agent_.sdma, halted_);
                return finish(copy_linear(space, address(p.dst_lo, p.dst_hi),
                                          address(p.src_lo, p.src_hi), p.bytes(), turn));
            }
            const auto p = as<CopyLinearRect>(packet);
            if (p.swaps() || p.element_log2() > kMaxElementLog2) {
                return malformed();
            }
            EngineTurn turn(agent_.sdma, halted_);
            return finish(copy_rect(space, p, turn));
        }
        case kOpConstFill: {
            const auto p = as<ConstFill>(packet);
            if (p.fill_size() != kFillDword || p.swaps()) {
                return malformed();  // ROCr fills dwords only
            }
            EngineTurn turn(agent_.sdma, halted_);
            return finish(
                fill_dwords(space, address(p.dst_lo, p.dst_hi), p.data, p.dwords(), turn));
        }
        case kOpFence: {
            const auto p = as<Fence>(packet);
            const Step step = finish(store32(space, address(p.addr_lo, p.addr_hi), p.data));
            agent_.signals.bump();  // it may have been a signal's value a barrier waits for
            return step;
        }
        case kOpTrap: {
            // ROCr's interrupt for a signal with an event: the event, if it is one of ours.
            if (const uint32_t event_id = as<Trap>(packet).context(); event_id != 0) {
                agent_.events.set_by_event_id(event_id);
            }
            return Step::next;
        }
        case kOpPollRegMem:
            return poll(as<PollRegMem>(packet));
        case kOpAtomic: {
            const auto p = as<Atomic>(packet);
            if (p.operation() != kAtomicAdd64) {
                return malformed();  // ROCr decrements signals with ADD64 only
            }
            const Step step = finish(add64(space, address(p.addr_lo, p.addr_hi), p.source()));
            agent_.signals.bump();
            return step;
        }
        case kOpTimestamp: {
            const auto p = as<Timestamp>(packet);
            return finish(store64(space, address(p.addr_lo, p.addr_hi), clock_now()));
        }
        default:
            return malformed();  // packet_dwords knew it: not reached
    }
}

SdmaQueue::Step SdmaQueue::poll(const sdma::PollRegMem& packet) {
    if (!packet.memory()) {
        return Step::next;  // a register poll (ROCr's HDP flush): nothing to wait for here
    }
    if (packet.function() > 6) {
        return malformed();  // reserved compare function
    }
    // Retry count and interval are the hardware's pacing; this engine waits until the
    // condition holds (ROCr asks for "forever"), with a backoff that never spins for long.
    const IdlePolicy& pace = agent_.idle;
    const Va address = sdma::address(packet.addr_lo, packet.addr_hi);
    const auto started = std::chrono::steady_clock::now();
    std::chrono::microseconds backoff = pace.backoff_min;
    for (uint32_t looks = 0;; ++looks) {
        const uint64_t epoch = agent_.signals.epoch();  // before the look: see SignalHub
        if (halted_.load(std::memory_order_acquire)) {
            return Step::stop;
        }
        const sdma::Load32 word = sdma::load32(agent_.memory, address);
        if (word.fault) {
            fail(word.fault);
            return Step::stop;
        }
        if (*sdma::poll_compare(packet.function(), word.value & packet.mask, packet.value)) {
            return Step::next;
        }
        const auto waited = std::chrono::steady_clock::now() - started;
        if (looks < pace.spin || waited < pace.spin_time) {
            xenhsa_cpu_relax();
            continue;
        }
        const bool slow = waited >= pace.block_after;
        agent_.signals.wait(
            epoch, slow ? std::chrono::duration_cast<std::chrono::microseconds>(pace.block_recheck)
                        : backoff);
        backoff = std::min(backoff * 2, pace.backoff_max);
    }
}

}  // namespace xenhsa::hsa::soft
