// The simulated xenstore's persistent tree, path syntax and permission rules.
#include <algorithm>
#include <cassert>
#include <span>

#include "store_detail.hpp"

namespace xenhsa::xen::sim::detail {

namespace {

bool valid_char(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '/' || c == '_' || c == '@';
}

unsigned access_bits(StoreAccess a) noexcept {
    switch (a) {
        case StoreAccess::read:
            return kPermRead;
        case StoreAccess::write:
            return kPermWrite;
        case StoreAccess::both:
            return kPermRead | kPermWrite;
        case StoreAccess::none:
            break;
    }
    return 0;
}

NodePtr mutate_rec(const NodePtr& node, std::span<const std::string_view> comps,
                   const std::function<void(Node&)>& fn) {
    auto copy = std::make_shared<Node>(*node);
    if (comps.empty()) {
        fn(*copy);
    } else {
        auto it = copy->children.find(comps.front());
        assert(it != copy->children.end() && "mutate() needs an existing node");
        it->second = mutate_rec(it->second, comps.subspan(1), fn);
    }
    return copy;
}

void count_owner(std::map<DomId, uint32_t>& owned, DomId dom, int delta) {
    auto& n = owned[dom];
    n = static_cast<uint32_t>(static_cast<int64_t>(n) + delta);
    if (n == 0) owned.erase(dom);
}

// Copies only the nodes that mention `dom`, and their ancestors.
NodePtr forget_rec(const NodePtr& node, DomId dom, std::map<DomId, uint32_t>& owned) {
    std::shared_ptr<Node> copy;
    auto own = [&]() -> Node& {
        if (!copy) copy = std::make_shared<Node>(*node);
        return *copy;
    };
    const auto mentions = [dom](const StorePerm& p) { return p.domid == dom; };
    if (std::any_of(node->perms.begin(), node->perms.end(), mentions)) {
        Node& n = own();
        if (n.perms.front().domid == dom) {
            n.perms.front().domid = 0;
            count_owner(owned, dom, -1);
            count_owner(owned, 0, +1);
        }
        n.perms.erase(std::remove_if(n.perms.begin() + 1, n.perms.end(), mentions), n.perms.end());
    }
    for (const auto& [name, child] : node->children) {
        NodePtr changed = forget_rec(child, dom, owned);
        if (changed != child) own().children.find(name)->second = std::move(changed);
    }
    return copy ? NodePtr(std::move(copy)) : node;
}

}  // namespace

// --- the tree ----------------------------------------------------------------------------

Tree make_initial_tree() {
    auto root = std::make_shared<Node>();
    root->perms = {StorePerm{0, StoreAccess::none}};
    root->gen = 1;
    Tree tree;
    tree.root = std::move(root);
    tree.owned[0] = 1;
    return tree;
}

const Node* find(const Tree& tree, std::string_view path) {
    const Node* node = tree.root.get();
    for (std::string_view comp : split_path(path)) {
        auto it = node->children.find(comp);
        if (it == node->children.end()) return nullptr;
        node = it->second.get();
    }
    return node;
}

uint64_t gen_at(const Tree& tree, std::string_view path) {
    const Node* node = find(tree, path);
    return node ? node->gen : 0;
}

void mutate(Tree& tree, std::string_view path, const std::function<void(Node&)>& fn) {
    const auto comps = split_path(path);
    tree.root = mutate_rec(tree.root, comps, fn);
}

void forget_domain(Tree& tree, DomId dom) { tree.root = forget_rec(tree.root, dom, tree.owned); }

// --- paths -------------------------------------------------------------------------------

bool valid_node_path(std::string_view path) {
    if (path.empty() || path.size() > kStoreMaxPath || path.front() != '/') return false;
    if (path.size() > 1 && path.back() == '/') return false;
    if (path.find("//") != std::string_view::npos) return false;
    return std::all_of(path.begin(), path.end(), valid_char);
}

bool is_special_path(std::string_view path) {
    return path == kReleaseDomain || path == kIntroduceDomain;
}

std::vector<std::string_view> split_path(std::string_view path) {
    std::vector<std::string_view> comps;
    std::size_t pos = 1;
    while (pos < path.size()) {
        std::size_t end = path.find('/', pos);
        if (end == std::string_view::npos) end = path.size();
        comps.push_back(path.substr(pos, end - pos));
        pos = end + 1;
    }
    return comps;
}

std::string_view parent_of(std::string_view path) {
    const std::size_t slash = path.rfind('/');
    return slash == 0 ? path.substr(0, 1) : path.substr(0, slash);
}

std::string_view base_of(std::string_view path) { return path.substr(path.rfind('/') + 1); }

std::string child_path(std::string_view parent, std::string_view name) {
    std::string path(parent);
    if (path != "/") path += '/';
    path += name;
    return path;
}

bool is_child(std::string_view child, std::string_view parent) {
    if (parent == "/") return true;
    if (!child.starts_with(parent)) return false;
    return child.size() == parent.size() || child[parent.size()] == '/';
}

// --- permissions -----------------------------------------------------------------------

bool is_privileged(DomId dom) noexcept { return dom == 0; }

// xenstored perm_for_conn.
unsigned perm_for(DomId dom, const PermList& perms) noexcept {
    constexpr unsigned kAll = kPermRead | kPermWrite | kPermOwner;
    if (is_privileged(dom) || perms.empty() || perms.front().domid == dom) return kAll;
    for (std::size_t i = 1; i < perms.size(); ++i) {
        if (perms[i].domid == dom) return access_bits(perms[i].access);
    }
    return access_bits(perms.front().access);
}

Result<void> check_perm_list(DomId caller, const StoreQuotas& quotas, const PermList& perms) {
    if (perms.empty()) return errc(std::errc::invalid_argument);
    if (!is_privileged(caller) && perms.size() > quotas.max_perms) {
        return errc(std::errc::no_space_on_device);
    }
    return boost::outcome_v2::success();
}

Result<void> check_owner_kept(DomId caller, const PermList& old, const PermList& perms) {
    if (!is_privileged(caller) && perms.front().domid != old.front().domid) {
        return errc(std::errc::operation_not_permitted);
    }
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::xen::sim::detail
