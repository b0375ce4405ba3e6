// The store behind the xenhsa-sim daemon: watches (at registration, on subtree changes,
// @releaseDomain when a guest process dies), per-domain permissions and quotas, relative
// paths, transactions between connections, large replies.
#include <set>

#include "sim_fixture.hpp"

namespace xenhsa::testing {
namespace {

namespace sim = xen::sim;
using xen::kNoTx;
using xen::WatchEvent;

// The next watch event, waiting on the store's fd.
std::optional<WatchEvent> next_event(xen::Store& store, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        auto ev = store.next_event();
        if (!ev) return std::nullopt;
        if (ev.value()) return *ev.value();
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 || !wait_readable(store.fd(), left)) return std::nullopt;
    }
}

// Waits for an event with this path and token, skipping others.
bool saw(xen::Store& store, const std::string& path, const std::string& token) {
    for (;;) {
        auto ev = next_event(store);
        if (!ev) return false;
        if (ev->path == path && ev->token == token) return true;
    }
}

TEST_F(SimTest, WatchesFireAndReleaseDomainFollowsAGuestsDeath) {
    auto& store = *dom0.store;
    ASSERT_TRUE(store.watch("@releaseDomain", "rel"));
    auto first = next_event(store);
    ASSERT_TRUE(first);
    EXPECT_EQ(first->path, "@releaseDomain") << "a watch fires once at registration";
    EXPECT_EQ(first->token, "rel");

    const DomId g = create_guest("guest");
    const std::string home = "/local/domain/" + std::to_string(g);
    ASSERT_TRUE(store.watch(home, "home"));
    EXPECT_TRUE(saw(store, home, "home"));

    auto guest = spawn_in(g, [](Platform& p, Link& link) {
        CHILD_CHECK(p.store->write(kNoTx, "data/x", "1"));
        CHILD_CHECK(link.receive());
        return 0;
    });
    EXPECT_TRUE(saw(store, home + "/data/x", "home")) << "a change below the watched node";
    EXPECT_EQ(store.read(kNoTx, home + "/data/x").value(), "1");
    guest.kill(SIGKILL);  // dies without a word
    EXPECT_TRUE(guest.wait());
    EXPECT_TRUE(saw(store, "@releaseDomain", "rel"));
    EXPECT_FALSE(alive(g));
    EXPECT_EQ(store.read(kNoTx, home).error().value(), ENOENT) << "its home is gone";
}

TEST_F(SimTest, GuestsGetXenstoredPermissionsAndQuotas) {
    const DomId g = create_guest("guest");
    const DomId other = create_guest("other");
    auto guest = spawn_in(g, [other](Platform& p, Link&) {
        auto& s = *p.store;
        CHILD_CHECK(s.read(kNoTx, "/local/domain/0/name").error().value() == EACCES);
        const std::string elsewhere = "/local/domain/" + std::to_string(other) + "/x";
        CHILD_CHECK(s.write(kNoTx, elsewhere, "1").error().value() == EACCES);
        CHILD_CHECK(s.write(kNoTx, "data/a", "1"));
        CHILD_CHECK(s.write(kNoTx, "data/big", std::string(4000, 'x')).error().value() == ENOSPC);
        auto perms = s.get_perms(kNoTx, "data/a");
        CHILD_CHECK(perms && perms.value().front().domid == p.domains->self());
        CHILD_CHECK(s.watch("@releaseDomain", "r"));  // allowed, but dom0-only events
        return 0;
    });
    const auto st = guest.wait();
    EXPECT_TRUE(exited_with(st, 0)) << describe_status(st);
}

TEST_F(SimTest, RelativeWatchesReportRelativePaths) {
    const DomId g = create_guest("guest");
    auto guest = spawn_in(g, [](Platform& p, Link&) {
        auto& s = *p.store;
        CHILD_CHECK(s.mkdir(kNoTx, "data"));
        CHILD_CHECK(s.watch("data", "t"));
        auto first = next_event(s);
        CHILD_CHECK(first && first->path == "data" && first->token == "t");
        CHILD_CHECK(s.write(kNoTx, "data/k", "v"));
        auto change = next_event(s);
        CHILD_CHECK(change && change->path == "data/k");
        CHILD_CHECK(s.unwatch("data", "t"));
        CHILD_CHECK(s.write(kNoTx, "data/k", "w"));
        auto none = s.next_event();
        CHILD_CHECK(none && !none.value());
        return 0;
    });
    const auto st = guest.wait();
    EXPECT_TRUE(exited_with(st, 0)) << describe_status(st);
}

TEST_F(SimTest, EventsArrivingDuringARequestKeepTheFdReadable) {
    auto& store = *dom0.store;
    ASSERT_TRUE(store.watch("/local/domain/0/w", "w"));
    // Our own write's event is queued on the socket while we wait for the reply; the
    // client buffers it, and fd() must still say so.
    ASSERT_TRUE(store.write(kNoTx, "/local/domain/0/w", "1"));
    ASSERT_TRUE(store.read(kNoTx, "/local/domain/0/w"));
    ASSERT_TRUE(wait_readable(store.fd(), 0ms)) << "readable at once: events are buffered";
    std::vector<std::string> paths;
    for (;;) {
        auto ev = store.next_event();
        ASSERT_TRUE(ev);
        if (!ev.value()) break;
        paths.push_back(ev.value()->path);
    }
    EXPECT_EQ(paths, (std::vector<std::string>{"/local/domain/0/w", "/local/domain/0/w"}))
        << "the registration event, then the write's";
}

TEST_F(SimTest, TransactionsConflictAcrossConnections) {
    auto other = sim::attach(sim.dir(), 0);
    ASSERT_TRUE(other);
    auto& a = *dom0.store;
    auto& b = *other.value().store;
    ASSERT_TRUE(a.write(kNoTx, "/tx/node", "0"));
    auto tx = a.transaction_start();
    ASSERT_TRUE(tx);
    EXPECT_EQ(a.read(tx.value(), "/tx/node").value(), "0");
    ASSERT_TRUE(a.write(tx.value(), "/tx/node", "a"));
    ASSERT_TRUE(b.write(kNoTx, "/tx/node", "b"));
    EXPECT_EQ(a.transaction_end(tx.value(), true).error().value(), EAGAIN);
    EXPECT_EQ(a.read(kNoTx, "/tx/node").value(), "b");
    tx = a.transaction_start();
    ASSERT_TRUE(tx);
    ASSERT_TRUE(a.write(tx.value(), "/tx/node", "a"));
    EXPECT_TRUE(a.transaction_end(tx.value(), true));
    EXPECT_EQ(b.read(kNoTx, "/tx/node").value(), "a");
    EXPECT_EQ(a.transaction_end(12345, true).error().value(), ENOENT);
}

TEST_F(SimTest, LargeDirectoriesAndPermissionLists) {
    auto& s = *dom0.store;
    std::set<std::string> names;
    for (int i = 0; i < 600; ++i) {
        const std::string name = std::string(120, 'n') + std::to_string(i);
        ASSERT_TRUE(s.write(kNoTx, "/big/" + name, "v"));
        names.insert(name);
    }
    auto dir = s.directory(kNoTx, "/big");  // over 70 KiB: a bulk reply
    ASSERT_TRUE(dir);
    EXPECT_EQ(std::set<std::string>(dir.value().begin(), dir.value().end()), names);

    const std::vector<xen::StorePerm> perms{
        {5, xen::StoreAccess::none}, {7, xen::StoreAccess::read}, {9, xen::StoreAccess::both}};
    ASSERT_TRUE(s.set_perms(kNoTx, "/big", perms));
    EXPECT_EQ(s.get_perms(kNoTx, "/big").value(), perms);
    EXPECT_EQ(s.set_perms(kNoTx, "/big", {}).error().value(), EINVAL);
}

}  // namespace
}  // namespace xenhsa::testing
