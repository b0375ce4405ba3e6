#include "grant_broker.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "helper_process.hpp"
#include "syscall_filter.hpp"

namespace xenhsa::backend::service {

namespace {

constexpr std::size_t kBufferBytes = std::size_t{kBrokerMaxRefs} * sizeof(xen::GrantRef);

BrokerReply refused(int error) noexcept { return BrokerReply{error, 0, 0}; }

template <typename T>
BrokerReply answer(const xen::Result<T>& r) noexcept {
    return r ? BrokerReply{} : refused(r.error().value());
}

// The worker's side: each call one request and one reply, in turn.
class BrokerClient final : public xen::real::Authority {
public:
    BrokerClient(int socket, xen::GrantRef* buffer) noexcept : socket_(socket), buffer_(buffer) {}
    ~BrokerClient() override {
        ::close(socket_);  // the broker ends
        ::munmap(buffer_, kBufferBytes);
    }
    BrokerClient(const BrokerClient&) = delete;
    BrokerClient& operator=(const BrokerClient&) = delete;

    xen::Result<uint64_t> map_grants(xen::DomId domid,
                                     std::span<const xen::GrantRef> refs) override {
        if (refs.empty() || refs.size() > kBrokerMaxRefs) {
            return xen::errno_code(EINVAL);
        }
        const std::lock_guard lock(mutex_);
        std::copy(refs.begin(), refs.end(), buffer_);
        BrokerRequest request;
        request.op = static_cast<uint32_t>(BrokerOp::map_grants);
        request.domid = domid;
        request.count = static_cast<uint32_t>(refs.size());
        auto reply = call(request);
        if (!reply) {
            return reply.error();
        }
        return reply.value().offset;
    }

    xen::Result<void> notify_on_unmap(uint64_t byte, bool clear_byte,
                                      std::optional<xen::Port> port) override {
        BrokerRequest request;
        request.op = static_cast<uint32_t>(BrokerOp::notify_on_unmap);
        request.flags = (clear_byte ? kBrokerClearByte : 0) | (port ? kBrokerSendEvent : 0);
        request.port = port.value_or(0);
        request.offset = byte;
        const std::lock_guard lock(mutex_);
        auto reply = call(request);
        if (!reply) {
            return reply.error();
        }
        return boost::outcome_v2::success();
    }

    xen::Result<uint64_t> grant_pages(xen::DomId domid, bool writable,
                                      std::span<xen::GrantRef> refs) override {
        if (refs.empty() || refs.size() > kBrokerMaxRefs) {
            return xen::errno_code(EINVAL);
        }
        BrokerRequest request;
        request.op = static_cast<uint32_t>(BrokerOp::grant_pages);
        request.domid = domid;
        request.count = static_cast<uint32_t>(refs.size());
        request.flags = writable ? kBrokerWritable : 0;
        const std::lock_guard lock(mutex_);
        auto reply = call(request);
        if (!reply) {
            return reply.error();
        }
        std::copy_n(buffer_, refs.size(), refs.begin());
        return reply.value().offset;
    }

    xen::Result<xen::Port> bind_interdomain(xen::DomId remote, xen::Port remote_port) override {
        BrokerRequest request;
        request.op = static_cast<uint32_t>(BrokerOp::bind_interdomain);
        request.domid = remote;
        request.port = remote_port;
        const std::lock_guard lock(mutex_);
        auto reply = call(request);
        if (!reply) {
            return reply.error();
        }
        return xen::Port{reply.value().port};
    }

    xen::Result<void> unbind(xen::Port local) override {
        BrokerRequest request;
        request.op = static_cast<uint32_t>(BrokerOp::unbind);
        request.port = local;
        const std::lock_guard lock(mutex_);
        auto reply = call(request);
        if (!reply) {
            return reply.error();
        }
        return boost::outcome_v2::success();
    }

private:
    xen::Result<BrokerReply> call(const BrokerRequest& request) noexcept {
        ssize_t n = 0;
        do {
            n = ::send(socket_, &request, sizeof request, MSG_NOSIGNAL);
        } while (n < 0 && errno == EINTR);
        if (n != static_cast<ssize_t>(sizeof request)) {
            return xen::errno_code(n < 0 ? errno : EIO);
        }
        BrokerReply reply;
        do {
            n = ::recv(socket_, &reply, sizeof reply, 0);
        } while (n < 0 && errno == EINTR);
        if (n == 0) {
            return xen::errno_code(EPIPE);  // the broker is gone
        }
        if (n != static_cast<ssize_t>(sizeof reply)) {
            return xen::errno_code(n < 0 ? errno : EIO);
        }
        if (reply.error != 0) {
            return xen::errno_code(reply.error);
        }
        return reply;
    }

    int socket_;
    xen::GrantRef* buffer_;
    std::mutex mutex_;
};

void broker_says(const char* text) noexcept { helper_says("grant broker", text); }

[[noreturn]] void serve_broker(int socket, xen::GrantRef* buffer, xen::real::Authority& authority,
                               const BrokerLimits& limits) noexcept {
    BrokerRules rules(authority, limits);
    const std::span<xen::GrantRef> refs(buffer, kBrokerMaxRefs);
    for (;;) {
        BrokerRequest request;
        const ssize_t n = ::recv(socket, &request, sizeof request, 0);
        if (n == 0) {
            ::_exit(0);  // the worker ended
        }
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            ::_exit(1);
        }
        BrokerReply reply = refused(EINVAL);
        if (n == static_cast<ssize_t>(sizeof request)) {
            try {
                reply = rules.handle(request, refs);
            } catch (const std::bad_alloc&) {
                reply = refused(ENOMEM);
            }
        }
        if (::send(socket, &reply, sizeof reply, MSG_NOSIGNAL) != sizeof reply) {
            ::_exit(1);
        }
    }
}

}  // namespace

BrokerReply BrokerRules::handle(const BrokerRequest& request, std::span<xen::GrantRef> refs) {
    switch (static_cast<BrokerOp>(request.op)) {
        case BrokerOp::map_grants:
            return map_grants(request, refs);
        case BrokerOp::grant_pages:
            return grant_pages(request, refs);
        case BrokerOp::bind_interdomain:
            return bind(request);
        case BrokerOp::unbind:
            return unbind(request);
        case BrokerOp::notify_on_unmap:
            return notify(request);
    }
    return refused(EINVAL);
}

BrokerReply BrokerRules::map_grants(const BrokerRequest& request,
                                    std::span<const xen::GrantRef> refs) {
    if (request.domid != limits_.guest) {
        return refused(EPERM);
    }
    if (request.count == 0 || request.count > refs.size() || request.flags != 0) {
        return refused(EINVAL);
    }
    // Shared memory: copied once, then used.
    const std::vector<xen::GrantRef> copy(refs.begin(), refs.begin() + request.count);
    auto offset = authority_.map_grants(limits_.guest, copy);
    if (!offset) {
        return answer(offset);
    }
    return BrokerReply{0, 0, offset.value()};
}

BrokerReply BrokerRules::grant_pages(const BrokerRequest& request, std::span<xen::GrantRef> refs) {
    if (request.domid != limits_.guest) {
        return refused(EPERM);
    }
    if (request.count == 0 || request.count > refs.size() || (request.flags & ~kBrokerWritable)) {
        return refused(EINVAL);
    }
    std::vector<xen::GrantRef> granted(request.count);
    auto offset =
        authority_.grant_pages(limits_.guest, (request.flags & kBrokerWritable) != 0, granted);
    if (!offset) {
        return answer(offset);
    }
    std::copy(granted.begin(), granted.end(), refs.begin());
    return BrokerReply{0, 0, offset.value()};
}

BrokerReply BrokerRules::bind(const BrokerRequest& request) {
    if (request.domid != limits_.guest) {
        return refused(EPERM);
    }
    if (ports_.size() >= limits_.max_ports) {
        char text[160];
        (void)std::snprintf(text, sizeof text,
                            "domain %u holds its share of event channel ports (%u), a "
                            "bind is refused",
                            static_cast<unsigned>(limits_.guest), limits_.max_ports);
        broker_says(text);
        return refused(ENOSPC);
    }
    auto port = authority_.bind_interdomain(limits_.guest, request.port);
    if (!port) {
        return answer(port);
    }
    ports_.insert(port.value());
    return BrokerReply{0, port.value(), 0};
}

BrokerReply BrokerRules::unbind(const BrokerRequest& request) {
    if (!ports_.contains(request.port)) {
        return refused(EPERM);
    }
    auto unbound = authority_.unbind(request.port);
    if (unbound) {
        ports_.erase(request.port);
    }
    return answer(unbound);
}

BrokerReply BrokerRules::notify(const BrokerRequest& request) {
    if ((request.flags & ~(kBrokerClearByte | kBrokerSendEvent)) != 0 || request.flags == 0) {
        return refused(EINVAL);
    }
    const bool send_event = (request.flags & kBrokerSendEvent) != 0;
    // gntdev signals any port bound in this domain's user space: only the guest's.
    if (send_event && !ports_.contains(request.port)) {
        return refused(EPERM);
    }
    return answer(authority_.notify_on_unmap(
        request.offset, (request.flags & kBrokerClearByte) != 0,
        send_event ? std::optional<xen::Port>(request.port) : std::nullopt));
}

xen::Result<BrokerProcess> start_grant_broker(const xen::real::DeviceFds& fds,
                                              std::unique_ptr<xen::real::Authority> authority,
                                              const BrokerLimits& limits, bool confine) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        return xen::errno_code(errno);
    }
    void* shared =
        ::mmap(nullptr, kBufferBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        const int err = errno;
        ::close(sv[0]);
        ::close(sv[1]);
        return xen::errno_code(err);
    }
    auto* buffer = static_cast<xen::GrantRef*>(shared);
    std::shared_ptr<xen::real::Authority> client;
    try {
        client = std::make_shared<BrokerClient>(sv[0], buffer);
    } catch (const std::bad_alloc&) {
        ::close(sv[0]);
        ::close(sv[1]);
        ::munmap(shared, kBufferBytes);
        return xen::errno_code(ENOMEM);
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int err = errno;
        ::close(sv[1]);
        return xen::errno_code(err);  // the client closes the rest
    }
    if (pid == 0) {
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || ::getppid() != parent) {
            ::_exit(1);
        }
        keep_only_fds({sv[1], fds.gntdev, fds.gntalloc, fds.evtchn});
        if (confine && !confine_helper(HelperKind::grant_broker)) {
            ::_exit(1);
        }
        serve_broker(sv[1], buffer, *authority, limits);
    }
    ::close(sv[1]);
    return BrokerProcess{std::move(client), pid};
}

}  // namespace xenhsa::backend::service
