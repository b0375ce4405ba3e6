// StoreTree: connections, transactions and the toolstack helpers around the tree
// operations of store_ops.cpp. Semantics are documented in store_tree.hpp.
#include <algorithm>
#include <string>
#include <xenhsa/xen/sim/store_tree.hpp>

#include "store_detail.hpp"

namespace xenhsa::xen::sim {

namespace {

using boost::outcome_v2::success;
using detail::Op;

std::string home_of(DomId dom) { return "/local/domain/" + std::to_string(dom); }

}  // namespace

// --- Impl --------------------------------------------------------------------------------

StoreTree::Impl::Connection* StoreTree::Impl::conn(ConnId id) {
    auto it = conns.find(id);
    return it == conns.end() ? nullptr : &it->second;
}

const StoreTree::Impl::Connection* StoreTree::Impl::conn(ConnId id) const {
    auto it = conns.find(id);
    return it == conns.end() ? nullptr : &it->second;
}

uint32_t StoreTree::Impl::watches_of(DomId dom) const {
    std::size_t n = 0;
    for (const auto& [id, c] : conns) n += c.dom == dom ? c.watches.size() : 0;
    return static_cast<uint32_t>(n);
}

uint32_t StoreTree::Impl::transactions_of(DomId dom) const {
    std::size_t n = 0;
    for (const auto& [id, c] : conns) n += c.dom == dom ? c.transactions.size() : 0;
    return static_cast<uint32_t>(n);
}

Result<StoreTree::Impl::Target> StoreTree::Impl::target(ConnId id, TxId tx) {
    Connection* c = conn(id);
    if (c == nullptr) return errc(std::errc::bad_file_descriptor);
    if (tx == kNoTx) return Target{c, nullptr, &tree};
    auto it = c->transactions.find(tx);
    if (it == c->transactions.end()) return errc(std::errc::no_such_file_or_directory);
    return Target{c, &it->second, &it->second.view};
}

detail::OpContext StoreTree::Impl::live_context(DomId caller,
                                                std::vector<detail::PendingEvent>& events) {
    detail::OpContext ctx;
    ctx.caller = caller;
    ctx.quotas = &quotas;
    ctx.generation = &generation;
    ctx.events = &events;
    return ctx;
}

detail::OpContext StoreTree::Impl::context(const Target& t,
                                           std::vector<detail::PendingEvent>& events) {
    detail::OpContext ctx = live_context(t.conn->dom, events);
    ctx.log = t.tx != nullptr ? &t.tx->log : nullptr;
    return ctx;
}

Result<void> StoreTree::Impl::change(ConnId id, TxId tx, Op op) {
    auto t = target(id, tx);
    if (!t) return t.error();
    std::vector<detail::PendingEvent> events;
    detail::OpContext ctx = context(t.value(), events);
    Transaction* trans = t.value().tx;
    if (trans == nullptr) {
        auto r = detail::apply_op(tree, ctx, op);
        if (r) deliver(events);
        return r;
    }
    // Inside a transaction: change the view, log the change, keep the events for later.
    if (!detail::is_privileged(ctx.caller) && trans->ops.size() >= quotas.max_transaction_nodes) {
        return errc(std::errc::no_space_on_device);
    }
    if (auto r = detail::apply_op(trans->view, ctx, op); !r) return r;
    trans->ops.push_back(std::move(op));
    return success();
}

Result<void> StoreTree::Impl::commit(Connection& c, Transaction& t) {
    for (const auto& [path, gen] : t.log.seen) {
        if (detail::gen_at(tree, path) != gen)
            return errc(std::errc::resource_unavailable_try_again);
    }
    // Replay on a copy of the live tree (re-checking quotas), then install it atomically.
    detail::Tree work = tree;
    std::vector<detail::PendingEvent> events;
    detail::OpContext ctx = live_context(c.dom, events);
    for (const Op& op : t.ops) {
        if (auto r = detail::apply_op(work, ctx, op); !r) return r;
    }
    tree = std::move(work);
    deliver(events);
    return success();
}

void StoreTree::Impl::forget_specials(DomId dom) {
    for (auto& [name, perms] : specials) {
        if (perms.front().domid == dom) perms.front().domid = 0;
        perms.erase(std::remove_if(perms.begin() + 1, perms.end(),
                                   [dom](const StorePerm& p) { return p.domid == dom; }),
                    perms.end());
    }
}

// --- StoreTree -----------------------------------------------------------------------------

StoreTree::StoreTree(StoreQuotas quotas) : impl_(std::make_unique<Impl>()) {
    impl_->quotas = quotas;
    impl_->tree = detail::make_initial_tree();
    const PermList dom0_only{StorePerm{0, StoreAccess::none}};
    impl_->specials.emplace(std::string(kReleaseDomain), dom0_only);
    impl_->specials.emplace(std::string(kIntroduceDomain), dom0_only);
}

StoreTree::~StoreTree() = default;
StoreTree::StoreTree(StoreTree&&) noexcept = default;
StoreTree& StoreTree::operator=(StoreTree&&) noexcept = default;

Result<ConnId> StoreTree::open_connection(DomId dom) {
    if (dom >= kDomIdFirstReserved) return errc(std::errc::invalid_argument);
    while (impl_->next_conn == 0 || impl_->conns.contains(impl_->next_conn)) ++impl_->next_conn;
    const ConnId id = impl_->next_conn++;
    impl_->conns[id].dom = dom;
    return id;
}

Result<void> StoreTree::close_connection(ConnId conn) {
    if (impl_->conns.erase(conn) == 0) return errc(std::errc::bad_file_descriptor);
    return success();
}

Result<std::string> StoreTree::read(ConnId conn, std::string_view path, TxId tx) {
    auto t = impl_->target(conn, tx);
    if (!t) return t.error();
    std::vector<detail::PendingEvent> events;
    auto ctx = impl_->context(t.value(), events);
    return detail::op_read(*t.value().tree, ctx, path);
}

Result<std::vector<std::string>> StoreTree::directory(ConnId conn, std::string_view path, TxId tx) {
    auto t = impl_->target(conn, tx);
    if (!t) return t.error();
    std::vector<detail::PendingEvent> events;
    auto ctx = impl_->context(t.value(), events);
    return detail::op_directory(*t.value().tree, ctx, path);
}

Result<PermList> StoreTree::get_perms(ConnId conn, std::string_view path, TxId tx) {
    auto t = impl_->target(conn, tx);
    if (!t) return t.error();
    if (auto it = impl_->specials.find(path); it != impl_->specials.end()) {
        // Special nodes live outside the tree and outside transactions.
        if ((detail::perm_for(t.value().conn->dom, it->second) & detail::kPermRead) == 0) {
            return errc(std::errc::permission_denied);
        }
        return it->second;
    }
    std::vector<detail::PendingEvent> events;
    auto ctx = impl_->context(t.value(), events);
    return detail::op_get_perms(*t.value().tree, ctx, path);
}

Result<void> StoreTree::write(ConnId conn, std::string_view path, std::string_view value, TxId tx) {
    return impl_->change(conn, tx, Op{Op::Kind::write, std::string(path), std::string(value), {}});
}

Result<void> StoreTree::mkdir(ConnId conn, std::string_view path, TxId tx) {
    return impl_->change(conn, tx, Op{Op::Kind::mkdir, std::string(path), {}, {}});
}

Result<void> StoreTree::rm(ConnId conn, std::string_view path, TxId tx) {
    return impl_->change(conn, tx, Op{Op::Kind::rm, std::string(path), {}, {}});
}

Result<void> StoreTree::set_perms(ConnId conn, std::string_view path, const PermList& perms,
                                  TxId tx) {
    auto it = impl_->specials.find(path);
    if (it == impl_->specials.end()) {
        return impl_->change(conn, tx, Op{Op::Kind::set_perms, std::string(path), {}, perms});
    }
    auto t = impl_->target(conn, tx);
    if (!t) return t.error();
    const DomId caller = t.value().conn->dom;
    if (auto r = detail::check_perm_list(caller, impl_->quotas, perms); !r) return r;
    constexpr unsigned kNeed = detail::kPermWrite | detail::kPermOwner;
    if ((detail::perm_for(caller, it->second) & kNeed) != kNeed) {
        return errc(std::errc::permission_denied);
    }
    if (auto r = detail::check_owner_kept(caller, it->second, perms); !r) return r;
    it->second = perms;
    return success();
}

Result<TxId> StoreTree::transaction_start(ConnId conn) {
    Impl::Connection* c = impl_->conn(conn);
    if (c == nullptr) return errc(std::errc::bad_file_descriptor);
    const bool priv = detail::is_privileged(c->dom);
    if (!priv && impl_->transactions_of(c->dom) >= impl_->quotas.max_transactions) {
        return errc(std::errc::no_space_on_device);
    }
    while (c->next_tx == kNoTx || c->transactions.contains(c->next_tx)) ++c->next_tx;
    const TxId id = c->next_tx++;
    Impl::Transaction& t = c->transactions[id];
    t.start = impl_->tree;
    t.view = impl_->tree;
    t.log.start = &t.start;  // std::map nodes do not move
    t.log.limit = priv ? 0 : impl_->quotas.max_transaction_nodes;
    return id;
}

Result<void> StoreTree::transaction_end(ConnId conn, TxId tx, bool commit) {
    Impl::Connection* c = impl_->conn(conn);
    if (c == nullptr) return errc(std::errc::bad_file_descriptor);
    auto it = c->transactions.find(tx);
    if (it == c->transactions.end()) return errc(std::errc::no_such_file_or_directory);
    auto ended = c->transactions.extract(it);  // the transaction ends whatever happens
    if (!commit) return success();
    return impl_->commit(*c, ended.mapped());
}

Result<void> StoreTree::introduce_domain(DomId dom) {
    if (dom == 0 || dom >= kDomIdFirstReserved) return errc(std::errc::invalid_argument);
    if (impl_->introduced.contains(dom)) return errc(std::errc::file_exists);
    std::vector<detail::PendingEvent> events;
    detail::OpContext ctx = impl_->live_context(0, events);
    const std::string home = home_of(dom);
    if (auto r = detail::op_mkdir(impl_->tree, ctx, home); !r) return r;
    const PermList perms{StorePerm{dom, StoreAccess::none}};
    if (auto r = detail::op_set_perms(impl_->tree, ctx, home, perms); !r) return r;
    impl_->introduced.insert(dom);
    impl_->deliver(events);
    impl_->deliver_special(kIntroduceDomain);
    return success();
}

Result<void> StoreTree::release_domain(DomId dom) {
    if (impl_->introduced.erase(dom) == 0) return errc(std::errc::no_such_file_or_directory);
    std::vector<detail::PendingEvent> events;
    detail::OpContext ctx = impl_->live_context(0, events);
    // A missing home (or /local/domain) is fine: there is nothing left to remove.
    (void)detail::op_rm(impl_->tree, ctx, home_of(dom));
    detail::forget_domain(impl_->tree, dom);
    impl_->forget_specials(dom);
    for (auto& [id, c] : impl_->conns) {
        if (c.dom != dom) continue;
        c.watches.clear();
        c.transactions.clear();
        c.queue.clear();
    }
    impl_->deliver(events);
    impl_->deliver_special(kReleaseDomain);
    return success();
}

bool StoreTree::is_domain_introduced(DomId dom) const noexcept {
    return impl_->introduced.contains(dom);
}

Result<void> StoreTree::fire_special(std::string_view name) {
    if (!detail::is_special_path(name)) return errc(std::errc::invalid_argument);
    impl_->deliver_special(name);
    return success();
}

}  // namespace xenhsa::xen::sim
