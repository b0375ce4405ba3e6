// A dom0 connection that acts for one guest (xen::sim::attach_acting_for, what a backend's
// worker opens): the daemon refuses it every grant, share, event channel, store path and
// liveness query of another domain, and foreign memory, while dom0's own connection keeps
// them all (issue 25, item 2).
#include <cerrno>
#include <optional>
#include <string>

#include "sim_fixture.hpp"

namespace xenhsa::testing {
namespace {

namespace sim = xen::sim;

// A guest that shares one page with dom0, sends its ref and waits for the word to go.
int share_one_page(Platform& p, Link& link) {
    auto shared = p.sharer->share({.peer = 0, .pages = 1, .writable = true});
    CHILD_CHECK(shared);
    link.send(shared.value().refs()[0]);
    (void)link.receive();
    return 0;
}

int error_of(const auto& result) { return result ? 0 : result.error().value(); }

template <class T>
T value_or(xen::Result<T> result, T otherwise) {
    return result ? std::move(result).value() : otherwise;
}

class ActingForTest : public SimTest {
protected:
    void SetUp() override {
        SimTest::SetUp();
        one = create_guest("one");
        other = create_guest("other");
        ones_guest.emplace(spawn_in(one, share_one_page));
        others_guest.emplace(spawn_in(other, share_one_page));
        auto ref = ones_guest->link().receive();
        auto other_ref = others_guest->link().receive();
        ASSERT_TRUE(ref && other_ref);
        ones_ref = static_cast<GrantRef>(*ref);
        others_ref = static_cast<GrantRef>(*other_ref);
        auto attached = sim::attach_acting_for(sim.dir(), 0, one);
        ASSERT_TRUE(attached) << attached.error().message();
        worker = std::move(attached.value());
    }
    void TearDown() override {
        for (auto* guest : {&ones_guest, &others_guest}) {
            if (*guest) {
                (*guest)->link().send(0);
            }
        }
    }
    [[nodiscard]] std::string backend_dir(DomId guest) const {
        return "/local/domain/0/backend/xenhsa/" + std::to_string(guest);
    }

    DomId one = 0;
    DomId other = 0;
    std::optional<ChildProcess> ones_guest;
    std::optional<ChildProcess> others_guest;
    GrantRef ones_ref = 0;
    GrantRef others_ref = 0;
    Platform worker;
};

TEST_F(ActingForTest, GrantsOfItsGuestOnly) {
    const GrantRef mine[] = {ones_ref};
    const GrantRef theirs[] = {others_ref};
    EXPECT_TRUE(worker.grants->map({.domid = one, .refs = mine, .writable = true}));
    EXPECT_EQ(error_of(worker.grants->map({.domid = other, .refs = theirs, .writable = true})),
              EPERM);
    EXPECT_EQ(error_of(worker.grants->map({.domid = 0, .refs = theirs, .writable = false})), EPERM);
    EXPECT_FALSE(worker.foreign) << "no foreign memory in a worker's bundle";
    // The restriction is the connection's: dom0's own maps the other guest's page.
    EXPECT_TRUE(dom0.grants->map({.domid = other, .refs = theirs, .writable = true}));
}

TEST_F(ActingForTest, SharesAndEventChannelsWithItsGuestOnly) {
    EXPECT_TRUE(worker.sharer->share({.peer = one, .pages = 1, .writable = true}));
    EXPECT_EQ(error_of(worker.sharer->share({.peer = other, .pages = 1, .writable = true})), EPERM);
    EXPECT_TRUE(worker.events->bind_unbound(one));
    EXPECT_EQ(error_of(worker.events->bind_unbound(other)), EPERM);
    EXPECT_EQ(error_of(worker.events->bind_interdomain(other, 1)), EPERM);
}

TEST_F(ActingForTest, TheStoreBelowItsGuestsDirectoriesOnly) {
    xen::Store& store = *worker.store;
    const std::string mine = backend_dir(one) + "/0";
    EXPECT_TRUE(store.write(xen::kNoTx, mine + "/state", "1"));
    EXPECT_EQ(value_or<std::string>(store.read(xen::kNoTx, mine + "/state"), ""), "1");
    ASSERT_TRUE(dom0.store->write(xen::kNoTx, backend_dir(other) + "/0/state", "4"));
    for (const std::string& path :
         {backend_dir(other) + "/0/state", backend_dir(one) + "0/state",  // guest "<one>0"
          "/local/domain/" + std::to_string(other) + "/device/xenhsa/0/state",
          "/local/domain/" + std::to_string(one) + "/name", std::string("/local/domain/0/name"),
          std::string("backend/xenhsa/") + std::to_string(other), std::string("/")}) {
        EXPECT_EQ(error_of(store.read(xen::kNoTx, path)), EACCES) << path;
        EXPECT_EQ(error_of(store.write(xen::kNoTx, path, "x")), EACCES) << path;
        EXPECT_EQ(error_of(store.watch(path, "t")), EACCES) << path;
    }
    EXPECT_EQ(
        value_or<std::string>(dom0.store->read(xen::kNoTx, backend_dir(other) + "/0/state"), ""),
        "4");
    EXPECT_TRUE(
        store.watch("/local/domain/" + std::to_string(one) + "/device/xenhsa/0/state", "fe"));
    EXPECT_TRUE(store.watch("@releaseDomain", "gone"));
}

TEST_F(ActingForTest, ItsGuestsLivenessOnly) {
    EXPECT_TRUE(value_or(worker.domains->alive(one), false));
    EXPECT_EQ(error_of(worker.domains->alive(other)), EPERM);
    EXPECT_EQ(worker.domains->self(), 0);
}

TEST_F(ActingForTest, OnlyDom0ActsForAGuest) {
    EXPECT_EQ(error_of(sim::attach_acting_for(sim.dir(), one, other)), EINVAL);
}

}  // namespace
}  // namespace xenhsa::testing
