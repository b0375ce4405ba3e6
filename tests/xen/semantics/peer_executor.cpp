#include "peer_executor.hpp"

#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>

#include "mem_probe.hpp"
#include "sem_protocol.hpp"
#include "waits.hpp"

namespace xenhsa::sem {

namespace {

constexpr uint64_t kMaxDom = 0x7FEF;
constexpr uint64_t kMaxPages = 1024;

std::string err(int e) { return "err " + std::to_string(e); }
std::string err(const std::error_code& ec) { return err(ec.value()); }

struct Args {
    const std::vector<std::string>& w;
    bool bad = false;

    uint64_t num(std::size_t i, uint64_t max) {
        if (i >= w.size()) {
            bad = true;
            return 0;
        }
        auto v = to_uint(w[i], max);
        bad = bad || !v;
        return v.value_or(0);
    }
    bool rw(std::size_t i) {
        if (i >= w.size() || (w[i] != "ro" && w[i] != "rw")) {
            bad = true;
            return false;
        }
        return w[i] == "rw";
    }
    std::string str(std::size_t i) {
        if (i >= w.size()) {
            bad = true;
            return {};
        }
        return w[i];
    }
};

}  // namespace

std::string PeerExecutor::execute(std::string_view line) {
    const auto words = split_words(line);
    if (words.empty()) {
        return err(EINVAL);
    }
    return run(words);
}

void PeerExecutor::reset() noexcept {
    maps_.clear();
    shares_.clear();
    ports_.clear();
}

std::string PeerExecutor::run(const std::vector<std::string>& w) {
    Args a{w};
    const std::string& cmd = w[0];
    const std::string kBad = err(EINVAL);

    if (cmd == "reset") {
        reset();
        return "ok";
    }
    if (cmd == "domid") {
        return "ok " + std::to_string(p_.domains->self());
    }
    if (cmd == "exit") {
        exit_ = true;
        return "ok";
    }
    if (cmd == "share") {
        const auto to = static_cast<xen::DomId>(a.num(1, kMaxDom));
        const std::size_t pages = a.num(2, kMaxPages);
        const bool writable = a.rw(3);
        xen::UnmapNotify notify;  // optional: "<clear byte|-> <port|->"
        if (w.size() == 6) {
            if (w[4] != "-") notify.clear_byte_at = static_cast<uint32_t>(a.num(4, kPage - 1));
            if (w[5] != "-") notify.port = static_cast<xen::Port>(a.num(5, UINT32_MAX));
        } else if (w.size() != 4) {
            return kBad;
        }
        if (a.bad) return kBad;
        auto s = p_.sharer->share(
            {.peer = to, .pages = pages, .writable = writable, .at = nullptr, .notify = notify});
        if (!s) return err(s.error());
        const uint64_t id = next_id_++;
        std::string out = "ok " + std::to_string(id);
        for (const xen::GrantRef r : s.value().refs()) {
            out += " " + std::to_string(r);
        }
        shares_.emplace(id, std::move(s.value()));
        return out;
    }
    if (cmd == "fill" || cmd == "peek" || cmd == "end-access" || cmd == "unshare") {
        auto it = shares_.find(a.num(1, UINT64_MAX));
        if (a.bad || it == shares_.end()) return err(ENOENT);
        xen::SharedPages& s = it->second;
        const std::size_t size = s.pages() * kPage;
        if (cmd == "fill") {
            const std::size_t off = a.num(2, size);
            const std::size_t len = a.num(3, size);
            const auto byte = static_cast<uint8_t>(a.num(4, 255));
            if (a.bad || len > size - off) return kBad;
            std::memset(s.data() + off, byte, len);
            return "ok";
        }
        if (cmd == "peek") {
            const std::size_t off = a.num(2, size - 1);
            if (a.bad) return kBad;
            return "ok " + std::to_string(std::to_integer<unsigned>(s.data()[off]));
        }
        if (cmd == "end-access") {
            auto r = s.end_access();
            if (!r) return err(r.error());
            shares_.erase(it);
            return "ok";
        }
        shares_.erase(it);
        return "ok";
    }
    if (cmd == "map") {
        const auto from = static_cast<xen::DomId>(a.num(1, kMaxDom));
        const bool writable = a.rw(2);
        std::vector<xen::GrantRef> refs;
        for (std::size_t i = 3; i < w.size(); ++i) {
            refs.push_back(static_cast<xen::GrantRef>(a.num(i, UINT32_MAX)));
        }
        if (a.bad || refs.empty()) return kBad;
        std::vector<int> status(refs.size(), -1);
        auto m = p_.grants->map({.domid = from, .refs = refs, .writable = writable, .at = nullptr},
                                status);
        if (!m) {
            std::string out = err(m.error());
            for (const int s : status) {
                out += " " + std::to_string(s);
            }
            return out;
        }
        const uint64_t id = next_id_++;
        maps_.emplace(id, std::move(m.value()));
        return "ok " + std::to_string(id);
    }
    if (cmd == "probe-read" || cmd == "probe-write" || cmd == "unmap") {
        auto it = maps_.find(a.num(1, UINT64_MAX));
        if (a.bad || it == maps_.end()) return err(ENOENT);
        xen::GrantMapping& m = it->second;
        if (cmd == "unmap") {
            maps_.erase(it);
            return "ok";
        }
        const std::size_t off = a.num(2, m.size() - 1);
        if (cmd == "probe-read") {
            if (a.bad) return kBad;
            auto b = probe_read(m.data() + off);
            return b ? "ok " + std::to_string(b.value()) : err(b.error());
        }
        const auto byte = static_cast<uint8_t>(a.num(3, 255));
        if (a.bad) return kBad;
        auto r = probe_write(m.data() + off, byte);
        return r ? "ok" : err(r.error());
    }
    if (cmd == "bind-unbound" || cmd == "bind") {
        const auto remote = static_cast<xen::DomId>(a.num(1, kMaxDom));
        const auto rport = cmd == "bind" ? static_cast<xen::Port>(a.num(2, UINT32_MAX)) : 0;
        if (a.bad) return kBad;
        auto b = cmd == "bind" ? p_.events->bind_interdomain(remote, rport)
                               : p_.events->bind_unbound(remote);
        if (!b) return err(b.error());
        const xen::Port port = b.value().port();
        ports_.insert_or_assign(port, std::move(b.value()));
        return "ok " + std::to_string(port);
    }
    if (cmd == "unbind" || cmd == "notify") {
        const auto port = static_cast<xen::Port>(a.num(1, UINT32_MAX));
        if (a.bad) return kBad;
        if (cmd == "unbind") {
            return ports_.erase(port) == 1 ? "ok" : err(ENOENT);
        }
        auto r = p_.events->notify(port);
        return r ? "ok" : err(r.error());
    }
    if (cmd == "wait-event" || cmd == "drain-events") {
        const Millis ms(a.num(1, 600000));
        if (a.bad) return kBad;
        if (cmd == "drain-events") {
            auto n = drain_ports(*p_.events, ms);
            return n ? "ok " + std::to_string(n.value()) : err(n.error());
        }
        auto p = wait_port(*p_.events, ms);
        if (!p) return err(p.error());
        if (!p.value()) return err(ETIMEDOUT);
        if (auto u = p_.events->unmask(*p.value()); !u) return err(u.error());
        return "ok " + std::to_string(*p.value());
    }
    if (cmd == "store-read") {
        const std::string path = a.str(1);
        if (a.bad) return kBad;
        auto v = p_.store->read(xen::kNoTx, path);
        return v ? "ok " + to_hex(v.value()) : err(v.error());
    }
    if (cmd == "store-write" || cmd == "store-fill") {
        const std::string path = a.str(1);
        std::optional<std::string> value;
        if (cmd == "store-write") {
            value = from_hex(a.str(2));
        } else {
            const std::size_t len = a.num(2, 1 << 20);
            value = std::string(len, static_cast<char>(a.num(3, 255)));
        }
        if (a.bad || !value) return kBad;
        auto r = p_.store->write(xen::kNoTx, path, *value);
        return r ? "ok" : err(r.error());
    }
    if (cmd == "store-rm") {
        const std::string path = a.str(1);
        if (a.bad) return kBad;
        auto r = p_.store->rm(xen::kNoTx, path);
        return r ? "ok" : err(r.error());
    }
    return err(ENOSYS);
}

}  // namespace xenhsa::sem
