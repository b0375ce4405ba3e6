// Sending and receiving xenhsa-sim wire messages (wire.hpp) on a SOCK_SEQPACKET socket,
// with fds passed as SCM_RIGHTS. Shared by the daemon and the client library.
#ifndef XENHSA_XEN_SIM_WIRE_IO_HPP
#define XENHSA_XEN_SIM_WIRE_IO_HPP

#include <array>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>
#include <xenhsa/xen/sim/unique_fd.hpp>
#include <xenhsa/xen/sim/wire.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen::sim::wire {

// A received message. The bulk fd, if any, has been read into `tail` and closed.
struct Message {
    Header header{};
    std::array<std::byte, kMaxBody> body{};
    std::vector<std::byte> tail;
    std::vector<UniqueFd> fds;

    [[nodiscard]] Op op() const noexcept { return static_cast<Op>(header.op); }
    template <class T>
    [[nodiscard]] bool body_is() const noexcept {
        return header.body_size == sizeof(T);
    }
    // Only after body_is<T>().
    template <class T>
    [[nodiscard]] T body_as() const noexcept {
        T t;
        std::memcpy(&t, body.data(), sizeof t);
        return t;
    }
    [[nodiscard]] std::string_view tail_text() const noexcept {
        return {reinterpret_cast<const char*>(tail.data()), tail.size()};
    }
};

// A message ready to send: header, body and inline tail in `bytes`; `fds` are sent with it
// (the bulk memfd first) and closed when the message is destroyed.
struct OutMessage {
    std::vector<std::byte> bytes;
    std::vector<UniqueFd> fds;
};

// Builds a message; a tail longer than kMaxInlineTail goes into a memfd. ENOMEM, or the
// memfd's errno; E2BIG for a tail over kMaxBulkTail or more than kMaxFds fds.
Result<OutMessage> build(Op op, uint32_t seq, int error, std::span<const std::byte> body,
                         std::span<const std::byte> tail, std::vector<UniqueFd> fds,
                         uint16_t flags = 0);

template <class T>
std::span<const std::byte> as_bytes(const T& body) noexcept {
    static_assert(kIsBody<T>);
    return {reinterpret_cast<const std::byte*>(&body), sizeof body};
}

// Sends one message. EAGAIN when `nonblock` and the socket is full.
Result<void> send(int sock, const OutMessage& msg, bool nonblock) noexcept;
// Sends a header and a body, no tail and no fds, without allocating.
Result<void> send_small(int sock, Op op, uint32_t seq, std::span<const std::byte> body,
                        bool nonblock) noexcept;

// Receives one message into `out`, using `buf` (kMaxMessage bytes) as scratch. EAGAIN when
// `nonblock` and nothing is queued; ECONNRESET at end of stream; EPROTO for any framing
// violation (bad magic or sizes, truncation, too many fds, a bad bulk fd): the peer is
// broken or hostile.
Result<void> receive(int sock, std::span<std::byte> buf, Message& out, bool nonblock);

// Plain helpers for callers of the protocol.
template <class T>
std::span<const std::byte> bytes_of(std::span<const T> items) noexcept {
    return std::as_bytes(items);
}
// Copies a tail holding T[] out (the caller checked the size).
template <class T>
std::vector<T> items_of(std::span<const std::byte> tail) {
    std::vector<T> out(tail.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), tail.data(), out.size() * sizeof(T));
    return out;
}

}  // namespace xenhsa::xen::sim::wire

#endif
