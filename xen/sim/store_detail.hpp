// Internals of the simulated xenstore (StoreTree): the persistent node tree, the
// operations on one tree version, and StoreTree::Impl. Private to xen/sim.
#ifndef XENHSA_XEN_SIM_STORE_DETAIL_HPP
#define XENHSA_XEN_SIM_STORE_DETAIL_HPP

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/xen/sim/store_tree.hpp>

namespace xenhsa::xen::sim::detail {

// --- the tree ----------------------------------------------------------------------------
// Nodes are immutable once shared: a change copies the path from the root down to the
// changed node (copy-on-write), so a snapshot is a copy of the root pointer.
struct Node;
using NodePtr = std::shared_ptr<const Node>;

struct Node {
    std::string value;
    PermList perms;    // never empty; perms[0] is the owner
    uint64_t gen = 0;  // generation of the last change (0 means "absent")
    std::map<std::string, NodePtr, std::less<>> children;
};

struct Tree {
    NodePtr root;
    std::map<DomId, uint32_t> owned;  // nodes owned per domain (the nodes quota)
};

Tree make_initial_tree();
const Node* find(const Tree& tree, std::string_view path);
uint64_t gen_at(const Tree& tree, std::string_view path);  // 0 when absent
// Applies `fn` to a private copy of the existing node at `path`, copying its ancestors.
void mutate(Tree& tree, std::string_view path, const std::function<void(Node&)>& fn);

// --- paths -------------------------------------------------------------------------------
bool valid_node_path(std::string_view path);
bool is_special_path(std::string_view path);  // @releaseDomain, @introduceDomain
std::vector<std::string_view> split_path(std::string_view path);  // "/" -> {}
std::string_view parent_of(std::string_view path);                // not for "/"
std::string_view base_of(std::string_view path);                  // not for "/"
std::string child_path(std::string_view parent, std::string_view name);
// xenstored is_child: `child` is `parent`, below it, or `parent` is "/".
bool is_child(std::string_view child, std::string_view parent);

// --- permissions -----------------------------------------------------------------------
inline constexpr unsigned kPermRead = 1;
inline constexpr unsigned kPermWrite = 2;
inline constexpr unsigned kPermOwner = 4;

bool is_privileged(DomId dom) noexcept;
unsigned perm_for(DomId dom, const PermList& perms) noexcept;

// --- operations on one tree version ---------------------------------------------------
// A change for the watch machinery, with the permissions needed to decide who may see it.
struct PendingEvent {
    std::string path;
    bool exact = false;  // only watches on exactly this path (rm of a descendant)
    PermList perms;
    std::optional<PermList> parent_perms;
    std::optional<PermList> old_perms;  // set_perms: readable before counts too
};

// The nodes a transaction touched, with their generation in its start snapshot.
struct AccessLog {
    const Tree* start = nullptr;
    std::map<std::string, uint64_t, std::less<>> seen;
    uint32_t limit = 0;  // 0: unlimited

    // Records every path or none (ENOSPC past the limit).
    Result<void> touch(const std::vector<std::string>& paths);
};

struct OpContext {
    DomId caller = 0;
    const StoreQuotas* quotas = nullptr;
    uint64_t* generation = nullptr;
    std::vector<PendingEvent>* events = nullptr;
    AccessLog* log = nullptr;  // inside a transaction
};

// Every operation validates its path, checks everything before changing the tree and so
// either fails without effect or succeeds completely.
Result<std::string> op_read(const Tree& tree, OpContext& ctx, std::string_view path);
Result<std::vector<std::string>> op_directory(const Tree& tree, OpContext& ctx,
                                              std::string_view path);
Result<PermList> op_get_perms(const Tree& tree, OpContext& ctx, std::string_view path);
Result<void> op_write(Tree& tree, OpContext& ctx, std::string_view path, std::string_view value);
Result<void> op_mkdir(Tree& tree, OpContext& ctx, std::string_view path);
Result<void> op_rm(Tree& tree, OpContext& ctx, std::string_view path);
Result<void> op_set_perms(Tree& tree, OpContext& ctx, std::string_view path, const PermList& perms);
// set_perms checks shared with the special nodes: the list itself (EINVAL, ENOSPC), then,
// once the node is known, that an unprivileged caller keeps the owner (EPERM).
Result<void> check_perm_list(DomId caller, const StoreQuotas& quotas, const PermList& perms);
Result<void> check_owner_kept(DomId caller, const PermList& old, const PermList& perms);

// release_domain's cleanup: nodes owned by `dom` go to dom0, its grants disappear.
void forget_domain(Tree& tree, DomId dom);

// A logged change of a transaction, replayed on commit.
struct Op {
    enum class Kind : uint8_t { write, mkdir, rm, set_perms };
    Kind kind = Kind::write;
    std::string path;
    std::string value;
    PermList perms;
};
Result<void> apply_op(Tree& tree, OpContext& ctx, const Op& op);

}  // namespace xenhsa::xen::sim::detail

namespace xenhsa::xen::sim {

struct StoreTree::Impl {
    struct Watch {
        std::string path;
        std::string token;
    };
    struct Transaction {
        detail::Tree start;
        detail::Tree view;  // start + own changes
        detail::AccessLog log;
        std::vector<detail::Op> ops;
    };
    struct Connection {
        DomId dom = 0;
        std::vector<Watch> watches;
        std::deque<WatchEvent> queue;
        uint64_t dropped = 0;
        std::map<TxId, Transaction> transactions;
        TxId next_tx = 1;
    };

    StoreQuotas quotas;
    detail::Tree tree;
    uint64_t generation = 0;
    std::map<ConnId, Connection> conns;
    ConnId next_conn = 1;
    std::map<std::string, PermList, std::less<>> specials;  // perms of @ nodes
    std::set<DomId> introduced;

    struct Target {
        Connection* conn = nullptr;
        Transaction* tx = nullptr;  // null outside a transaction
        detail::Tree* tree = nullptr;
    };

    Connection* conn(ConnId id);
    const Connection* conn(ConnId id) const;
    uint32_t watches_of(DomId dom) const;
    uint32_t transactions_of(DomId dom) const;

    // EBADF for an unknown connection, ENOENT for a transaction it does not own.
    Result<Target> target(ConnId id, TxId tx);
    detail::OpContext context(const Target& t, std::vector<detail::PendingEvent>& events);
    // A live-tree context for `caller` (the toolstack acts as dom0).
    detail::OpContext live_context(DomId caller, std::vector<detail::PendingEvent>& events);
    // Runs a change outside or inside a transaction; delivers its events if live.
    Result<void> change(ConnId id, TxId tx, detail::Op op);
    Result<void> commit(Connection& c, Transaction& t);

    // store_watches.cpp
    void deliver(const std::vector<detail::PendingEvent>& events);
    void enqueue(Connection& c, std::string_view path, std::string_view token, bool special);
    void deliver_special(std::string_view name);
    void purge_unwatched(Connection& c, const Watch& removed);
    void forget_specials(DomId dom);
};

}  // namespace xenhsa::xen::sim

#endif
