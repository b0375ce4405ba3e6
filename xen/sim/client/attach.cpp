// attach() and the toolstack calls of the client library.
#include <sys/mman.h>

#include <new>
#include <xenhsa/xen/sim/client.hpp>

#include "components.hpp"
#include "vm.hpp"

namespace xenhsa::xen::sim {

namespace {

using client::Channel;

Result<Channel> control(const std::filesystem::path& dir) {
    return Channel::open(dir, wire::Role::control, 0);
}

Result<Channel> attached(const std::filesystem::path& dir, DomId domid, DomId acting_for) {
    return Channel::open(dir, wire::Role::attach, domid, acting_for);
}

// Opens one more connection attached to `domid` and builds a component over it.
template <class T>
Result<void> add(const std::filesystem::path& dir, DomId domid, std::unique_ptr<T>& slot,
                 Result<std::unique_ptr<T>> (*make)(Channel), DomId acting_for = 0) {
    auto ch = attached(dir, domid, acting_for);
    if (!ch) return ch.error();
    auto component = make(std::move(ch.value()));
    if (!component) return component.error();
    slot = std::move(component.value());
    return boost::outcome_v2::success();
}

}  // namespace

Result<DomId> create_domain(const std::filesystem::path& dir, std::string_view name,
                            std::size_t ram_pages) {
    if (name.empty() || name.size() > wire::kMaxDomainName || ram_pages == 0) {
        return errno_code(EINVAL);
    }
    auto ch = control(dir);
    if (!ch) return ch.error();
    const wire::CreateReq req{ram_pages};
    auto reply = ch.value().call(wire::Op::create_domain, wire::as_bytes(req),
                                 std::as_bytes(std::span(name.data(), name.size())));
    if (!reply) return reply.error();
    if (auto ok = client::check(reply.value()); !ok) return ok.error();
    if (!reply.value().body_is<wire::DomainReq>()) return errno_code(EPROTO);
    return reply.value().body_as<wire::DomainReq>().domid;
}

Result<void> destroy_domain(const std::filesystem::path& dir, DomId domid) {
    auto ch = control(dir);
    if (!ch) return ch.error();
    const wire::DomainReq req{domid, {}};
    auto reply = ch.value().call(wire::Op::destroy_domain, wire::as_bytes(req));
    if (!reply) return reply.error();
    return client::check(reply.value());
}

Result<std::vector<DomainInfo>> list_domains(const std::filesystem::path& dir) {
    auto ch = control(dir);
    if (!ch) return ch.error();
    auto reply = ch.value().call(wire::Op::list_domains, wire::as_bytes(wire::Empty{}));
    if (!reply) return reply.error();
    if (auto ok = client::check(reply.value()); !ok) return ok.error();
    const wire::Message& msg = reply.value();
    if (!msg.body_is<wire::ListRep>() ||
        msg.tail.size() != msg.body_as<wire::ListRep>().count * sizeof(wire::DomainEntry)) {
        return errno_code(EPROTO);
    }
    try {
        std::vector<DomainInfo> out;
        for (const auto& e : wire::items_of<wire::DomainEntry>(msg.tail)) {
            if (e.name_len > sizeof e.name) return errno_code(EPROTO);
            out.push_back({e.domid, std::string(e.name, e.name_len), e.alive != 0, e.mapped_pages,
                           e.shared_pages, e.bound_ports});
        }
        return out;
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
}

Result<Platform> attach(const std::filesystem::path& dir, DomId domid) {
    return attach_acting_for(dir, domid, 0);
}

Result<Platform> attach_acting_for(const std::filesystem::path& dir, DomId domid,
                                   DomId acting_for) {
    if (acting_for != 0 && domid != 0) return errno_code(EINVAL);
    Platform p;
    const DomId a = acting_for;
    if (auto r = add(dir, domid, p.grants, client::make_grant_mapper, a); !r) return r.error();
    if (auto r = add(dir, domid, p.sharer, client::make_grant_sharer, a); !r) return r.error();
    if (auto r = add(dir, domid, p.events, client::make_event_channel, a); !r) return r.error();
    if (auto r = add(dir, domid, p.store, client::make_store, a); !r) return r.error();
    if (auto r = add(dir, domid, p.domains, client::make_domains, a); !r) return r.error();
    if (domid == 0 && acting_for == 0) {
        if (auto r = add(dir, domid, p.foreign, client::make_foreign_memory); !r) return r.error();
    }
    return p;
}

Result<std::unique_ptr<GrantUsage>> open_grant_usage(const std::filesystem::path& dir,
                                                     DomId domid) {
    std::unique_ptr<GrantUsage> usage;
    if (auto r = add(dir, domid, usage, client::make_grant_usage); !r) return r.error();
    return usage;
}

GrantTableView::~GrantTableView() {
    if (entries_ != nullptr) {
        client::unmap(reinterpret_cast<std::byte*>(entries_), count_ * sizeof(grant_entry_v1_t));
    }
}

Result<GrantTableView> map_grant_table(const std::filesystem::path& dir, DomId domid) {
    auto ch = control(dir);
    if (!ch) return ch.error();
    const wire::DomainReq req{domid, {}};
    auto reply = ch.value().call(wire::Op::grant_table, wire::as_bytes(req));
    if (!reply) return reply.error();
    if (auto ok = client::check(reply.value()); !ok) return ok.error();
    const wire::Message& msg = reply.value();
    if (!msg.body_is<wire::TableRep>() || msg.fds.size() != 1) return errno_code(EPROTO);
    const std::size_t count = msg.body_as<wire::TableRep>().entries;
    void* p = ::mmap(nullptr, count * sizeof(grant_entry_v1_t), PROT_READ | PROT_WRITE, MAP_SHARED,
                     msg.fds[0].get(), 0);
    if (p == MAP_FAILED) return errno_code(errno);
    return GrantTableView(static_cast<grant_entry_v1_t*>(p), count);
}

}  // namespace xenhsa::xen::sim
