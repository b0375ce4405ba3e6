// The domain table: dom0, create/destroy as xl does them, processes attaching, and the
// end of a domain (its processes killed or gone, its store home removed, @releaseDomain).
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <set>

#include "daemon.hpp"

namespace xenhsa::xen::sim::daemon {

namespace {

using boost::outcome_v2::success;

constexpr uint64_t kMaxRamPages = uint64_t{1} << 32;

bool valid_name(std::string_view name) {
    if (name.empty() || name.size() > wire::kMaxDomainName) return false;
    return std::all_of(name.begin(), name.end(), [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               ch == '_' || ch == '.' || ch == '-';
    });
}

}  // namespace

Domain* Daemon::live_domain(DomId id) noexcept {
    Domain* d = any_domain(id);
    return d != nullptr && !d->dying ? d : nullptr;
}

Domain* Daemon::any_domain(DomId id) noexcept {
    auto it = domains_.find(id);
    return it == domains_.end() ? nullptr : &it->second;
}

Result<void> Daemon::create_dom0() {
    auto table = GranterTable::create(0, options_.grant_entries);
    if (!table) return table.error();
    Domain d;
    d.id = 0;
    d.name = "Domain-0";
    d.ram_pages = kMaxRamPages;
    d.grants = std::move(table.value());
    domains_.emplace(0, std::move(d));

    auto store = store_.open_connection(0);
    if (!store) return store.error();
    dom0_store_ = store.value();
    if (auto r = store_.write(dom0_store_, home_of(0) + "/name", "Domain-0"); !r) return r;
    return store_.write(dom0_store_, home_of(0) + "/domid", "0");
}

Result<DomId> Daemon::create_domain(std::string_view name, uint64_t ram_pages) {
    if (!valid_name(name) || ram_pages == 0 || ram_pages > kMaxRamPages) {
        return errno_code(EINVAL);
    }
    if (domains_.size() >= options_.max_domains) return errno_code(ENOSPC);
    for (const auto& [id, d] : domains_) {
        if (d.name == name) return errno_code(EEXIST);
    }
    DomId id = next_domid_;
    while (domains_.contains(id) || store_.is_domain_introduced(id)) {
        id = static_cast<DomId>(id + 1 < kDomIdFirstReserved ? id + 1 : 1);
    }
    next_domid_ = static_cast<DomId>(id + 1 < kDomIdFirstReserved ? id + 1 : 1);

    auto table = GranterTable::create(id, options_.grant_entries);
    if (!table) return table.error();
    // As xl: the domain owns its home; "name" and "domid" are the toolstack's, readable by it.
    if (auto r = store_.introduce_domain(id); !r) return r.error();
    const PermList readable{{0, StoreAccess::none}, {id, StoreAccess::read}};
    for (const auto& [key, value] :
         {std::pair<std::string, std::string>{"name", std::string(name)},
          std::pair<std::string, std::string>{"domid", std::to_string(id)}}) {
        const std::string path = home_of(id) + "/" + key;
        if (auto r = store_.write(dom0_store_, path, value); !r) return r.error();
        if (auto r = store_.set_perms(dom0_store_, path, readable); !r) return r.error();
    }
    Domain d;
    d.id = id;
    d.name = std::string(name);
    d.ram_pages = ram_pages;
    d.grants = std::move(table.value());
    domains_.emplace(id, std::move(d));
    spdlog::info("domain {} ({}) created, {} pages", id, name, ram_pages);
    return id;
}

Result<void> Daemon::destroy_domain(DomId id, bool kill, pid_t caller) {
    if (id == 0 || id >= kDomIdFirstReserved) return errno_code(EINVAL);
    Domain* d = live_domain(id);
    if (d == nullptr) return errno_code(ESRCH);
    d->dying = true;
    spdlog::info("domain {} ({}) destroyed{}", id, d->name, kill ? " by the toolstack" : "");
    if (kill) {
        // Never dom0's processes (a test attached to dom0 and a guest at once), nor the
        // caller, nor ourselves: their connections to this domain are just closed.
        std::set<pid_t> spared{caller, ::getpid()};
        for (const auto& [key, c] : conns_) {
            if (c->role == Conn::Role::attached && c->dom == 0) spared.insert(c->pid);
        }
        for (const ConnKey key : d->conns) {
            Conn* c = conn(key);
            if (c == nullptr || c->pid <= 0 || !spared.insert(c->pid).second) continue;
            const long r =
                c->pidfd ? ::syscall(SYS_pidfd_send_signal, c->pidfd.get(), SIGKILL, nullptr, 0)
                         : ::kill(c->pid, SIGKILL);
            if (r != 0) spdlog::debug("kill pid {}: {}", c->pid, std::strerror(errno));
        }
    }
    if (d->conns.empty()) {
        finish_domain(id);
        return success();
    }
    // The domain ends when the last of its connections is torn down (teardown()): now,
    // so that it is gone (store home, @releaseDomain) when the caller gets its reply. The
    // caller is a toolstack connection, never one of these.
    for (const ConnKey key : std::vector<ConnKey>(d->conns.begin(), d->conns.end())) {
        if (Conn* c = conn(key)) drop(*c, "domain destroyed");
    }
    reap();
    return success();
}

void Daemon::finish_domain(DomId id) {
    Domain* d = any_domain(id);
    if (d == nullptr) return;
    std::vector<Port> ports;
    for (const auto& [port, entry] : d->ports.all()) ports.push_back(port);
    for (const Port port : ports) close_port(*d, port);
    if (d->grants) {
        d->grants->retire();  // mappers' pins keep the table itself until they unmap
        d->grants.reset();
    }
    domains_.erase(id);
    // Removes /local/domain/<id> and fires @releaseDomain.
    if (auto r = store_.release_domain(id); !r) {
        spdlog::warn("store release of domain {}: {}", id, r.error().message());
    }
}

Result<void> Daemon::attach(Conn& c, DomId id) {
    if (id >= kDomIdFirstReserved) return errno_code(EINVAL);
    Domain* d = live_domain(id);
    if (d == nullptr) return errno_code(ESRCH);
    d->conns.insert(c.key);
    c.role = Conn::Role::attached;
    c.dom = id;
    return success();
}

void Daemon::teardown(Conn& c) {
    release_grants(c);
    release_ports(c);
    release_store(c);
    if (c.role != Conn::Role::attached) return;
    Domain* d = any_domain(c.dom);
    if (d == nullptr) return;
    d->conns.erase(c.key);
    if (d->id == 0 || !d->conns.empty()) return;
    if (!d->dying) {
        d->dying = true;
        spdlog::info("domain {} ({}): its last process is gone", d->id, d->name);
    }
    finish_domain(d->id);
}

}  // namespace xenhsa::xen::sim::daemon
