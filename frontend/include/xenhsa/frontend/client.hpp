// The guest's synchronous request API over a connected device (protocol section 5).
//
// Every request goes through the FrontRing; every response is copied once and checked
// (check_response, plus handle uniqueness and VA checks here). A broken backend makes
// every later call fail with Errc::backend_broken and starts closing the device; a dead
// one gives Errc::backend_gone. A status other than OK comes back as status_error(s)
// from the typed calls, and as Reply::status from call().
//
// Not thread-safe. Buffers it hands out must be destroyed before it (they live in its
// VA window). After GuestDevice::reconnect() make a new Client.
#ifndef XENHSA_FRONTEND_CLIENT_HPP
#define XENHSA_FRONTEND_CLIENT_HPP

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>
#include <xenhsa/frontend/buffers.hpp>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/link.hpp>
#include <xenhsa/frontend/notify_consumer.hpp>
#include <xenhsa/frontend/response_check.hpp>
#include <xenhsa/frontend/va_window.hpp>
#include <xenhsa/xen/grant_map.hpp>
#include <xenhsa/xen/grant_share.hpp>

namespace xenhsa::frontend {

struct ClientOptions {
    std::chrono::milliseconds timeout{10000};  // per request (EVENT_WAIT: on top of its own)
    // A caller waiting for an answer polls the ring this long before it arms rsp_event and
    // sleeps (the backend does not kick meanwhile); 0: sleeps at once.
    std::chrono::microseconds reply_spin{50};
};

struct HelloOptions {
    uint64_t features = XENHSA_FEATURES_V1;
    uint64_t va_size = 4ull << 30;
    uint64_t va_base = 0;  // 0: let the backend propose a window
};

// What HELLO negotiated (the OK response that reached CONNECTED).
using Session = xenhsa_hello_rsp;

enum class HandleKind : uint8_t { map, lend, pin, alloc, queue, event };

class Client {
public:
    Client(Link& link, xen::GrantSharer& sharer, xen::GrantMapper& mapper,
           ClientOptions options = {});
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;
    ~Client();

    // --- session -------------------------------------------------------------------------
    // Negotiates version, features and the VA window (5.1): takes the backend's proposal
    // when the same range can be reserved here (PROT_NONE, MAP_FIXED_NOREPLACE), else asks
    // for a range of its own; at most XENHSA_HELLO_MAX_ATTEMPTS HELLOs. A BAD_ADDRESS
    // without a proposal (the asked window refused outright) is returned as that status.
    Result<Session> hello(const HelloOptions& options = {});
    [[nodiscard]] const std::optional<Session>& session() const noexcept { return session_; }
    [[nodiscard]] bool granted(uint64_t feature) const noexcept {
        return session_ && (session_->features & feature) == feature;
    }
    // The window's allocator (empty before hello()).
    [[nodiscard]] VaAllocator& window() noexcept { return allocator_; }

    // --- generic requests: the checked reply, whatever its status -----------------------
    // Whether a late success of `cmd` creates or destroys an object the guest keeps a
    // record of: such a request that times out ends the session (3.7).
    static bool changes_objects(uint32_t cmd) noexcept;
    Result<Reply> call(uint32_t cmd, std::span<const std::byte> payload);
    template <class Wire>
    Result<Reply> call(uint32_t cmd, const Wire& wire) {
        return call(cmd, std::as_bytes(std::span(&wire, 1)));
    }
    // Raw slot bytes (hostile frontends): only the seqno is replaced by a fresh one.
    Result<Reply> call_raw(const xenhsa_req_slot& slot);
    // Pipelining: send() pushes and publishes, returning the seqno; receive() waits for
    // that reply (ETIMEDOUT: the request stays outstanding and its late reply is dropped).
    Result<uint32_t> send(uint32_t cmd, std::span<const std::byte> payload);
    Result<uint32_t> send_raw(const xenhsa_req_slot& slot);
    Result<Reply> receive(uint32_t seqno);
    Result<Reply> receive(uint32_t seqno, std::chrono::steady_clock::time_point deadline);

    // --- typed requests ------------------------------------------------------------------
    // The whole result of a QUERY kind, read in chunks; its size must be the kind's struct.
    Result<std::vector<std::byte>> query(uint32_t kind, uint32_t node = 0, uint32_t index = 0);
    Result<xenhsa_version_info> query_version();
    Result<xenhsa_system_props> query_system();
    Result<xenhsa_node_props> query_node(uint32_t node);
    Result<xenhsa_kernel_info> query_kernel(uint32_t index);
    // QUERY TILE_CONFIG of a GPU node.
    Result<xenhsa_tile_config> query_tile_config(uint32_t node);
    // The built-in kernel called `name` (nullopt when there is none).
    Result<std::optional<xenhsa_kernel_info>> find_kernel(std::string_view name);

    // Zeroed pages at a fresh VA in the window, granted to the backend.
    Result<GuestBuffer> allocate(std::size_t pages, bool backend_writable = true,
                                 uint64_t align = 4096);
    // Zeroed pages granted to the backend at `va`, a range of the window the caller took
    // from window() and keeps: the buffer gives the pages back, never the VA. `at`: where
    // this process maps them instead of `va` (the backend still maps them at `va`): memory
    // of the process's own, whose pages they replace (hsaKmtRegisterMemory's move).
    // `copy_bytes`: the pages start with the bytes at `at` (xen::ShareSpec::copy_bytes).
    Result<GuestBuffer> share_at(uint64_t va, std::size_t pages, bool backend_writable = true,
                                 std::byte* at = nullptr,
                                 void (*copy_bytes)(void*, const void*, std::size_t) = nullptr);
    // MAP of a whole buffer: inline refs up to 52 pages, indirect pages beyond.
    Result<Handle> map(const GuestBuffer& buffer, bool writable = true);
    // UNMAP of a MAP or LEND handle. A LEND's VA stays out of use: give a LentBuffer
    // back with unmap(LentBuffer &) instead.
    Result<void> unmap(Handle handle);
    // LEND at a fresh VA, mapped there (GrantMapper at that VA).
    Result<LentBuffer> lend(uint32_t npages, bool writable);
    // LEND at `va`, a range of the window the caller holds (VaAllocator) and keeps: give it
    // back with the mapping reset and unmap(Handle). `at`: as share_at's.
    Result<LentBuffer> lend_at(uint64_t va, uint32_t npages, bool writable,
                               std::byte* at = nullptr);
    // Unmaps locally, then UNMAP (the acknowledgement of a REVOKED, too).
    Result<void> unmap(LentBuffer& lent);
    [[nodiscard]] bool revoked(Handle lend) const noexcept { return revoked_.count(lend) != 0; }
    [[nodiscard]] bool faulted(Handle queue) const noexcept { return faulted_.count(queue) != 0; }

    Result<Handle> pin(uint64_t va, uint64_t size, uint32_t flags = 0);
    Result<void> unpin(Handle handle);
    // Returns gpu_va, which must be the PIN's or ALLOC's VA.
    Result<uint64_t> map_to_gpu(Handle handle, uint64_t node_mask, uint32_t flags = 0);
    Result<void> unmap_from_gpu(Handle handle);
    // ALLOC at a fresh window VA (or where the backend chooses, when backend_places).
    Result<xenhsa_alloc_rsp> alloc(uint64_t size, uint32_t node, uint32_t flags,
                                   bool backend_places = false);
    // ALLOC at `va`, a range of the window the caller took from window() and keeps.
    Result<xenhsa_alloc_rsp> alloc_at(uint64_t va, uint64_t size, uint32_t node, uint32_t flags);
    Result<void> free(Handle handle);
    Result<xenhsa_queue_create_rsp> queue_create(const xenhsa_queue_create_req& req);
    Result<void> queue_destroy(Handle handle);
    Result<xenhsa_event_create_rsp> event_create(uint32_t type, uint32_t node, uint32_t flags);
    Result<void> event_destroy(Handle handle);
    Result<void> event_set(Handle handle);
    Result<void> event_reset(Handle handle);
    // The signalled mask; status_error(TIMEOUT / CANCELLED) otherwise.
    Result<uint32_t> event_wait(std::span<const Handle> events, bool all, uint32_t timeout_ms);
    // Asynchronous wait: the seqno names it; receive() or finish_wait() gets the answer.
    Result<uint32_t> event_wait_async(std::span<const Handle> events, bool all,
                                      uint32_t timeout_ms);
    Result<uint32_t> finish_wait(uint32_t seqno);
    // Whether the reply to `seqno` has arrived (and not been taken); consumes nothing.
    [[nodiscard]] bool replied(uint32_t seqno) const noexcept { return ready_.count(seqno) != 0; }
    // BAD_ARGUMENT (the wait was already answered) is reported as success: the wait's
    // own reply tells how it ended.
    Result<void> event_wait_cancel(uint32_t wait_seqno);

    // --- notifications and liveness ---------------------------------------------------
    // Called for every notify record as it is consumed (inside any call).
    void on_notify(std::function<void(const xenhsa_notify&)> handler) {
        on_notify_ = std::move(handler);
    }
    // Records consumed so far and not yet taken.
    std::vector<xenhsa_notify> take_notifications();
    // Waits up to `timeout` for the event channel, then consumes responses and records.
    Result<void> pump(std::chrono::milliseconds timeout);
    // Pumps until a record of `type` for `handle` arrives (or the timeout).
    Result<xenhsa_notify> wait_notification(uint32_t type, Handle handle,
                                            std::chrono::milliseconds timeout);

    [[nodiscard]] Link& link() noexcept { return link_; }
    [[nodiscard]] uint32_t outstanding() const noexcept {
        return static_cast<uint32_t>(outstanding_.size());
    }
    [[nodiscard]] std::size_t live_handles() const noexcept { return handles_.size(); }
    [[nodiscard]] bool broken() const noexcept { return broken_; }
    // Why the session ended (meaningful once broken()).
    [[nodiscard]] std::error_code broken_reason() const noexcept { return broken_why_; }

private:
    struct Outstanding {
        SentRequest sent;
        bool abandoned = false;
    };
    struct LendInfo {
        uint64_t va = 0;
        uint32_t npages = 0;
    };

    Result<uint32_t> submit(const SentRequest& sent, const xenhsa_req_slot* raw);
    Result<void> drain();
    // Polls rsp_prod for up to reply_spin (not past `deadline`); true when answers came.
    bool poll_for_responses(std::chrono::steady_clock::time_point deadline) const noexcept;
    Result<void> handle_notify(const xenhsa_notify& record);
    // Ends the session for `why` (the first reason stays); returns it.
    std::error_code fail_broken(Errc why = Errc::backend_broken) noexcept;
    uint32_t next_seqno() noexcept;
    Result<Reply> expect_ok(uint32_t cmd, std::span<const std::byte> payload);
    Result<void> release_handle(uint32_t cmd, Handle handle);
    Result<void> unmap_handle(Handle handle, bool lend_va_is_free);
    Result<void> add_handle(Handle handle, HandleKind kind);

    Link& link_;
    xen::GrantSharer& sharer_;
    xen::GrantMapper& mapper_;
    ClientOptions options_;
    NotifyConsumer notify_;

    std::optional<Session> session_;
    VaReservation reservation_;
    VaAllocator allocator_;

    uint32_t seqno_ = 0;
    bool broken_ = false;
    Errc broken_why_ = Errc::backend_broken;
    std::map<uint32_t, Outstanding> outstanding_;
    std::map<uint32_t, Reply> ready_;
    std::map<Handle, HandleKind> handles_;
    std::map<Handle, uint64_t> object_va_;  // PIN and ALLOC handles: their VA
    std::map<Handle, LendInfo> lends_;
    std::set<Handle> revoked_;
    std::set<Handle> faulted_;
    std::deque<xenhsa_notify> notifications_;
    std::function<void(const xenhsa_notify&)> on_notify_;
};

}  // namespace xenhsa::frontend

#endif
