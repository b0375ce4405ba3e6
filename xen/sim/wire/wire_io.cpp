#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <cerrno>
#include <new>
#include <xenhsa/xen/sim/wire_io.hpp>

namespace xenhsa::xen::sim::wire {

namespace {

using boost::outcome_v2::success;

std::error_code last_error() noexcept { return errno_code(errno != 0 ? errno : EIO); }
std::error_code protocol_error() noexcept { return errno_code(EPROTO); }

Result<UniqueFd> tail_memfd(std::span<const std::byte> tail) {
    UniqueFd fd(::memfd_create("xenhsa-sim-bulk", MFD_CLOEXEC));
    if (!fd) return last_error();
    std::size_t done = 0;
    while (done < tail.size()) {
        const ssize_t n =
            ::pwrite(fd.get(), tail.data() + done, tail.size() - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return last_error();
        done += static_cast<std::size_t>(n);
    }
    return fd;
}

// Reads a bulk tail once into private memory. Only memfd/tmpfs files are accepted: their
// reads never block, and anything else (a FIFO, a socket, a file on FUSE) could stall
// the reader.
Result<void> read_bulk(const UniqueFd& fd, std::size_t size, std::vector<std::byte>& out) {
    if (::fcntl(fd.get(), F_GET_SEALS) < 0) return protocol_error();
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::size_t>(st.st_size) != size) {
        return protocol_error();
    }
    out.resize(size);
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n =
            ::pread(fd.get(), out.data() + done, size - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return protocol_error();  // shrunk behind our back
        done += static_cast<std::size_t>(n);
    }
    return success();
}

Result<void> send_raw(int sock, std::span<const std::byte> bytes, std::span<const int> fds,
                      bool nonblock) noexcept {
    iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kMaxFds)> control{};
    if (!fds.empty()) {
        if (fds.size() > kMaxFds) return errno_code(E2BIG);
        const std::size_t len = sizeof(int) * fds.size();
        mh.msg_control = control.data();
        mh.msg_controllen = CMSG_SPACE(len);
        cmsghdr* cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(len);
        std::memcpy(CMSG_DATA(cm), fds.data(), len);
    }
    const int flags = MSG_NOSIGNAL | (nonblock ? MSG_DONTWAIT : 0);
    for (;;) {
        const ssize_t n = ::sendmsg(sock, &mh, flags);
        if (n >= 0) return success();
        if (errno != EINTR) return last_error();
    }
}

}  // namespace

Result<OutMessage> build(Op op, uint32_t seq, int error, std::span<const std::byte> body,
                         std::span<const std::byte> tail, std::vector<UniqueFd> fds,
                         uint16_t flags) {
    if (body.size() > kMaxBody || tail.size() > kMaxBulkTail) return errno_code(E2BIG);
    const bool bulk = tail.size() > kMaxInlineTail;
    if (fds.size() + (bulk ? 1 : 0) > kMaxFds) return errno_code(E2BIG);
    try {
        OutMessage msg;
        Header h{};
        h.magic = kMagic;
        h.op = static_cast<uint16_t>(op);
        h.flags = static_cast<uint16_t>(flags | (bulk ? kFlagBulkTail : 0));
        h.seq = seq;
        h.error = error;
        h.body_size = static_cast<uint32_t>(body.size());
        h.tail_size = static_cast<uint32_t>(tail.size());
        msg.bytes.resize(sizeof h + body.size() + (bulk ? 0 : tail.size()));
        std::memcpy(msg.bytes.data(), &h, sizeof h);
        if (!body.empty()) std::memcpy(msg.bytes.data() + sizeof h, body.data(), body.size());
        if (bulk) {
            auto fd = tail_memfd(tail);
            if (!fd) return fd.error();
            msg.fds.push_back(std::move(fd.value()));
        } else if (!tail.empty()) {
            std::memcpy(msg.bytes.data() + sizeof h + body.size(), tail.data(), tail.size());
        }
        for (auto& fd : fds) msg.fds.push_back(std::move(fd));
        return msg;
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
}

Result<void> send(int sock, const OutMessage& msg, bool nonblock) noexcept {
    std::array<int, kMaxFds> raw{};
    if (msg.fds.size() > kMaxFds) return errno_code(E2BIG);
    for (std::size_t i = 0; i < msg.fds.size(); ++i) raw[i] = msg.fds[i].get();
    return send_raw(sock, msg.bytes, std::span<const int>(raw.data(), msg.fds.size()), nonblock);
}

Result<void> send_small(int sock, Op op, uint32_t seq, std::span<const std::byte> body,
                        bool nonblock) noexcept {
    if (body.size() > kMaxBody) return errno_code(E2BIG);
    std::array<std::byte, sizeof(Header) + kMaxBody> bytes{};
    Header h{};
    h.magic = kMagic;
    h.op = static_cast<uint16_t>(op);
    h.seq = seq;
    h.body_size = static_cast<uint32_t>(body.size());
    std::memcpy(bytes.data(), &h, sizeof h);
    if (!body.empty()) std::memcpy(bytes.data() + sizeof h, body.data(), body.size());
    return send_raw(sock, std::span<const std::byte>(bytes.data(), sizeof h + body.size()), {},
                    nonblock);
}

namespace {

Result<void> parse(std::span<const std::byte> msg, std::span<UniqueFd> fds, Message& out) {
    Header& h = out.header;
    if (msg.size() < sizeof h) return protocol_error();
    std::memcpy(&h, msg.data(), sizeof h);
    if (h.magic != kMagic || h.body_size > kMaxBody || h.body_size % 8 != 0) {
        return protocol_error();
    }
    if ((h.flags & ~(kFlagBulkTail | kFlagMore)) != 0) return protocol_error();
    const bool bulk = (h.flags & kFlagBulkTail) != 0;
    const std::size_t inline_tail = bulk ? 0 : h.tail_size;
    if (msg.size() != sizeof h + h.body_size + inline_tail) return protocol_error();
    out.body.fill(std::byte{0});
    std::memcpy(out.body.data(), msg.data() + sizeof h, h.body_size);
    std::size_t first_fd = 0;
    if (bulk) {
        if (fds.empty() || h.tail_size <= kMaxInlineTail || h.tail_size > kMaxBulkTail) {
            return protocol_error();
        }
        if (auto r = read_bulk(fds[0], h.tail_size, out.tail); !r) return r;
        fds[0].reset();
        first_fd = 1;
    } else {
        out.tail.assign(msg.data() + sizeof h + h.body_size, msg.data() + msg.size());
    }
    out.fds.reserve(fds.size() - first_fd);
    for (std::size_t i = first_fd; i < fds.size(); ++i) out.fds.push_back(std::move(fds[i]));
    return success();
}

}  // namespace

Result<void> receive(int sock, std::span<std::byte> buf, Message& out, bool nonblock) {
    iovec iov{buf.data(), buf.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kMaxFds)> control{};
    mh.msg_control = control.data();
    mh.msg_controllen = control.size();
    const int flags = MSG_CMSG_CLOEXEC | (nonblock ? MSG_DONTWAIT : 0);
    ssize_t n = 0;
    do {
        n = ::recvmsg(sock, &mh, flags);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return last_error();

    // Own every fd first (without allocating), so that whatever happens below closes them.
    std::array<UniqueFd, kMaxFds> fds;
    std::size_t nfds = 0;
    bool bad_fds = false;
    for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm != nullptr; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
            bad_fds = true;  // e.g. SCM_CREDENTIALS: not part of the protocol
            continue;
        }
        const std::size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count && nfds < fds.size(); ++i) {
            int fd = -1;
            std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
            fds[nfds++].reset(fd);
        }
    }
    out.fds.clear();
    out.tail.clear();
    if (n == 0) return errno_code(ECONNRESET);
    if (bad_fds || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) return protocol_error();
    try {
        return parse(buf.first(static_cast<std::size_t>(n)), std::span(fds.data(), nfds), out);
    } catch (const std::bad_alloc&) {
        return errno_code(ENOMEM);
    }
}

}  // namespace xenhsa::xen::sim::wire
