// A guest and GuestRequests over the fakes: requests go straight to GuestRequests::handle
// (no ring) and every response is recorded, so tests can look at statuses and payloads.
#ifndef XENHSA_TESTS_BACKEND_CORE_REQUESTS_HARNESS_HPP
#define XENHSA_TESTS_BACKEND_CORE_REQUESTS_HARNESS_HPP

#include <gtest/gtest.h>
#include <xenhsa/proto.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <xenhsa/backend/core/guest_requests.hpp>

#include "event_log.hpp"
#include "fake_grants.hpp"
#include "recording_kfd.hpp"

namespace xenhsa::backend::core::testing {

struct RecordingSink final : ReplySink {
    void reply(const Reply& r) noexcept override { replies.push_back(r); }
    std::deque<Reply> replies;
};

template <class Wire>
Wire payload_of(const Reply& r) {
    Wire w{};
    std::memcpy(&w, r.payload.data(), sizeof w);
    return w;
}

inline constexpr uint64_t kWindowSize = 1ull << 30;

// A guest VA as the pointer the backend maps at (a guest's VA is the worker's VA).
inline void* at(uint64_t va) { return reinterpret_cast<void*>(va); }

struct HarnessOptions {
    bool gpu = true;
    bool sharer = true;
    Quotas quotas = {};
    uint32_t ring_slots = 16;
    std::size_t guest_pages = 4096;
    bool log_calls = true;  // false: the fakes record nothing (they would allocate)
    uint64_t features = XENHSA_FEATURES_V1;  // what GpuHarness asks for
    hsa::KfdDevice* device = nullptr;        // the GPU seam's device; null: `kfd`
};

class RequestsHarness {
public:
    explicit RequestsHarness(const HarnessOptions& options = {})
        : memory(options.guest_pages),
          mapper(memory, options.log_calls ? &log : nullptr),
          sharer(options.log_calls ? &log : nullptr),
          kfd(options.log_calls ? &log : nullptr) {
        notify_page.reset(static_cast<xenhsa_notify_page*>(std::aligned_alloc(4096, 4096)));
        std::memset(notify_page.get(), 0, 4096);
        doorbell_page.reset(static_cast<xenhsa_doorbell_page*>(std::aligned_alloc(4096, 4096)));
        std::memset(doorbell_page.get(), 0, 4096);
        if (options.gpu) {
            hsa::KfdDevice& device = options.device != nullptr ? *options.device : kfd;
            gpu = std::make_unique<hsa::GpuContext>(device,
                                                    gpu_limits(options.quotas, options.ring_slots));
        }
        RequestOptions so;
        so.ring_slots = options.ring_slots;
        so.quotas = options.quotas;
        so.notify_page = notify_page.get();
        so.doorbell_page = doorbell_page.get();
        requests = std::make_unique<GuestRequests>(
            io, RequestSeams{kGuestDomId, mapper, options.sharer ? &sharer : nullptr, gpu.get()},
            so);
        requests->set_async_sink(&async);
    }

    ~RequestsHarness() {
        requests.reset();
        gpu.reset();
    }

    // Sends one request; returns its immediate response (nullopt when none came).
    template <class Wire>
    std::optional<Reply> send(uint32_t cmd, const Wire& payload, uint32_t seqno = 0) {
        return send_raw(cmd, &payload, sizeof payload, seqno);
    }
    std::optional<Reply> send_raw(uint32_t cmd, const void* payload, uint32_t len,
                                  uint32_t seqno = 0, uint32_t pad = 0) {
        xenhsa_req_slot slot{};
        xenhsa_encode_req(&slot, cmd, seqno == 0 ? ++seqno_ : seqno, payload, len);
        slot.hdr.pad = pad;
        const std::size_t before = sink.replies.size();
        requests->handle(slot, sink);
        if (sink.replies.size() == before) {
            return std::nullopt;
        }
        Reply r = sink.replies.back();
        return r;
    }
    uint32_t status(uint32_t cmd, const auto& payload) {
        auto r = send(cmd, payload);
        return r ? r->status : 0xFFFFFFFFu;
    }

    xenhsa_hello_req hello_req(uint64_t base, uint64_t features = XENHSA_FEATURES_V1) const {
        xenhsa_hello_req h{};
        h.version_min = 1;
        h.version_max = 1;
        h.features = features;
        h.va_base = base;
        h.va_size = kWindowSize;
        return h;
    }

    // HELLO{0}, then HELLO{proposal}: CONNECTED. Returns the window base.
    uint64_t connect(uint64_t features = XENHSA_FEATURES_V1) {
        auto first = send(XENHSA_CMD_HELLO, hello_req(0, features));
        EXPECT_TRUE(first && first->status == XENHSA_STATUS_OK);
        const auto proposal = payload_of<xenhsa_hello_rsp>(*first);
        auto second = send(XENHSA_CMD_HELLO, hello_req(proposal.va_base, features));
        EXPECT_TRUE(second && second->status == XENHSA_STATUS_OK);
        EXPECT_EQ(requests->state(), GuestRequests::State::connected);
        return requests->window().base();
    }

    // npages guest pages from `first_page`, granted; a direct MAP request at `va`.
    xenhsa_map_req map_req(uint64_t va, uint32_t npages, std::size_t first_page, bool rw = true) {
        xenhsa_map_req m{};
        m.va = va;
        m.npages = npages;
        m.flags = rw ? XENHSA_MAP_RW : 0;
        m.nrefs = npages;
        for (uint32_t i = 0; i < npages; ++i) {
            m.gref[i] = memory.grant(first_page + i, rw);
        }
        return m;
    }

    hsa::Handle map_ok(uint64_t va, uint32_t npages, std::size_t first_page, bool rw = true) {
        auto r = send(XENHSA_CMD_MAP, map_req(va, npages, first_page, rw));
        EXPECT_TRUE(r && r->status == XENHSA_STATUS_OK)
            << (r ? xenhsa_status_name(r->status) : "no reply");
        return r ? payload_of<xenhsa_handle_rsp>(*r).handle : 0;
    }

    uint32_t handle_cmd(uint32_t cmd, hsa::Handle h) {
        xenhsa_handle_req req{};
        req.handle = h;
        return status(cmd, req);
    }

    // Runs the io_context until `done()` or 10 s pass.
    template <class Done>
    bool run_until(Done&& done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!done()) {
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
            io.restart();
            io.run_for(std::chrono::milliseconds(5));
        }
        return true;
    }

    struct FreeDeleter {
        void operator()(void* p) const noexcept { std::free(p); }
    };

    boost::asio::io_context io;
    EventLog log;
    GuestMemory memory;
    FakeGrantMapper mapper;
    FakeGrantSharer sharer;
    RecordingKfd kfd;
    std::unique_ptr<xenhsa_notify_page, FreeDeleter> notify_page;
    std::unique_ptr<xenhsa_doorbell_page, FreeDeleter> doorbell_page;
    std::unique_ptr<hsa::GpuContext> gpu;
    std::unique_ptr<GuestRequests> requests;
    RecordingSink sink;
    RecordingSink async;
    uint32_t seqno_ = 0;
};

}  // namespace xenhsa::backend::core::testing

#endif
