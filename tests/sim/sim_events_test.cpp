// Event channels over xenhsa-sim: delivery across processes, masking, wake-ups through
// fd() (also under Boost.Asio), and Xen's port states when a peer unbinds or dies.
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <set>

#include "sim_fixture.hpp"

namespace xenhsa::testing {
namespace {

namespace sim = xen::sim;

constexpr uint64_t kSent = 0x5E;

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

}  // namespace
}  // namespace xenhsa::testing
