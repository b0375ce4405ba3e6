#include "channel.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <xenhsa/xen/sim/client.hpp>

namespace xenhsa::xen::sim::client {

namespace {

using boost::outcome_v2::success;

Result<UniqueFd> connect_to(const std::filesystem::path& dir) {
    const std::string path = (dir / kSocketName).string();
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return errno_code(ENAMETOOLONG);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (!sock) return errno_code(errno);
    int r = 0;
    do {
        r = ::connect(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    } while (r != 0 && errno == EINTR);
    if (r != 0) return errno_code(errno);
    return sock;
}

// A transport failure as the caller sees it.
std::error_code transport(const std::error_code& ec) noexcept {
    const int e = ec.value();
    if (e == ECONNRESET || e == EPIPE || e == ENOTCONN) return errno_code(EPIPE);
    return ec;
}

}  // namespace

Result<Channel> Channel::open(const std::filesystem::path& dir, wire::Role role, DomId domid,
                              DomId acting_for) {
    auto sock = connect_to(dir);
    if (!sock) return sock.error();
    Channel ch;
    ch.sock_ = std::move(sock.value());
    try {
        ch.buf_ = std::make_unique<std::byte[]>(wire::kMaxMessage);
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
    const wire::HelloReq hello{static_cast<uint32_t>(role), domid, acting_for};
    auto reply = ch.call(wire::Op::hello, wire::as_bytes(hello));
    if (!reply) return reply.error();
    if (auto ok = check(reply.value()); !ok) return ok.error();
    if (!reply.value().body_is<wire::HelloRep>()) return errno_code(EPROTO);
    const auto rep = reply.value().body_as<wire::HelloRep>();
    ch.domid_ = rep.domid;
    ch.privileged_ = rep.privileged != 0;
    return ch;
}

Result<void> Channel::send_request(uint32_t seq, wire::Op op, std::span<const std::byte> body,
                                   std::span<const std::byte> tail, std::vector<UniqueFd> fds) {
    auto msg = wire::build(op, seq, 0, body, tail, std::move(fds));
    if (!msg) return msg.error();
    if (auto sent = wire::send(sock_.get(), msg.value(), false); !sent) {
        return transport(sent.error());
    }
    return success();
}

Result<void> Channel::receive_reply(wire::Op op, uint32_t seq, wire::Message& out) {
    for (;;) {
        auto got = wire::receive(sock_.get(), {buf_.get(), wire::kMaxMessage}, out, false);
        if (!got) return transport(got.error());
        if (out.header.seq == 0) {
            if (async_) async_(std::move(out));
            continue;
        }
        if (out.header.seq != seq || out.op() != op) return errno_code(EPROTO);
        return success();
    }
}

Result<wire::Message> Channel::call(wire::Op op, std::span<const std::byte> body,
                                    std::span<const std::byte> tail, std::vector<UniqueFd> fds) {
    const uint32_t seq = take_seq();
    if (auto sent = send_request(seq, op, body, tail, std::move(fds)); !sent) return sent.error();
    wire::Message reply;
    if (auto got = receive_reply(op, seq, reply); !got) return got.error();
    if ((reply.header.flags & wire::kFlagMore) != 0) return errno_code(EPROTO);
    return reply;
}

Result<std::vector<wire::Message>> Channel::call_multi(wire::Op op, std::span<const std::byte> body,
                                                       std::span<const std::byte> tail) {
    const uint32_t seq = take_seq();
    if (auto sent = send_request(seq, op, body, tail, {}); !sent) return sent.error();
    std::vector<wire::Message> replies;
    try {
        for (;;) {
            replies.emplace_back();
            if (auto got = receive_reply(op, seq, replies.back()); !got) return got.error();
            if ((replies.back().header.flags & wire::kFlagMore) == 0) return replies;
        }
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);  // the connection is out of step now, as after EPROTO
    }
}

Result<void> Channel::call_small(wire::Op op, std::span<const std::byte> body) noexcept {
    const uint32_t seq = take_seq();
    if (auto sent = wire::send_small(sock_.get(), op, seq, body, false); !sent) {
        return transport(sent.error());
    }
    try {
        wire::Message reply;
        if (auto got = receive_reply(op, seq, reply); !got) return got.error();
        if (!reply.tail.empty() || !reply.fds.empty() || reply.header.flags != 0) {
            return errno_code(EPROTO);
        }
        return check(reply);
    } catch (...) {
        return errno_code(ENOMEM);
    }
}

Result<void> Channel::poll_async() {
    for (;;) {
        wire::Message msg;
        auto got = wire::receive(sock_.get(), {buf_.get(), wire::kMaxMessage}, msg, true);
        if (!got) {
            if (got.error().value() == EAGAIN) return success();
            return transport(got.error());
        }
        if (msg.header.seq != 0) return errno_code(EPROTO);  // a reply nobody waits for
        if (async_) async_(std::move(msg));
    }
}

Result<void> check(const wire::Message& reply) {
    if (reply.header.error == 0) return success();
    if (reply.header.error < 0) return errno_code(EPROTO);
    return errno_code(reply.header.error);
}

bool is_disconnect(const std::error_code& ec) noexcept {
    return ec.value() == EPIPE || ec.value() == ECONNRESET;
}

}  // namespace xenhsa::xen::sim::client
