// Grants over xenhsa-sim between processes: sharing and mapping, read-only faults,
// all-or-nothing batches, EBUSY, enforced revoke, pins of a killed mapper, unmap
// notification, foreign maps, and a guest rewriting its grant entries.
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "sim_fixture.hpp"

namespace xenhsa::testing {
namespace {

namespace sim = xen::sim;

constexpr uint64_t kDone = 0xD0;
constexpr uint64_t kEndAccess = 0xEA;

void fill(std::span<std::byte> bytes, unsigned char value) {
    std::memset(bytes.data(), value, bytes.size());
}

bool all_of(std::span<const std::byte> bytes, unsigned char value) {
    return std::all_of(bytes.begin(), bytes.end(),
                       [value](std::byte b) { return b == std::byte{value}; });
}

// A guest that shares `pages` pages with dom0, fills page i with 0x10 + i, sends the refs,
// then on each kEndAccess request answers end_access()'s errno (0 = ended) until kDone.
int sharing_guest(Platform& p, Link& link, std::size_t pages, bool writable) {
    auto shared = p.sharer->share({.peer = 0, .pages = pages, .writable = writable});
    CHILD_CHECK(shared);
    for (std::size_t i = 0; i < pages; ++i) {
        fill({shared.value().data() + i * kPage, kPage}, static_cast<unsigned char>(0x10 + i));
    }
    for (const GrantRef r : shared.value().refs()) link.send(r);
    for (;;) {
        auto cmd = link.receive();
        CHILD_CHECK(cmd);
        if (*cmd == kDone) return 0;
        if (*cmd == kEndAccess) {
            auto ended = shared.value().end_access();
            link.send(ended ? 0 : static_cast<uint64_t>(ended.error().value()));
            if (ended) return 0;
        } else {
            // Report the first byte of page *cmd (what the parent wrote).
            link.send(static_cast<uint64_t>(shared.value().data()[*cmd * kPage]));
        }
    }
}

std::vector<GrantRef> receive_refs(Link& link, std::size_t n) {
    std::vector<GrantRef> refs;
    for (std::size_t i = 0; i < n; ++i) {
        auto r = link.receive();
        if (!r) break;
        refs.push_back(static_cast<GrantRef>(*r));
    }
    return refs;
}

TEST_F(SimTest, SharedPagesAreVisibleAcrossProcesses) {
    const DomId g = create_guest("guest");
    auto child =
        spawn_in(g, [](Platform& p, Link& link) { return sharing_guest(p, link, 2, true); });
    const auto refs = receive_refs(child.link(), 2);
    ASSERT_EQ(refs.size(), 2u);

    {
        auto m = dom0.grants->map({.domid = g, .refs = refs, .writable = true});
        ASSERT_TRUE(m) << m.error().message();
        EXPECT_TRUE(all_of({m.value().data(), kPage}, 0x10));
        EXPECT_TRUE(all_of({m.value().data() + kPage, kPage}, 0x11));
        m.value().data()[kPage] = std::byte{0x77};  // page 1
        child.link().send(1);
        EXPECT_EQ(child.link().receive(), 0x77u) << "the guest sees the backend's write";
    }
    // At a fixed address inside our reservation: the range is PROT_NONE again afterwards.
    Reservation res(4);
    {
        auto m = dom0.grants->map({.domid = g, .refs = refs, .writable = false, .at = res.page(1)});
        ASSERT_TRUE(m) << m.error().message();
        EXPECT_EQ(m.value().data(), res.page(1));
        EXPECT_EQ(protection_at(res.page(1)), "r--s");
        EXPECT_TRUE(all_of({res.page(2), kPage}, 0x11) == false);  // we wrote 0x77 at byte 0
        EXPECT_EQ(res.page(2)[0], std::byte{0x77});
    }
    EXPECT_EQ(protection_at(res.page(1)), "---p");
    EXPECT_EQ(protection_at(res.page(2)), "---p");

    child.link().send(kEndAccess);
    EXPECT_EQ(child.link().receive(), 0u) << "nothing maps the pages any more";
    EXPECT_TRUE(exited_with(child.wait(), 0));
}

// `xenhsa-sim list` tells what each domain holds (the leak checks of the fault sweep).
TEST_F(SimTest, ListCountsWhatEachDomainMapsAndShares) {
    auto held = [this](DomId id) {
        std::array<uint32_t, 3> counts{~0u, ~0u, ~0u};
        if (auto domains = xen::sim::list_domains(sim.dir())) {
            for (const auto& d : domains.value()) {
                if (d.domid == id) counts = {d.mapped_pages, d.shared_pages, d.bound_ports};
            }
        }
        return counts;
    };
    const DomId g = create_guest("guest");
    auto child =
        spawn_in(g, [](Platform& p, Link& link) { return sharing_guest(p, link, 3, true); });
    const auto refs = receive_refs(child.link(), 3);
    ASSERT_EQ(refs.size(), 3u);
    EXPECT_EQ(held(g), (std::array<uint32_t, 3>{0, 3, 0}));
    EXPECT_EQ(held(0), (std::array<uint32_t, 3>{0, 0, 0}));
    {
        auto m = dom0.grants->map({.domid = g, .refs = refs, .writable = true});
        ASSERT_TRUE(m) << m.error().message();
        auto port = dom0.events->bind_unbound(g);
        ASSERT_TRUE(port);
        EXPECT_EQ(held(0), (std::array<uint32_t, 3>{3, 0, 1}));
    }
    EXPECT_EQ(held(0), (std::array<uint32_t, 3>{0, 0, 0})) << "unmapped and unbound";
    child.link().send(kEndAccess);
    EXPECT_EQ(child.link().receive(), 0u);
    EXPECT_TRUE(exited_with(child.wait(), 0));
    const uint32_t shared_after = held(g)[1];  // ~0: the domain went with its process
    EXPECT_TRUE(shared_after == 0 || shared_after == ~0u) << "the share ended";
}

TEST_F(SimTest, ReadOnlyGrantMapsReadOnlyAndWritingFaults) {
    const DomId g = create_guest("guest");
    auto child =
        spawn_in(g, [](Platform& p, Link& link) { return sharing_guest(p, link, 1, false); });
    const auto refs = receive_refs(child.link(), 1);
    ASSERT_EQ(refs.size(), 1u);

    std::array<int, 1> status{-1};
    auto rw = dom0.grants->map({.domid = g, .refs = refs, .writable = true}, status);
    ASSERT_FALSE(rw);
    EXPECT_EQ(rw.error().value(), EPERM);
    EXPECT_EQ(status[0], EPERM);

    auto ro = dom0.grants->map({.domid = g, .refs = refs, .writable = false});
    ASSERT_TRUE(ro) << ro.error().message();
    EXPECT_TRUE(all_of(ro.value().bytes(), 0x10));
    std::byte* addr = ro.value().data();
    auto writer = ChildProcess::spawn([addr](Link&) {
        install_fault_exits();
        *reinterpret_cast<volatile std::byte*>(addr) = std::byte{1};
        return 0;
    });
    const auto st = writer.wait();
    EXPECT_TRUE(exited_with(st, ChildProcess::kSegv)) << describe_status(st);
    EXPECT_TRUE(all_of(ro.value().bytes(), 0x10)) << "the write did not land";
    child.link().send(kDone);
    EXPECT_TRUE(exited_with(child.wait(), 0));
}

TEST_F(SimTest, BatchWithABadRefMapsNothing) {
    const DomId g = create_guest("guest");
    auto child =
        spawn_in(g, [](Platform& p, Link& link) { return sharing_guest(p, link, 3, true); });
    const auto refs = receive_refs(child.link(), 3);
    ASSERT_EQ(refs.size(), 3u);

    const std::array<GrantRef, 3> never_granted{refs[0], 3000, refs[2]};
    std::array<int, 3> status{-1, -1, -1};
    auto m = dom0.grants->map({.domid = g, .refs = never_granted, .writable = true}, status);
    ASSERT_FALSE(m);
    EXPECT_EQ(m.error().value(), EPERM);
    EXPECT_EQ(status, (std::array<int, 3>{0, EPERM, ECANCELED}));

    const std::array<GrantRef, 3> out_of_range{refs[0], refs[1], 0x7FFFFFFF};
    m = dom0.grants->map({.domid = g, .refs = out_of_range, .writable = true}, status);
    ASSERT_FALSE(m);
    EXPECT_EQ(status, (std::array<int, 3>{0, 0, EINVAL}));

    std::array<int, 2> short_status{};
    EXPECT_EQ(dom0.grants->map({.domid = g, .refs = refs, .writable = true}, short_status)
                  .error()
                  .value(),
              EINVAL);
    EXPECT_EQ(dom0.grants->map({.domid = 0x7F00, .refs = refs, .writable = true}).error().value(),
              ESRCH);

    child.link().send(kEndAccess);
    EXPECT_EQ(child.link().receive(), 0u) << "a failed batch leaves nothing pinned";
    EXPECT_TRUE(exited_with(child.wait(), 0));
}

TEST_F(SimTest, EndAccessIsBusyWhileMapped) {
    const DomId g = create_guest("guest");
    auto child =
        spawn_in(g, [](Platform& p, Link& link) { return sharing_guest(p, link, 2, true); });
    const auto refs = receive_refs(child.link(), 2);
    ASSERT_EQ(refs.size(), 2u);
    auto m = dom0.grants->map({.domid = g, .refs = std::span(refs).subspan(1), .writable = false});
    ASSERT_TRUE(m);
    child.link().send(kEndAccess);
    EXPECT_EQ(child.link().receive(), static_cast<uint64_t>(EBUSY));
    m.value().reset();
    child.link().send(kEndAccess);
    EXPECT_EQ(child.link().receive(), 0u);
    EXPECT_TRUE(exited_with(child.wait(), 0));
}

TEST_F(SimTest, RevokeMakesThePeerFaultAndTheMemoryIsNotReused) {
    const DomId g = create_guest("guest");
    auto lent = dom0.sharer->share({.peer = g, .pages = 1, .writable = true});
    ASSERT_TRUE(lent);
    fill({lent.value().data(), kPage}, 0x5C);
    const GrantRef ref = lent.value().refs()[0];

    auto child = spawn_in(g, [ref](Platform& p, Link& link) {
        const std::array<GrantRef, 1> refs{ref};
        auto m = p.grants->map({.domid = 0, .refs = refs, .writable = true});
        CHILD_CHECK(m);
        CHILD_CHECK(all_of(m.value().bytes(), 0x5C));
        link.send(1);
        CHILD_CHECK(link.receive());  // revoked
        install_fault_exits();
        (void)*reinterpret_cast<volatile std::byte*>(m.value().data());
        return 0;  // the read did not fault
    });
    ASSERT_TRUE(child.link().receive());
    EXPECT_EQ(lent.value().revoke(), xen::RevokeEffect::enforced);
    EXPECT_FALSE(lent.value().data());
    child.link().send(1);
    const auto st = child.wait();
    EXPECT_TRUE(exited_with(st, ChildProcess::kBus)) << describe_status(st);

    auto fresh = dom0.sharer->share({.peer = g, .pages = 1, .writable = true});
    ASSERT_TRUE(fresh);
    EXPECT_TRUE(all_of({fresh.value().data(), kPage}, 0)) << "a new share is fresh memory";
}

// GrantUsage: a guest holds what it maps of dom0's grants until it unmaps, whether dom0
// released or revoked them meanwhile; other guests hold none of it.
TEST_F(SimTest, GrantUsageCountsWhatAPeerStillHolds) {
    auto usage = sim::open_grant_usage(sim.dir(), 0);
    ASSERT_TRUE(usage);
    xen::GrantUsage& u = *usage.value();
    auto pool = u.share_pool_pages();
    ASSERT_TRUE(pool);
    EXPECT_EQ(pool.value(), 256u * 512u - 8u) << "dom0's table but the reserved refs";

    const DomId g = create_guest("guest");
    const DomId other = create_guest("other");
    auto kept = dom0.sharer->share({.peer = g, .pages = 3, .writable = true});
    auto revoked = dom0.sharer->share({.peer = g, .pages = 2, .writable = true});
    auto unmapped = dom0.sharer->share({.peer = g, .pages = 4, .writable = true});
    ASSERT_TRUE(kept && revoked && unmapped);
    EXPECT_EQ(u.held_by(g).value(), 9u) << "live shares count";
    EXPECT_EQ(u.held_by(other).value(), 0u);

    std::vector<GrantRef> refs(kept.value().refs().begin(), kept.value().refs().end());
    refs.insert(refs.end(), revoked.value().refs().begin(), revoked.value().refs().end());
    auto child = spawn_in(g, [refs](Platform& p, Link& link) {
        auto m = p.grants->map({.domid = 0, .refs = refs, .writable = true});
        CHILD_CHECK(m);
        link.send(1);
        CHILD_CHECK(link.receive());  // unmap
        return 0;
    });
    ASSERT_TRUE(child.link().receive());
    { const xen::SharedPages gone = std::move(kept).value(); }  // released
    (void)revoked.value().revoke();
    { const xen::SharedPages gone = std::move(unmapped).value(); }
    EXPECT_EQ(u.held_by(g).value(), 5u) << "released and revoked pages it still maps";
    EXPECT_EQ(u.held_by(other).value(), 0u);
    child.link().send(1);
    EXPECT_TRUE(exited_with(child.wait(), 0));
    EXPECT_TRUE(eventually([&] { return u.held_by(g).value() == 0; })) << u.held_by(g).value();
}

TEST_F(SimTest, KilledMapperIsUnpinnedAndItsUnmapNotificationRuns) {
    const DomId g = create_guest("guest");
    constexpr uint32_t kAliveByte = 100;
    auto guest = spawn_in(g, [](Platform& p, Link& link) {
        auto shared = p.sharer->share({.peer = 0, .pages = 1, .writable = true});
        CHILD_CHECK(shared);
        fill({shared.value().data(), kPage}, 0xAA);
        auto port = p.events->bind_unbound(0);
        CHILD_CHECK(port);
        link.send(shared.value().refs()[0]);
        link.send(port.value().port());
        // The mapper's death: the byte is cleared, then the port fires.
        CHILD_CHECK(next_port(*p.events) == port.value().port());
        CHILD_CHECK(shared.value().data()[kAliveByte] == std::byte{0});
        CHILD_CHECK(shared.value().data()[kAliveByte + 1] == std::byte{0xAA});
        CHILD_CHECK(shared.value().end_access());
        return 0;
    });
    const auto ref = guest.link().receive();
    const auto port = guest.link().receive();
    ASSERT_TRUE(ref && port);

    const std::filesystem::path dir = sim.dir();
    auto mapper = ChildProcess::spawn([&](Link& link) -> int {
        auto p = sim::attach(dir, 0);  // its own dom0 attachment
        CHILD_CHECK(p);
        auto local = p.value().events->bind_interdomain(g, static_cast<Port>(*port));
        CHILD_CHECK(local);
        auto m = p.value().grants->map_notify(
            g, static_cast<GrantRef>(*ref), true,
            {.clear_byte_at = kAliveByte, .port = local.value().port()});
        CHILD_CHECK(m);
        CHILD_CHECK(m.value().data()[kAliveByte] == std::byte{0xAA});
        link.send(1);
        for (;;) ::pause();
    });
    ASSERT_TRUE(mapper.link().receive());
    mapper.kill(SIGKILL);
    const auto mst = mapper.wait();
    EXPECT_TRUE(mst && WIFSIGNALED(*mst)) << describe_status(mst);
    const auto gst = guest.wait();
    EXPECT_TRUE(exited_with(gst, 0)) << describe_status(gst);
}

// gntalloc's notification on pages a domain grants: when the sharing process dies, the
// byte is cleared in the pages its peer still maps, and the peer's port fires.
TEST_F(SimTest, AKilledSharersUnmapNotificationClearsItsByteAndFiresThePort) {
    const DomId g = create_guest("guest");
    constexpr uint32_t kAliveByte = 8;
    auto guest = spawn_in(g, [](Platform& p, Link& link) {
        auto port = p.events->bind_unbound(0);
        CHILD_CHECK(port);
        auto shared =
            p.sharer->share({.peer = 0,
                             .pages = 2,
                             .writable = true,
                             .notify = {.clear_byte_at = kAliveByte, .port = port.value().port()}});
        CHILD_CHECK(shared);
        fill({shared.value().data(), 2 * kPage}, 0xAA);
        link.send(shared.value().refs()[0]);
        link.send(port.value().port());
        for (;;) ::pause();
    });
    const auto ref = guest.link().receive();
    const auto port = guest.link().receive();
    ASSERT_TRUE(ref && port);
    auto local = dom0.events->bind_interdomain(g, static_cast<Port>(*port));
    ASSERT_TRUE(local);
    const auto gref = static_cast<GrantRef>(*ref);
    auto m = dom0.grants->map(
        {.domid = g, .refs = std::span<const GrantRef>(&gref, 1), .writable = false});
    ASSERT_TRUE(m);
    EXPECT_EQ(m.value().data()[kAliveByte], std::byte{0xAA});

    guest.kill(SIGKILL);
    const auto gst = guest.wait();
    EXPECT_TRUE(gst && WIFSIGNALED(*gst)) << describe_status(gst);
    EXPECT_EQ(next_port(*dom0.events), local.value().port()) << "the sharer's death notifies";
    EXPECT_EQ(m.value().data()[kAliveByte], std::byte{0}) << "and clears the byte";
    EXPECT_EQ(m.value().data()[kAliveByte + 1], std::byte{0xAA}) << "that byte only";
}

TEST_F(SimTest, AShareNotificationNeedsAByteInTheFirstPageAndABoundPort) {
    EXPECT_EQ(dom0.sharer
                  ->share({.peer = 0,
                           .pages = 1,
                           .writable = true,
                           .notify = {.clear_byte_at = kPage, .port = std::nullopt}})
                  .error()
                  .value(),
              EINVAL);
    EXPECT_EQ(dom0.sharer
                  ->share({.peer = 0,
                           .pages = 1,
                           .writable = true,
                           .notify = {.clear_byte_at = std::nullopt, .port = 999}})
                  .error()
                  .value(),
              EINVAL);
}

TEST_F(SimTest, UnmapNotifyAlsoRunsOnAnOrdinaryUnmap) {
    const DomId g = create_guest("guest");
    auto guest = spawn_in(g, [](Platform& p, Link& link) {
        auto shared = p.sharer->share({.peer = 0, .pages = 1, .writable = true});
        CHILD_CHECK(shared);
        fill({shared.value().data(), kPage}, 0xAA);
        link.send(shared.value().refs()[0]);
        CHILD_CHECK(link.receive());  // unmapped
        CHILD_CHECK(shared.value().data()[0] == std::byte{0});
        return 0;
    });
    const auto ref = guest.link().receive();
    ASSERT_TRUE(ref);
    auto m = dom0.grants->map_notify(g, static_cast<GrantRef>(*ref), true,
                                     {.clear_byte_at = 0, .port = std::nullopt});
    ASSERT_TRUE(m);
    EXPECT_EQ(dom0.grants
                  ->map_notify(g, static_cast<GrantRef>(*ref), false,
                               {.clear_byte_at = 0, .port = std::nullopt})
                  .error()
                  .value(),
              EINVAL)
        << "clearing a byte needs a writable mapping";
    EXPECT_EQ(dom0.grants
                  ->map_notify(g, static_cast<GrantRef>(*ref), true,
                               {.clear_byte_at = std::nullopt, .port = 999})
                  .error()
                  .value(),
              EINVAL)
        << "not a port of ours";
    m.value().reset();
    guest.link().send(1);
    EXPECT_TRUE(exited_with(guest.wait(), 0));
}

TEST_F(SimTest, MappingsOutliveTheGranter) {
    const DomId g = create_guest("guest");
    auto child = spawn_in(g, [](Platform& p, Link& link) {
        auto shared = p.sharer->share({.peer = 0, .pages = 1, .writable = true});
        CHILD_CHECK(shared);
        fill({shared.value().data(), kPage}, 0x42);
        link.send(shared.value().refs()[0]);
        CHILD_CHECK(link.receive());
        return 0;
    });
    const auto ref = child.link().receive();
    ASSERT_TRUE(ref);
    const std::array<GrantRef, 1> refs{static_cast<GrantRef>(*ref)};
    auto m = dom0.grants->map({.domid = g, .refs = refs, .writable = true});
    ASSERT_TRUE(m);
    child.link().send(1);
    EXPECT_TRUE(exited_with(child.wait(), 0));
    EXPECT_TRUE(eventually([&] { return !alive(g); }));
    EXPECT_TRUE(all_of(m.value().bytes(), 0x42)) << "the pages stay until we unmap";
    m.value().data()[0] = std::byte{1};
    m.value().reset();
    EXPECT_EQ(dom0.grants->map({.domid = g, .refs = refs, .writable = true}).error().value(),
              ESRCH);
}

TEST_F(SimTest, PagesReleasedWhileMappedStayGrantedUntilThePeerUnmaps) {
    const DomId g = create_guest("guest");
    auto child = spawn_in(g, [](Platform& p, Link& link) {
        auto shared = p.sharer->share({.peer = 0, .pages = 1, .writable = true});
        CHILD_CHECK(shared);
        fill({shared.value().data(), kPage}, 0x66);
        link.send(shared.value().refs()[0]);
        CHILD_CHECK(link.receive());  // mapped
        shared.value() = {};          // gives the pages up without ending access
        link.send(1);
        CHILD_CHECK(link.receive());
        return 0;
    });
    const auto ref = child.link().receive();
    ASSERT_TRUE(ref);
    auto table = sim::map_grant_table(sim.dir(), g);
    ASSERT_TRUE(table);
    const grant_entry_v1_t& e = table.value().entries()[*ref];
    const std::array<GrantRef, 1> refs{static_cast<GrantRef>(*ref)};
    auto m = dom0.grants->map({.domid = g, .refs = refs, .writable = true});
    ASSERT_TRUE(m);
    child.link().send(1);
    ASSERT_TRUE(child.link().receive());  // released
    EXPECT_EQ(__atomic_load_n(&e.flags, __ATOMIC_ACQUIRE) & GTF_type_mask, GTF_permit_access)
        << "gntalloc's rule: the grant lives on while mapped";
    EXPECT_TRUE(all_of(m.value().bytes(), 0x66)) << "and the memory is not reused";
    m.value().reset();
    EXPECT_EQ(__atomic_load_n(&e.flags, __ATOMIC_ACQUIRE), 0) << "ended once unmapped";
    child.link().send(1);
    EXPECT_TRUE(exited_with(child.wait(), 0));
}

TEST_F(SimTest, ForeignMemoryMapsADomainsFrames) {
    const DomId g = create_guest("guest");
    auto child = spawn_in(g, [](Platform& p, Link& link) {
        auto shared = p.sharer->share({.peer = 0, .pages = 2, .writable = false});
        CHILD_CHECK(shared);
        fill({shared.value().data(), 2 * kPage}, 0x31);
        link.send(shared.value().refs()[1]);
        CHILD_CHECK(link.receive());
        CHILD_CHECK(shared.value().data()[kPage] == std::byte{0x99});
        return 0;
    });
    const auto ref = child.link().receive();
    ASSERT_TRUE(ref);
    auto table = sim::map_grant_table(sim.dir(), g);
    ASSERT_TRUE(table);
    const uint64_t gfn = table.value().entries()[*ref].frame;
    const std::array<uint64_t, 1> gfns{gfn};
    auto fm = dom0.foreign->map(g, gfns, true);
    ASSERT_TRUE(fm) << fm.error().message();
    EXPECT_TRUE(all_of(fm.value()->bytes(), 0x31));
    fm.value()->bytes()[0] = std::byte{0x99};
    const std::array<uint64_t, 2> with_hole{gfn, 5};
    EXPECT_EQ(dom0.foreign->map(g, with_hole, false).error().value(), EFAULT);
    child.link().send(1);
    EXPECT_TRUE(exited_with(child.wait(), 0));
}

TEST_F(SimTest, RewrittenGrantEntriesReachOnlyTheGuestsOwnMemory) {
    const DomId g = create_guest("guest");
    const DomId other = create_guest("other");
    auto child =
        spawn_in(g, [](Platform& p, Link& link) { return sharing_guest(p, link, 1, true); });
    const auto refs = receive_refs(child.link(), 1);
    ASSERT_EQ(refs.size(), 1u);
    auto table = sim::map_grant_table(sim.dir(), g);  // we play the hostile guest
    ASSERT_TRUE(table);
    grant_entry_v1_t& e = table.value().entries()[refs[0]];
    const uint32_t frame = e.frame;

    std::array<int, 1> status{};
    __atomic_store_n(&e.frame, 7u, __ATOMIC_RELEASE);  // a hole in the guest's gfn space
    auto m = dom0.grants->map({.domid = g, .refs = refs, .writable = true}, status);
    ASSERT_FALSE(m);
    EXPECT_EQ(status[0], EFAULT);
    __atomic_store_n(&e.frame, frame, __ATOMIC_RELEASE);
    __atomic_store_n(&e.domid, other, __ATOMIC_RELEASE);  // granted to another domain
    EXPECT_EQ(
        dom0.grants->map({.domid = g, .refs = refs, .writable = true}, status).error().value(),
        EPERM);
    __atomic_store_n(&e.domid, DomId{0}, __ATOMIC_RELEASE);
    m = dom0.grants->map({.domid = g, .refs = refs, .writable = true});
    ASSERT_TRUE(m);
    EXPECT_TRUE(all_of(m.value().bytes(), 0x10));
    m.value().reset();
    child.link().send(kEndAccess);
    EXPECT_EQ(child.link().receive(), 0u);
    EXPECT_TRUE(exited_with(child.wait(), 0));
}

TEST_F(SimTest, SharesAtAFixedAddressLeaveTheReservationBehind) {
    const DomId g = create_guest("guest", 4);
    Reservation res(4);
    auto shared = dom0.sharer->share({.peer = g, .pages = 2, .writable = true, .at = res.page(1)});
    ASSERT_TRUE(shared) << shared.error().message();
    EXPECT_EQ(shared.value().data(), res.page(1));
    EXPECT_EQ(protection_at(res.page(2)), "rw-s");
    fill({res.page(1), 2 * kPage}, 3);
    ASSERT_TRUE(shared.value().end_access());
    EXPECT_EQ(protection_at(res.page(1)), "---p");
    EXPECT_EQ(protection_at(res.page(2)), "---p");

    // A guest's shares are bounded by its RAM budget.
    auto child = spawn_in(g, [](Platform& p, Link&) {
        auto big = p.sharer->share({.peer = 0, .pages = 5, .writable = true});
        CHILD_CHECK(!big && big.error().value() == ENOMEM);
        auto fits = p.sharer->share({.peer = 0, .pages = 4, .writable = true});
        CHILD_CHECK(fits);
        return 0;
    });
    EXPECT_TRUE(exited_with(child.wait(), 0));
}

}  // namespace
}  // namespace xenhsa::testing
