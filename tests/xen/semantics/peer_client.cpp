#include "peer_client.hpp"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "sem_protocol.hpp"

namespace xenhsa::sem {

namespace {

std::string num(uint64_t v) { return std::to_string(v); }
const char* rw(bool writable) { return writable ? "rw" : "ro"; }

}  // namespace

xen::Result<std::vector<std::string>> Peer::call(const std::string& line,
                                                 std::vector<std::string>* err_words) {
    auto raw = env_.command(line);
    if (!raw) {
        return raw.error();
    }
    auto reply = parse_reply(raw.value());
    if (!reply) {
        return xen::errno_code(EPROTO);
    }
    if (reply->err != 0) {
        if (err_words != nullptr) {
            *err_words = std::move(reply->words);
        }
        return xen::errno_code(reply->err);
    }
    return std::move(reply->words);
}

template <class T>
xen::Result<T> Peer::call_num(const std::string& line) {
    auto words = call(line);
    if (!words) {
        return words.error();
    }
    if (words.value().size() != 1) {
        return xen::errno_code(EPROTO);
    }
    auto v = to_uint(words.value()[0], std::numeric_limits<T>::max());
    if (!v) {
        return xen::errno_code(EPROTO);
    }
    return static_cast<T>(*v);
}

static xen::Result<void> as_void(const xen::Result<std::vector<std::string>>& r) {
    if (!r) {
        return r.error();
    }
    return boost::outcome_v2::success();
}

xen::Result<void> Peer::reset() { return as_void(call("reset")); }
xen::Result<xen::DomId> Peer::domid() { return call_num<xen::DomId>("domid"); }

xen::Result<PeerShare> Peer::share(xen::DomId to, std::size_t pages, bool writable,
                                   const xen::UnmapNotify& notify) {
    std::string line = "share " + num(to) + " " + num(pages) + " " + rw(writable);
    if (notify.clear_byte_at || notify.port) {
        line += " " + (notify.clear_byte_at ? num(*notify.clear_byte_at) : std::string("-"));
        line += " " + (notify.port ? num(*notify.port) : std::string("-"));
    }
    auto words = call(line);
    if (!words) {
        return words.error();
    }
    const auto& w = words.value();
    if (w.size() != pages + 1) {
        return xen::errno_code(EPROTO);
    }
    PeerShare s;
    auto id = to_uint(w[0], UINT64_MAX);
    if (!id) {
        return xen::errno_code(EPROTO);
    }
    s.id = *id;
    for (std::size_t i = 1; i < w.size(); ++i) {
        auto ref = to_uint(w[i], UINT32_MAX);
        if (!ref) {
            return xen::errno_code(EPROTO);
        }
        s.refs.push_back(static_cast<xen::GrantRef>(*ref));
    }
    return s;
}

xen::Result<void> Peer::fill(uint64_t sid, std::size_t off, std::size_t len, uint8_t byte) {
    return as_void(call("fill " + num(sid) + " " + num(off) + " " + num(len) + " " + num(byte)));
}

xen::Result<uint8_t> Peer::peek(uint64_t sid, std::size_t off) {
    return call_num<uint8_t>("peek " + num(sid) + " " + num(off));
}

xen::Result<void> Peer::end_access(uint64_t sid) { return as_void(call("end-access " + num(sid))); }
xen::Result<void> Peer::unshare(uint64_t sid) { return as_void(call("unshare " + num(sid))); }

xen::Result<uint64_t> Peer::map(xen::DomId from, std::span<const xen::GrantRef> refs, bool writable,
                                PeerMapFailure* failure) {
    std::string line = "map " + num(from) + " " + rw(writable);
    for (const xen::GrantRef r : refs) {
        // Two appends: g++ 12 -O2 warns falsely (-Wrestrict) on " " + std::string&&.
        line += ' ';
        line += num(r);
    }
    std::vector<std::string> err_words;
    auto words = call(line, &err_words);
    if (!words) {
        if (failure != nullptr) {
            failure->error = words.error();
            failure->status.clear();
            for (const auto& s : err_words) {
                failure->status.push_back(static_cast<int>(std::strtol(s.c_str(), nullptr, 10)));
            }
        }
        return words.error();
    }
    if (words.value().size() != 1) {
        return xen::errno_code(EPROTO);
    }
    auto id = to_uint(words.value()[0], UINT64_MAX);
    if (!id) {
        return xen::errno_code(EPROTO);
    }
    return *id;
}

xen::Result<uint8_t> Peer::probe_read(uint64_t mid, std::size_t off) {
    return call_num<uint8_t>("probe-read " + num(mid) + " " + num(off));
}

xen::Result<void> Peer::probe_write(uint64_t mid, std::size_t off, uint8_t byte) {
    return as_void(call("probe-write " + num(mid) + " " + num(off) + " " + num(byte)));
}

xen::Result<void> Peer::unmap(uint64_t mid) { return as_void(call("unmap " + num(mid))); }

xen::Result<xen::Port> Peer::bind_unbound(xen::DomId remote) {
    return call_num<xen::Port>("bind-unbound " + num(remote));
}

xen::Result<xen::Port> Peer::bind(xen::DomId remote, xen::Port remote_port) {
    return call_num<xen::Port>("bind " + num(remote) + " " + num(remote_port));
}

xen::Result<void> Peer::unbind(xen::Port port) { return as_void(call("unbind " + num(port))); }
xen::Result<void> Peer::notify(xen::Port port) { return as_void(call("notify " + num(port))); }

xen::Result<xen::Port> Peer::wait_event(std::chrono::milliseconds timeout) {
    return call_num<xen::Port>("wait-event " + num(static_cast<uint64_t>(timeout.count())));
}

xen::Result<int> Peer::drain_events(std::chrono::milliseconds quiet) {
    return call_num<int>("drain-events " + num(static_cast<uint64_t>(quiet.count())));
}

xen::Result<std::string> Peer::store_read(std::string_view path) {
    auto words = call("store-read " + std::string(path));
    if (!words) {
        return words.error();
    }
    if (words.value().size() != 1) {
        return xen::errno_code(EPROTO);
    }
    auto v = from_hex(words.value()[0]);
    if (!v) {
        return xen::errno_code(EPROTO);
    }
    return *v;
}

xen::Result<void> Peer::store_write(std::string_view path, std::string_view value) {
    return as_void(call("store-write " + std::string(path) + " " + to_hex(value)));
}

xen::Result<void> Peer::store_fill(std::string_view path, std::size_t len, char byte) {
    return as_void(call("store-fill " + std::string(path) + " " + num(len) + " " +
                        num(static_cast<unsigned char>(byte))));
}

xen::Result<void> Peer::store_rm(std::string_view path) {
    return as_void(call("store-rm " + std::string(path)));
}

}  // namespace xenhsa::sem
