#include "scripted_frontend.hpp"

#include <xenhsa/proto.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <xenhsa/backend/service/xenbus.hpp>
#include <xenhsa/xen/sim/client.hpp>

namespace xenhsa::test {

namespace {

using namespace std::chrono_literals;
using backend::service::DeviceId;

constexpr xen::DomId kBackend = 0;

#define STEP(cond)                                                                             \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            std::fprintf(stderr, "scripted frontend: %s failed (line %d)\n", #cond, __LINE__); \
            return kFailed + __LINE__;                                                         \
        }                                                                                      \
    } while (0)

class Frontend {
public:
    Frontend(xen::Platform& platform, xen::DomId self, uint32_t devid)
        : p_(platform),
          dir_(backend::service::frontend_dir(DeviceId{self, devid})),
          be_dir_(backend::service::backend_dir(kBackend, DeviceId{self, devid})) {}

    uint64_t handle(uint64_t cmd) {
        switch (cmd) {
            case kPublish:
            case kPublishBadRingRef:
            case kPublishBadOrder:
            case kPublishMissingKeys:
            case kPublishOrder2:
                return publish(cmd);
            case kClose:
                return close();
            case kInitialise:
                return write("state", "1") ? 0 : kFailed;
            case kBeAlive:
                return ring_.data() != nullptr ? xenhsa_index_load(&shared()->be_alive) : 0;
            case kHello:
                return hello();
            case kHelloMaxHandles:
                return max_handles_;
            case kConnectAll:
                return connect_all();
            case kGpuVersion:
                return gpu_version();
            default:
                return kFailed;
        }
    }

private:
    bool write(const std::string& key, const std::string& value) {
        return p_.store->write(xen::kNoTx, dir_ + "/" + key, value).has_value();
    }
    xenhsa_sring* shared() const { return reinterpret_cast<xenhsa_sring*>(ring_.data()); }

    void drop() {
        port_.reset();
        ring_ = {};
        notify_ = {};
        doorbell_ = {};
        req_prod_ = 0;
        rsp_cons_ = 0;
    }

    uint64_t publish(uint64_t variant) {
        drop();
        for (const char* key :
             {"ring-page-order", "ring-ref", "ring-ref0", "ring-ref1", "ring-ref2", "ring-ref3",
              "notify-ref", "doorbell-ref", "event-channel"}) {
            STEP(p_.store->rm(xen::kNoTx, dir_ + "/" + key).has_value());
        }
        order_ = variant == kPublishOrder2 ? 2 : 0;
        auto ring = p_.sharer->share({kBackend, std::size_t{1} << order_, true});
        auto notify = p_.sharer->share({kBackend, 1, true});
        auto doorbell = p_.sharer->share({kBackend, 1, true});
        STEP(ring && notify && doorbell);
        ring_ = std::move(ring).value();
        notify_ = std::move(notify).value();
        doorbell_ = std::move(doorbell).value();
        xenhsa_sring_init(shared());
        auto port = p_.events->bind_unbound(kBackend);
        STEP(port);
        port_ = std::move(port).value();

        std::string ring_ref = std::to_string(ring_.refs()[0]);
        if (variant == kPublishBadRingRef) {
            ring_ref = "12abc";
        }
        if (variant == kPublishBadOrder) {
            STEP(write("ring-page-order", "9"));
        }
        if (order_ != 0) {
            STEP(write("ring-page-order", std::to_string(order_)));
            for (std::size_t i = 0; i < ring_.pages(); ++i) {
                STEP(write("ring-ref" + std::to_string(i), std::to_string(ring_.refs()[i])));
            }
        } else {
            STEP(write("ring-ref", ring_ref));
        }
        if (variant != kPublishMissingKeys) {
            STEP(write("notify-ref", std::to_string(notify_.refs()[0])));
            STEP(write("doorbell-ref", std::to_string(doorbell_.refs()[0])));
        }
        STEP(write("event-channel", std::to_string(port_.port())));
        STEP(write("state", "3"));
        return 0;
    }

    uint64_t close() {
        STEP(write("state", "5"));
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        for (;;) {
            auto state = p_.store->read(xen::kNoTx, be_dir_ + "/state");
            if (state && state.value() == "6") {
                break;
            }
            STEP(std::chrono::steady_clock::now() < deadline);
            std::this_thread::sleep_for(10ms);
        }
        drop();
        STEP(write("state", "6"));
        return 0;
    }

    // One request through the ring and its response, in `rsp`; kFailed + line or 0.
    uint64_t request(uint32_t cmd, const void* payload, uint32_t len, xenhsa_rsp_slot& rsp) {
        STEP(ring_.data() != nullptr);
        const uint32_t slots = XENHSA_RING_SLOTS(order_);
        const uint32_t seqno = 7000 + req_prod_;
        STEP(xenhsa_encode_req(ring_.data() + xenhsa_ring_slot_offset(req_prod_, slots), cmd, seqno,
                               payload, len) == 0);
        const uint32_t old = req_prod_++;
        if (xenhsa_ring_publish(&shared()->req_prod, &shared()->req_event, old, req_prod_)) {
            STEP(p_.events->notify(port_.port()));
        }
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (xenhsa_index_load(&shared()->rsp_prod) == rsp_cons_) {
            STEP(std::chrono::steady_clock::now() < deadline);
            std::this_thread::sleep_for(5ms);
        }
        xenhsa_copy_rsp(&rsp, ring_.data() + xenhsa_ring_slot_offset(rsp_cons_, slots));
        ++rsp_cons_;
        STEP(rsp.hdr.seqno == seqno);
        return 0;
    }

    uint64_t hello_with(const xenhsa_hello_req& req, xenhsa_hello_rsp& answer, uint32_t& status) {
        xenhsa_rsp_slot rsp{};
        if (const uint64_t failed = request(XENHSA_CMD_HELLO, &req, sizeof req, rsp)) {
            return failed;
        }
        status = rsp.hdr.status;
        if (rsp.hdr.status == XENHSA_STATUS_OK && rsp.hdr.len == sizeof(xenhsa_hello_rsp)) {
            std::memcpy(&answer, rsp.payload, sizeof answer);
            max_handles_ = answer.max_handles;
        }
        return 0;
    }

    uint64_t hello() {
        xenhsa_hello_req req{};
        req.version_min = XENHSA_PROTO_VERSION;
        req.version_max = XENHSA_PROTO_VERSION;
        req.va_size = XENHSA_VA_WINDOW_MIN;
        xenhsa_hello_rsp answer{};
        uint32_t status = 0;
        if (const uint64_t failed = hello_with(req, answer, status)) {
            return failed;
        }
        return status;
    }

    uint64_t connect_all() {
        xenhsa_hello_req req{};
        req.version_min = XENHSA_PROTO_VERSION;
        req.version_max = XENHSA_PROTO_VERSION;
        req.features = XENHSA_FEATURES_KNOWN;
        req.va_size = XENHSA_VA_WINDOW_MIN;
        xenhsa_hello_rsp answer{};
        uint32_t status = 0;
        STEP(hello_with(req, answer, status) == 0 && status == XENHSA_STATUS_OK);
        req.va_base = answer.va_base;  // this test's guest takes the proposal as it is
        STEP(hello_with(req, answer, status) == 0 && status == XENHSA_STATUS_OK);
        return answer.features;
    }

    uint64_t gpu_version() {
        xenhsa_query_req q{};
        q.kind = XENHSA_QUERY_NODE;
        q.node = 1;
        xenhsa_rsp_slot rsp{};
        STEP(request(XENHSA_CMD_QUERY, &q, sizeof q, rsp) == 0);
        STEP(rsp.hdr.status == XENHSA_STATUS_OK);
        xenhsa_query_rsp chunk{};
        std::memcpy(&chunk, rsp.payload, sizeof chunk);
        xenhsa_node_props props{};
        STEP(chunk.chunk_len >= offsetof(xenhsa_node_props, engine_id) + sizeof props.engine_id);
        std::memcpy(&props, chunk.data, std::min<size_t>(chunk.chunk_len, sizeof props));
        const uint32_t id = props.engine_id;  // ucode:10 major:6 minor:8 stepping:8
        return (((id >> 10) & 0x3F) << 16) | (((id >> 16) & 0xFF) << 8) | ((id >> 24) & 0xFF);
    }

    xen::Platform& p_;
    std::string dir_;
    std::string be_dir_;
    // The port outlives the pages (declared first, destroyed last).
    xen::BoundPort port_;
    xen::SharedPages ring_;
    xen::SharedPages notify_;
    xen::SharedPages doorbell_;
    uint32_t req_prod_ = 0;
    uint32_t rsp_cons_ = 0;
    uint32_t max_handles_ = 0;
    uint32_t order_ = 0;
};

}  // namespace

int run_scripted_frontend(const std::filesystem::path& sim_dir, xen::DomId self, uint32_t devid,
                          testing::Link& link) {
    auto platform = xen::sim::attach(sim_dir, self);
    if (!platform) {
        std::fprintf(stderr, "scripted frontend: attach: %s\n", platform.error().message().c_str());
        return 2;
    }
    Frontend frontend(platform.value(), self, devid);
    link.send(0);  // attached
    for (;;) {
        const auto cmd = link.receive(120s);
        if (!cmd || *cmd == kExit) {
            return 0;
        }
        if (!link.send(frontend.handle(*cmd))) {
            return 0;
        }
    }
}

}  // namespace xenhsa::test
