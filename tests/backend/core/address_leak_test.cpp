// No reply tells the guest where the worker keeps anything (issue 11, item 5): a scripted
// session over the software agent, with KFD's event page modelled (the libhsakmt adapter
// reports each event's mailbox in it), and every 8-byte word of every reply and notify
// record checked against the worker's own mappings in /proc/self/maps. The negotiated
// window holds everything the guest placed (MAP, LEND, ALLOC), so it does not count.
#include <sys/mman.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <xenhsa/hsa/soft_agent.hpp>

#include "gpu_harness.hpp"

namespace xenhsa::backend::core::testing {
namespace {

// The software agent, with each event's mailbox in a page of the worker's own, as KFD's
// event page is for the libhsakmt adapter (HsaEvent.EventData.HWData2).
class EventPageDevice final : public hsa::KfdDevice {
public:
    EventPageDevice() : agent_(hsa::make_soft_agent()) {
        void* page =
            ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        EXPECT_NE(page, MAP_FAILED);
        page_ = reinterpret_cast<uint64_t>(page);
    }
    ~EventPageDevice() override { ::munmap(reinterpret_cast<void*>(page_), kPage); }
    EventPageDevice(const EventPageDevice&) = delete;
    EventPageDevice& operator=(const EventPageDevice&) = delete;

    [[nodiscard]] uint64_t event_page() const { return page_; }

    hsa::Result<hsa::EventInfo> create_event(const hsa::EventSpec& spec) override {
        auto info = agent_->create_event(spec);
        if (info) {
            info.value().mailbox = page_ + 8 * (info.value().event_id % (kPage / 8));
        }
        return info;
    }

    hsa::Result<xenhsa_version_info> version() override { return agent_->version(); }
    hsa::Result<xenhsa_system_props> system() override { return agent_->system(); }
    hsa::Result<xenhsa_node_props> node(uint32_t n) override { return agent_->node(n); }
    hsa::Result<xenhsa_mem_bank> mem_bank(uint32_t n, uint32_t i) override {
        return agent_->mem_bank(n, i);
    }
    hsa::Result<xenhsa_cache> cache(uint32_t n, uint32_t i) override { return agent_->cache(n, i); }
    hsa::Result<xenhsa_io_link> io_link(uint32_t n, uint32_t i) override {
        return agent_->io_link(n, i);
    }
    hsa::Result<xenhsa_clock_counters> clock(uint32_t n) override { return agent_->clock(n); }
    hsa::Result<xenhsa_kernel_info> kernel(uint32_t i) override { return agent_->kernel(i); }
    hsa::Result<void> alloc(uint32_t n, hsa::Va va, uint64_t size, uint32_t flags) override {
        return agent_->alloc(n, va, size, flags);
    }
    hsa::Result<void> free(hsa::Va va) override { return agent_->free(va); }
    hsa::Result<void> register_user(hsa::Va va, uint64_t size, bool read_only) override {
        return agent_->register_user(va, size, read_only);
    }
    hsa::Result<void> deregister_user(hsa::Va va) override { return agent_->deregister_user(va); }
    hsa::Result<void> map_to_gpu(hsa::Va va, uint64_t mask, bool read_only) override {
        return agent_->map_to_gpu(va, mask, read_only);
    }
    hsa::Result<void> unmap_from_gpu(hsa::Va va) override { return agent_->unmap_from_gpu(va); }
    bool supports_queue_type(hsa::QueueType type) noexcept override {
        return agent_->supports_queue_type(type);
    }
    hsa::Result<hsa::QueueId> create_queue(const hsa::QueueSpec& spec) override {
        return agent_->create_queue(spec);
    }
    hsa::Result<void> destroy_queue(hsa::QueueId q) override { return agent_->destroy_queue(q); }
    hsa::Result<void> ring_doorbell(hsa::QueueId q, uint64_t value) override {
        return agent_->ring_doorbell(q, value);
    }
    bool track_kicks(uint32_t* word) noexcept override { return agent_->track_kicks(word); }
    [[nodiscard]] std::optional<uint64_t> packets_taken() const noexcept override {
        return agent_->packets_taken();
    }
    hsa::Result<void> destroy_event(hsa::EventId e) override { return agent_->destroy_event(e); }
    hsa::Result<void> set_event(hsa::EventId e) override { return agent_->set_event(e); }
    hsa::Result<void> reset_event(hsa::EventId e) override { return agent_->reset_event(e); }
    hsa::Result<uint32_t> wait_events(std::span<const hsa::EventId> events, bool all,
                                      uint32_t timeout_ms) override {
        return agent_->wait_events(events, all, timeout_ms);
    }
    void set_fault_handler(FaultHandler handler) override {
        agent_->set_fault_handler(std::move(handler));
    }

private:
    std::unique_ptr<hsa::KfdDevice> agent_;
    uint64_t page_ = 0;
};

struct Mapping {
    uint64_t start = 0;
    uint64_t end = 0;
    std::string line;
};

// The worker's mappings, less the sanitizers' shadow (a terabyte or more of address
// space that any counter or packed pair of sizes would fall into).
std::vector<Mapping> own_mappings() {
    constexpr uint64_t kShadowSize = 1ull << 40;
    std::vector<Mapping> out;
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        std::istringstream fields(line);
        std::string range;
        fields >> range;
        const auto dash = range.find('-');
        Mapping m{std::stoull(range.substr(0, dash), nullptr, 16),
                  std::stoull(range.substr(dash + 1), nullptr, 16), line};
        if (m.end - m.start < kShadowSize) {
            out.push_back(m);
        }
    }
    return out;
}

struct Seen {
    std::string what;
    std::vector<std::byte> bytes;
};

class AddressLeakTest : public ::testing::Test {
protected:
    GpuHarness& h() { return *harness_; }

    // Sends and keeps the answer's payload for the scan.
    std::optional<Reply> send_kept(const char* what, uint32_t cmd, const auto& payload) {
        auto r = h().send(cmd, payload);
        if (r) {
            keep(what, *r);
        }
        return r;
    }
    void keep(const std::string& what, const Reply& r) {
        seen_.push_back(
            {what, std::vector<std::byte>(r.payload.begin(), r.payload.begin() + r.len)});
    }

    EventPageDevice device_;
    std::unique_ptr<GpuHarness> harness_;
    std::vector<Seen> seen_;
};

TEST_F(AddressLeakTest, NoReplyNamesAnAddressOfTheWorker) {
    // HELLO: a window over the worker's own heap (refused, with a proposal), then that one.
    HarnessOptions o;
    o.device = &device_;
    o.features = XENHSA_FEATURES_KNOWN;
    o.ring_slots = 128;
    harness_ = std::make_unique<GpuHarness>(o);  // its own HELLO: proposal, confirm
    for (const Reply& r : h().sink.replies) {
        keep("HELLO", r);
    }
    {
        RequestsHarness probe(o);
        std::vector<char> heap(1 << 20);
        const uint64_t taken = reinterpret_cast<uint64_t>(heap.data()) & ~((1ull << 30) - 1);
        auto refused = probe.send(XENHSA_CMD_HELLO, probe.hello_req(taken));
        ASSERT_TRUE(refused);
        EXPECT_EQ(refused->status, XENHSA_STATUS_BAD_ADDRESS);
        // Its proposal is a reservation of that session, gone with it: it may name the
        // address of nothing but itself.
        const auto p = payload_of<xenhsa_hello_rsp>(*refused);
        EXPECT_GE(p.va_base, XENHSA_VA_WINDOW_FLOOR);
    }
    const uint64_t base = h().base;

    // QUERY everything the host has (CLOCK gives time counters, not addresses: skipped).
    const auto query = [&](uint32_t kind, uint32_t node, uint32_t index) -> uint32_t {
        for (uint32_t offset = 0;;) {
            const xenhsa_query_req q{kind, node, index, offset};
            auto r = send_kept("QUERY", XENHSA_CMD_QUERY, q);
            if (!r || r->status != XENHSA_STATUS_OK) {
                return r ? r->status : uint32_t{XENHSA_STATUS_DEVICE};
            }
            const auto rsp = payload_of<xenhsa_query_rsp>(*r);
            offset += rsp.chunk_len;
            if (rsp.chunk_len == 0 || offset >= rsp.total_len) {
                return XENHSA_STATUS_OK;
            }
        }
    };
    ASSERT_EQ(query(XENHSA_QUERY_VERSION, 0, 0), XENHSA_STATUS_OK);
    ASSERT_EQ(query(XENHSA_QUERY_SYSTEM, 0, 0), XENHSA_STATUS_OK);
    for (uint32_t node = 0; node < 2; ++node) {
        ASSERT_EQ(query(XENHSA_QUERY_NODE, node, 0), XENHSA_STATUS_OK);
        for (uint32_t kind : {XENHSA_QUERY_MEM_BANK, XENHSA_QUERY_CACHE, XENHSA_QUERY_IO_LINK}) {
            for (uint32_t i = 0; query(kind, node, i) == XENHSA_STATUS_OK; ++i) {
            }
        }
    }
    for (uint32_t i = 0; query(XENHSA_QUERY_KERNEL, 0, i) == XENHSA_STATUS_OK; ++i) {
    }

    // Memory: MAP, PIN, MAP_TO_GPU, LEND, ALLOC anywhere in the window.
    const hsa::Handle map = h().map_ok(base, 8, 0);
    ASSERT_NE(map, 0u);
    xenhsa_pin_req pin{base, 8 * kPage, 0, 0};
    auto pinned = send_kept("PIN", XENHSA_CMD_PIN, pin);
    ASSERT_TRUE(pinned && pinned->status == XENHSA_STATUS_OK);
    const hsa::Handle pin_handle = payload_of<xenhsa_handle_rsp>(*pinned).handle;
    xenhsa_map_to_gpu_req to_gpu{pin_handle, kGpuMask, 0, 0};
    auto on_gpu = send_kept("MAP_TO_GPU", XENHSA_CMD_MAP_TO_GPU, to_gpu);
    ASSERT_TRUE(on_gpu && on_gpu->status == XENHSA_STATUS_OK);
    xenhsa_lend_req lend{base + 64 * kPage, 2, XENHSA_MAP_RW};
    auto lent = send_kept("LEND", XENHSA_CMD_LEND, lend);
    ASSERT_TRUE(lent && lent->status == XENHSA_STATUS_OK);
    xenhsa_alloc_req alloc{0, 4 * kPage, kGpuNode, XENHSA_ALLOC_DEVICE_LOCAL};
    auto allocated = send_kept("ALLOC", XENHSA_CMD_ALLOC, alloc);
    ASSERT_TRUE(allocated && allocated->status == XENHSA_STATUS_OK);

    // Events of every type, a queue of each kind, waits.
    std::vector<hsa::Handle> events;
    for (uint32_t type = 0; type < XENHSA_EVENT_TYPE_COUNT_; ++type) {
        xenhsa_event_create_req e{type, kGpuNode, XENHSA_EVENT_MANUAL_RESET, 0};
        auto created = send_kept("EVENT_CREATE", XENHSA_CMD_EVENT_CREATE, e);
        ASSERT_TRUE(created && created->status == XENHSA_STATUS_OK);
        events.push_back(payload_of<xenhsa_event_create_rsp>(*created).handle);
    }
    auto aql = h().queue_req(base, base + kPage);
    aql.error_event = events[0];
    auto queue = send_kept("QUEUE_CREATE", XENHSA_CMD_QUEUE_CREATE, aql);
    ASSERT_TRUE(queue && queue->status == XENHSA_STATUS_OK);
    auto sdma = h().queue_req(base + 2 * kPage, base + kPage + 16);
    sdma.type = XENHSA_QUEUE_SDMA;
    auto sdma_queue = send_kept("QUEUE_CREATE", XENHSA_CMD_QUEUE_CREATE, sdma);
    ASSERT_TRUE(sdma_queue && sdma_queue->status == XENHSA_STATUS_OK);
    xenhsa_handle_req set{events[1]};
    send_kept("EVENT_SET", XENHSA_CMD_EVENT_SET, set);
    xenhsa_event_wait_req wait{};
    wait.count = 2;
    wait.timeout_ms = 0;
    wait.event[0] = events[1];
    wait.event[1] = events[2];
    EXPECT_FALSE(h().send(XENHSA_CMD_EVENT_WAIT, wait));  // answered later
    ASSERT_TRUE(h().run_until([&] { return !h().async.replies.empty(); }));
    for (const Reply& r : h().async.replies) {
        keep("EVENT_WAIT", r);
    }
    // Errors too, and the revoke of the LEND (a notify record).
    send_kept("UNMAP", XENHSA_CMD_UNMAP, xenhsa_handle_req{0x1234});
    ASSERT_TRUE(h().requests->revoke_handle(payload_of<xenhsa_lend_rsp>(*lent).handle));
    std::vector<std::byte> notify(kPage);
    std::memcpy(notify.data(), h().notify_page.get(), kPage);
    seen_.push_back({"notify page", notify});

    const uint64_t window_end = base + h().requests->window().size();
    const auto mappings = own_mappings();
    // The modelled event page is one of them (the check can see a leak).
    ASSERT_TRUE(std::any_of(mappings.begin(), mappings.end(), [&](const Mapping& m) {
        return device_.event_page() >= m.start && device_.event_page() < m.end;
    }));
    uint64_t words = 0;
    for (const Seen& s : seen_) {
        for (std::size_t off = 0; off + 8 <= s.bytes.size(); off += 8) {
            uint64_t word = 0;
            std::memcpy(&word, s.bytes.data() + off, 8);
            ++words;
            if (word >= base && word < window_end) {
                continue;  // the guest's own window
            }
            for (const Mapping& m : mappings) {
                EXPECT_FALSE(word >= m.start && word < m.end)
                    << s.what << " at offset " << off << " names " << std::hex << word
                    << ", inside the worker's " << m.line;
            }
        }
    }
    EXPECT_GT(words, 500u);
}

}  // namespace
}  // namespace xenhsa::backend::core::testing
