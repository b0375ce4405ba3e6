// The "ring" target's rig: its setup from the config bytes, a well-behaved guest's
// requests (the connect), serving the ring with the checks on each pass, and teardown.
#include "ring_rig.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>

#include "fuzz_check.hpp"

namespace xenhsa::fuzz::ring {
namespace {

template <class T>
Page<T> zeroed_pages(std::size_t bytes) {
    void* p = std::aligned_alloc(XENHSA_PAGE_SIZE, bytes);
    XENHSA_FUZZ_CHECK(p != nullptr, "allocation");
    std::memset(p, 0, bytes);
    return Page<T>(static_cast<T*>(p));
}

}  // namespace

Rig::Rig(FuzzInput& in) {
    const uint8_t config = in.u8();
    order_ = config & 3u;
    slots_ = XENHSA_RING_SLOTS(order_);
    budget_ = 1 + in.u8() % 64u;
    // Bounded so that the fake mapper (one mmap per page) stays far below the kernel's
    // map count, and the handle tables (filled once up front, so that revoke never
    // allocates) are quick to build; tight quotas reach the QUOTA paths.
    quotas_.max_map_pages = 2048;
    quotas_.max_lend_pages = 1024;
    quotas_.max_handles = 128;
    quotas_.max_queues = 8;
    quotas_.max_events = 32;
    if ((config & 16u) != 0) {
        quotas_.max_map_pages = 64;
        quotas_.max_lend_pages = 32;
        quotas_.max_handles = 12;
        quotas_.max_in_flight = 3;
        quotas_.max_pinned_pages = 32;
        quotas_.max_alloc_bytes = 1u << 20;
        quotas_.max_queues = 1;
        quotas_.max_events = 3;
    }
    for (std::size_t p = 0; p < kGuestPages; ++p) {
        refs_.push_back(memory_.grant(p, true));
    }
    for (std::size_t p = 0; p < kReadOnlyGrants; ++p) {
        refs_.push_back(memory_.grant(p, false));
    }
    if ((config & 32u) == 0) {
        gpu_ = std::make_unique<hsa::GpuContext>(kfd_, core::gpu_limits(quotas_, slots_));
    }
    ring_pages_ = zeroed_pages<std::byte>(XENHSA_RING_BYTES(order_));
    notify_ = zeroed_pages<xenhsa_notify_page>(XENHSA_PAGE_SIZE);
    doorbells_ = zeroed_pages<xenhsa_doorbell_page>(XENHSA_PAGE_SIZE);
    xenhsa_sring_init(sring());

    core::RequestOptions so;
    so.ring_slots = slots_;
    so.quotas = quotas_;
    so.notify_page = notify_.get();
    requests_ = std::make_unique<core::GuestRequests>(
        io_,
        core::RequestSeams{core::testing::kGuestDomId, mapper_,
                           (config & 64u) == 0 ? &sharer_ : nullptr, gpu_.get()},
        so);
    requests_->set_async_sink(&async_);
    auto ring =
        core::RingServer::attach(std::span<std::byte>(ring_pages_.get(), XENHSA_RING_BYTES(order_)),
                                 order_, checker_, [] {});
    XENHSA_FUZZ_CHECK(ring.has_value(), "RingServer::attach");
    ring_ = std::move(ring).value();
    if ((config & 4u) != 0) {
        connect((config & 8u) != 0);
    }
}

Rig::~Rig() = default;

void Rig::forward(const core::Reply& r) {
    if (sabotage() && !dropped_one_) {
        dropped_one_ = true;  // a backend that loses one answer
        return;
    }
    unverified_.push_back(r);
    answers_.push_back(r);
    ring_->reply(r);
}

void Rig::push(uint32_t cmd, uint32_t seqno, const void* payload, uint32_t len) {
    std::byte* slot = ring_pages_.get() + xenhsa_ring_slot_offset(req_prod_pvt_++, slots_);
    XENHSA_FUZZ_CHECK(xenhsa_encode_req(slot, cmd, seqno, payload, len) == 0, "encode");
}

std::optional<core::Reply> Rig::push_and_serve(uint32_t cmd, const void* payload, uint32_t len) {
    const uint32_t seqno = 0x40000000u + next_seqno_++;
    push(cmd, seqno, payload, len);
    xenhsa_index_store(&sring()->req_prod, req_prod_pvt_);
    answers_.clear();
    serve();
    for (const core::Reply& r : answers_) {
        if (r.seqno == seqno) {
            return r;
        }
    }
    return std::nullopt;
}

// A well-behaved guest's start: HELLO for a proposal, HELLO to confirm it, and with
// `warm` the objects the hostile part can then name by handle.
void Rig::connect(bool warm) {
    xenhsa_hello_req h{1, 1, XENHSA_FEATURES_V1, 0, kWindowSize};
    auto first = push_and_serve(XENHSA_CMD_HELLO, &h, sizeof h);
    if (!first || first->status != XENHSA_STATUS_OK) {
        return;
    }
    h.va_base = wire_of<xenhsa_hello_rsp>(*first).va_base;
    auto second = push_and_serve(XENHSA_CMD_HELLO, &h, sizeof h);
    XENHSA_FUZZ_CHECK(second && second->status == XENHSA_STATUS_OK &&
                          requests_->state() == core::GuestRequests::State::connected,
                      "a proper HELLO pair does not connect");
    if (!warm || gpu_ == nullptr) {
        return;
    }
    const uint64_t base = requests_->window().base();
    xenhsa_map_req map{};
    map.va = base;
    map.npages = 8;
    map.flags = XENHSA_MAP_RW;
    map.nrefs = 8;
    for (uint32_t i = 0; i < 8; ++i) {
        map.gref[i] = refs_[i];
    }
    (void)push_and_serve(XENHSA_CMD_MAP, &map, sizeof map);
    xenhsa_pin_req pin{base, 8 * XENHSA_PAGE_SIZE, 0, 0};
    auto pinned = push_and_serve(XENHSA_CMD_PIN, &pin, sizeof pin);
    if (!pinned || pinned->status != XENHSA_STATUS_OK) {
        return;
    }
    xenhsa_map_to_gpu_req to_gpu{wire_of<xenhsa_handle_rsp>(*pinned).handle, 2, 0, 0};
    (void)push_and_serve(XENHSA_CMD_MAP_TO_GPU, &to_gpu, sizeof to_gpu);
    xenhsa_event_create_req ev{XENHSA_EVENT_SIGNAL, 1, 0, 0};
    auto event = push_and_serve(XENHSA_CMD_EVENT_CREATE, &ev, sizeof ev);
    xenhsa_queue_create_req q{1,           XENHSA_QUEUE_COMPUTE_AQL, 100, 0, base, 4096,
                              base + 4096, base + 4096 + 8,          0};
    if (event && event->status == XENHSA_STATUS_OK) {
        q.error_event = wire_of<xenhsa_event_create_rsp>(*event).handle;
    }
    (void)push_and_serve(XENHSA_CMD_QUEUE_CREATE, &q, sizeof q);
    xenhsa_alloc_req alloc{0, 4 * XENHSA_PAGE_SIZE, 1, 0};
    (void)push_and_serve(XENHSA_CMD_ALLOC, &alloc, sizeof alloc);
}

void Rig::serve() {
    const uint32_t rp = xenhsa_index_load(&sring()->req_prod);
    const bool was_dead = ring_->disconnected();
    const uint32_t cons_before = ring_->req_cons();
    const uint32_t rsp_before = ring_->rsp_prod();
    // Past the ring, or behind what was consumed already (it went backwards): no honest
    // frontend publishes either, and the guest is disconnected.
    const bool overflow =
        xenhsa_ring_req_prod_overflow(rp, rsp_before, slots_) ||
        static_cast<uint32_t>(rp - rsp_before) < static_cast<uint32_t>(cons_before - rsp_before);
    handled_in_pass = 0;
    const auto pass = ring_->serve(budget_);
    if (tracing()) {
        std::fprintf(stderr, "ring: serve(%u) at req_prod %u: pass %d, %d handled%s\n", budget_, rp,
                     static_cast<int>(pass), handled_in_pass,
                     ring_->disconnected() ? ", disconnected" : "");
    }
    if (pass == core::RingServer::Pass::frontend_gone) {  // fe_alive went 1 -> 0
        XENHSA_FUZZ_CHECK(!was_dead && !overflow && ring_->disconnected(),
                          "frontend_gone on a dead or overflowing ring, or without disconnecting");
        XENHSA_FUZZ_CHECK(handled_in_pass == 0 && ring_->rsp_prod() == rsp_before,
                          "a frontend_gone pass consumed requests");
    } else if (was_dead || overflow) {
        XENHSA_FUZZ_CHECK(pass == core::RingServer::Pass::disconnect && ring_->disconnected(),
                          "a producer index past the ring or behind the consumer does not "
                          "disconnect");
        XENHSA_FUZZ_CHECK(handled_in_pass == 0 && ring_->rsp_prod() == rsp_before,
                          "a disconnecting pass consumed requests");
    } else {
        XENHSA_FUZZ_CHECK(pass != core::RingServer::Pass::disconnect && !ring_->disconnected(),
                          "a producer index within the ring disconnects");
        XENHSA_FUZZ_CHECK(handled_in_pass <= static_cast<int>(budget_),
                          "a pass served more than its budget");
        XENHSA_FUZZ_CHECK(
            static_cast<uint32_t>(rp - cons_before) >= static_cast<uint32_t>(handled_in_pass),
            "requests consumed past the producer index (it went backwards, "
            "and the ring served stale slots instead of disconnecting)");
        XENHSA_FUZZ_CHECK(static_cast<uint32_t>(ring_->req_cons() - cons_before) ==
                              static_cast<uint32_t>(handled_in_pass),
                          "requests consumed without being handled");
        switch (pass) {
            case core::RingServer::Pass::idle:
                XENHSA_FUZZ_CHECK(
                    ring_->req_cons() == rp &&
                        xenhsa_index_load(&sring()->req_event) == ring_->req_cons() + 1,
                    "idle without catching up and arming req_event");
                break;
            case core::RingServer::Pass::drained:  // only asked for with serve(budget, false)
                XENHSA_FUZZ_CHECK(false, "drained although the pass was to arm req_event");
                break;
            case core::RingServer::Pass::more:
                XENHSA_FUZZ_CHECK(
                    ring_->req_cons() != rp && handled_in_pass == static_cast<int>(budget_),
                    "`more` before the budget ran out");
                break;
            case core::RingServer::Pass::blocked:
                XENHSA_FUZZ_CHECK(ring_->req_cons() - ring_->rsp_prod() == slots_,
                                  "blocked while a response slot is free");
                break;
            case core::RingServer::Pass::disconnect:
            case core::RingServer::Pass::frontend_gone:
                break;
        }
    }
    settled();
}

void Rig::poll(bool wait) {
    if (wait && !held_.empty()) {
        io_.restart();
        io_.run_for(std::chrono::milliseconds(1));
    }
    io_.restart();
    io_.poll();
    settled();
}

// Session end as on Closing: everything revoked in the fixed order, nothing left.
void Rig::teardown() {
    ring_.reset();
    requests_.reset();
    if (window_size_ != 0) {  // at once: nothing else may map there meanwhile
        const auto* first = reinterpret_cast<const void*>(window_base_);
        const auto* last = reinterpret_cast<const void*>(window_base_ + window_size_ - 4096);
        XENHSA_FUZZ_CHECK(core::testing::protection_at(first).empty() &&
                              core::testing::protection_at(last).empty(),
                          "the VA window is still reserved after the session");
    }
    XENHSA_FUZZ_CHECK(mapper_.live_mappings() == 0, "a grant mapping outlived the session");
    XENHSA_FUZZ_CHECK(sharer_.live_shares() == 0, "a lent page outlived the session");
    gpu_.reset();
    XENHSA_FUZZ_CHECK(kfd_.registered() == 0 && kfd_.allocations() == 0 && kfd_.live_queues() == 0,
                      "GPU memory or a queue outlived the session");
}

}  // namespace xenhsa::fuzz::ring
