// The xenhsa-sim daemon: hypervisor, toolstack and xenstored for domains that are
// processes connected to DIR/xenhsa-sim.sock. Single-threaded: one epoll loop serves every
// connection, so the state below needs no locks. Every client message is hostile: a bad
// request gets an error reply, a connection that breaks the framing is dropped, and
// nothing a client sends may crash or block the daemon.
//
// The methods are spread over files by concern: server.cpp (loop and connection I/O),
// dispatch.cpp (decoding and validating requests), domains.cpp (domain table and
// lifecycle), grants.cpp (sharing, mapping, foreign maps), events.cpp (ports),
// store_bridge.cpp (the StoreTree behind the socket).
#ifndef XENHSA_XEN_SIM_DAEMON_DAEMON_HPP
#define XENHSA_XEN_SIM_DAEMON_DAEMON_HPP

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string_view>
#include <vector>
#include <xenhsa/xen/sim/store_tree.hpp>

#include "conn.hpp"
#include "domain.hpp"

namespace xenhsa::xen::sim::daemon {

struct Options {
    std::filesystem::path dir;
    uint32_t grant_entries = 256 * 512;  // 256 grant frames of v1 entries per domain
    // Grant pages a domain's processes may have mapped at once: Xen's maptrack table, 256
    // maps per frame (Xen's default is 1024 frames; 4096 here, as the backend's defaults
    // on the simulator were sized for).
    uint64_t maptrack_entries = uint64_t{4096} * 256;
    std::size_t max_connections = 4096;
    std::size_t max_domains = 256;
};

class Daemon {
public:
    explicit Daemon(Options options);
    ~Daemon();
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Creates dom0 and binds the socket; EADDRINUSE if another daemon serves the dir.
    Result<void> start();
    // Serves until SIGTERM or SIGINT (blocked by the caller), then removes the socket.
    Result<void> run();

private:
    // --- server.cpp -------------------------------------------------------------------
    void accept_all();
    void on_event(Conn& c, uint32_t events);
    void read_requests(Conn& c);
    void flush(Conn& c);
    void update_interest(Conn& c);
    void post(Conn& c, wire::OutMessage msg);
    void drop(Conn& c, std::string_view why);
    void reap();
    Conn* conn(ConnKey key);

    // --- dispatch.cpp -----------------------------------------------------------------
    void dispatch(Conn& c, wire::Message& req);
    void reply(Conn& c, const wire::Message& req, int err, std::span<const std::byte> body,
               std::span<const std::byte> tail = {}, std::vector<UniqueFd> fds = {},
               uint16_t flags = 0);
    template <class T>
    void reply_body(Conn& c, const wire::Message& req, const T& body) {
        reply(c, req, 0, wire::as_bytes(body));
    }
    void reply_error(Conn& c, const wire::Message& req, std::error_code err);
    void on_hello(Conn& c, const wire::Message& req);
    void on_toolstack(Conn& c, const wire::Message& req);
    void on_grants(Conn& c, const wire::Message& req);
    void on_events(Conn& c, const wire::Message& req);
    void on_store(Conn& c, const wire::Message& req);

    // --- domains.cpp -------------------------------------------------------------------
    Result<void> create_dom0();
    Result<DomId> create_domain(std::string_view name, uint64_t ram_pages);
    Result<void> destroy_domain(DomId id, bool kill, pid_t caller);
    // Its connections are gone: closes its ports, retires its grants, releases it in the
    // store (@releaseDomain) and removes it.
    void finish_domain(DomId id);
    Domain* live_domain(DomId id) noexcept;  // not dying
    Domain* any_domain(DomId id) noexcept;   // dying ones too
    Result<void> attach(Conn& c, DomId id);
    // Releases everything the connection owns; may destroy its domain.
    void teardown(Conn& c);

    // --- grants.cpp --------------------------------------------------------------------
    // With gntalloc's unmap notification when `req` asks for one: it runs when the share
    // ends (released, revoked, ended, or the connection closed).
    Result<uint64_t> share(Conn& c, const wire::ShareReq& req, std::vector<GrantRef>& refs,
                           UniqueFd& segment_fd);
    Result<void> end_share(Conn& c, uint64_t id, wire::Op how);
    struct MapResult {
        uint64_t map_id = 0;
        uint32_t failed = 0;
        std::vector<Resolved> pages;
    };
    Result<void> map_grants(Conn& c, const wire::MapReq& req, std::span<const GrantRef> refs,
                            MapResult& out);
    Result<void> unmap_grants(Conn& c, uint64_t id);
    void release_map(Conn& c, MapRecord& rec) noexcept;
    Result<void> foreign_map(Conn& c, DomId domid, std::span<const uint64_t> gfns,
                             std::vector<Resolved>& out);
    // The replies of a grant or foreign map: runs of segment pages, split over messages.
    void reply_runs(Conn& c, const wire::Message& req, uint64_t map_id,
                    std::span<const Resolved> pages, bool writable);
    void release_grants(Conn& c) noexcept;

    // --- events.cpp --------------------------------------------------------------------
    struct EventsOpened {
        wire::EvtchnOpenRep rep{};
        UniqueFd inbox;
        UniqueFd self_outbox;
    };
    Result<void> open_events(Conn& c, EventsOpened& out);
    struct BoundEnd {
        wire::SocketName peer{};  // the address of the peer's outbox into our inbox
        UniqueFd outbox;          // ours, into the peer's inbox
        UniqueFd peer_outbox;     // a copy of the peer's: keeps `peer` ours
    };
    // What a connection acting for one guest may do (dispatch.cpp, store_bridge.cpp).
    [[nodiscard]] bool may_query(const Conn& c, const wire::Message& req) const;
    [[nodiscard]] bool may_act(const Conn& c, const wire::Message& req) const;
    [[nodiscard]] static bool store_path_allowed(const Conn& c, std::string_view path);
    Result<Port> bind_unbound(Conn& c, DomId remote);
    Result<Port> bind_interdomain(Conn& c, DomId remote, Port remote_port, BoundEnd& out);
    Result<void> unbind(Conn& c, Port port);
    void hold_port(Domain& d, Port port) noexcept;
    void unhold_port(DomId dom, Port port) noexcept;
    void close_port(Domain& d, Port port) noexcept;
    void release_ports(Conn& c) noexcept;

    // --- store_bridge.cpp ---------------------------------------------------------------
    Result<ConnId> store_conn(Conn& c);
    std::string store_path(const Conn& c, std::string_view path) const;
    void flush_watch_events();
    void release_store(Conn& c) noexcept;

    Options options_;
    UniqueFd epoll_;
    UniqueFd listener_;
    UniqueFd signals_;
    std::filesystem::path socket_path_;
    bool bound_ = false;

    std::map<ConnKey, std::unique_ptr<Conn>> conns_;
    // gntalloc's order when a share ends: clear the byte, then notify.
    void notify_share_end(const Conn& c, ShareRecord& rec) noexcept;
    // Grant pages the processes of `d` map now.
    [[nodiscard]] uint64_t maps_of(const Domain& d) const noexcept;
    ConnKey next_conn_ = 1;
    std::vector<ConnKey> dropped_;
    ConnKey serving_ = 0;  // the connection whose request is being handled
    std::map<DomId, Domain> domains_;
    DomId next_domid_ = 1;
    uint64_t next_id_ = 1;  // map and share ids
    StoreTree store_;
    ConnId dom0_store_ = 0;  // the toolstack's own store connection
    std::unique_ptr<std::byte[]> buf_;
};

}  // namespace xenhsa::xen::sim::daemon

#endif
