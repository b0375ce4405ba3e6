// Fuzz target "ring": a hostile frontend against the backend core's RingServer and
// Session, in process, over the stand-ins the core tests use (tests/backend/core: guest
// RAM on a memfd with fake grant seams, the recording KfdDevice under the real
// GpuSession). The harness is the guest: it writes slots, producer indices, indirect
// pages, doorbells and the notify page's consumer index, any bytes at any time.
//
// Input: a config byte (bits 0-1 ring order; 2 connect with a proper HELLO pair first;
// 3 also set up MAP, PIN, MAP_TO_GPU, EVENT, QUEUE, ALLOC; 4 tight quotas; 5 no GPU
// seam; 6 no LEND seam), a budget byte, then operations (one byte each, then operands;
// see Rig::step): raw slot bytes, encoded requests (with optional substitution of live
// handles, window addresses and granted refs), publish, arbitrary producer index, serve,
// doorbells, notify consumer index, indirect page contents, event-loop polls, operator
// revokes and GPU faults, scribbles over the ring header.
//
// Invariants:
//   * a producer index more than `slots` ahead of the responses, or behind what was
//     consumed, disconnects the guest (and nothing is consumed); anything else never
//     does; nothing past the producer index is consumed; one pass serves at most
//     `budget` requests; `idle` means caught up with req_event armed;
//   * every consumed request is answered exactly once, now or (an accepted EVENT_WAIT)
//     later: requests consumed minus responses produced equals the waits pending;
//   * each response echoes the seqno, has a defined status, passes the frontend's
//     header check for its command and is zero past its payload, in the slot as well;
//   * a request that fails validate.h is answered with exactly that status; before
//     CONNECTED everything but HELLO is BAD_STATE; OK only for valid requests and
//     granted features; OK payloads pass the frontend's checks (HELLO, QUERY, LEND,
//     QUEUE_CREATE), objects lie inside the negotiated window, and a handle is never 0
//     and never issued twice;
//   * the notify page never holds more than 64 unconsumed records of its producer's
//     own count, never advances while the guest's consumer index is out of range, and
//     every record it publishes is well formed and names an issued handle;
//   * teardown leaves no grant mapping, shared page, registration, allocation or queue
//     behind, frees the VA window, and closes every file descriptor it opened.
#include <dirent.h>
#include <xenhsa/proto.h>

#include <algorithm>
#include <array>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>
#include <xenhsa/backend/core/ring_server.hpp>
#include <xenhsa/backend/core/session.hpp>
#include <xenhsa/hsa/gpu_session.hpp>

#include "fake_grants.hpp"
#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "recording_kfd.hpp"

namespace xenhsa::fuzz {
namespace {

namespace core = backend::core;
using core::testing::FakeGrantMapper;
using core::testing::FakeGrantSharer;
using core::testing::GuestMemory;
using core::testing::RecordingKfd;

constexpr std::size_t kGuestPages = 64;
constexpr std::size_t kIndirectFirst = 56;   // pages 56..63 hold indirect grant lists
constexpr std::size_t kReadOnlyGrants = 16;  // pages 0..15 are also granted read-only
constexpr uint64_t kWindowSize = 1ull << 30;
constexpr int kMaxOps = 256;

struct FreeDeleter {
    void operator()(void* p) const noexcept { std::free(p); }
};
template <class T>
using Page = std::unique_ptr<T, FreeDeleter>;

template <class T>
Page<T> zeroed_pages(std::size_t bytes) {
    void* p = std::aligned_alloc(XENHSA_PAGE_SIZE, bytes);
    XENHSA_FUZZ_CHECK(p != nullptr, "allocation");
    std::memset(p, 0, bytes);
    return Page<T>(static_cast<T*>(p));
}

std::size_t open_fds() {
    std::size_t n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d) != nullptr) {
            ++n;
        }
        ::closedir(d);
    }
    return n;
}

template <class Wire>
Wire wire_of(const core::Reply& r) {
    Wire w{};
    std::memcpy(&w, r.payload.data(), sizeof w);
    return w;
}

bool zero_past(const core::Reply& r) {
    for (std::size_t i = r.len; i < r.payload.size(); ++i) {
        if (r.payload[i] != std::byte{0}) {
            return false;
        }
    }
    return true;
}

uint64_t feature_needed(uint32_t cmd) {
    switch (cmd) {
        case XENHSA_CMD_HELLO:
        case XENHSA_CMD_QUERY:
        case XENHSA_CMD_MAP:
        case XENHSA_CMD_UNMAP:
            return 0;
        case XENHSA_CMD_LEND:
            return XENHSA_FEATURE_LEND;
        case XENHSA_CMD_EVENT_WAIT_CANCEL:
            return XENHSA_FEATURE_WAIT_CANCEL;
        default:
            return XENHSA_FEATURE_GPU;
    }
}

class Rig;

// Sits between the RingServer and the Session: sees every consumed request (the copy)
// and every answer, checks them, and forwards the answers to the ring.
class Checker final : public core::RequestHandler, public core::ReplySink {
public:
    explicit Checker(Rig& rig) : rig_(rig) {}
    void handle(const xenhsa_req_slot& copy, core::ReplySink& ring) noexcept override;
    void reply(const core::Reply& r) noexcept override;

private:
    struct Current {
        xenhsa_req_slot copy;
        uint32_t syntactic;
        bool connected;
        uint64_t features;
        int replies = 0;
        bool cancelled_a_wait = false;
    };
    void check_own(const Current& c, const core::Reply& r);

    Rig& rig_;
    Current* current_ = nullptr;
};

// Answers that come later (EVENT_WAIT) go through here.
class AsyncChecker final : public core::ReplySink {
public:
    explicit AsyncChecker(Rig& rig) : rig_(rig) {}
    void reply(const core::Reply& r) noexcept override;

private:
    Rig& rig_;
};

class Rig {
public:
    explicit Rig(FuzzInput& in);
    ~Rig();
    Rig(const Rig&) = delete;
    Rig& operator=(const Rig&) = delete;

    void run(FuzzInput& in);

    // --- used by the checkers
    void forward(const core::Reply& r);
    void check_wait_answer(const core::Reply& r);
    void record_handle(uint64_t h) {
        XENHSA_FUZZ_CHECK(h != 0, "an OK response with handle 0");
        XENHSA_FUZZ_CHECK(issued_.insert(h).second, "a handle issued twice in one connection");
        handles_.push_back(h);
    }
    [[nodiscard]] bool issued(uint64_t h) const { return issued_.count(h) != 0; }
    [[nodiscard]] uint32_t slots() const noexcept { return slots_; }
    core::Session& session() { return *session_; }
    std::map<uint32_t, uint32_t>& held() { return held_; }  // pending wait seqno -> count
    int handled_in_pass = 0;

private:
    void connect(bool warm);
    void step(FuzzInput& in, uint8_t op);
    void push(uint32_t cmd, uint32_t seqno, const void* payload, uint32_t len);
    void push_fuzzed(FuzzInput& in);
    std::optional<core::Reply> push_and_serve(uint32_t cmd, const void* payload, uint32_t len);
    void serve();
    void poll(bool wait);
    void doorbell(FuzzInput& in);
    void notify_cons(FuzzInput& in);
    void write_indirect(FuzzInput& in);
    void operator_action(FuzzInput& in);
    void scribble(FuzzInput& in);
    void settled();
    void check_notify();
    void teardown();

    xenhsa_sring* sring() { return reinterpret_cast<xenhsa_sring*>(ring_pages_.get()); }
    uint64_t patch_handle(uint64_t raw) const {
        return handles_.empty() ? raw : handles_[raw % handles_.size()];
    }
    uint64_t relocate(uint64_t raw) const {
        const auto& w = session_->window();
        return w.valid() ? w.base() + raw % w.size() : raw;
    }
    xen::GrantRef ref(uint64_t raw) const { return refs_[raw % refs_.size()]; }

    uint32_t order_;
    uint32_t slots_;
    uint32_t budget_;
    core::Quotas quotas_;

    boost::asio::io_context io_;
    GuestMemory memory_{kGuestPages};
    FakeGrantMapper mapper_{memory_, nullptr};
    FakeGrantSharer sharer_{nullptr};
    RecordingKfd kfd_{nullptr};
    std::unique_ptr<hsa::GpuSession> gpu_;
    Page<std::byte> ring_pages_;
    Page<xenhsa_notify_page> notify_;
    Page<xenhsa_doorbell_page> doorbells_;
    Checker checker_{*this};
    AsyncChecker async_{*this};
    std::unique_ptr<core::Session> session_;
    std::unique_ptr<core::RingServer> ring_;

    std::vector<xen::GrantRef> refs_;  // writable grants of every page, then read-only ones
    std::vector<uint64_t> handles_;
    std::set<uint64_t> issued_;
    std::map<uint32_t, uint32_t> held_;
    std::vector<core::Reply> unverified_;  // forwarded, not yet compared with their slot
    std::vector<core::Reply> answers_;     // forwarded since the last push_and_serve
    uint32_t req_prod_pvt_ = 0;
    uint32_t rsp_verified_ = 0;
    uint32_t notify_checked_ = 0;
    uint32_t cons_written_ = 0;
    uint32_t published_at_cons_ = 0;
    uint32_t next_seqno_ = 1;
    bool dropped_one_ = false;
    uint64_t window_base_ = 0;
    uint64_t window_size_ = 0;
};

// ---------------------------------------------------------------- checkers

void Checker::handle(const xenhsa_req_slot& copy, core::ReplySink& ring) noexcept {
    (void)ring;  // answers go through Rig::forward to the same ring
    Current c{copy, xenhsa_check_req(&copy),
              rig_.session().state() == core::Session::State::connected, rig_.session().features()};
    current_ = &c;
    ++rig_.handled_in_pass;
    rig_.session().handle(copy, *this);
    current_ = nullptr;
    if (c.replies == 0) {
        // Only an EVENT_WAIT the session accepted is answered later.
        XENHSA_FUZZ_CHECK(
            copy.hdr.cmd == XENHSA_CMD_EVENT_WAIT && c.syntactic == XENHSA_STATUS_OK && c.connected,
            "a consumed request got no response");
        XENHSA_FUZZ_CHECK(rig_.held().count(copy.hdr.seqno) == 0,
                          "two pending waits with one seqno");
        rig_.held()[copy.hdr.seqno] = proto::payload_as<xenhsa_event_wait_req>(copy).count;
    } else {
        XENHSA_FUZZ_CHECK(c.replies == 1, "a request answered more than once");
    }
    XENHSA_FUZZ_CHECK(rig_.session().pending_waits() == rig_.held().size(),
                      "the session's pending waits differ from the unanswered waits");
}

void Checker::reply(const core::Reply& r) noexcept {
    XENHSA_FUZZ_CHECK(current_ != nullptr, "a synchronous response outside a request");
    Current& c = *current_;
    if (c.copy.hdr.cmd == XENHSA_CMD_EVENT_WAIT_CANCEL && r.status == XENHSA_STATUS_CANCELLED) {
        // The cancelled wait's own answer, before the cancel's.
        XENHSA_FUZZ_CHECK(c.replies == 0 && !c.cancelled_a_wait, "CANCELLED out of order");
        XENHSA_FUZZ_CHECK(
            r.seqno == proto::payload_as<xenhsa_event_wait_cancel_req>(c.copy).wait_seqno,
            "CANCELLED for another wait than the one named");
        if (tracing()) {
            std::fprintf(stderr, "ring: cancelled EVENT_WAIT seqno %u\n", r.seqno);
        }
        rig_.check_wait_answer(r);
        c.cancelled_a_wait = true;
        rig_.forward(r);
        return;
    }
    if (tracing()) {
        std::fprintf(stderr, "ring: %s seqno %u -> %s (len %u)\n", xenhsa_cmd_name(c.copy.hdr.cmd),
                     r.seqno, xenhsa_status_name(r.status), r.len);
    }
    check_own(c, r);
    ++c.replies;
    rig_.forward(r);
}

void Checker::check_own(const Current& c, const core::Reply& r) {
    const uint32_t cmd = c.copy.hdr.cmd;
    XENHSA_FUZZ_CHECK(r.seqno == c.copy.hdr.seqno, "a response with another seqno");
    XENHSA_FUZZ_CHECK(r.status < XENHSA_STATUS_COUNT_, "an undefined status");
    XENHSA_FUZZ_CHECK(zero_past(r), "response bytes past the payload are not zero");
    if (xenhsa_rsp_len(cmd) == XENHSA_LEN_UNKNOWN) {
        XENHSA_FUZZ_CHECK(r.status == XENHSA_STATUS_BAD_COMMAND && r.len == 0,
                          "an unknown command is not BAD_COMMAND without payload");
    } else {
        const xenhsa_rsp_hdr h{r.seqno, r.status, r.len, 0};
        XENHSA_FUZZ_CHECK(xenhsa_check_rsp_hdr(&h, cmd) == XENHSA_STATUS_OK,
                          "a response header the frontend must reject");
    }
    if (c.syntactic != XENHSA_STATUS_OK) {
        XENHSA_FUZZ_CHECK(r.status == c.syntactic,
                          "a malformed request not answered with "
                          "the status of its first violation");
        return;
    }
    if (cmd != XENHSA_CMD_HELLO && !c.connected) {
        XENHSA_FUZZ_CHECK(r.status == XENHSA_STATUS_BAD_STATE,
                          "a request before CONNECTED not answered BAD_STATE");
        return;
    }
    if (r.status != XENHSA_STATUS_OK) {
        return;
    }
    if (cmd == XENHSA_CMD_EVENT_WAIT_CANCEL) {
        XENHSA_FUZZ_CHECK(c.cancelled_a_wait, "a cancel answered OK without cancelling");
    }
    const uint64_t needs = feature_needed(cmd);
    XENHSA_FUZZ_CHECK((c.features & needs) == needs, "OK for a feature that was not granted");
    const auto& window = rig_.session().window();
    const auto inside = [&](uint64_t va, uint64_t size) {
        return window.valid() && window.contains(va, size);
    };
    using proto::payload_as;
    switch (cmd) {
        case XENHSA_CMD_HELLO: {
            const auto req = payload_as<xenhsa_hello_req>(c.copy);
            const auto rsp = wire_of<xenhsa_hello_rsp>(r);
            XENHSA_FUZZ_CHECK(xenhsa_check_hello_rsp(&rsp, &req) == XENHSA_STATUS_OK,
                              "a HELLO response the frontend must reject");
            XENHSA_FUZZ_CHECK(rsp.ring_slots == rig_.slots(), "HELLO: ring_slots");
            break;
        }
        case XENHSA_CMD_QUERY: {
            const auto req = payload_as<xenhsa_query_req>(c.copy);
            const auto rsp = wire_of<xenhsa_query_rsp>(r);
            XENHSA_FUZZ_CHECK(xenhsa_check_query_rsp(&rsp, &req) == XENHSA_STATUS_OK,
                              "a QUERY response the frontend must reject");
            break;
        }
        case XENHSA_CMD_MAP: {
            const auto req = payload_as<xenhsa_map_req>(c.copy);
            XENHSA_FUZZ_CHECK((req.flags & XENHSA_MAP_INDIRECT) == 0 ||
                                  (c.features & XENHSA_FEATURE_INDIRECT) != 0,
                              "an indirect MAP without the feature");
            XENHSA_FUZZ_CHECK(inside(req.va, uint64_t{req.npages} * XENHSA_PAGE_SIZE),
                              "a MAP outside the window");
            rig_.record_handle(wire_of<xenhsa_handle_rsp>(r).handle);
            break;
        }
        case XENHSA_CMD_LEND: {
            const auto req = payload_as<xenhsa_lend_req>(c.copy);
            const auto rsp = wire_of<xenhsa_lend_rsp>(r);
            XENHSA_FUZZ_CHECK(xenhsa_check_lend_rsp(&rsp, &req) == XENHSA_STATUS_OK,
                              "a LEND response the frontend must reject");
            XENHSA_FUZZ_CHECK(inside(req.va, uint64_t{req.npages} * XENHSA_PAGE_SIZE),
                              "a LEND outside the window");
            rig_.record_handle(rsp.handle);
            break;
        }
        case XENHSA_CMD_PIN: {
            const auto req = payload_as<xenhsa_pin_req>(c.copy);
            XENHSA_FUZZ_CHECK(inside(req.va, req.size), "a PIN outside the window");
            rig_.record_handle(wire_of<xenhsa_handle_rsp>(r).handle);
            break;
        }
        case XENHSA_CMD_MAP_TO_GPU:
            XENHSA_FUZZ_CHECK(inside(wire_of<xenhsa_map_to_gpu_rsp>(r).gpu_va, XENHSA_PAGE_SIZE),
                              "a GPU mapping outside the window");
            break;
        case XENHSA_CMD_ALLOC: {
            const auto req = payload_as<xenhsa_alloc_req>(c.copy);
            const auto rsp = wire_of<xenhsa_alloc_rsp>(r);
            XENHSA_FUZZ_CHECK(req.va == 0 || rsp.va == req.va, "ALLOC moved a fixed address");
            XENHSA_FUZZ_CHECK(rsp.va % XENHSA_PAGE_SIZE == 0 && inside(rsp.va, req.size),
                              "an ALLOC outside the window");
            rig_.record_handle(rsp.handle);
            break;
        }
        case XENHSA_CMD_QUEUE_CREATE: {
            const auto rsp = wire_of<xenhsa_queue_create_rsp>(r);
            XENHSA_FUZZ_CHECK(xenhsa_check_queue_create_rsp(&rsp) == XENHSA_STATUS_OK,
                              "a QUEUE_CREATE response the frontend must reject");
            rig_.record_handle(rsp.handle);
            break;
        }
        case XENHSA_CMD_EVENT_CREATE: {
            const auto rsp = wire_of<xenhsa_event_create_rsp>(r);
            XENHSA_FUZZ_CHECK(rsp.pad == 0, "EVENT_CREATE: pad");
            rig_.record_handle(rsp.handle);
            break;
        }
        default:
            break;
    }
}

void AsyncChecker::reply(const core::Reply& r) noexcept {
    if (tracing()) {
        std::fprintf(stderr, "ring: late EVENT_WAIT seqno %u -> %s\n", r.seqno,
                     xenhsa_status_name(r.status));
    }
    rig_.check_wait_answer(r);
    rig_.forward(r);
}

void Rig::check_wait_answer(const core::Reply& r) {
    auto it = held_.find(r.seqno);
    XENHSA_FUZZ_CHECK(it != held_.end(), "a late answer to no pending wait");
    const uint32_t count = it->second;
    held_.erase(it);
    XENHSA_FUZZ_CHECK(zero_past(r), "wait answer bytes past the payload are not zero");
    const xenhsa_rsp_hdr h{r.seqno, r.status, r.len, 0};
    XENHSA_FUZZ_CHECK(xenhsa_check_rsp_hdr(&h, XENHSA_CMD_EVENT_WAIT) == XENHSA_STATUS_OK,
                      "a wait answer the frontend must reject");
    XENHSA_FUZZ_CHECK(r.status == XENHSA_STATUS_OK || r.status == XENHSA_STATUS_TIMEOUT ||
                          r.status == XENHSA_STATUS_CANCELLED || r.status == XENHSA_STATUS_DEVICE,
                      "a wait ended with a status waits do not have");
    if (r.status == XENHSA_STATUS_OK) {
        const auto rsp = wire_of<xenhsa_event_wait_rsp>(r);
        XENHSA_FUZZ_CHECK(rsp.pad == 0 && rsp.signaled_mask != 0 &&
                              (count >= 32 || (rsp.signaled_mask >> count) == 0),
                          "a signaled mask naming events the wait did not name");
    }
}

// ---------------------------------------------------------------- the rig

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
        gpu_ = std::make_unique<hsa::GpuSession>(kfd_, core::gpu_limits(quotas_, slots_));
    }
    ring_pages_ = zeroed_pages<std::byte>(XENHSA_RING_BYTES(order_));
    notify_ = zeroed_pages<xenhsa_notify_page>(XENHSA_PAGE_SIZE);
    doorbells_ = zeroed_pages<xenhsa_doorbell_page>(XENHSA_PAGE_SIZE);
    xenhsa_sring_init(sring());

    core::SessionOptions so;
    so.ring_slots = slots_;
    so.quotas = quotas_;
    so.notify_page = notify_.get();
    session_ = std::make_unique<core::Session>(
        io_,
        core::SessionSeams{core::testing::kGuestDomId, mapper_,
                           (config & 64u) == 0 ? &sharer_ : nullptr, gpu_.get()},
        so);
    session_->set_async_sink(&async_);
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
                          session_->state() == core::Session::State::connected,
                      "a proper HELLO pair does not connect");
    if (!warm || gpu_ == nullptr) {
        return;
    }
    const uint64_t base = session_->window().base();
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

// An encoded request: command, seqno, substitution flags, payload.
//   flags bit 0: handle fields name live handles (the operand picks which)
//   flags bit 1: VA fields are moved into the negotiated window (offset kept)
//   flags bit 2: gref[] entries name granted pages (the operand picks which)
//   flags bit 3: a nonzero header pad
void Rig::push_fuzzed(FuzzInput& in) {
    const uint8_t pick = in.u8();
    const uint32_t cmd = pick == 0xFF ? in.u32() : pick % 20u;
    const uint32_t seqno = in.u16();
    const uint8_t flags = in.u8();
    uint32_t len = xenhsa_req_len(cmd);
    if (len == XENHSA_LEN_UNKNOWN) {
        len = in.u8() % (XENHSA_SLOT_PAYLOAD_MAX + 1);
    }
    std::array<uint8_t, XENHSA_SLOT_PAYLOAD_MAX> p{};
    in.fill(p.data(), len);
    const auto field = [&](std::size_t at, auto&& f) {
        uint64_t v = 0;
        std::memcpy(&v, p.data() + at, 8);
        v = f(v);
        std::memcpy(p.data() + at, &v, 8);
    };
    if ((flags & 1u) != 0) {
        const auto h = [this](uint64_t v) { return patch_handle(v); };
        switch (cmd) {
            case XENHSA_CMD_QUEUE_CREATE:
                field(48, h);
                break;
            case XENHSA_CMD_EVENT_WAIT:
                for (std::size_t i = 0; i < std::min<uint32_t>(p[0], 16); ++i) {
                    field(16 + 8 * i, h);
                }
                break;
            case XENHSA_CMD_HELLO:
            case XENHSA_CMD_QUERY:
            case XENHSA_CMD_MAP:
            case XENHSA_CMD_LEND:
            case XENHSA_CMD_PIN:
            case XENHSA_CMD_ALLOC:
            case XENHSA_CMD_EVENT_CREATE:
            case XENHSA_CMD_EVENT_WAIT_CANCEL:
                break;
            default:
                if (len >= 8) {
                    field(0, h);  // the handle requests and MAP_TO_GPU
                }
                break;
        }
    }
    if ((flags & 2u) != 0) {
        const auto v = [this](uint64_t raw) { return relocate(raw); };
        switch (cmd) {
            case XENHSA_CMD_MAP:
            case XENHSA_CMD_LEND:
            case XENHSA_CMD_PIN:
            case XENHSA_CMD_ALLOC:
                field(0, v);
                break;
            case XENHSA_CMD_QUEUE_CREATE:
                field(16, v);
                field(32, v);
                field(40, v);
                break;
            default:
                break;
        }
    }
    if ((flags & 4u) != 0 && cmd == XENHSA_CMD_MAP) {
        xenhsa_map_req m;
        std::memcpy(&m, p.data(), sizeof m);
        for (uint32_t i = 0; i < std::min(m.nrefs, XENHSA_MAP_INLINE_GREFS); ++i) {
            m.gref[i] = ref(m.gref[i]);
        }
        std::memcpy(p.data(), &m, sizeof m);
    }
    std::byte* slot = ring_pages_.get() + xenhsa_ring_slot_offset(req_prod_pvt_++, slots_);
    xenhsa_req_slot s{};
    s.hdr.cmd = cmd;
    s.hdr.len = len;
    s.hdr.seqno = seqno;
    s.hdr.pad = (flags & 8u) != 0 ? 1u : 0u;
    std::memcpy(s.payload, p.data(), len);
    std::memcpy(slot, &s, sizeof s);
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
    if (was_dead || overflow) {
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

// After every step that may answer: the books balance, and each answer is in its slot.
void Rig::settled() {
    if (ring_->disconnected()) {
        unverified_.clear();
    } else {
        XENHSA_FUZZ_CHECK(
            static_cast<uint32_t>(ring_->req_cons() - ring_->rsp_prod()) == held_.size(),
            "consumed requests minus responses differ from the pending waits");
        XENHSA_FUZZ_CHECK(
            unverified_.size() == static_cast<uint32_t>(ring_->rsp_prod() - rsp_verified_),
            "responses in the ring differ from the answers given");
        for (const core::Reply& r : unverified_) {
            const auto* slot = reinterpret_cast<const uint8_t*>(ring_pages_.get()) +
                               xenhsa_ring_slot_offset(rsp_verified_++, slots_);
            xenhsa_rsp_hdr h;
            std::memcpy(&h, slot, sizeof h);
            XENHSA_FUZZ_CHECK(
                h.seqno == r.seqno && h.status == r.status && h.len == r.len && h.pad == 0,
                "a response slot does not hold its answer");
            XENHSA_FUZZ_CHECK(std::memcmp(slot + 16, r.payload.data(), r.payload.size()) == 0,
                              "a response slot's payload or tail differs from the answer");
        }
        if (!unverified_.empty()) {
            XENHSA_FUZZ_CHECK(xenhsa_index_load(&sring()->rsp_prod) == ring_->rsp_prod(),
                              "responses written but rsp_prod not published");
        }
        unverified_.clear();
    }
    XENHSA_FUZZ_CHECK(session_->pending_waits() == held_.size(),
                      "the session's pending waits differ from the unanswered waits");
    if (session_->window().valid()) {
        window_base_ = session_->window().base();
        window_size_ = session_->window().size();
    }
    check_notify();
}

void Rig::check_notify() {
    const uint32_t published = session_->notify().published();
    XENHSA_FUZZ_CHECK(
        published - cons_written_ <= XENHSA_NOTIFY_SLOTS || published == published_at_cons_,
        "notify records published past the guest's consumer index");
    if (published == notify_checked_) {
        return;
    }
    XENHSA_FUZZ_CHECK(xenhsa_index_load(&notify_->prod) == published,
                      "notify records written but prod not published");
    for (uint32_t i = notify_checked_; i != published; ++i) {
        const xenhsa_notify& n = notify_->slot[i % XENHSA_NOTIFY_SLOTS];
        XENHSA_FUZZ_CHECK(
            (n.type == XENHSA_NOTIFY_REVOKED || n.type == XENHSA_NOTIFY_GPU_FAULT) && n.pad == 0,
            "a malformed notify record");
        XENHSA_FUZZ_CHECK(issued(n.handle), "a notify record naming no issued handle");
        if (n.type == XENHSA_NOTIFY_GPU_FAULT) {
            XENHSA_FUZZ_CHECK(n.arg1 == 0, "GPU_FAULT: arg1");
        }
    }
    notify_checked_ = published;
}

void Rig::doorbell(FuzzInput& in) {
    const uint32_t index = in.u16() % XENHSA_DOORBELLS_PER_PAGE;
    const uint64_t value = in.u64();
    (void)xenhsa_doorbell_ring(doorbells_.get(), index, value);
    session_->doorbells(*doorbells_);
    settled();
}

void Rig::notify_cons(FuzzInput& in) {
    const uint8_t mode = in.u8();
    const uint32_t published = session_->notify().published();
    const uint32_t cons = (mode & 1u) != 0 ? in.u32() : published - in.u8() % 80u;
    xenhsa_index_store(&notify_->cons, cons);
    cons_written_ = cons;
    published_at_cons_ = published;
    session_->notify().flush();
    settled();
}

// An indirect page: `count` grant refs (an operand byte each: a granted page, or 0xFF
// then a raw ref), then zeroes or (flag) garbage in the tail.
void Rig::write_indirect(FuzzInput& in) {
    std::byte* page = memory_.page(kIndirectFirst + in.u8() % (kGuestPages - kIndirectFirst));
    const uint32_t count = in.u16() % (XENHSA_GREFS_PER_INDIRECT_PAGE + 1);
    const bool garbage_tail = (in.u8() & 1u) != 0;
    std::vector<uint32_t> refs(XENHSA_GREFS_PER_INDIRECT_PAGE, garbage_tail ? 0xA5A5A5A5u : 0);
    for (uint32_t i = 0; i < count; ++i) {
        const uint8_t b = in.u8();
        refs[i] = b == 0xFF ? in.u32() : ref(b);
    }
    std::memcpy(page, refs.data(), XENHSA_PAGE_SIZE);
}

void Rig::operator_action(FuzzInput& in) {
    switch (in.u8() % 4) {
        case 0:
            session_->revoke_all(false);
            break;
        case 1:
            (void)session_->revoke_handle(patch_handle(in.u64()));
            break;
        case 2: {
            core::Quotas q = quotas_;
            q.max_map_pages = in.u8();
            q.max_lend_pages = in.u8();
            (void)session_->enforce_quotas(q);
            break;
        }
        default:
            if (gpu_ != nullptr && kfd_.last_queue() != 0) {
                kfd_.fault(kfd_.last_queue(), relocate(in.u64()));
            }
            break;
    }
    poll(false);
}

// The guest writes into the ring header, the backend's cache line included (the
// backend must never trust what it reads back there).
void Rig::scribble(FuzzInput& in) {
    const uint32_t word = 1 + in.u8() % 31u;  // not req_prod: that has its own operations
    const uint32_t value = in.u32();
    std::memcpy(ring_pages_.get() + 4 * word, &value, 4);
}

void Rig::step(FuzzInput& in, uint8_t op) {
    switch (op % 12) {
        case 0: {  // raw slot bytes
            const uint8_t index = in.u8();
            in.fill(ring_pages_.get() + xenhsa_ring_slot_offset(index, slots_), XENHSA_SLOT_SIZE);
            break;
        }
        case 1:
            push_fuzzed(in);
            break;
        case 2:
            xenhsa_index_store(&sring()->req_prod, req_prod_pvt_);
            break;
        case 3: {  // a producer index: near the consumer, or anything
            const uint8_t mode = in.u8();
            const uint32_t rp = (mode & 1u) != 0 ? in.u32() : ring_->rsp_prod() + in.u8() % 40u;
            xenhsa_index_store(&sring()->req_prod, rp);
            break;
        }
        case 4:
            serve();
            break;
        case 5:
            doorbell(in);
            break;
        case 6:
            notify_cons(in);
            break;
        case 7:
            write_indirect(in);
            break;
        case 8:
            poll(false);
            break;
        case 9:
            operator_action(in);
            break;
        case 10:
            scribble(in);
            break;
        default:
            poll(true);
            break;
    }
}

void Rig::run(FuzzInput& in) {
    for (int i = 0; i < kMaxOps && !in.empty(); ++i) {
        step(in, in.u8());
    }
    serve();
    poll(false);
    teardown();
}

// Session end as on Closing: everything revoked in the fixed order, nothing left.
void Rig::teardown() {
    ring_.reset();
    session_.reset();
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

}  // namespace
}  // namespace xenhsa::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace xenhsa::fuzz;
    const std::size_t fds = open_fds();
    {
        FuzzInput in(data, size);
        Rig rig(in);
        rig.run(in);
    }
    XENHSA_FUZZ_CHECK(open_fds() == fds, "a file descriptor outlived the session");
    return 0;
}
