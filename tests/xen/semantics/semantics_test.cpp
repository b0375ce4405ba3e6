// Xen semantics of the hypervisor seam, one file for two environments (sem_env.hpp):
// label `sim` runs it against xenhsa-sim, label `xen-qemu` against the libxen* adapters
// on real Xen 4.17 (dom0 here, the peer in a PV domU).
//
// Where the two platforms differ by design, the expectation names the tier and says why:
//   * batch map status: real gntdev reports one errno for the whole batch, the sim one per
//     element (grant_map.hpp);
//   * revoke of a page the peer maps: enforced by the sim, cooperative on Xen 4.17
//     (grant_share.hpp: RevokeEffect);
//   * end_access while the peer maps: EBUSY where this domain reads its own grant table
//     (the sim, an x86 PV dom0), deferred by the kernel where it cannot (every domain on
//     Arm: script/xen-arm64 runs this file there too; GrantSharer::sees_peer_mappings);
//   * a port offered to a domain that does not exist: refused by Xen's XSM SILO (Debian's
//     arm64 default), offered elsewhere.
// Everything else must hold on both. The test that kills the peer comes last: on Xen it
// destroys the tier's only domU (GoogleTest runs a file's tests in order, so the file
// stays one).
//
// "Nothing happens" checks wait kQuiet: a slow machine can only make them weaker, never
// make them fail. Every other wait is bounded by kWait and expects something to happen.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mem_probe.hpp"
#include "peer_client.hpp"
#include "sem_env.hpp"
#include "waits.hpp"

namespace {

namespace x = xenhsa::xen;
namespace sem = xenhsa::sem;
using namespace std::chrono_literals;
using sem::kPage;
using sem::Reservation;

constexpr auto kWait = std::chrono::milliseconds(30s);
constexpr auto kQuiet = std::chrono::milliseconds(300ms);
constexpr x::GrantRef kOutOfRangeRef = 0xFFFFFFF0u;  // beyond any grant table
constexpr x::DomId kNoSuchDomain = 0x7FE0;           // a valid domid nobody has

// `auto &name = <Result>.value()`, failing the test (and returning) on an error.
#define ASSIGN_OR_FAIL(name, expr)                                                  \
    auto name##_result = (expr);                                                    \
    ASSERT_TRUE(name##_result) << #expr << ": " << name##_result.error().message(); \
    auto& name = name##_result.value()

// [addr, addr + len) is (still, again) reserved PROT_NONE; shows the mappings if not.
#define EXPECT_RESERVED(addr, len) \
    EXPECT_TRUE(sem::reserved_prot_none((addr), (len))) << sem::describe_maps((addr), (len))

template <class T>
std::error_code error_of(const x::Result<T>& r) {
    return r ? std::error_code{} : r.error();
}

uint8_t byte_at(const std::byte* p) { return std::to_integer<uint8_t>(*p); }

bool all_bytes(std::span<const std::byte> bytes, uint8_t value) {
    return std::all_of(bytes.begin(), bytes.end(),
                       [value](std::byte b) { return std::to_integer<uint8_t>(b) == value; });
}

std::vector<x::GrantRef> refs_of(const x::SharedPages& s) {
    return {s.refs().begin(), s.refs().end()};
}

class Semantics : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        env_ = sem::open_env(why);
        ASSERT_TRUE(env_) << "cannot set up the environment: " << why;
        peer_.emplace(*env_);
        auto r = peer_->reset();
        ASSERT_TRUE(r) << "peer reset: " << r.error().message();
    }

    void TearDown() override {
        peer_.reset();
        env_.reset();
    }

    x::Platform& self() { return env_->self(); }
    x::DomId self_id() { return self().domains->self(); }
    x::DomId peer_id() { return env_->peer_domid(); }
    sem::Peer& peer() { return *peer_; }
    bool sim() const { return env_->tier() == sem::Tier::sim; }

    // A node in the peer's writable xenstore area.
    std::string peer_node(std::string_view name) {
        return "/local/domain/" + std::to_string(peer_id()) + "/data/" + std::string(name);
    }

    x::Result<x::GrantMapping> map(x::DomId from, std::span<const x::GrantRef> refs, bool writable,
                                   std::byte* at = nullptr, std::span<int> status = {}) {
        return self().grants->map({.domid = from, .refs = refs, .writable = writable, .at = at},
                                  status);
    }

    // The next watch event; nullopt (and a test failure) when none comes within kWait.
    std::optional<x::WatchEvent> next_watch() {
        auto ev = sem::wait_watch(*self().store, kWait);
        EXPECT_TRUE(ev) << ev.error().message();
        EXPECT_TRUE(ev && ev.value()) << "no watch event within " << kWait.count() << " ms";
        return ev ? ev.value() : std::nullopt;
    }

    // The next port that fires here; nullopt (and a test failure) when none within kWait.
    std::optional<x::Port> next_port() {
        auto p = sem::wait_port(*self().events, kWait);
        EXPECT_TRUE(p) << p.error().message();
        EXPECT_TRUE(p && p.value()) << "no event within " << kWait.count() << " ms";
        return p ? p.value() : std::nullopt;
    }

    std::shared_ptr<sem::SemEnv> env_;
    std::optional<sem::Peer> peer_;
};

// ---- grants: mapping what the peer shares --------------------------------------------

TEST_F(Semantics, ReadOnlyGrantCannotBeWrittenThroughItsMapping) {
    ASSIGN_OR_FAIL(ro_share, peer().share(self_id(), 1, /*writable=*/false));
    ASSERT_TRUE(peer().fill(ro_share.id, 0, kPage, 0xA5));
    const std::array<x::GrantRef, 1> ro_ref{ro_share.refs[0]};

    EXPECT_FALSE(map(peer_id(), ro_ref, /*writable=*/true)) << "writable map of a read-only grant";
    ASSIGN_OR_FAIL(ro, map(peer_id(), ro_ref, /*writable=*/false));
    EXPECT_TRUE(all_bytes(ro.bytes(), 0xA5));

    // A CPU store faults, and so does a kernel copy into the page.
    EXPECT_TRUE(sem::store_faults(ro.data() + 7, 0x11));
    EXPECT_EQ(error_of(sem::probe_write(ro.data() + 9, 0x22)), std::errc::bad_address);
    EXPECT_EQ(peer().peek(ro_share.id, 7).value(), 0xA5);
    EXPECT_EQ(peer().peek(ro_share.id, 9).value(), 0xA5);

    // The same two writes through a writable grant's mapping land in the peer's page.
    ASSIGN_OR_FAIL(rw_share, peer().share(self_id(), 1, /*writable=*/true));
    ASSIGN_OR_FAIL(rw, map(peer_id(), rw_share.refs, /*writable=*/true));
    EXPECT_FALSE(sem::store_faults(rw.data() + 7, 0x11));
    EXPECT_TRUE(sem::probe_write(rw.data() + 9, 0x22));
    EXPECT_EQ(peer().peek(rw_share.id, 7).value(), 0x11);
    EXPECT_EQ(peer().peek(rw_share.id, 9).value(), 0x22);
}

// Whether a guest's pages, mapped through gntdev, can be pinned by the kernel (GUP), as
// O_DIRECT, RDMA or a KFD userptr over them would need. Measured in this tier's PV dom0
// (Xen 4.17, Linux 6.1): they can, as the sim's ordinary shared pages can
// (hsa-bridge/hsakmt/README.md, docs/real-hardware.md).
TEST_F(Semantics, AGrantMappingCanBePinnedByTheKernel) {
    ASSIGN_OR_FAIL(share, peer().share(self_id(), 2, /*writable=*/true));
    ASSERT_TRUE(peer().fill(share.id, 0, 2 * kPage, 0x5C));
    ASSIGN_OR_FAIL(mapping, map(peer_id(), share.refs, /*writable=*/true));
    const auto pinned = sem::probe_pin(mapping.data(), 2 * kPage);
    ASSERT_TRUE(pinned) << pinned.error().message();
    EXPECT_EQ(pinned.value(), 2 * kPage);
    // What was pinned is the peer's page.
    const auto read = sem::probe_read(mapping.data() + kPage + 3);
    ASSERT_TRUE(read) << read.error().message();
    EXPECT_EQ(read.value(), 0x5C);
}

TEST_F(Semantics, BadOutOfRangeAndForeignGrefsFailAndMapNothing) {
    ASSIGN_OR_FAIL(good, peer().share(self_id(), 1, true));
    ASSIGN_OR_FAIL(ended, peer().share(self_id(), 1, true));
    ASSERT_TRUE(peer().end_access(ended.id));  // never mapped: the grant ends at once
    ASSIGN_OR_FAIL(foreign, peer().share(env_->other_domid(), 1, true));

    Reservation res(3);
    ASSERT_NE(res.base(), nullptr);
    struct Case {
        const char* what;
        x::DomId from;
        x::GrantRef ref;
    };
    const std::array<Case, 4> cases{{
        {"out-of-range gref", peer_id(), kOutOfRangeRef},
        {"ended gref", peer_id(), ended.refs[0]},
        {"gref granted to another domain", peer_id(), foreign.refs[0]},
        {"granting domain does not exist", kNoSuchDomain, good.refs[0]},
    }};
    for (const Case& c : cases) {
        for (std::byte* at : {static_cast<std::byte*>(nullptr), res.base() + kPage}) {
            const std::array<x::GrantRef, 1> refs{c.ref};
            std::array<int, 1> status{-1};
            auto m = map(c.from, refs, false, at, status);
            EXPECT_FALSE(m) << c.what << (at != nullptr ? " (fixed)" : " (anywhere)");
            EXPECT_NE(status[0], 0) << c.what;
            EXPECT_RESERVED(res.base(), res.size()) << c.what;
        }
    }

    // The same map of a valid gref works, at both places.
    const std::array<x::GrantRef, 1> refs{good.refs[0]};
    EXPECT_TRUE(map(peer_id(), refs, false));
    ASSIGN_OR_FAIL(fixed, map(peer_id(), refs, false, res.base() + kPage));
    EXPECT_EQ(fixed.data(), res.base() + kPage);
}

TEST_F(Semantics, FailedFixedMapLeavesTheReservationIntact) {
    Reservation res(4);
    ASSERT_NE(res.base(), nullptr);
    const std::array<x::GrantRef, 2> refs{kOutOfRangeRef, kOutOfRangeRef + 1};
    std::array<int, 2> status{-1, -1};
    auto r = map(self_id(), refs, false, res.base() + kPage, status);
    ASSERT_FALSE(r);
    EXPECT_NE(status[0], 0);
    EXPECT_NE(status[1], 0);
    EXPECT_RESERVED(res.base(), res.size());
}

TEST_F(Semantics, BatchWithOneBadElementMapsNothingAndReportsEachElement) {
    ASSIGN_OR_FAIL(share, peer().share(self_id(), 3, true));
    ASSERT_TRUE(peer().fill(share.id, 0, 3 * kPage, 0x3C));
    {
        ASSIGN_OR_FAIL(whole, map(peer_id(), share.refs, true));  // the good batch maps
        EXPECT_TRUE(all_bytes(whole.bytes(), 0x3C));
    }

    Reservation res(5);
    ASSERT_NE(res.base(), nullptr);
    const std::array<x::GrantRef, 3> refs{share.refs[0], kOutOfRangeRef, share.refs[2]};
    for (std::byte* at : {static_cast<std::byte*>(nullptr), res.base() + kPage}) {
        std::array<int, 3> status{-1, -1, -1};
        auto m = map(peer_id(), refs, true, at, status);
        ASSERT_FALSE(m) << (at != nullptr ? "fixed" : "anywhere");
        EXPECT_RESERVED(res.base(), res.size());
        EXPECT_NE(status[1], 0);
        if (sim()) {
            // Per element: the undone first element 0, the bad one and the one never
            // attempted their own codes.
            EXPECT_EQ(status[0], 0);
            EXPECT_NE(status[2], 0);
        } else {
            // gntdev reports one errno for the batch (grant_mapper.cpp).
            const int e = m.error().value();
            EXPECT_EQ(status, (std::array<int, 3>{e, e, e}));
        }
    }
    // Nothing stayed mapped: the peer can end access to every page.
    EXPECT_TRUE(peer().end_access(share.id));
}

TEST_F(Semantics, FixedAddressMapReplacesPartOfTheReservationAndRestoresIt) {
    ASSIGN_OR_FAIL(share, peer().share(self_id(), 2, true));
    ASSERT_TRUE(peer().fill(share.id, 0, kPage, 0x11));
    ASSERT_TRUE(peer().fill(share.id, kPage, kPage, 0x22));

    Reservation res(4);
    ASSERT_NE(res.base(), nullptr);
    for (int round = 0; round < 2; ++round) {  // the restored reservation can be used again
        ASSIGN_OR_FAIL(m, map(peer_id(), share.refs, true, res.base() + kPage));
        EXPECT_EQ(m.data(), res.base() + kPage);
        EXPECT_EQ(m.pages(), 2u);
        EXPECT_EQ(byte_at(m.data()), 0x11);
        EXPECT_EQ(byte_at(m.data() + kPage + 5), 0x22);
        EXPECT_RESERVED(res.base(), kPage);
        EXPECT_RESERVED(res.base() + 3 * kPage, kPage);
        m.data()[kPage + 1] = std::byte{0x33};
        EXPECT_EQ(peer().peek(share.id, kPage + 1).value(), 0x33);
        m.reset();
        EXPECT_RESERVED(res.base(), res.size());
    }
}

// ---- grants: sharing with the peer -----------------------------------------------------

TEST_F(Semantics, EndAccessFailsWithEbusyWhileThePeerMapsAndSucceedsAfterUnmap) {
    ASSIGN_OR_FAIL(shared, self().sharer->share({.peer = peer_id(), .pages = 2, .writable = true}));
    EXPECT_TRUE(all_bytes({shared.data(), 2 * kPage}, 0));  // zeroed pages
    std::memset(shared.data() + kPage, 0x5A, kPage);
    const auto refs = refs_of(shared);

    ASSIGN_OR_FAIL(mid, peer().map(self_id(), refs, true));
    EXPECT_EQ(peer().probe_read(mid, kPage + 3).value(), 0x5A);  // the peer sees our data
    ASSERT_TRUE(peer().probe_write(mid, 5, 0x77));
    EXPECT_EQ(byte_at(shared.data() + 5), 0x77);  // and we see its write

#if defined(__x86_64__)
    // The x86-64 tier's dom0 is PV: its own grant table can be read there.
    EXPECT_TRUE(self().sharer->sees_peer_mappings());
#endif
    if (!self().sharer->sees_peer_mappings()) {
        // It cannot read its own grant table (an auto-translated domain: every domain on
        // Arm, HVM/PVH): end_access succeeds, and gntalloc keeps the pages, with their
        // bytes, out of use until the peer unmaps; the ended grants cannot be mapped again.
        // Linux retries ending such a grant every second (gnttab's deferred list): until
        // then the peer could map the same pages again.
        EXPECT_TRUE(shared.end_access());
        EXPECT_EQ(shared.pages(), 0u);
        EXPECT_EQ(peer().probe_read(mid, 5).value(), 0x77) << "the pages went while mapped";
        ASSERT_TRUE(peer().unmap(mid));
        bool ended = false;
        for (int i = 0; i < 25 && !ended; ++i) {
            auto again = peer().map(self_id(), refs, false);
            ended = !again;
            if (again) {
                ASSERT_TRUE(peer().unmap(again.value()));
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
            }
        }
        EXPECT_TRUE(ended) << "an ended grant can still be mapped 5 s after the peer unmapped";
        return;
    }
    auto busy = shared.end_access();
    ASSERT_FALSE(busy) << "end_access succeeded while the peer maps the pages";
    EXPECT_EQ(busy.error(), std::errc::device_or_resource_busy);
    EXPECT_EQ(shared.pages(), 2u);  // nothing withdrawn: retry later
    EXPECT_EQ(peer().probe_read(mid, 5).value(), 0x77);

    ASSERT_TRUE(peer().unmap(mid));
    auto ended = shared.end_access();
    EXPECT_TRUE(ended) << ended.error().message();
    EXPECT_EQ(shared.pages(), 0u);
    EXPECT_FALSE(peer().map(self_id(), refs, false)) << "an ended grant can still be mapped";
}

TEST_F(Semantics, PeerEndAccessWhileWeMapItsPagesNeverFreesThem) {
    // The same rule on the guest's side, where Xen differs: an unprivileged PV domU cannot
    // read its own grant table (Linux restricts privcmd in a domU), so gntalloc's
    // end_access cannot see our mapping and succeeds; the kernel then defers ending the
    // grant until we unmap, and our mapping keeps the page (grant_sharer.cpp).
    ASSIGN_OR_FAIL(share, peer().share(self_id(), 1, true));
    ASSERT_TRUE(peer().fill(share.id, 0, kPage, 0x4B));
    {
        ASSIGN_OR_FAIL(m, map(peer_id(), share.refs, false));
        auto ended = peer().end_access(share.id);
        if (sim()) {
            EXPECT_EQ(error_of(ended), std::errc::device_or_resource_busy);
        } else {
            EXPECT_TRUE(ended) << ended.error().message();
        }
        EXPECT_TRUE(all_bytes(m.bytes(), 0x4B));  // still there to read
    }
    if (sim()) {
        EXPECT_TRUE(peer().end_access(share.id));
    }
}

TEST_F(Semantics, SharingAtAFixedAddressUsesTheReservationAndRestoresIt) {
    Reservation res(4);
    ASSERT_NE(res.base(), nullptr);
    EXPECT_EQ(error_of(self().sharer->share(
                  {.peer = peer_id(), .pages = 1, .writable = true, .at = res.base() + 1})),
              std::errc::invalid_argument);
    EXPECT_RESERVED(res.base(), res.size());

    ASSIGN_OR_FAIL(
        shared, self().sharer->share(
                    {.peer = peer_id(), .pages = 2, .writable = true, .at = res.base() + kPage}));
    EXPECT_EQ(shared.data(), res.base() + kPage);
    EXPECT_TRUE(all_bytes({shared.data(), 2 * kPage}, 0));
    EXPECT_RESERVED(res.base(), kPage);
    EXPECT_RESERVED(res.base() + 3 * kPage, kPage);
    shared.data()[kPage + 8] = std::byte{0x5C};

    ASSIGN_OR_FAIL(mid, peer().map(self_id(), refs_of(shared), true));
    EXPECT_EQ(peer().probe_read(mid, kPage + 8).value(), 0x5C);
    ASSERT_TRUE(peer().probe_write(mid, 16, 0x6D));
    EXPECT_EQ(byte_at(res.base() + kPage + 16), 0x6D);
    ASSERT_TRUE(peer().unmap(mid));

    auto ended = shared.end_access();
    EXPECT_TRUE(ended) << ended.error().message();
    EXPECT_RESERVED(res.base(), res.size());
}

// hsaKmtRegisterMemory's move: pages shared over private memory start with its bytes as
// they are when they replace it (ShareSpec::copy_bytes), and once the caller has moved
// private pages back over them, giving them up leaves the range alone.
TEST_F(Semantics, PagesSharedOverPrivateMemoryKeepItsBytesAndGoWithoutTouchingIt) {
    Reservation res(4);
    ASSERT_NE(res.base(), nullptr);
    std::byte* const at = res.base() + kPage;
    const std::size_t len = 2 * kPage;
    ASSERT_NE(
        ::mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
        MAP_FAILED);
    std::memset(at, 0x3A, len);
    at[len - 1] = std::byte{0x3B};
    x::ShareSpec spec{.peer = peer_id(), .pages = 2, .writable = true, .at = at};
    spec.copy_bytes = [](void* to, const void* from, std::size_t n) { std::memcpy(to, from, n); };
    ASSIGN_OR_FAIL(shared, self().sharer->share(spec));
    EXPECT_EQ(shared.data(), at);
    EXPECT_TRUE(all_bytes({at, len - 1}, 0x3A));
    EXPECT_EQ(byte_at(at + len - 1), 0x3B);
    EXPECT_RESERVED(res.base(), kPage);
    EXPECT_RESERVED(res.base() + 3 * kPage, kPage);
    {
        ASSIGN_OR_FAIL(view, peer().map(self_id(), refs_of(shared), true));
        EXPECT_EQ(peer().probe_read(view, len - 1).value(), 0x3B);  // the peer sees the bytes
        ASSERT_TRUE(peer().probe_write(view, 16, 0x6D));
        EXPECT_EQ(byte_at(at + 16), 0x6D);  // ... and the range is the shared pages
        ASSERT_TRUE(peer().unmap(view));
    }
    // The caller's way back: private pages with the bytes, moved over the view.
    void* copy = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(copy, MAP_FAILED);
    std::memcpy(copy, at, len);
    ASSERT_NE(::mremap(copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, at), MAP_FAILED);
    shared.release_replaced();
    EXPECT_EQ(shared.data(), nullptr);
    EXPECT_EQ(byte_at(at + 16), 0x6D);  // the range kept: private memory, writable
    at[16] = std::byte{0x11};
    EXPECT_EQ(byte_at(at + len - 1), 0x3B);
    EXPECT_RESERVED(res.base(), kPage);
}

TEST_F(Semantics, SelfGrantMapsAtAFixedAddressAndUnmapsBackToTheReservation) {
    ASSIGN_OR_FAIL(shared, self().sharer->share({.peer = self_id(), .pages = 2, .writable = true}));
    shared.data()[kPage + 5] = std::byte{0x5A};

    Reservation res(4);
    ASSERT_NE(res.base(), nullptr);
    {
        ASSIGN_OR_FAIL(m, map(self_id(), refs_of(shared), true, res.base() + kPage));
        EXPECT_EQ(m.data(), res.base() + kPage);
        EXPECT_EQ(byte_at(m.data() + kPage + 5), 0x5A);
    }
    EXPECT_RESERVED(res.base(), res.size());
    EXPECT_TRUE(shared.end_access());
}

TEST_F(Semantics, RevokeTakesLentPagesBackFromAMappingPeer) {
    ASSIGN_OR_FAIL(shared, self().sharer->share({.peer = peer_id(), .pages = 1, .writable = true}));
    std::memset(shared.data(), 0x42, kPage);
    ASSIGN_OR_FAIL(mid, peer().map(self_id(), refs_of(shared), true));
    ASSERT_EQ(peer().probe_read(mid, 100).value(), 0x42);

    const x::RevokeEffect effect = shared.revoke();
    EXPECT_EQ(shared.pages(), 0u);
    if (sim()) {
        // The sim withdraws the pages: the peer's next access faults.
        EXPECT_EQ(effect, x::RevokeEffect::enforced);
        EXPECT_EQ(error_of(peer().probe_read(mid, 100)), std::errc::bad_address);
    } else {
        // Xen 4.17 cannot take a grant back: the pages are scrubbed and stay the peer's
        // until it unmaps (grant_sharer.cpp).
        EXPECT_EQ(effect, x::RevokeEffect::cooperative);
        EXPECT_EQ(peer().probe_read(mid, 100).value(), 0);
    }
    EXPECT_TRUE(peer().unmap(mid));
}

// ---- event channels --------------------------------------------------------------------

TEST_F(Semantics, UnboundBindInterdomainAndNotifyRoundTripBothWays) {
    // We offer a port, the peer binds it.
    ASSIGN_OR_FAIL(offered, self().events->bind_unbound(peer_id()));
    ASSIGN_OR_FAIL(peer_port, peer().bind(self_id(), offered.port()));
    ASSERT_TRUE(peer().drain_events(kQuiet));  // Xen raises a port when it is bound
    ASSERT_TRUE(sem::drain_ports(*self().events, kQuiet));
    for (int round = 0; round < 2; ++round) {  // the second round shows unmask re-arms
        ASSERT_TRUE(self().events->notify(offered.port()));
        EXPECT_EQ(peer().wait_event(kWait).value(), peer_port) << "round " << round;
        ASSERT_TRUE(peer().notify(peer_port));
        EXPECT_EQ(next_port(), offered.port()) << "round " << round;
        ASSERT_TRUE(self().events->unmask(offered.port()));
    }

    // The peer offers a port, we bind it.
    ASSIGN_OR_FAIL(their, peer().bind_unbound(self_id()));
    ASSIGN_OR_FAIL(mine, self().events->bind_interdomain(peer_id(), their));
    ASSERT_TRUE(sem::drain_ports(*self().events, kQuiet));
    ASSERT_TRUE(peer().drain_events(kQuiet));
    for (int round = 0; round < 2; ++round) {
        ASSERT_TRUE(peer().notify(their));
        EXPECT_EQ(next_port(), mine.port()) << "round " << round;
        ASSERT_TRUE(self().events->unmask(mine.port()));
        ASSERT_TRUE(self().events->notify(mine.port()));
        EXPECT_EQ(peer().wait_event(kWait).value(), their) << "round " << round;
    }
}

// gntalloc's notification on pages the peer grants: when its own mapping goes (here an
// unshare; a process's death does the same), the byte is cleared in the page we still map
// and our end of its port fires. How a backend learns that its frontend process is gone.
TEST_F(Semantics, ASharersUnmapNotificationClearsItsByteAndFiresItsPort) {
    ASSIGN_OR_FAIL(their, peer().bind_unbound(self_id()));
    ASSIGN_OR_FAIL(mine, self().events->bind_interdomain(peer_id(), their));
    ASSERT_TRUE(sem::drain_ports(*self().events, kQuiet));
    ASSERT_TRUE(peer().drain_events(kQuiet));
    ASSIGN_OR_FAIL(share, peer().share(self_id(), 2, true, {.clear_byte_at = 8, .port = their}));
    ASSERT_TRUE(peer().fill(share.id, 0, 2 * kPage, 0xAB));
    ASSIGN_OR_FAIL(m, map(peer_id(), share.refs, false));
    EXPECT_EQ(byte_at(m.data() + 8), 0xAB);
    ASSERT_TRUE(peer().unshare(share.id));
    EXPECT_EQ(next_port(), mine.port()) << "the sharer's unmap notifies";
    EXPECT_EQ(byte_at(m.data() + 8), 0) << "and clears the byte";
    EXPECT_EQ(byte_at(m.data() + 9), 0xAB) << "that byte only";
    EXPECT_EQ(byte_at(m.data() + kPage + 8), 0xAB);
    m.reset();
}

TEST_F(Semantics, MaskedEventsAreNotDeliveredUntilUnmasked) {
    ASSIGN_OR_FAIL(their, peer().bind_unbound(self_id()));
    ASSIGN_OR_FAIL(mine, self().events->bind_interdomain(peer_id(), their));
    ASSERT_TRUE(sem::drain_ports(*self().events, kQuiet));

    ASSERT_TRUE(peer().notify(their));
    EXPECT_EQ(next_port(), mine.port());  // delivered, and now masked

    ASSERT_TRUE(peer().notify(their));  // raised while masked
    auto held = sem::wait_port(*self().events, kQuiet);
    ASSERT_TRUE(held) << held.error().message();
    EXPECT_FALSE(held.value().has_value()) << "an event was delivered on a masked port";

    ASSERT_TRUE(self().events->unmask(mine.port()));
    EXPECT_EQ(next_port(), mine.port()) << "the event raised while masked was lost";
    ASSERT_TRUE(self().events->unmask(mine.port()));
}

TEST_F(Semantics, UnboundPortCanOnlyBeBoundByTheNamedDomain) {
    auto for_other = self().events->bind_unbound(env_->other_domid());
    if (for_other) {
        EXPECT_FALSE(peer().bind(self_id(), for_other.value().port()))
            << "bound a port offered to another";
    } else {
        // Xen's SILO policy (XSM; Debian's arm64 default) offers ports to existing domains
        // only: the domain named is nobody.
        EXPECT_EQ(for_other.error(), std::errc::no_such_process) << for_other.error().message();
    }

    ASSIGN_OR_FAIL(for_peer, self().events->bind_unbound(peer_id()));
    EXPECT_TRUE(peer().bind(self_id(), for_peer.port()));
}

TEST_F(Semantics, LoopbackEventChannelDeliversOnce) {
    ASSIGN_OR_FAIL(unbound, self().events->bind_unbound(self_id()));
    ASSIGN_OR_FAIL(bound, self().events->bind_interdomain(self_id(), unbound.port()));
    ASSERT_TRUE(sem::drain_ports(*self().events, kQuiet));

    ASSERT_TRUE(self().events->notify(bound.port()));
    EXPECT_EQ(next_port(), unbound.port());
    auto again = sem::wait_port(*self().events, kQuiet);
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_FALSE(again.value().has_value()) << "one notify, a second event";
    EXPECT_TRUE(self().events->unmask(unbound.port()));
}

// ---- xenstore ------------------------------------------------------------------------------

TEST_F(Semantics, SelfMatchesTheStore) {
    ASSIGN_OR_FAIL(domid, self().store->read(x::kNoTx, "domid"));
    EXPECT_EQ(std::to_string(self_id()), domid);
    EXPECT_EQ(peer().domid().value(), peer_id());
}

TEST_F(Semantics, WatchFiresOnceAtRegistrationThenOnlyForItsSubtree) {
    const std::string watched = peer_node("sem-watch");
    const std::string unrelated = peer_node("sem-watch-other");
    ASSERT_TRUE(peer().store_write(watched, "0"));
    ASSERT_TRUE(self().store->watch(watched, "w"));

    auto reg = next_watch();
    ASSERT_TRUE(reg);
    EXPECT_EQ(reg->path, watched);
    EXPECT_EQ(reg->token, "w");

    // Unrelated first, then below the watch, then the node itself: events come in order,
    // so the next one being the subtree's shows that neither a second registration event
    // nor the unrelated write fired.
    ASSERT_TRUE(peer().store_write(unrelated, "1"));
    ASSERT_TRUE(peer().store_write(watched + "/a", "2"));
    ASSERT_TRUE(peer().store_write(watched, "3"));
    for (const std::string& want : {watched + "/a", watched}) {
        auto ev = next_watch();
        ASSERT_TRUE(ev);
        EXPECT_EQ(ev->path, want);
        EXPECT_EQ(ev->token, "w");
    }
    ASSERT_TRUE(peer().store_rm(watched + "/a"));
    auto removed = next_watch();
    ASSERT_TRUE(removed);
    EXPECT_EQ(removed->path, watched + "/a");
    auto none = sem::wait_watch(*self().store, kQuiet);
    ASSERT_TRUE(none) << none.error().message();
    EXPECT_FALSE(none.value().has_value()) << "unexpected event " << none.value()->path;

    EXPECT_TRUE(self().store->unwatch(watched, "w"));
    EXPECT_TRUE(peer().store_rm(watched));
    EXPECT_TRUE(peer().store_rm(unrelated));
}

TEST_F(Semantics, UnwatchStopsEvents) {
    const std::string watched = peer_node("sem-unwatch");
    const std::string fence = peer_node("sem-unwatch-fence");
    ASSERT_TRUE(self().store->watch(watched, "w"));
    auto reg = next_watch();
    ASSERT_TRUE(reg);
    EXPECT_EQ(reg->path, watched);

    ASSERT_TRUE(self().store->unwatch(watched, "w"));
    ASSERT_TRUE(peer().store_write(watched + "/x", "1"));
    // A new watch's registration event comes after anything the write could have fired.
    ASSERT_TRUE(self().store->watch(fence, "f"));
    auto next = next_watch();
    ASSERT_TRUE(next);
    EXPECT_EQ(next->token, "f") << "event after unwatch: " << next->path;
    EXPECT_EQ(next->path, fence);

    EXPECT_TRUE(self().store->unwatch(fence, "f"));
    EXPECT_TRUE(peer().store_rm(watched));
}

TEST_F(Semantics, TransactionCommitFailsWithEagainAfterAConflictingWrite) {
    const std::string node = peer_node("sem-tx");
    ASSERT_TRUE(peer().store_write(node, "0"));
    x::Store& store = *self().store;

    // Undisturbed: commits.
    ASSIGN_OR_FAIL(calm, store.transaction_start());
    EXPECT_EQ(store.read(calm, node).value(), "0");
    ASSERT_TRUE(store.write(calm, node, "1"));
    auto ok = store.transaction_end(calm, true);
    EXPECT_TRUE(ok) << ok.error().message();
    EXPECT_EQ(peer().store_read(node).value(), "1");

    // The peer writes the node between our read and our commit: EAGAIN, nothing applied.
    ASSIGN_OR_FAIL(raced, store.transaction_start());
    EXPECT_EQ(store.read(raced, node).value(), "1");
    ASSERT_TRUE(peer().store_write(node, "peer"));
    ASSERT_TRUE(store.write(raced, node, "2"));
    auto conflict = store.transaction_end(raced, true);
    ASSERT_FALSE(conflict) << "commit succeeded over a conflicting write";
    EXPECT_EQ(conflict.error(), std::errc::resource_unavailable_try_again);
    EXPECT_EQ(store.read(x::kNoTx, node).value(), "peer");

    EXPECT_TRUE(peer().store_rm(node));
}

TEST_F(Semantics, GuestCannotReadOrWriteADom0PrivateNode) {
    const std::string dir = "/xenhsa-sem-private";
    const std::string node = dir + "/secret";
    x::Store& store = *self().store;
    ASSERT_TRUE(store.write(x::kNoTx, node, "s3cret"));
    ASSERT_TRUE(store.set_perms(x::kNoTx, node, {{0, x::StoreAccess::none}}));

    EXPECT_EQ(error_of(peer().store_read(node)), std::errc::permission_denied);
    EXPECT_EQ(error_of(peer().store_write(node, "mine")), std::errc::permission_denied);
    EXPECT_EQ(store.read(x::kNoTx, node).value(), "s3cret");

    // Granting the peer read access lets it read, and still not write.
    ASSERT_TRUE(store.set_perms(x::kNoTx, node,
                                {{0, x::StoreAccess::none}, {peer_id(), x::StoreAccess::read}}));
    EXPECT_EQ(peer().store_read(node).value(), "s3cret");
    EXPECT_EQ(error_of(peer().store_write(node, "mine")), std::errc::permission_denied);

    EXPECT_TRUE(store.rm(x::kNoTx, dir));
}

TEST_F(Semantics, GuestValuesAreBoundedByTheQuotaAndTheWireLimit) {
    const std::string node = peer_node("sem-quota");
    ASSERT_TRUE(peer().store_fill(node, 100, 'a'));
    // xenstored's per-domain node size quota (2048 by default); dom0 has none.
    EXPECT_EQ(error_of(peer().store_fill(node, 3000, 'b')), std::errc::no_space_on_device);
    EXPECT_EQ(self().store->read(x::kNoTx, node).value(), std::string(100, 'a'));
    ASSERT_TRUE(self().store->write(x::kNoTx, node, std::string(3000, 'c')));
    EXPECT_EQ(self().store->read(x::kNoTx, node).value(), std::string(3000, 'c'));
    // Beyond XENSTORE_PAYLOAD_MAX for everyone.
    EXPECT_EQ(error_of(peer().store_fill(node, 5000, 'd')), std::errc::argument_list_too_long);
    EXPECT_TRUE(peer().store_rm(node));
}

TEST_F(Semantics, NumbersAGuestPublishesAreParsedStrictly) {
    const std::string node = peer_node("sem-number");
    struct Case {
        const char* value;
        std::error_code want;
    };
    const std::array<Case, 5> cases{{
        {"42", {}},
        {"042", x::errc(std::errc::invalid_argument)},
        {"-1", x::errc(std::errc::invalid_argument)},
        {" 4", x::errc(std::errc::invalid_argument)},
        {"4096", x::errc(std::errc::result_out_of_range)},
    }};
    for (const Case& c : cases) {
        ASSERT_TRUE(peer().store_write(node, c.value));
        ASSIGN_OR_FAIL(value, self().store->read(x::kNoTx, node));
        auto n = x::parse_store_uint(value, 4095);
        EXPECT_EQ(error_of(n), c.want) << '"' << c.value << '"';
        if (n) {
            EXPECT_EQ(n.value(), 42u);
        }
    }
    EXPECT_TRUE(peer().store_rm(node));
}

// ---- domain death (keep last: on Xen it destroys the tier's domU) ------------------------

TEST_F(Semantics, DeadPeerFiresReleaseDomainAndItsMappingsStayValidUntilUnmapped) {
    ASSIGN_OR_FAIL(alive, self().domains->alive(peer_id()));
    EXPECT_TRUE(alive);
    EXPECT_FALSE(self().domains->alive(kNoSuchDomain).value());

    ASSIGN_OR_FAIL(share, peer().share(self_id(), 2, true));
    ASSERT_TRUE(peer().fill(share.id, 0, kPage, 0xD1));
    ASSERT_TRUE(peer().fill(share.id, kPage, kPage, 0xD2));
    ASSIGN_OR_FAIL(m, map(peer_id(), share.refs, true));

    ASSERT_TRUE(self().store->watch("@releaseDomain", "rel"));
    auto reg = next_watch();
    ASSERT_TRUE(reg);
    EXPECT_EQ(reg->path, "@releaseDomain");

    auto killed = env_->kill_peer();
    ASSERT_TRUE(killed) << killed.error().message();
    auto rel = next_watch();
    ASSERT_TRUE(rel) << "no @releaseDomain after the peer died";
    EXPECT_EQ(rel->path, "@releaseDomain");
    EXPECT_EQ(rel->token, "rel");

    // @releaseDomain says "some domain went": the peer is one of them (bounded re-check).
    bool gone = false;
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (!gone && std::chrono::steady_clock::now() < deadline) {
        auto a = self().domains->alive(peer_id());
        ASSERT_TRUE(a) << a.error().message();
        gone = !a.value();
        if (!gone) {
            std::this_thread::sleep_for(50ms);
        }
    }
    EXPECT_TRUE(gone) << "the peer still counts as alive";

    // Our mapping of the dead domain's pages is still there, with the same content, and
    // still writable, until we unmap it.
    EXPECT_TRUE(all_bytes({m.data(), kPage}, 0xD1));
    EXPECT_TRUE(all_bytes({m.data() + kPage, kPage}, 0xD2));
    EXPECT_TRUE(sem::probe_write(m.data() + 3, 0xEE));
    EXPECT_EQ(byte_at(m.data() + 3), 0xEE);
    m.reset();
    EXPECT_FALSE(m);
}

}  // namespace
