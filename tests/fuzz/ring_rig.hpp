// The "ring" fuzz target's rig (the input format and the invariants are described at
// the top of ring_fuzz.cpp): the guest's memory, the backend core's GuestRequests and
// RingServer over the core tests' fakes, and the checkers between them.
//   ring_rig.cpp     setting up, pushing well-formed requests, serving, teardown;
//   ring_checks.cpp  what the checkers and the rig assert about answers and the notify page;
//   ring_fuzz.cpp    the hostile guest's operations and the fuzz entry point.
#ifndef XENHSA_TESTS_FUZZ_RING_RIG_HPP
#define XENHSA_TESTS_FUZZ_RING_RIG_HPP

#include <xenhsa/proto.h>

#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>
#include <xenhsa/backend/core/guest_requests.hpp>
#include <xenhsa/backend/core/ring_server.hpp>
#include <xenhsa/hsa/gpu_context.hpp>

#include "fake_grants.hpp"
#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "recording_kfd.hpp"

namespace xenhsa::fuzz::ring {

namespace core = backend::core;
using core::testing::FakeGrantMapper;
using core::testing::FakeGrantSharer;
using core::testing::GuestMemory;
using core::testing::RecordingKfd;

constexpr std::size_t kGuestPages = 64;
constexpr std::size_t kIndirectFirst = 56;   // pages 56..63 hold indirect grant lists
constexpr std::size_t kReadOnlyGrants = 16;  // pages 0..15 are also granted read-only
constexpr uint64_t kWindowSize = 1ull << 30;

struct FreeDeleter {
    void operator()(void* p) const noexcept { std::free(p); }
};
template <class T>
using Page = std::unique_ptr<T, FreeDeleter>;

template <class Wire>
Wire wire_of(const core::Reply& r) {
    Wire w{};
    std::memcpy(&w, r.payload.data(), sizeof w);
    return w;
}

class Rig;

// Sits between the RingServer and the GuestRequests: sees every consumed request (the copy)
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
    core::GuestRequests& requests() { return *requests_; }
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
        const auto& w = requests_->window();
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
    std::unique_ptr<hsa::GpuContext> gpu_;
    Page<std::byte> ring_pages_;
    Page<xenhsa_notify_page> notify_;
    Page<xenhsa_doorbell_page> doorbells_;
    Checker checker_{*this};
    AsyncChecker async_{*this};
    std::unique_ptr<core::GuestRequests> requests_;
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

}  // namespace xenhsa::fuzz::ring

#endif
