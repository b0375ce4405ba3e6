// The xenstore operations on one tree version (the live tree or a transaction's view),
// with xenstored's permission, creation, removal and quota rules.
#include "store_detail.hpp"

namespace xenhsa::xen::sim::detail {

namespace {

using boost::outcome_v2::success;

bool is(const std::error_code& ec, std::errc e) { return ec == std::make_error_code(e); }

Result<void> touch(OpContext& ctx, const std::vector<std::string>& paths) {
    if (ctx.log == nullptr) return success();
    return ctx.log->touch(paths);
}

// xenstored get_node(): EACCES without the access; for a missing node ENOENT only if the
// nearest existing ancestor grants some of it (errno_from_parents), else EACCES.
Result<const Node*> get_node(const Tree& tree, DomId caller, std::string_view path, unsigned need) {
    if (const Node* node = find(tree, path)) {
        if ((perm_for(caller, node->perms) & need) != need)
            return errc(std::errc::permission_denied);
        return node;
    }
    const Node* ancestor = nullptr;
    for (std::string_view p = path; ancestor == nullptr;) {
        p = parent_of(p);
        ancestor = find(tree, p);  // "/" always exists
    }
    if ((perm_for(caller, ancestor->perms) & need) != 0) {
        return errc(std::errc::no_such_file_or_directory);
    }
    return errc(std::errc::permission_denied);
}

void emit(OpContext& ctx, std::string_view path, bool exact, const PermList& perms,
          const PermList* parent_perms, const PermList* old_perms = nullptr) {
    PendingEvent ev;
    ev.path = std::string(path);
    ev.exact = exact;
    ev.perms = perms;
    if (parent_perms != nullptr) ev.parent_perms = *parent_perms;
    if (old_perms != nullptr) ev.old_perms = *old_perms;
    ctx.events->push_back(std::move(ev));
}

// The event of a changed (still existing) node.
void emit_changed(const Tree& tree, OpContext& ctx, std::string_view path,
                  const PermList* old_perms = nullptr) {
    const Node* node = find(tree, path);
    const Node* parent = path == "/" ? nullptr : find(tree, parent_of(path));
    emit(ctx, path, false, node->perms, parent ? &parent->perms : nullptr, old_perms);
}

// xenstored construct_node + create_node: creates `path` and its missing parents. Each
// new node copies its parent's permissions; an unprivileged creator owns all of them.
Result<void> create(Tree& tree, OpContext& ctx, std::string_view path, std::string_view value) {
    std::vector<std::string> missing;  // missing[0] = path, then its missing parents
    std::string_view existing = path;
    const Node* ancestor = nullptr;
    while (ancestor == nullptr) {
        missing.emplace_back(existing);
        existing = parent_of(existing);
        ancestor = find(tree, existing);
    }

    const bool priv = is_privileged(ctx.caller);
    const auto count = static_cast<uint32_t>(missing.size());
    if (!priv) {
        auto it = tree.owned.find(ctx.caller);
        const uint32_t owned = it == tree.owned.end() ? 0 : it->second;
        if (owned + count > ctx.quotas->max_nodes) return errc(std::errc::no_space_on_device);
    }
    std::vector<std::string> touched = missing;
    touched.emplace_back(existing);
    if (auto r = touch(ctx, touched); !r) return r;

    PermList perms = ancestor->perms;
    if (!priv) perms.front().domid = ctx.caller;
    NodePtr chain;
    for (std::size_t i = 0; i < missing.size(); ++i) {
        auto node = std::make_shared<Node>();
        node->perms = perms;
        node->gen = ++*ctx.generation;
        if (i == 0) node->value = std::string(value);
        if (chain) node->children.emplace(std::string(base_of(missing[i - 1])), std::move(chain));
        chain = std::move(node);
    }
    const std::string top(base_of(missing.back()));
    mutate(tree, existing, [&](Node& parent) {
        parent.children.emplace(top, std::move(chain));
        parent.gen = ++*ctx.generation;
    });
    tree.owned[perms.front().domid] += count;
    emit_changed(tree, ctx, path);
    return success();
}

// Post-order, as xenstored's delnode_sub: descendants first, then `root` itself.
void collect_removed(const Node& node, const Node& parent, std::string path, bool is_root,
                     OpContext& ctx, std::vector<std::string>& paths, std::vector<DomId>& owners) {
    for (const auto& [name, child] : node.children) {
        collect_removed(*child, node, child_path(path, name), false, ctx, paths, owners);
    }
    owners.push_back(node.perms.front().domid);
    emit(ctx, path, !is_root, node.perms, &parent.perms);
    paths.push_back(std::move(path));
}

}  // namespace

Result<void> AccessLog::touch(const std::vector<std::string>& paths) {
    if (limit != 0) {
        std::size_t fresh = 0;
        for (const auto& p : paths) fresh += seen.contains(p) ? 0 : 1;
        if (seen.size() + fresh > limit) return errc(std::errc::no_space_on_device);
    }
    for (const auto& p : paths) {
        if (!seen.contains(p)) seen.emplace(p, gen_at(*start, p));
    }
    return success();
}

Result<std::string> op_read(const Tree& tree, OpContext& ctx, std::string_view path) {
    if (!valid_node_path(path)) return errc(std::errc::invalid_argument);
    if (auto r = touch(ctx, {std::string(path)}); !r) return r.error();
    auto node = get_node(tree, ctx.caller, path, kPermRead);
    if (!node) return node.error();
    return node.value()->value;
}

Result<std::vector<std::string>> op_directory(const Tree& tree, OpContext& ctx,
                                              std::string_view path) {
    if (!valid_node_path(path)) return errc(std::errc::invalid_argument);
    if (auto r = touch(ctx, {std::string(path)}); !r) return r.error();
    auto node = get_node(tree, ctx.caller, path, kPermRead);
    if (!node) return node.error();
    std::vector<std::string> names;
    names.reserve(node.value()->children.size());
    for (const auto& entry : node.value()->children) names.push_back(entry.first);
    return names;  // std::map order: sorted
}

Result<PermList> op_get_perms(const Tree& tree, OpContext& ctx, std::string_view path) {
    if (!valid_node_path(path)) return errc(std::errc::invalid_argument);
    if (auto r = touch(ctx, {std::string(path)}); !r) return r.error();
    auto node = get_node(tree, ctx.caller, path, kPermRead);
    if (!node) return node.error();
    return node.value()->perms;
}

Result<void> op_write(Tree& tree, OpContext& ctx, std::string_view path, std::string_view value) {
    if (!valid_node_path(path)) return errc(std::errc::invalid_argument);
    if (path.size() + 1 + value.size() > kStoreMaxPayload) {
        return errc(std::errc::argument_list_too_long);  // E2BIG
    }
    if (!is_privileged(ctx.caller) && value.size() > ctx.quotas->max_value_size) {
        return errc(std::errc::no_space_on_device);
    }
    auto node = get_node(tree, ctx.caller, path, kPermWrite);
    if (!node) {
        if (!is(node.error(), std::errc::no_such_file_or_directory)) return node.error();
        return create(tree, ctx, path, value);
    }
    if (auto r = touch(ctx, {std::string(path)}); !r) return r;
    mutate(tree, path, [&](Node& n) {
        n.value = std::string(value);
        n.gen = ++*ctx.generation;
    });
    emit_changed(tree, ctx, path);
    return success();
}

Result<void> op_mkdir(Tree& tree, OpContext& ctx, std::string_view path) {
    if (!valid_node_path(path)) return errc(std::errc::invalid_argument);
    auto node = get_node(tree, ctx.caller, path, kPermWrite);
    if (node) return touch(ctx, {std::string(path)});  // exists: nothing changes
    if (!is(node.error(), std::errc::no_such_file_or_directory)) return node.error();
    return create(tree, ctx, path, {});
}

Result<void> op_rm(Tree& tree, OpContext& ctx, std::string_view path) {
    if (!valid_node_path(path)) return errc(std::errc::invalid_argument);
    auto node = get_node(tree, ctx.caller, path, kPermWrite);
    if (!node) {
        if (!is(node.error(), std::errc::no_such_file_or_directory)) return node.error();
        // Missing already: fine if the parent exists (xenstored do_rm).
        const std::string parent(parent_of(path));
        if (auto r = touch(ctx, {std::string(path), parent}); !r) return r;
        if (find(tree, parent) == nullptr) return errc(std::errc::no_such_file_or_directory);
        return success();
    }
    if (path == "/") return errc(std::errc::invalid_argument);

    const std::string parent_path(parent_of(path));
    const Node* parent = find(tree, parent_path);
    std::vector<std::string> paths;
    std::vector<DomId> owners;
    std::vector<PendingEvent> events;
    OpContext collect = ctx;
    collect.events = &events;
    collect_removed(*node.value(), *parent, std::string(path), true, collect, paths, owners);
    paths.push_back(parent_path);
    if (auto r = touch(ctx, paths); !r) return r;

    for (DomId owner : owners) {
        auto it = tree.owned.find(owner);
        if (it != tree.owned.end() && --it->second == 0) tree.owned.erase(it);
    }
    const std::string base(base_of(path));
    mutate(tree, parent_path, [&](Node& p) {
        p.children.erase(base);
        p.gen = ++*ctx.generation;
    });
    for (auto& ev : events) ctx.events->push_back(std::move(ev));
    return success();
}

Result<void> op_set_perms(Tree& tree, OpContext& ctx, std::string_view path,
                          const PermList& perms) {
    if (!valid_node_path(path)) return errc(std::errc::invalid_argument);
    if (auto r = check_perm_list(ctx.caller, *ctx.quotas, perms); !r) return r;
    // The owner or dom0 only: kPermOwner never comes from a grant.
    auto node = get_node(tree, ctx.caller, path, kPermWrite | kPermOwner);
    if (!node) return node.error();
    const PermList old = node.value()->perms;
    if (auto r = check_owner_kept(ctx.caller, old, perms); !r) return r;
    if (auto r = touch(ctx, {std::string(path)}); !r) return r;

    if (old.front().domid != perms.front().domid) {
        auto it = tree.owned.find(old.front().domid);
        if (it != tree.owned.end() && --it->second == 0) tree.owned.erase(it);
        ++tree.owned[perms.front().domid];
    }
    mutate(tree, path, [&](Node& n) {
        n.perms = perms;
        n.gen = ++*ctx.generation;
    });
    emit_changed(tree, ctx, path, &old);
    return success();
}

Result<void> apply_op(Tree& tree, OpContext& ctx, const Op& op) {
    switch (op.kind) {
        case Op::Kind::write:
            return op_write(tree, ctx, op.path, op.value);
        case Op::Kind::mkdir:
            return op_mkdir(tree, ctx, op.path);
        case Op::Kind::rm:
            return op_rm(tree, ctx, op.path);
        case Op::Kind::set_perms:
            return op_set_perms(tree, ctx, op.path, op.perms);
    }
    return errc(std::errc::invalid_argument);
}

}  // namespace xenhsa::xen::sim::detail
