// The xenhsa-sim wire protocol between the daemon and its client library.
//
// One AF_UNIX SOCK_SEQPACKET connection per seam component (and one per toolstack call).
// Every message is one datagram: a Header, the op's fixed Body (a trivially copyable
// struct below, exactly body_size bytes), then a variable tail of tail_size bytes. A tail
// larger than kMaxInlineTail travels in a memfd instead (kFlagBulkTail; that fd comes
// first among the message's SCM_RIGHTS fds). Requests carry a nonzero seq that their
// replies echo; messages the daemon sends on its own (watch events, event-channel
// bindings) carry seq 0. A reply with error != 0 is an errno; its body may still say more
// (the failing element of a grant map).
//
// Both sides run on one host and one build: native byte order, no versioning beyond the
// magic. The daemon treats every message it receives as hostile (see daemon/dispatch.cpp).
#ifndef XENHSA_XEN_SIM_WIRE_HPP
#define XENHSA_XEN_SIM_WIRE_HPP

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace xenhsa::xen::sim::wire {

inline constexpr uint32_t kMagic = 0x31534858;  // "XHS1"
inline constexpr std::size_t kMaxMessage = 65536;
inline constexpr std::size_t kMaxBody = 64;
inline constexpr std::size_t kMaxFds = 64;  // per message (SCM_MAX_FD is 253)
inline constexpr std::size_t kMaxBulkTail = std::size_t{64} << 20;
inline constexpr std::size_t kPageSize = 4096;
// Largest batch of grant refs or foreign gfns in one request.
inline constexpr uint32_t kMaxBatch = 1u << 20;
inline constexpr std::size_t kMaxDomainName = 64;
// Grant refs below this are never handed out, as Xen reserves them for the toolstack.
inline constexpr uint32_t kReservedGrantRefs = 8;

enum class Op : uint16_t {
    hello = 1,
    // toolstack
    create_domain,
    destroy_domain,
    list_domains,
    domain_alive,
    grant_table,  // a domain's grant table memfd (tests playing a hostile guest)
    // grant mapping (the mapper's side)
    grant_map,
    grant_unmap,
    // grant sharing (the granter's side)
    share,
    share_end_access,
    share_release,
    share_revoke,
    // event channels
    evtchn_bind_unbound,
    evtchn_bind_interdomain,
    evtchn_unbind,
    evtchn_bound,    // daemon -> client: a port of this connection got a peer
    evtchn_unbound,  // daemon -> client: the peer of a port of this connection went away
    // store
    store_read,
    store_write,
    store_mkdir,
    store_rm,
    store_directory,
    store_get_perms,
    store_set_perms,
    store_tx_start,
    store_tx_end,
    store_watch,
    store_unwatch,
    store_event,  // daemon -> client: a watch fired
    // foreign memory (dom0)
    foreign_map,
    // the caller's own grant table: how many entries a peer holds (DomainReq -> UsageRep)
    grant_usage,
    // opens the connection's event-channel handle (Empty -> EvtchnOpenRep)
    evtchn_open,
    // does nothing (Empty -> Empty): its reply follows every message queued before it
    evtchn_sync,
    last_ = evtchn_sync,
};

inline constexpr uint16_t kFlagBulkTail = 1;  // the tail is in the first fd (a memfd)
inline constexpr uint16_t kFlagMore = 2;      // another reply to the same request follows

struct Header {
    uint32_t magic;
    uint16_t op;
    uint16_t flags;
    uint32_t seq;
    int32_t error;
    uint32_t body_size;
    uint32_t tail_size;
};
static_assert(sizeof(Header) == 24);

inline constexpr std::size_t kMaxInlineTail = kMaxMessage - sizeof(Header) - kMaxBody;

// --- bodies ---------------------------------------------------------------------------------

struct Empty {
    uint64_t reserved;  // keeps every body non-empty and 8-byte sized
};

enum class Role : uint32_t { control = 1, attach = 2 };

struct HelloReq {
    uint32_t role;        // Role
    uint16_t domid;       // attach only
    uint16_t acting_for;  // attach to dom0 only: 0, or the one guest it may act for
};
struct HelloRep {
    uint16_t domid;
    uint16_t privileged;
    uint32_t pad;
};

struct CreateReq {
    uint64_t ram_pages;  // tail: the name
};
struct DomainReq {
    uint16_t domid;
    uint16_t pad[3];
};
struct AliveRep {
    uint32_t alive;
    uint32_t pad;
};
struct ListRep {
    uint32_t count;  // tail: DomainEntry[count]
    uint32_t pad;
};
struct DomainEntry {
    uint16_t domid;
    uint8_t alive;
    uint8_t name_len;
    char name[kMaxDomainName];
    uint32_t mapped_pages;  // grant pages the domain's processes map now
    uint32_t shared_pages;  // pages of its live shares
    uint32_t bound_ports;   // event channels its processes have bound
};
struct TableRep {
    uint32_t entries;  // fds: the table memfd (entries * sizeof(grant_entry_v1_t) bytes)
    uint32_t pad;
};

struct UsageRep {
    uint32_t held;      // entries granted to the peer, not yet free (pinned ones included)
    uint32_t capacity;  // entries the caller's domain can grant at once
};

struct MapReq {
    uint16_t domid;
    uint8_t writable;
    uint8_t notify;  // kNotify* bits
    uint32_t count;  // tail: GrantRef[count]
    uint32_t clear_byte_at;
    uint32_t notify_port;
};
inline constexpr uint8_t kNotifyClearByte = 1;
inline constexpr uint8_t kNotifySendEvent = 2;

// One run of consecutive pages of one memfd, in mapping order. fd_index names the fd of
// this message that holds the pages.
struct Run {
    uint32_t fd_index;
    uint32_t pages;
    uint64_t page_offset;
};
struct MapRep {
    uint64_t map_id;  // grant maps: the id to unmap with
    uint32_t failed;  // on error: index of the failing element
    uint32_t runs;    // tail: Run[runs] (this message's share)
};
struct ForeignReq {
    uint16_t domid;
    uint8_t writable;
    uint8_t pad;
    uint32_t count;  // tail: uint64_t gfn[count]
};

struct IdReq {
    uint64_t id;
};
struct ShareReq {
    uint64_t pages;
    uint16_t peer;
    uint8_t writable;
    uint8_t notify;          // kNotify* bits: gntalloc's unmap notification
    uint32_t clear_byte_at;  // in the first page
    uint32_t notify_port;    // a port of the sharing domain
    uint32_t pad;
};
struct ShareRep {
    uint64_t share_id;  // tail: GrantRef[pages]; fds: the segment memfd (read-write)
};

struct BindUnboundReq {
    uint16_t remote;
    uint16_t pad[3];
};
struct BindInterdomainReq {
    uint16_t remote;
    uint16_t pad;
    uint32_t remote_port;
};
// evtchn_bind_unbound's reply, evtchn_unbind's request, evtchn_unbound.
struct PortMsg {
    uint32_t port;
    uint32_t pad;
};

// An abstract AF_UNIX address the kernel chose (autobind): its sun_path bytes, "\0" and five
// hex digits.
struct SocketName {
    uint32_t len;
    char path[12];
};
// Event channels (see client/event_channel.cpp). The handle's inbox is a datagram socket;
// every notification into it comes from an outbox the daemon made, and is attributed by
// the outbox's address alone. fds: the inbox, and the handle's own outbox into it.
struct EvtchnOpenRep {
    uint32_t queue_limit;  // datagrams the kernel queues on the inbox (net.unix.max_dgram_qlen)
    uint32_t pad;
    SocketName self;    // the address of the handle's own outbox
    SocketName daemon;  // the address of the daemon's wake-ups (it has sent a message)
};
// evtchn_bind_interdomain's reply and evtchn_bound. fds: the port's outbox (one datagram
// notifies the peer), and the peer's outbox into our inbox, held only so that its address
// (`peer`) cannot be freed and given to another socket while we map it to the port.
struct BoundMsg {
    uint32_t port;
    uint32_t pad;
    SocketName peer;
};

struct StoreReq {
    uint32_t tx;
    uint32_t path_len;  // tail: the path, then arg_len bytes
    uint32_t arg_len;   // value, token, or StorePermWire[arg_len / sizeof]
    uint32_t pad;
};
struct StorePermWire {
    uint16_t domid;
    uint8_t access;  // StoreAccess
    uint8_t pad;
};
struct TxReq {
    uint32_t tx;
    uint32_t commit;
};
struct TxRep {
    uint32_t tx;
    uint32_t pad;
};
// store_event: StoreReq with path and token in the tail. Replies of store_read and
// store_directory (names, each NUL-terminated) and store_get_perms (StorePermWire[]) use
// Empty bodies and carry their result in the tail.

template <class T>
inline constexpr bool kIsBody = std::is_trivially_copyable_v<T> && sizeof(T) <= kMaxBody &&
                                sizeof(T) % 8 == 0;
static_assert(kIsBody<Empty> && kIsBody<HelloReq> && kIsBody<HelloRep> && kIsBody<CreateReq> &&
              kIsBody<DomainReq> && kIsBody<AliveRep> && kIsBody<ListRep> && kIsBody<TableRep> &&
              kIsBody<MapReq> && kIsBody<MapRep> && kIsBody<ForeignReq> && kIsBody<IdReq> &&
              kIsBody<ShareReq> && kIsBody<ShareRep> && kIsBody<BindUnboundReq> &&
              kIsBody<BindInterdomainReq> && kIsBody<PortMsg> && kIsBody<EvtchnOpenRep> &&
              kIsBody<BoundMsg> && kIsBody<StoreReq> && kIsBody<TxReq> && kIsBody<TxRep>);
static_assert(sizeof(Run) == 16 && sizeof(StorePermWire) == 4 && sizeof(DomainEntry) == 80);

}  // namespace xenhsa::xen::sim::wire

#endif
