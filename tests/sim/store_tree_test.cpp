// The simulated xenstore's data model against xenstored semantics.
#include <gtest/gtest.h>

#include <string>
#include <vector>
#include <xenhsa/xen/sim/store_tree.hpp>

namespace {

using xenhsa::xen::DomId;
using xenhsa::xen::errc;
using xenhsa::xen::kNoTx;
using xenhsa::xen::Result;
using xenhsa::xen::StoreAccess;
using xenhsa::xen::StorePerm;
using xenhsa::xen::TxId;
using xenhsa::xen::WatchEvent;
using xenhsa::xen::sim::ConnId;
using xenhsa::xen::sim::PermList;
using xenhsa::xen::sim::StoreQuotas;
using xenhsa::xen::sim::StoreTree;

template <class T>
std::error_code ec(const Result<T>& r) {
    return r.has_error() ? r.error() : std::error_code{};
}

const std::error_code kOk{};
const std::error_code kEINVAL = errc(std::errc::invalid_argument);
const std::error_code kENOENT = errc(std::errc::no_such_file_or_directory);
const std::error_code kEACCES = errc(std::errc::permission_denied);
const std::error_code kEPERM = errc(std::errc::operation_not_permitted);
const std::error_code kEAGAIN = errc(std::errc::resource_unavailable_try_again);
const std::error_code kEEXIST = errc(std::errc::file_exists);
const std::error_code kENOSPC = errc(std::errc::no_space_on_device);
const std::error_code kE2BIG = errc(std::errc::argument_list_too_long);
const std::error_code kEBADF = errc(std::errc::bad_file_descriptor);

std::string home(DomId dom) { return "/local/domain/" + std::to_string(dom); }

class StoreTreeTest : public ::testing::Test {
protected:
    explicit StoreTreeTest(StoreQuotas quotas = {}) : store(quotas) { dom0 = open(0); }

    ConnId open(DomId dom) {
        auto c = store.open_connection(dom);
        EXPECT_TRUE(c.has_value());
        return c.has_value() ? c.value() : 0;
    }

    // Introduces `dom` and opens a connection for it.
    ConnId guest(DomId dom) {
        EXPECT_EQ(ec(store.introduce_domain(dom)), kOk);
        return open(dom);
    }

    std::vector<std::pair<std::string, std::string>> drain(ConnId c) {
        std::vector<std::pair<std::string, std::string>> events;
        for (;;) {
            auto ev = store.next_event(c);
            EXPECT_TRUE(ev.has_value());
            if (!ev.has_value() || !ev.value()) break;
            events.emplace_back(ev.value()->path, ev.value()->token);
        }
        return events;
    }

    std::string read(ConnId c, const std::string& path, TxId tx = kNoTx) {
        auto v = store.read(c, path, tx);
        return v.has_value() ? v.value() : "<" + v.error().message() + ">";
    }

    StoreTree store;
    ConnId dom0 = 0;
};

using Events = std::vector<std::pair<std::string, std::string>>;

// --- paths and basic operations -------------------------------------------------------------

TEST_F(StoreTreeTest, PathValidationFollowsXenstored) {
    for (const char* bad : {"", "a/b", "/a/", "/a//b", "//", "/a b", "/a.b", "/a:b"}) {
        EXPECT_EQ(ec(store.write(dom0, bad, "v")), kEINVAL) << bad;
        EXPECT_EQ(ec(store.read(dom0, bad)), kEINVAL) << bad;
    }
    EXPECT_EQ(ec(store.write(dom0, "@releaseDomain", "v")), kEINVAL);
    EXPECT_EQ(ec(store.read(dom0, "@introduceDomain")), kEINVAL);

    const std::string longest = "/" + std::string(3071, 'a');  // 3072 bytes
    EXPECT_EQ(ec(store.write(dom0, longest, "")), kOk);
    EXPECT_EQ(ec(store.write(dom0, longest + "b", "")), kEINVAL);
    EXPECT_EQ(ec(store.write(dom0, "/A-z_0@9/x", "v")), kOk);
    EXPECT_EQ(read(dom0, "/"), "");
}

TEST_F(StoreTreeTest, WriteCreatesParentsAndValuesAreBytes) {
    const std::string binary("a\0b\xff", 4);
    ASSERT_EQ(ec(store.write(dom0, "/a/b/c", binary)), kOk);
    EXPECT_EQ(read(dom0, "/a/b/c"), binary);
    EXPECT_EQ(read(dom0, "/a/b"), "");
    EXPECT_EQ(read(dom0, "/a"), "");
    ASSERT_EQ(ec(store.write(dom0, "/a/b/c", "new")), kOk);
    EXPECT_EQ(read(dom0, "/a/b/c"), "new");
    EXPECT_EQ(ec(store.read(dom0, "/a/x")), kENOENT);
}

TEST_F(StoreTreeTest, DirectoryListsSortedChildNames) {
    for (const char* p : {"/d/zeta", "/d/mid/deep", "/d/alpha"})
        ASSERT_EQ(ec(store.write(dom0, p, "")), kOk);
    auto dir = store.directory(dom0, "/d");
    ASSERT_TRUE(dir.has_value());
    EXPECT_EQ(dir.value(), (std::vector<std::string>{"alpha", "mid", "zeta"}));
    EXPECT_EQ(store.directory(dom0, "/d/alpha").value(), std::vector<std::string>{});
    EXPECT_EQ(ec(store.directory(dom0, "/nope")), kENOENT);
}

TEST_F(StoreTreeTest, MkdirKeepsExistingValuesAndCreatesParents) {
    ASSERT_EQ(ec(store.write(dom0, "/a", "x")), kOk);
    EXPECT_EQ(ec(store.mkdir(dom0, "/a")), kOk);
    EXPECT_EQ(read(dom0, "/a"), "x");
    EXPECT_EQ(ec(store.mkdir(dom0, "/p/q")), kOk);
    EXPECT_EQ(read(dom0, "/p"), "");
    EXPECT_EQ(read(dom0, "/p/q"), "");
}

TEST_F(StoreTreeTest, RmIsRecursiveAndFollowsXenstoredErrors) {
    ASSERT_EQ(ec(store.write(dom0, "/a/b/c", "1")), kOk);
    ASSERT_EQ(ec(store.write(dom0, "/a/d", "2")), kOk);
    ASSERT_EQ(ec(store.rm(dom0, "/a/b")), kOk);
    EXPECT_EQ(ec(store.read(dom0, "/a/b/c")), kENOENT);
    EXPECT_EQ(ec(store.read(dom0, "/a/b")), kENOENT);
    EXPECT_EQ(store.directory(dom0, "/a").value(), std::vector<std::string>{"d"});
    EXPECT_EQ(ec(store.rm(dom0, "/a/b")), kOk);      // missing, parent exists: fine
    EXPECT_EQ(ec(store.rm(dom0, "/x/y")), kENOENT);  // parent missing too
    EXPECT_EQ(ec(store.rm(dom0, "/")), kEINVAL);
    EXPECT_EQ(read(dom0, "/a/d"), "2");
}

// --- permissions ---------------------------------------------------------------------------------

TEST_F(StoreTreeTest, GuestCannotReadOrProbeAnotherDomainsHome) {
    const ConnId c1 = guest(1);
    const ConnId c2 = guest(2);
    ASSERT_EQ(ec(store.write(c1, home(1) + "/secret", "s")), kOk);
    EXPECT_EQ(read(c1, home(1) + "/secret"), "s");
    EXPECT_EQ(ec(store.read(c2, home(1) + "/secret")), kEACCES);
    EXPECT_EQ(ec(store.directory(c2, home(1))), kEACCES);
    EXPECT_EQ(ec(store.write(c2, home(1) + "/secret", "x")), kEACCES);
    EXPECT_EQ(ec(store.write(c2, home(1) + "/new", "x")), kEACCES);
    // A missing node below an unreadable one is EACCES too: no probing.
    EXPECT_EQ(ec(store.read(c2, home(1) + "/missing/deeper")), kEACCES);
    EXPECT_EQ(ec(store.read(c1, home(1) + "/missing")), kENOENT);
    // dom0 bypasses permissions.
    EXPECT_EQ(read(dom0, home(1) + "/secret"), "s");
}

TEST_F(StoreTreeTest, OwnerGrantsReadToOneDomain) {
    const ConnId c1 = guest(1);
    const ConnId c2 = guest(2);
    const ConnId c3 = guest(3);
    const std::string node = home(1) + "/shared";
    ASSERT_EQ(ec(store.write(c1, node, "v")), kOk);
    const PermList perms{{1, StoreAccess::none}, {2, StoreAccess::read}};
    ASSERT_EQ(ec(store.set_perms(c1, node, perms)), kOk);
    EXPECT_EQ(read(c2, node), "v");
    EXPECT_EQ(ec(store.write(c2, node, "w")), kEACCES);
    EXPECT_EQ(ec(store.read(c3, node)), kEACCES);
    EXPECT_EQ(store.get_perms(c2, node).value(), perms);
}

TEST_F(StoreTreeTest, OnlyOwnerSetsPermsAndOnlyDom0ChangesOwner) {
    const ConnId c1 = guest(1);
    const ConnId c2 = guest(2);
    const std::string node = home(1) + "/n";
    ASSERT_EQ(ec(store.write(c1, node, "")), kOk);
    ASSERT_EQ(ec(store.set_perms(c1, node, {{1, StoreAccess::none}, {2, StoreAccess::both}})), kOk);
    // A write grant does not make dom2 an owner.
    EXPECT_EQ(ec(store.write(c2, node, "ok")), kOk);
    EXPECT_EQ(ec(store.set_perms(c2, node, {{1, StoreAccess::both}})), kEACCES);
    EXPECT_EQ(ec(store.set_perms(c1, node, {{2, StoreAccess::none}})), kEPERM);
    EXPECT_EQ(ec(store.set_perms(c1, node, {})), kEINVAL);
    ASSERT_EQ(ec(store.set_perms(dom0, node, {{2, StoreAccess::none}})), kOk);
    EXPECT_EQ(ec(store.set_perms(c2, node, {{2, StoreAccess::read}})), kOk);
    EXPECT_EQ(ec(store.read(c1, node)), kOk);  // others may now read only
    EXPECT_EQ(ec(store.write(c1, node, "x")), kEACCES);
}

TEST_F(StoreTreeTest, NewNodesInheritParentPermsButGuestsOwnWhatTheyCreate) {
    const ConnId c1 = guest(1);
    guest(2);
    ASSERT_EQ(ec(store.set_perms(c1, home(1), {{1, StoreAccess::none}, {2, StoreAccess::read}})),
              kOk);
    ASSERT_EQ(ec(store.write(c1, home(1) + "/x/y", "v")), kOk);
    const PermList inherited{{1, StoreAccess::none}, {2, StoreAccess::read}};
    EXPECT_EQ(store.get_perms(dom0, home(1) + "/x").value(), inherited);
    EXPECT_EQ(store.get_perms(dom0, home(1) + "/x/y").value(), inherited);
    // dom0's new nodes keep the inherited owner.
    ASSERT_EQ(ec(store.write(dom0, home(1) + "/z", "")), kOk);
    EXPECT_EQ(store.get_perms(dom0, home(1) + "/z").value(), inherited);
    // A guest writing into a world-writable node owned by dom0 owns the new node.
    ASSERT_EQ(ec(store.mkdir(dom0, "/pub")), kOk);
    ASSERT_EQ(ec(store.set_perms(dom0, "/pub", {{0, StoreAccess::both}})), kOk);
    ASSERT_EQ(ec(store.write(c1, "/pub/n", "")), kOk);
    EXPECT_EQ(store.get_perms(dom0, "/pub/n").value(), (PermList{{1, StoreAccess::both}}));
}

// --- transactions
// ----------------------------------------------------------------------------------

TEST_F(StoreTreeTest, TransactionSeesSnapshotPlusOwnWrites) {
    ASSERT_EQ(ec(store.write(dom0, "/a", "1")), kOk);
    ASSERT_EQ(ec(store.write(dom0, "/c", "old")), kOk);
    auto tx = store.transaction_start(dom0);
    ASSERT_TRUE(tx.has_value());
    ASSERT_NE(tx.value(), kNoTx);
    ASSERT_EQ(ec(store.write(dom0, "/a", "2", tx.value())), kOk);
    ASSERT_EQ(ec(store.write(dom0, "/t/new", "n", tx.value())), kOk);
    EXPECT_EQ(read(dom0, "/a", tx.value()), "2");
    EXPECT_EQ(read(dom0, "/a"), "1");
    EXPECT_EQ(ec(store.read(dom0, "/t/new")), kENOENT);
    // A change to a node the transaction never touched is no conflict. (Creating a
    // sibling of /t would be one: both change the children of "/", as in xenstored.)
    const ConnId other = open(0);
    ASSERT_EQ(ec(store.write(other, "/c", "x")), kOk);
    EXPECT_EQ(ec(store.directory(dom0, "/t", tx.value())), kOk);
    ASSERT_EQ(ec(store.transaction_end(dom0, tx.value(), true)), kOk);
    EXPECT_EQ(read(dom0, "/a"), "2");
    EXPECT_EQ(read(dom0, "/t/new"), "n");
    EXPECT_EQ(read(dom0, "/c"), "x");
}

TEST_F(StoreTreeTest, ConflictingCommitFailsWithEagainAndEndsTransaction) {
    ASSERT_EQ(ec(store.write(dom0, "/a", "1")), kOk);
    const ConnId other = open(0);

    auto tx = store.transaction_start(dom0).value();
    EXPECT_EQ(read(dom0, "/a", tx), "1");
    ASSERT_EQ(ec(store.write(dom0, "/b", "from-tx", tx)), kOk);
    ASSERT_EQ(ec(store.write(other, "/a", "changed")), kOk);
    EXPECT_EQ(ec(store.transaction_end(dom0, tx, true)), kEAGAIN);
    EXPECT_EQ(ec(store.read(dom0, "/b")), kENOENT);
    EXPECT_EQ(ec(store.transaction_end(dom0, tx, true)), kENOENT);
    EXPECT_EQ(ec(store.read(dom0, "/a", tx)), kENOENT);

    // Written only (not read): still a conflict.
    auto tx2 = store.transaction_start(dom0).value();
    ASSERT_EQ(ec(store.write(dom0, "/a", "tx2", tx2)), kOk);
    ASSERT_EQ(ec(store.rm(other, "/a")), kOk);
    EXPECT_EQ(ec(store.transaction_end(dom0, tx2, true)), kEAGAIN);

    // Reading a missing node, which someone else then creates: conflict.
    auto tx3 = store.transaction_start(dom0).value();
    EXPECT_EQ(ec(store.read(dom0, "/late", tx3)), kENOENT);
    ASSERT_EQ(ec(store.write(other, "/late", "x")), kOk);
    EXPECT_EQ(ec(store.transaction_end(dom0, tx3, true)), kEAGAIN);
}

TEST_F(StoreTreeTest, AbortDiscardsAndTransactionsBelongToTheirConnection) {
    ASSERT_EQ(ec(store.write(dom0, "/keep/x", "1")), kOk);
    auto tx = store.transaction_start(dom0).value();
    ASSERT_EQ(ec(store.write(dom0, "/gone", "1", tx)), kOk);
    ASSERT_EQ(ec(store.rm(dom0, "/keep", tx)), kOk);
    ASSERT_EQ(ec(store.mkdir(dom0, "/dir", tx)), kOk);
    const ConnId other = open(0);
    EXPECT_EQ(ec(store.read(other, "/gone", tx)), kENOENT);  // not its transaction
    ASSERT_EQ(ec(store.transaction_end(dom0, tx, false)), kOk);
    EXPECT_EQ(ec(store.read(dom0, "/gone")), kENOENT);
    EXPECT_EQ(ec(store.read(dom0, "/dir")), kENOENT);
    EXPECT_EQ(read(dom0, "/keep/x"), "1");
}

TEST_F(StoreTreeTest, WatchesFireOnlyWhenATransactionCommits) {
    const ConnId watcher = open(0);
    ASSERT_EQ(ec(store.watch(watcher, "/a", "tok")), kOk);
    drain(watcher);

    auto aborted = store.transaction_start(dom0).value();
    ASSERT_EQ(ec(store.write(dom0, "/a/x", "1", aborted)), kOk);
    ASSERT_EQ(ec(store.transaction_end(dom0, aborted, false)), kOk);
    EXPECT_TRUE(drain(watcher).empty());

    auto tx = store.transaction_start(dom0).value();
    ASSERT_EQ(ec(store.write(dom0, "/a/y", "1", tx)), kOk);
    EXPECT_TRUE(drain(watcher).empty());
    ASSERT_EQ(ec(store.transaction_end(dom0, tx, true)), kOk);
    EXPECT_EQ(drain(watcher), (Events{{"/a/y", "tok"}}));
}

// --- quotas
// -------------------------------------------------------------------------------------------

class StoreQuotaTest : public StoreTreeTest {
protected:
    static StoreQuotas small() {
        StoreQuotas q;
        q.max_nodes = 3;
        q.max_watches = 2;
        q.max_transactions = 1;
        q.max_perms = 2;
        q.max_transaction_nodes = 3;
        return q;
    }
    StoreQuotaTest() : StoreTreeTest(small()) {}
};

TEST_F(StoreQuotaTest, NodesOwnedAreLimitedPerGuest) {
    const ConnId c1 = guest(1);  // owns its home: 1 node
    ASSERT_EQ(ec(store.write(c1, home(1) + "/a", "")), kOk);
    ASSERT_EQ(ec(store.write(c1, home(1) + "/b", "")), kOk);
    EXPECT_EQ(ec(store.write(c1, home(1) + "/c", "")), kENOSPC);
    EXPECT_EQ(ec(store.mkdir(c1, home(1) + "/x/y")), kENOSPC);
    EXPECT_EQ(store.directory(c1, home(1)).value(), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(ec(store.write(dom0, home(1) + "/d", "")), kOk);  // dom0 is not limited
    ASSERT_EQ(ec(store.rm(c1, home(1) + "/a")), kOk);
    ASSERT_EQ(ec(store.rm(dom0, home(1) + "/d")), kOk);
    EXPECT_EQ(ec(store.write(c1, home(1) + "/c", "")), kOk);
}

TEST_F(StoreTreeTest, ValueSizeAndPayloadLimits) {
    const ConnId c1 = guest(1);
    EXPECT_EQ(ec(store.write(c1, home(1) + "/v", std::string(2048, 'x'))), kOk);
    EXPECT_EQ(ec(store.write(c1, home(1) + "/v", std::string(2049, 'x'))), kENOSPC);
    EXPECT_EQ(ec(store.write(dom0, home(1) + "/v", std::string(2049, 'x'))), kOk);
    EXPECT_EQ(ec(store.write(dom0, "/big", std::string(4096, 'x'))), kE2BIG);
}

TEST_F(StoreQuotaTest, WatchesTransactionsAndPermsAreLimited) {
    const ConnId c1 = guest(1);
    const ConnId c1b = open(1);  // the quota is per domain, not per connection
    ASSERT_EQ(ec(store.watch(c1, "/w1", "t")), kOk);
    ASSERT_EQ(ec(store.watch(c1b, "/w2", "t")), kOk);
    EXPECT_EQ(ec(store.watch(c1, "/w3", "t")), kE2BIG);
    ASSERT_EQ(ec(store.unwatch(c1b, "/w2", "t")), kOk);
    EXPECT_EQ(ec(store.watch(c1, "/w3", "t")), kOk);

    auto tx = store.transaction_start(c1);
    ASSERT_TRUE(tx.has_value());
    EXPECT_EQ(ec(store.transaction_start(c1b)), kENOSPC);
    ASSERT_EQ(ec(store.transaction_end(c1, tx.value(), false)), kOk);
    EXPECT_EQ(ec(store.transaction_start(c1b)), kOk);

    const PermList three{{1, StoreAccess::none}, {2, StoreAccess::read}, {3, StoreAccess::read}};
    EXPECT_EQ(ec(store.set_perms(c1, home(1), three)), kENOSPC);
    EXPECT_EQ(ec(store.set_perms(dom0, home(1), three)), kOk);

    for (const char* p : {"/w4", "/w5", "/w6"}) EXPECT_EQ(ec(store.watch(dom0, p, "t")), kOk);
}

TEST_F(StoreQuotaTest, TransactionTouchesABoundedNumberOfNodes) {
    const ConnId c1 = guest(1);
    auto tx = store.transaction_start(c1).value();
    EXPECT_EQ(ec(store.read(c1, home(1) + "/a", tx)), kENOENT);
    EXPECT_EQ(ec(store.read(c1, home(1) + "/b", tx)), kENOENT);
    EXPECT_EQ(ec(store.read(c1, home(1) + "/a", tx)), kENOENT);  // already counted
    EXPECT_EQ(ec(store.read(c1, home(1) + "/c", tx)), kENOENT);
    EXPECT_EQ(ec(store.read(c1, home(1) + "/d", tx)), kENOSPC);
}

// --- watches
// -----------------------------------------------------------------------------------------------

TEST_F(StoreTreeTest, WatchFiresAtRegistrationAndForTheSubtreeOnly) {
    const ConnId w = open(0);
    ASSERT_EQ(ec(store.watch(w, "/a", "tok")), kOk);
    EXPECT_EQ(drain(w), (Events{{"/a", "tok"}}));  // even though /a does not exist
    ASSERT_EQ(ec(store.write(dom0, "/a/b/c", "1")), kOk);
    ASSERT_EQ(ec(store.write(dom0, "/other", "1")), kOk);
    ASSERT_EQ(ec(store.write(dom0, "/ab", "1")), kOk);  // a prefix, not a child
    ASSERT_EQ(ec(store.write(dom0, "/a", "2")), kOk);
    ASSERT_EQ(ec(store.set_perms(dom0, "/a/b", {{0, StoreAccess::read}})), kOk);
    ASSERT_EQ(ec(store.mkdir(dom0, "/a/b")), kOk);  // exists: no change, no event
    EXPECT_EQ(drain(w), (Events{{"/a/b/c", "tok"}, {"/a", "tok"}, {"/a/b", "tok"}}));
}

TEST_F(StoreTreeTest, IdenticalQueuedEventsAreCoalesced) {
    const ConnId w = open(0);
    ASSERT_EQ(ec(store.watch(w, "/a", "tok")), kOk);
    drain(w);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(ec(store.write(dom0, "/a", std::to_string(i))), kOk);
    EXPECT_EQ(drain(w), (Events{{"/a", "tok"}}));
}

TEST_F(StoreTreeTest, RmOfAnAncestorFiresWithTheWatchedPath) {
    ASSERT_EQ(ec(store.write(dom0, "/a/b/c", "1")), kOk);
    ASSERT_EQ(ec(store.write(dom0, "/z", "1")), kOk);
    const ConnId w = open(0);
    ASSERT_EQ(ec(store.watch(w, "/a/b/c", "deep")), kOk);
    ASSERT_EQ(ec(store.watch(w, "/", "root")), kOk);
    ASSERT_EQ(ec(store.watch(w, "/z", "unrelated")), kOk);
    drain(w);
    ASSERT_EQ(ec(store.rm(dom0, "/a")), kOk);
    EXPECT_EQ(drain(w), (Events{{"/a/b/c", "deep"}, {"/a", "root"}}));
}

TEST_F(StoreTreeTest, WatchRegistrationErrorsAndUnwatchLeavesNoStaleEvents) {
    const ConnId w = open(0);
    ASSERT_EQ(ec(store.watch(w, "/a", "t1")), kOk);
    EXPECT_EQ(ec(store.watch(w, "/a", "t1")), kEEXIST);
    ASSERT_EQ(ec(store.watch(w, "/a", "t2")), kOk);
    EXPECT_EQ(ec(store.watch(w, "a", "t3")), kEINVAL);
    EXPECT_EQ(ec(store.unwatch(w, "/a", "nope")), kENOENT);
    EXPECT_EQ(ec(store.unwatch(w, "/b", "t1")), kENOENT);
    drain(w);

    ASSERT_EQ(ec(store.write(dom0, "/a", "queued")), kOk);
    ASSERT_EQ(ec(store.unwatch(w, "/a", "t1")), kOk);
    EXPECT_EQ(drain(w), (Events{{"/a", "t2"}}));  // t1's queued event was purged
    ASSERT_EQ(ec(store.write(dom0, "/a", "after")), kOk);
    EXPECT_EQ(drain(w), (Events{{"/a", "t2"}}));
    EXPECT_EQ(ec(store.unwatch(w, "/a", "t1")), kENOENT);
}

TEST_F(StoreTreeTest, WatchersOnlySeeChangesTheyMayRead) {
    const ConnId c1 = guest(1);
    const ConnId c2 = guest(2);
    const std::string node = home(1) + "/x";
    ASSERT_EQ(ec(store.watch(c2, home(1), "spy")), kOk);
    EXPECT_EQ(drain(c2), (Events{{home(1), "spy"}}));  // registration is unfiltered
    ASSERT_EQ(ec(store.watch(dom0, home(1), "tool")), kOk);
    drain(dom0);

    ASSERT_EQ(ec(store.write(c1, node, "1")), kOk);
    EXPECT_TRUE(drain(c2).empty());
    EXPECT_EQ(drain(dom0), (Events{{node, "tool"}}));

    ASSERT_EQ(ec(store.set_perms(c1, node, {{1, StoreAccess::none}, {2, StoreAccess::read}})), kOk);
    EXPECT_EQ(drain(c2), (Events{{node, "spy"}}));
    ASSERT_EQ(ec(store.write(c1, node, "2")), kOk);
    EXPECT_EQ(drain(c2), (Events{{node, "spy"}}));
    // Losing read access is still reported (old permissions), later changes are not.
    ASSERT_EQ(ec(store.set_perms(c1, node, {{1, StoreAccess::none}})), kOk);
    EXPECT_EQ(drain(c2), (Events{{node, "spy"}}));
    ASSERT_EQ(ec(store.write(c1, node, "3")), kOk);
    EXPECT_TRUE(drain(c2).empty());
}

class StoreQueueTest : public StoreTreeTest {
protected:
    static StoreQuotas tiny_queue() {
        StoreQuotas q;
        q.max_queued_events = 4;
        return q;
    }
    StoreQueueTest() : StoreTreeTest(tiny_queue()) {}
};

TEST_F(StoreQueueTest, EventQueueIsBoundedAndCountsDrops) {
    const ConnId w = open(0);
    ASSERT_EQ(ec(store.watch(w, "/", "all")), kOk);  // 1 registration event
    for (int i = 0; i < 10; ++i) {
        ASSERT_EQ(ec(store.write(dom0, "/n" + std::to_string(i), "")), kOk);
    }
    EXPECT_EQ(store.pending_events(w).value(), 4U);
    EXPECT_EQ(store.dropped_events(w).value(), 7U);
    EXPECT_EQ(drain(w), (Events{{"/n6", "all"}, {"/n7", "all"}, {"/n8", "all"}, {"/n9", "all"}}));
    EXPECT_EQ(ec(store.pending_events(12345)), kEBADF);
}

// --- domains and connections
// ----------------------------------------------------------------------------

TEST_F(StoreTreeTest, IntroduceAndReleaseDomainFireSpecialWatches) {
    ASSERT_EQ(ec(store.watch(dom0, "@introduceDomain", "in")), kOk);
    ASSERT_EQ(ec(store.watch(dom0, "@releaseDomain", "out")), kOk);
    ASSERT_EQ(ec(store.watch(dom0, "/local/domain", "homes")), kOk);
    drain(dom0);

    ASSERT_EQ(ec(store.introduce_domain(5)), kOk);
    EXPECT_TRUE(store.is_domain_introduced(5));
    EXPECT_EQ(drain(dom0), (Events{{home(5), "homes"}, {"@introduceDomain", "in"}}));
    EXPECT_EQ(store.get_perms(dom0, home(5)).value(), (PermList{{5, StoreAccess::none}}));
    EXPECT_EQ(ec(store.introduce_domain(5)), kEEXIST);
    EXPECT_EQ(ec(store.introduce_domain(0)), kEINVAL);

    const ConnId c5 = open(5);
    ASSERT_EQ(ec(store.write(c5, home(5) + "/data", "x")), kOk);
    ASSERT_EQ(ec(store.watch(c5, home(5), "mine")), kOk);
    drain(dom0);

    ASSERT_EQ(ec(store.release_domain(5)), kOk);
    EXPECT_FALSE(store.is_domain_introduced(5));
    EXPECT_EQ(ec(store.read(dom0, home(5))), kENOENT);
    EXPECT_EQ(drain(dom0), (Events{{home(5), "homes"}, {"@releaseDomain", "out"}}));
    EXPECT_TRUE(drain(c5).empty());  // the dead domain's watches are gone
    EXPECT_EQ(ec(store.release_domain(5)), kENOENT);
    EXPECT_EQ(ec(store.fire_special("@releaseDomain")), kOk);
    EXPECT_EQ(drain(dom0), (Events{{"@releaseDomain", "out"}}));
    EXPECT_EQ(ec(store.fire_special("@other")), kEINVAL);
}

TEST_F(StoreTreeTest, SpecialEventsReachGuestsOnlyWhenGranted) {
    const ConnId c2 = guest(2);
    ASSERT_EQ(ec(store.watch(c2, "@releaseDomain", "rel")), kOk);
    EXPECT_EQ(drain(c2), (Events{{"@releaseDomain", "rel"}}));
    ASSERT_EQ(ec(store.fire_special("@releaseDomain")), kOk);
    EXPECT_TRUE(drain(c2).empty());

    EXPECT_EQ(ec(store.get_perms(c2, "@releaseDomain")), kEACCES);
    EXPECT_EQ(ec(store.set_perms(c2, "@releaseDomain", {{2, StoreAccess::read}})), kEACCES);
    const PermList grant{{0, StoreAccess::none}, {2, StoreAccess::read}};
    ASSERT_EQ(ec(store.set_perms(dom0, "@releaseDomain", grant)), kOk);
    EXPECT_EQ(store.get_perms(c2, "@releaseDomain").value(), grant);
    ASSERT_EQ(ec(store.fire_special("@releaseDomain")), kOk);
    ASSERT_EQ(ec(store.fire_special("@releaseDomain")), kOk);  // specials are not coalesced
    EXPECT_EQ(drain(c2), (Events{{"@releaseDomain", "rel"}, {"@releaseDomain", "rel"}}));
}

TEST_F(StoreQuotaTest, CloseConnectionDropsItsWatchesAndTransactions) {
    const ConnId c1 = guest(1);
    ASSERT_TRUE(store.transaction_start(c1).has_value());
    ASSERT_EQ(ec(store.watch(c1, "/w1", "t")), kOk);
    ASSERT_EQ(ec(store.watch(c1, "/w2", "t")), kOk);
    ASSERT_EQ(ec(store.close_connection(c1)), kOk);
    EXPECT_EQ(ec(store.next_event(c1)), kEBADF);
    EXPECT_EQ(ec(store.close_connection(c1)), kEBADF);

    const ConnId again = open(1);  // the domain's quotas were given back
    EXPECT_TRUE(store.transaction_start(again).has_value());
    EXPECT_EQ(ec(store.watch(again, "/w1", "t")), kOk);
    EXPECT_EQ(ec(store.watch(again, "/w2", "t")), kOk);
}

TEST_F(StoreTreeTest, ReleasedDomainLeavesNothingForAReusedDomid) {
    ASSERT_EQ(ec(store.mkdir(dom0, "/pub")), kOk);
    ASSERT_EQ(ec(store.set_perms(dom0, "/pub", {{0, StoreAccess::both}})), kOk);
    ASSERT_EQ(ec(store.mkdir(dom0, "/granted")), kOk);
    ASSERT_EQ(
        ec(store.set_perms(dom0, "/granted", {{0, StoreAccess::none}, {7, StoreAccess::read}})),
        kOk);
    const ConnId c7 = guest(7);
    ASSERT_EQ(ec(store.write(c7, "/pub/mine", "x")), kOk);
    ASSERT_EQ(read(c7, "/granted"), "");

    ASSERT_EQ(ec(store.release_domain(7)), kOk);
    EXPECT_EQ(store.get_perms(dom0, "/pub/mine").value(), (PermList{{0, StoreAccess::both}}));
    EXPECT_EQ(store.get_perms(dom0, "/granted").value(), (PermList{{0, StoreAccess::none}}));
    const ConnId reused = guest(7);
    EXPECT_EQ(ec(store.read(reused, "/granted")), kEACCES);
    EXPECT_EQ(ec(store.set_perms(reused, "/pub/mine", {{7, StoreAccess::none}})), kEACCES);
}

TEST_F(StoreTreeTest, UnknownConnectionsAndReservedDomidsAreRejected) {
    EXPECT_EQ(ec(store.read(999, "/")), kEBADF);
    EXPECT_EQ(ec(store.write(999, "/a", "")), kEBADF);
    EXPECT_EQ(ec(store.transaction_start(999)), kEBADF);
    EXPECT_EQ(ec(store.open_connection(0x7FF0)), kEINVAL);
    EXPECT_EQ(ec(store.read(dom0, "/", 42)), kENOENT);
}

}  // namespace
