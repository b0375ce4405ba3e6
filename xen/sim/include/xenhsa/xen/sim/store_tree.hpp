// The simulated xenstore's data model: an in-process tree with xenstored semantics
// (docs/misc/xenstore.txt and the C xenstored in tools/xenstored). No IPC here: the
// xenhsa-sim store daemon puts one StoreTree behind a Unix socket and maps each client
// to a connection.
//
// Callers are connections: open_connection(domid) hands out a ConnId and every call names
// one, so each call carries the caller's domain (dom0 is privileged: it bypasses
// permissions and quotas) and watches, event queues and transactions belong to it.
// Errors are values (errno codes in std::generic_category()); nothing throws except
// std::bad_alloc. Not thread-safe: like xenstored, the owner serialises all calls.
//
// Semantics chosen where Xen leaves room (each one follows the C xenstored unless noted):
// * Paths: absolute only (relative paths are a wire-level convenience of the daemon);
//   [A-Za-z0-9-/_@], no "//", no trailing "/" except "/", at most 3072 bytes -> EINVAL.
//   "@releaseDomain" / "@introduceDomain" are accepted by watch/unwatch and, as in
//   xenstored, by get_perms/set_perms (to grant a driver domain their events); other
//   "@..." names are EINVAL.
// * Permissions: xenstored's perm_for_conn. The owner (first entry) and dom0 get
//   everything; otherwise the first later entry naming the caller decides, else the
//   first entry's access. A missing node whose nearest existing ancestor does not grant
//   the needed access reports EACCES, not ENOENT (errno_from_parents: no probing).
// * Creation (write/mkdir): needs write access to the nearest existing ancestor; every
//   new node, including missing parents, copies its parent's permission list, and an
//   unprivileged creator becomes the owner (xenstored construct_node: "unpriv domains
//   own what they create"); dom0's new nodes keep the inherited owner.
// * rm: recursive. A missing node whose parent exists is success, as in xenstored's
//   do_rm ("Didn't exist already? Fine, if parent exists"); ENOENT only when the parent
//   is missing too. rm "/" -> EINVAL.
// * set_perms: owner or dom0 only (others EACCES); an unprivileged owner may not change
//   the owner (EPERM). An empty list is EINVAL.
// * Quotas (unprivileged domains only, xenstored's errno values): nodes owned -> ENOSPC,
//   value size -> ENOSPC (xenstored's node-size quota; we count the value only), perms per
//   node -> ENOSPC, open transactions -> ENOSPC, watches -> E2BIG. Exact limits (xenstored
//   lets the count reach limit+1 for watches and transactions). For everyone, path +
//   value beyond XENSTORE_PAYLOAD_MAX (4096) -> E2BIG (the wire limit).
// * Transactions: a snapshot at start (O(1): the tree is persistent/copy-on-write) plus
//   the transaction's own writes. Every node read or written in the transaction
//   (including parents whose child list changed and every node an rm removes) is
//   remembered with its generation in the start snapshot; commit fails with EAGAIN if any
//   of them has another generation (or existence) in the live tree (per-node generation
//   counters, bumped on every change; a parent's counter moves when its children change).
//   A committed transaction is replayed on a copy of the live tree, re-checking quotas,
//   and installed atomically; watches fire only then. transaction_end always ends the
//   transaction (also on EAGAIN). A transaction may touch at most max_transaction_nodes
//   nodes and log as many changes (ENOSPC), bounding its memory (XSA-326).
// * Watches: fire once at registration with the watched path (unfiltered); then for a
//   change of the watched node or a descendant, with the changed path. rm reports the
//   removed root to watches on it and its ancestors, and each removed descendant that
//   existed to watches exactly on it (so the event path is the watched path); watches on
//   never-created paths below a removed node stay silent (xenstored delnode_sub).
//   A watcher gets a node's event only if it may read the node or its parent (for
//   set_perms also with the old permissions): xenstored watch_permitted. Special events
//   go only to watchers that may read the special node (dom0 unless granted by
//   set_perms on it, as xenstored does). An event identical to one still queued is dropped
//   (xenstored send_event), except for special events.
// * Event queues are bounded per connection (StoreQuotas::max_queued_events, also for
//   dom0): when full the oldest event is dropped and counted (dropped_events()). Queued
//   events of a removed watch are purged by unwatch (what XS_UNWATCH_FILTER gives
//   libxenstore users), unless another watch of the connection still matches them.
// * release_domain: removes /local/domain/<id>, drops the domain's connections' watches,
//   transactions and queued events (the connections stay open until closed), hands the
//   domain's remaining nodes to dom0 and removes it from other nodes' permission lists
//   (a reused domid inherits nothing: XSA-322), then fires @releaseDomain.
#ifndef XENHSA_XEN_SIM_STORE_TREE_HPP
#define XENHSA_XEN_SIM_STORE_TREE_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/xen/store.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen::sim {

using ConnId = uint32_t;
using PermList = std::vector<StorePerm>;

inline constexpr std::string_view kReleaseDomain = "@releaseDomain";
inline constexpr std::string_view kIntroduceDomain = "@introduceDomain";
inline constexpr std::size_t kStoreMaxPath = 3072;     // XENSTORE_ABS_PATH_MAX
inline constexpr std::size_t kStoreMaxPayload = 4096;  // XENSTORE_PAYLOAD_MAX

// Per unprivileged domain; defaults are xenstored's.
struct StoreQuotas {
    uint32_t max_nodes = 1000;              // nodes owned (-E / quota "nodes")
    std::size_t max_value_size = 2048;      // bytes per value (-S / "node-size")
    uint32_t max_watches = 128;             // (-W / "watches")
    uint32_t max_transactions = 10;         // open at once (-t / "transactions")
    uint32_t max_perms = 5;                 // entries per permission list (-A)
    uint32_t max_transaction_nodes = 1024;  // nodes touched per transaction
    std::size_t max_queued_events = 1024;   // per connection, for every domain
};

class StoreTree {
public:
    explicit StoreTree(StoreQuotas quotas = {});
    ~StoreTree();
    StoreTree(StoreTree&&) noexcept;  // a moved-from StoreTree may only be destroyed
    StoreTree& operator=(StoreTree&&) noexcept;
    StoreTree(const StoreTree&) = delete;
    StoreTree& operator=(const StoreTree&) = delete;

    // --- connections -------------------------------------------------------------------
    // EINVAL for a reserved domid (>= DOMID_FIRST_RESERVED). Unknown ConnIds are EBADF
    // everywhere below.
    Result<ConnId> open_connection(DomId dom);
    // Removes the connection's watches and aborts its transactions.
    Result<void> close_connection(ConnId conn);

    // --- nodes (tx = kNoTx outside a transaction; a foreign/unknown tx is ENOENT) -------
    Result<std::string> read(ConnId conn, std::string_view path, TxId tx = kNoTx);
    Result<void> write(ConnId conn, std::string_view path, std::string_view value, TxId tx = kNoTx);
    Result<void> mkdir(ConnId conn, std::string_view path, TxId tx = kNoTx);
    Result<void> rm(ConnId conn, std::string_view path, TxId tx = kNoTx);
    // Child names, sorted.
    Result<std::vector<std::string>> directory(ConnId conn, std::string_view path, TxId tx = kNoTx);
    Result<PermList> get_perms(ConnId conn, std::string_view path, TxId tx = kNoTx);
    Result<void> set_perms(ConnId conn, std::string_view path, const PermList& perms,
                           TxId tx = kNoTx);

    // --- transactions ----------------------------------------------------------------
    Result<TxId> transaction_start(ConnId conn);  // nonzero
    Result<void> transaction_end(ConnId conn, TxId tx, bool commit);

    // --- watches -----------------------------------------------------------------------
    Result<void> watch(ConnId conn, std::string_view path, std::string_view token);
    Result<void> unwatch(ConnId conn, std::string_view path, std::string_view token);
    // nullopt when the queue is empty.
    Result<std::optional<WatchEvent>> next_event(ConnId conn);
    Result<std::size_t> pending_events(ConnId conn) const;
    Result<uint64_t> dropped_events(ConnId conn) const;

    // --- toolstack / hypervisor side (acts as dom0) ---------------------------------------
    // Creates /local/domain/<id> owned by <id> ({id, none}) and fires @introduceDomain.
    // EINVAL for dom0 or a reserved domid, EEXIST if already introduced.
    Result<void> introduce_domain(DomId dom);
    // See the header comment. ENOENT if the domain was not introduced.
    Result<void> release_domain(DomId dom);
    [[nodiscard]] bool is_domain_introduced(DomId dom) const noexcept;
    // Fires "@releaseDomain" or "@introduceDomain"; EINVAL for anything else.
    Result<void> fire_special(std::string_view name);

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace xenhsa::xen::sim

#endif
