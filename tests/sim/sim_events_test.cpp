// Event channels over xenhsa-sim: delivery across processes, masking, wake-ups through
// fd() (also under Boost.Asio), Xen's port states when a peer unbinds or dies, attribution
// of a notification by its source address only, and what a round trip costs in system
// calls.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <map>
#include <set>

#include "sim_fixture.hpp"

namespace xenhsa::testing {
namespace {

namespace sim = xen::sim;

constexpr uint64_t kSent = 0x5E;

// Takes in what binding and unbinding left pending (a port bound by a peer fires once as
// its handle learns of the binding) until the channel stays quiet.
void settle(xen::EventChannel& ev) {
    while (auto port = next_port(ev, 100ms)) ASSERT_TRUE(ev.unmask(*port));
}

// Two handles of dom0, `a` offering `count` ports and `b` bound to each.
struct Pair {
    xen::EventChannel& a;
    xen::EventChannel& b;
    std::vector<xen::BoundPort> offered;  // a's
    std::vector<xen::BoundPort> bound;    // b's, bound[i] to offered[i]
};

Pair bind_pairs(xen::EventChannel& a, xen::EventChannel& b, int count) {
    Pair pair{a, b, {}, {}};
    for (int i = 0; i < count; ++i) {
        auto offered = a.bind_unbound(0);
        EXPECT_TRUE(offered);
        if (!offered) break;
        auto bound = b.bind_interdomain(0, offered.value().port());
        EXPECT_TRUE(bound);
        if (!bound) break;
        pair.offered.push_back(std::move(offered.value()));
        pair.bound.push_back(std::move(bound.value()));
    }
    settle(a);
    settle(b);
    return pair;
}

// Counts the calling thread's system calls, from start() on: seccomp hands each one to a
// supervisor thread (user notification), which counts it and lets it run. For a forked
// child only: the filter stays until the process ends.
class SyscallCounter {
public:
    // False when the kernel cannot (seccomp user notification with CONTINUE: Linux 5.5).
    bool start() {
        std::thread([this] { supervise(); }).detach();  // before the filter: not filtered
        std::array<sock_filter, 1> filter{{BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF)}};
        sock_fprog prog{static_cast<unsigned short>(filter.size()), filter.data()};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
        const long fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                  SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (fd < 0) return false;
        listener_.store(static_cast<int>(fd));
        return true;
    }

    // The calls since the last take(), by number; the allocator's own (memory, futexes)
    // left out, they are not the event channel's.
    std::map<long, int> take() {
        std::array<int, kMaxNr> got{};
        for (std::size_t nr = 0; nr < kMaxNr; ++nr) got[nr] = counts_[nr].exchange(0);
        std::map<long, int> out;
        for (std::size_t nr = 0; nr < kMaxNr; ++nr) {
            const long n = static_cast<long>(nr);
            if (got[nr] == 0 || n == SYS_brk || n == SYS_mmap || n == SYS_munmap ||
                n == SYS_mprotect || n == SYS_madvise || n == SYS_mremap || n == SYS_futex) {
                continue;
            }
            out[n] = got[nr];
        }
        return out;
    }

private:
    static constexpr std::size_t kMaxNr = 512;

    void supervise() {
        int fd = -1;
        while ((fd = listener_.load()) < 0) std::this_thread::yield();
        for (;;) {
            seccomp_notif req{};
            if (::ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) continue;
            if (req.data.nr >= 0 && static_cast<std::size_t>(req.data.nr) < kMaxNr) {
                counts_[static_cast<std::size_t>(req.data.nr)].fetch_add(1);
            }
            seccomp_notif_resp resp{};
            resp.id = req.id;
            resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
            (void)::ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
        }
    }

    std::array<std::atomic<int>, kMaxNr> counts_{};
    std::atomic<int> listener_{-1};
};

int total(const std::map<long, int>& calls) {
    int n = 0;
    for (const auto& [nr, count] : calls) n += count;
    return n;
}

TEST_F(SimTest, NotifyMaskAndUnmaskAcrossProcesses) {
    const DomId g = create_guest("guest");
    auto guest = spawn_in(g, [](Platform& p, Link& link) {
        auto port = p.events->bind_unbound(0);
        CHILD_CHECK(port);
        const Port mine = port.value().port();
        link.send(mine);
        CHILD_CHECK(next_port(*p.events) == mine);  // the backend's first kick
        link.send(1);
        CHILD_CHECK(link.receive() == kSent);  // two more kicks while masked
        auto none = p.events->pending();
        CHILD_CHECK(none && !none.value());
        CHILD_CHECK(p.events->unmask(mine));
        auto again = p.events->pending();
        CHILD_CHECK(again && again.value() == mine);  // delivered once, on unmask
        auto once = p.events->pending();
        CHILD_CHECK(once && !once.value());
        CHILD_CHECK(p.events->unmask(mine));
        CHILD_CHECK(p.events->notify(mine));  // and back to the backend
        CHILD_CHECK(link.receive());
        return 0;
    });
    const auto remote = guest.link().receive();
    ASSERT_TRUE(remote);
    auto local = dom0.events->bind_interdomain(g, static_cast<Port>(*remote));
    ASSERT_TRUE(local) << local.error().message();
    const Port mine = local.value().port();
    ASSERT_TRUE(dom0.events->notify(mine));
    ASSERT_TRUE(guest.link().receive());
    ASSERT_TRUE(dom0.events->notify(mine));
    ASSERT_TRUE(dom0.events->notify(mine));
    guest.link().send(kSent);
    EXPECT_TRUE(wait_readable(dom0.events->fd())) << "the guest's kick wakes our fd";
    EXPECT_EQ(next_port(*dom0.events), mine);
    EXPECT_TRUE(dom0.events->unmask(mine));
    guest.link().send(1);
    EXPECT_TRUE(exited_with(guest.wait(), 0));
}

TEST_F(SimTest, EventChannelErrorsFollowXen) {
    auto second = sim::attach(sim.dir(), 0);  // another handle of dom0
    ASSERT_TRUE(second);
    auto& a = *dom0.events;
    auto& b = *second.value().events;
    auto p = a.bind_unbound(0);
    ASSERT_TRUE(p);
    EXPECT_EQ(b.bind_interdomain(0x7F00, p.value().port()).error().value(), ESRCH);
    EXPECT_EQ(b.bind_interdomain(0, 999).error().value(), EINVAL) << "no such port";
    const DomId g = create_guest("guest");
    auto for_guest = a.bind_unbound(g);
    ASSERT_TRUE(for_guest);
    EXPECT_EQ(b.bind_interdomain(0, for_guest.value().port()).error().value(), EINVAL)
        << "offered to another domain";
    EXPECT_EQ(b.notify(p.value().port()).error().value(), ENOTCONN) << "not bound by b";
    EXPECT_TRUE(b.unmask(p.value().port())) << "unmasking a stranger is ignored, as in Linux";

    auto l = b.bind_interdomain(0, p.value().port());
    ASSERT_TRUE(l);
    EXPECT_EQ(b.bind_interdomain(0, p.value().port()).error().value(), EINVAL) << "already bound";
    ASSERT_TRUE(b.notify(l.value().port()));
    EXPECT_EQ(next_port(a), p.value().port());
    ASSERT_TRUE(a.unmask(p.value().port()));

    // The peer unbinds: our port is unbound again; notifying it is dropped, and the same
    // domain may bind it again.
    l.value().reset();
    EXPECT_TRUE(a.notify(p.value().port()));
    auto again = b.bind_interdomain(0, p.value().port());
    ASSERT_TRUE(again) << again.error().message();
    ASSERT_TRUE(a.notify(p.value().port()));
    EXPECT_EQ(next_port(b), again.value().port());
}

TEST_F(SimTest, APeerThatDiesLeavesOurPortUnbound) {
    const DomId g = create_guest("guest");
    auto port = dom0.events->bind_unbound(g);
    ASSERT_TRUE(port);
    auto guest = spawn_in(g, [&](Platform& p, Link&) {
        auto l = p.events->bind_interdomain(0, port.value().port());
        CHILD_CHECK(l);
        CHILD_CHECK(p.events->notify(l.value().port()));
        return 0;
    });
    EXPECT_EQ(next_port(*dom0.events), port.value().port());
    EXPECT_TRUE(exited_with(guest.wait(), 0));
    EXPECT_TRUE(eventually([&] { return !alive(g); }));
    EXPECT_TRUE(dom0.events->notify(port.value().port())) << "dropped, not an error";
}

TEST_F(SimTest, AsioWaitsOnTheEventFdOnceForEachPort) {
    auto second = sim::attach(sim.dir(), 0);
    ASSERT_TRUE(second);
    auto& a = *dom0.events;
    auto& b = *second.value().events;
    auto p1 = a.bind_unbound(0);
    auto p2 = a.bind_unbound(0);
    auto p3 = a.bind_unbound(0);
    ASSERT_TRUE(p1 && p2 && p3);
    auto l1 = b.bind_interdomain(0, p1.value().port());
    auto l2 = b.bind_interdomain(0, p2.value().port());
    auto l3 = b.bind_interdomain(0, p3.value().port());
    ASSERT_TRUE(l1 && l2 && l3);

    boost::asio::io_context io;
    boost::asio::posix::stream_descriptor fd(io, ::dup(a.fd()));
    std::set<Port> seen;
    std::function<void(const boost::system::error_code&)> on_ready =
        [&](const boost::system::error_code& ec) {
            if (ec) return;
            auto port = a.pending();  // once per readiness, as the seam asks
            ASSERT_TRUE(port);
            if (port.value()) seen.insert(*port.value());
            if (seen.size() < 3) fd.async_wait(boost::asio::posix::descriptor::wait_read, on_ready);
        };
    fd.async_wait(boost::asio::posix::descriptor::wait_read, on_ready);
    // All three are harvested by the first pending(); each later one needs its own
    // readiness, which Asio (edge-triggered epoll) only sees if fd() signals it afresh.
    ASSERT_TRUE(b.notify(l1.value().port()));
    ASSERT_TRUE(b.notify(l2.value().port()));
    ASSERT_TRUE(b.notify(l3.value().port()));
    io.run_for(std::chrono::seconds(10));
    EXPECT_EQ(seen, (std::set<Port>{p1.value().port(), p2.value().port(), p3.value().port()}));
}

TEST_F(SimTest, ANotificationIsAttributedByItsSourceAddressOnly) {
    auto second = sim::attach(sim.dir(), 0);
    ASSERT_TRUE(second);
    Pair pair = bind_pairs(*dom0.events, *second.value().events, 1);
    ASSERT_EQ(pair.offered.size(), 1u);
    auto& a = pair.a;
    const Port port = pair.offered[0].port();

    // a's inbox, at the abstract address anyone on the host can find and send to. A socket
    // without a name, and one with a name of the kernel's choosing, each claim to be a's
    // peer: by the port number as payload, and by sending to a's inbox at all.
    sockaddr_un inbox{};
    socklen_t len = sizeof inbox;
    ASSERT_EQ(::getsockname(a.fd(), reinterpret_cast<sockaddr*>(&inbox), &len), 0);
    for (const bool named : {false, true}) {
        sim::UniqueFd stranger(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        ASSERT_TRUE(stranger);
        if (named) {
            sockaddr_un any{};
            any.sun_family = AF_UNIX;
            ASSERT_EQ(::bind(stranger.get(), reinterpret_cast<const sockaddr*>(&any),
                             sizeof(sa_family_t)),
                      0);
        }
        ASSERT_EQ(::connect(stranger.get(), reinterpret_cast<const sockaddr*>(&inbox), len), 0);
        const uint32_t claim = port;
        ASSERT_EQ(::send(stranger.get(), &claim, sizeof claim, 0), ssize_t{sizeof claim});
        ASSERT_TRUE(wait_readable(a.fd()));
        auto fired = a.pending();
        ASSERT_TRUE(fired) << fired.error().message();
        EXPECT_FALSE(fired.value()) << (named ? "named" : "unnamed") << " stranger fired a port";
        EXPECT_FALSE(wait_readable(a.fd(), 0ms)) << "the stranger's datagram is still queued";
    }
    // The binding itself still works.
    ASSERT_TRUE(pair.b.notify(pair.bound[0].port()));
    EXPECT_EQ(next_port(a), port);
}

TEST_F(SimTest, ManyNotifiesBeforeADeliveryArePendingOnce) {
    auto second = sim::attach(sim.dir(), 0);
    ASSERT_TRUE(second);
    Pair pair = bind_pairs(*dom0.events, *second.value().events, 1);
    ASSERT_EQ(pair.offered.size(), 1u);
    auto& a = pair.a;
    const Port port = pair.offered[0].port();
    // Fewer than a's inbox queues, then far more: the kernel refuses the rest (EAGAIN),
    // which is "already pending" to the sender.
    for (const int notifies : {5, 200}) {
        for (int i = 0; i < notifies; ++i) ASSERT_TRUE(pair.b.notify(pair.bound[0].port()));
        EXPECT_EQ(next_port(a), port) << notifies << " notifies";
        auto again = a.pending();
        ASSERT_TRUE(again);
        EXPECT_FALSE(again.value()) << notifies << " notifies, a second event";
        EXPECT_FALSE(wait_readable(a.fd(), 0ms)) << "readable with nothing pending";
        ASSERT_TRUE(a.unmask(port));
        auto latched = a.pending();
        ASSERT_TRUE(latched);
        EXPECT_FALSE(latched.value()) << notifies << " notifies, an event after unmask";
    }
}

TEST_F(SimTest, AnEventWhileMaskedIsLatchedAndDeliveredOnceOnUnmask) {
    auto second = sim::attach(sim.dir(), 0);
    ASSERT_TRUE(second);
    Pair pair = bind_pairs(*dom0.events, *second.value().events, 1);
    ASSERT_EQ(pair.offered.size(), 1u);
    auto& a = pair.a;
    const Port port = pair.offered[0].port();
    ASSERT_TRUE(pair.b.notify(pair.bound[0].port()));
    ASSERT_EQ(next_port(a), port);  // delivered, and masked now

    for (int i = 0; i < 3; ++i) ASSERT_TRUE(pair.b.notify(pair.bound[0].port()));
    ASSERT_TRUE(wait_readable(a.fd()));
    auto held = a.pending();
    ASSERT_TRUE(held);
    EXPECT_FALSE(held.value()) << "delivered while masked";
    EXPECT_FALSE(wait_readable(a.fd(), 0ms)) << "readable with nothing to deliver";

    ASSERT_TRUE(a.unmask(port));
    EXPECT_TRUE(wait_readable(a.fd(), 0ms)) << "the latched event does not wake fd()";
    auto latched = a.pending();
    ASSERT_TRUE(latched);
    EXPECT_EQ(latched.value(), port);
    auto once = a.pending();
    ASSERT_TRUE(once);
    EXPECT_FALSE(once.value()) << "three latched notifies, a second event";
    EXPECT_FALSE(wait_readable(a.fd(), 0ms));
    ASSERT_TRUE(a.unmask(port));
    auto none = a.pending();
    ASSERT_TRUE(none);
    EXPECT_FALSE(none.value());
}

TEST_F(SimTest, TwoPortsFiringTogetherComeOutOneAtATimeWithTheFdReadableBetween) {
    auto second = sim::attach(sim.dir(), 0);
    ASSERT_TRUE(second);
    Pair pair = bind_pairs(*dom0.events, *second.value().events, 2);
    ASSERT_EQ(pair.offered.size(), 2u);
    auto& a = pair.a;
    ASSERT_TRUE(pair.b.notify(pair.bound[0].port()));
    ASSERT_TRUE(pair.b.notify(pair.bound[1].port()));
    ASSERT_TRUE(wait_readable(a.fd()));
    auto first = a.pending();
    ASSERT_TRUE(first && first.value());
    EXPECT_TRUE(wait_readable(a.fd(), 0ms)) << "a second port is pending but fd() is quiet";
    auto next = a.pending();
    ASSERT_TRUE(next && next.value());
    EXPECT_EQ((std::set<Port>{*first.value(), *next.value()}),
              (std::set<Port>{pair.offered[0].port(), pair.offered[1].port()}));
    EXPECT_FALSE(wait_readable(a.fd(), 0ms)) << "readable with nothing pending";
    auto none = a.pending();
    ASSERT_TRUE(none);
    EXPECT_FALSE(none.value());
}

// The kernel queues only so many datagrams on an inbox, whoever sent them: a peer that
// fills it gets another binding's notification refused, which must not be lost.
TEST_F(SimTest, APeerFloodingItsBindingCannotSwallowAnotherBindingsEvent) {
    auto second = sim::attach(sim.dir(), 0);
    auto third = sim::attach(sim.dir(), 0);
    ASSERT_TRUE(second && third);
    auto& a = *dom0.events;
    auto& flooder = *second.value().events;
    auto& quiet = *third.value().events;
    auto p1 = a.bind_unbound(0);
    auto p2 = a.bind_unbound(0);
    ASSERT_TRUE(p1 && p2);
    auto l1 = flooder.bind_interdomain(0, p1.value().port());
    auto l2 = quiet.bind_interdomain(0, p2.value().port());
    ASSERT_TRUE(l1 && l2);
    settle(a);

    for (int i = 0; i < 200; ++i) ASSERT_TRUE(flooder.notify(l1.value().port()));
    ASSERT_TRUE(quiet.notify(l2.value().port()));  // into a full inbox
    std::set<Port> seen;
    while (auto port = next_port(a, 200ms)) seen.insert(*port);  // each once: left masked
    EXPECT_TRUE(seen.contains(p2.value().port())) << "the quiet peer's event was lost";
    EXPECT_TRUE(seen.contains(p1.value().port()));
}

TEST_F(SimTest, WhatAPeerSentBeforeItUnboundStillCounts) {
    auto second = sim::attach(sim.dir(), 0);
    ASSERT_TRUE(second);
    Pair pair = bind_pairs(*dom0.events, *second.value().events, 1);
    ASSERT_EQ(pair.offered.size(), 1u);
    auto& a = pair.a;
    const Port port = pair.offered[0].port();
    ASSERT_TRUE(pair.b.notify(pair.bound[0].port()));
    pair.bound[0].reset();
    // a's outbox was shut with the binding: a asks the daemon and learns of the
    // unbinding before it reads the datagram sent before it.
    EXPECT_TRUE(a.notify(port)) << "dropped, not an error";
    EXPECT_EQ(next_port(a), port);
}

// What the issue asks of the simulator: a notify is one system call, a wait one poll, and
// pending() reads the inbox until it is empty (recvfrom: the backend's confined worker has
// no recvmmsg), with no epoll set, eventfd or daemon round trip on the way.
TEST_F(SimTest, ARoundTripCostsOneSendOneWaitAndTwoReceives) {
    constexpr int kUnsupported = 77;
    const std::filesystem::path dir = sim.dir();
    auto child = spawn_in(0, [dir](Platform& p, Link& link) {
        auto second = sim::attach(dir, 0);
        CHILD_CHECK(second);
        auto& a = *p.events;
        auto& b = *second.value().events;
        auto offered = a.bind_unbound(0);
        CHILD_CHECK(offered);
        auto bound = b.bind_interdomain(0, offered.value().port());
        CHILD_CHECK(bound);
        const Port pa = offered.value().port();
        const Port pb = bound.value().port();
        while (auto port = next_port(a, 100ms)) CHILD_CHECK(a.unmask(*port));
        for (int round = 0; round < 3; ++round) {  // warm: every allocation made
            CHILD_CHECK(b.notify(pb));
            CHILD_CHECK(next_port(a) == pa);
            CHILD_CHECK(a.unmask(pa));
            CHILD_CHECK(a.pending() && !a.pending().value());
        }
        SyscallCounter counter;
        if (!counter.start()) return kUnsupported;
        (void)counter.take();

        CHILD_CHECK(b.notify(pb));
        const auto notify = counter.take();
        CHILD_CHECK(wait_readable(a.fd()));
        const auto wait = counter.take();
        auto fired = a.pending();
        const auto pending = counter.take();
        CHILD_CHECK(fired && fired.value() == pa);
        CHILD_CHECK(a.unmask(pa));
        const auto unmask = counter.take();
        auto none = a.pending();
        const auto empty = counter.take();
        CHILD_CHECK(none && !none.value());

        CHILD_CHECK(notify.size() == 1 && notify.contains(SYS_sendto));
        CHILD_CHECK(pending.size() == 1 && pending.contains(SYS_recvfrom));
        CHILD_CHECK(empty.size() == 1 && empty.contains(SYS_recvfrom));
        for (const auto* calls : {&notify, &wait, &pending, &unmask, &empty}) {
            link.send(static_cast<uint64_t>(total(*calls)));
        }
        return 0;
    });
    std::array<std::optional<uint64_t>, 5> got{};
    for (auto& n : got) n = child.link().receive();
    const auto status = child.wait();
    if (exited_with(status, kUnsupported)) GTEST_SKIP() << "no seccomp user notification";
    ASSERT_TRUE(exited_with(status, 0)) << describe_status(status);
    EXPECT_EQ(got[0], 1u) << "notify";
    EXPECT_EQ(got[1], 1u) << "wait (poll)";
    EXPECT_EQ(got[2], 2u) << "pending, one port fired: the datagram, then EAGAIN";
    EXPECT_EQ(got[3], 0u) << "unmask";
    EXPECT_EQ(got[4], 1u) << "pending, nothing fired";
}

}  // namespace
}  // namespace xenhsa::testing
