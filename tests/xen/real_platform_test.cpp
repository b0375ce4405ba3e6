// The libxen* adapters. Most tests run without Xen: opening fails cleanly, argument
// validation happens before any library call (checked on handle-less "detached"
// components, which would crash if they reached the library), and Domains is exercised
// over a fake Store. What needs Xen is in tests/xen/semantics (the xen-qemu tier).
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <system_error>
#include <vector>
#include <xenhsa/xen/real/grant_limits.hpp>
#include <xenhsa/xen/real/platform.hpp>
#include <xenhsa/xen/real/testing.hpp>

namespace {

namespace x = xenhsa::xen;
namespace real = xenhsa::xen::real;
using x::errno_code;
using x::Result;

constexpr std::size_t kPage = x::GrantMapping::kPageSize;

bool have(const char* path) { return ::access(path, F_OK) == 0; }

int open_fds() {
    int n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d) != nullptr) {
            ++n;
        }
        ::closedir(d);
    }
    return n;
}

// True when [addr, addr + len) is covered by one inaccessible private mapping.
bool reserved_prot_none(const std::byte* addr, std::size_t len) {
    std::FILE* f = std::fopen("/proc/self/maps", "r");
    if (f == nullptr) {
        return false;
    }
    const auto lo = reinterpret_cast<uintptr_t>(addr);
    bool found = false;
    unsigned long start = 0;
    unsigned long end = 0;
    std::array<char, 8> perms{};
    std::array<char, 512> rest{};
    while (std::fscanf(f, "%lx-%lx %7s", &start, &end, perms.data()) == 3) {
        if (start <= lo && lo + len <= end) {
            found = std::string(perms.data()) == "---p";
        }
        if (std::fgets(rest.data(), rest.size(), f) == nullptr) {
            break;
        }
    }
    std::fclose(f);
    return found;
}

// A PROT_NONE reservation, as a caller of GrantMapSpec::at owns.
struct Reservation {
    explicit Reservation(std::size_t pages) : len(pages * kPage) {
        void* p =
            ::mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        base = p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
    }
    ~Reservation() {
        if (base != nullptr) {
            ::munmap(base, len);
        }
    }
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    std::byte* base = nullptr;
    std::size_t len;
};

template <class T>
int err(const Result<T>& r) {
    return r ? 0 : r.error().value();
}

// ---- Without Xen: opening fails with the library's errno, no crash, no leak -----------

TEST(RealPlatformNoXen, OpenFailsWithEnoentAndLeaksNoDescriptor) {
    if (have("/dev/xen")) {
        GTEST_SKIP() << "/dev/xen exists: this test is for machines without Xen";
    }
    const int fds = open_fds();
    for (const bool quiet : {true, false}) {
        real::RealOptions opts;
        opts.quiet = quiet;
        opts.want_foreign_memory = true;
        auto p = real::open_real_platform(opts);
        ASSERT_FALSE(p);
        EXPECT_EQ(p.error(), std::errc::no_such_file_or_directory) << p.error().message();
        EXPECT_EQ(p.error().category(), std::generic_category());
    }
    EXPECT_EQ(open_fds(), fds);
}

TEST(RealPlatformNoXen, EachComponentFailsWithEnoent) {
    if (have("/dev/xen")) {
        GTEST_SKIP() << "/dev/xen exists: this test is for machines without Xen";
    }
    real::RealOptions quiet;
    quiet.quiet = true;
    const std::map<std::string, std::function<std::error_code()>> opens = {
        {"gnttab", [&] { return real::open_grant_mapper(quiet).error(); }},
        {"gntshr", [&] { return real::open_grant_sharer(quiet).error(); }},
        {"evtchn", [&] { return real::open_event_channel(quiet).error(); }},
        {"xenstore", [&] { return real::open_store(quiet).error(); }},
        {"foreignmemory", [&] { return real::open_foreign_memory(quiet).error(); }},
    };
    const int fds = open_fds();
    for (const auto& [name, open] : opens) {
        EXPECT_EQ(open(), std::errc::no_such_file_or_directory) << name;
    }
    EXPECT_EQ(open_fds(), fds);
}

// ---- GrantMapper: validation before libxengnttab --------------------------------------

// dom0's maptrack size is on Xen's command line or Xen's default; Xen takes the last
// value given and ignores a malformed one.
TEST(GrantLimits, TheMaptrackFramesComeFromXensCommandLine) {
    using xenhsa::xen::real::maptrack_frames_from_commandline;
    EXPECT_EQ(maptrack_frames_from_commandline("dom0_mem=2G console=com1"), std::nullopt);
    EXPECT_EQ(maptrack_frames_from_commandline("gnttab_max_maptrack_frames=4096"), 4096u);
    EXPECT_EQ(maptrack_frames_from_commandline(
                  "dom0_mem=2G gnttab_max_maptrack_frames=2048 gnttab_max_frames=128"),
              2048u);
    EXPECT_EQ(maptrack_frames_from_commandline(
                  "gnttab_max_maptrack_frames=2048 gnttab_max_maptrack_frames=8192"),
              8192u);
    EXPECT_EQ(maptrack_frames_from_commandline("gnttab_max_maptrack_frames=lots"), std::nullopt);
    EXPECT_EQ(maptrack_frames_from_commandline("xgnttab_max_maptrack_frames=99"), std::nullopt);
}

TEST(RealGrantMapper, ZeroRefsIsEinvalWithoutTouchingTheLibrary) {
    auto m = real::testing::detached_grant_mapper();
    x::GrantMapSpec spec;
    spec.domid = 1;
    auto r = m->map(spec);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().value(), EINVAL);  // EBADF would mean it went on to the library

    Reservation res(1);
    ASSERT_NE(res.base, nullptr);
    spec.at = res.base;
    EXPECT_EQ(err(m->map(spec)), EINVAL);
}

TEST(RealGrantMapper, BadSpecsAreEinvalAndFillStatus) {
    auto m = real::testing::detached_grant_mapper();
    const std::array<x::GrantRef, 2> refs{8, 9};
    Reservation res(4);
    ASSERT_NE(res.base, nullptr);

    x::GrantMapSpec spec{.domid = 1, .refs = refs, .writable = true, .at = nullptr};
    std::array<int, 3> wrong_size{-1, -1, -1};
    EXPECT_EQ(err(m->map(spec, wrong_size)), EINVAL);
    EXPECT_EQ(wrong_size, (std::array<int, 3>{-1, -1, -1}));  // not one slot per ref

    std::array<int, 2> status{-1, -1};
    spec.at = res.base + 1;  // not page aligned
    EXPECT_EQ(err(m->map(spec, status)), EINVAL);
    EXPECT_EQ(status, (std::array<int, 2>{EINVAL, EINVAL}));

    spec.at = nullptr;
    spec.domid = x::kDomIdInvalid;
    status = {-1, -1};
    EXPECT_EQ(err(m->map(spec, status)), EINVAL);
    EXPECT_EQ(status, (std::array<int, 2>{EINVAL, EINVAL}));
}

TEST(RealGrantMapper, ValidSpecReachesTheLibraryGateAndKeepsTheReservation) {
    auto m = real::testing::detached_grant_mapper();
    const std::array<x::GrantRef, 2> refs{8, 9};
    Reservation res(4);
    ASSERT_NE(res.base, nullptr);
    std::array<int, 2> status{-1, -1};
    x::GrantMapSpec spec{.domid = 1, .refs = refs, .writable = false, .at = res.base + kPage};
    EXPECT_EQ(err(m->map(spec, status)), EBADF);
    EXPECT_EQ(status, (std::array<int, 2>{EBADF, EBADF}));  // one errno for the batch
    EXPECT_TRUE(reserved_prot_none(res.base, res.len));
}

TEST(RealGrantMapper, MapNotifyValidatesTheNotification) {
    auto m = real::testing::detached_grant_mapper();
    EXPECT_EQ(err(m->map_notify(1, 8, true, {.clear_byte_at = 4096, .port = {}})), EINVAL);
    // gntdev cannot clear a byte in a read-only mapping.
    EXPECT_EQ(err(m->map_notify(1, 8, false, {.clear_byte_at = 0, .port = {}})), EINVAL);
    // -1 is the library's "no port".
    EXPECT_EQ(err(m->map_notify(1, 8, true, {.clear_byte_at = {}, .port = UINT32_MAX})), EINVAL);
    EXPECT_EQ(err(m->map_notify(1, 8, true, {.clear_byte_at = 4095, .port = 5})), EBADF);
    EXPECT_EQ(err(m->map_notify(1, 8, false, {.clear_byte_at = {}, .port = 5})), EBADF);
}

// ---- GrantSharer / ForeignMemory / EventChannel / Store: validation --------------------

TEST(RealGrantSharer, ZeroOrHugePageCountsAreEinval) {
    auto s = real::testing::detached_grant_sharer();
    EXPECT_EQ(err(s->share({.peer = 1, .pages = 0, .writable = true})), EINVAL);
    EXPECT_EQ(err(s->share({.peer = 1, .pages = std::size_t{1} << 40, .writable = true})), EINVAL);
    EXPECT_EQ(err(s->share({.peer = x::kDomIdInvalid, .pages = 1, .writable = true})), EINVAL);
    EXPECT_EQ(err(s->share({.peer = 1, .pages = 1, .writable = true})), EBADF);
}

TEST(RealGrantSharer, FixedAddressIsValidatedAndTheReservationKept) {
    auto s = real::testing::detached_grant_sharer();
    Reservation res(4);
    ASSERT_NE(res.base, nullptr);
    EXPECT_EQ(err(s->share({.peer = 1, .pages = 1, .writable = true, .at = res.base + 1})), EINVAL);
    // The range must not wrap around the address space.
    auto* top = reinterpret_cast<std::byte*>(UINTPTR_MAX - kPage + 1);
    EXPECT_EQ(err(s->share({.peer = 1, .pages = 2, .writable = true, .at = top})), EINVAL);
    EXPECT_EQ(err(s->share({.peer = 1, .pages = 2, .writable = true, .at = res.base + kPage})),
              EBADF);
    EXPECT_TRUE(reserved_prot_none(res.base, res.len));
}

TEST(RealForeignMemory, EmptyGfnListIsEinval) {
    auto f = real::testing::detached_foreign_memory();
    EXPECT_EQ(err(f->map(1, {}, false)), EINVAL);
    const std::array<uint64_t, 1> gfns{0x1000};
    EXPECT_EQ(err(f->map(x::kDomIdInvalid, gfns, false)), EINVAL);
    EXPECT_EQ(err(f->map(1, gfns, false)), EBADF);
}

TEST(RealEventChannel, DetachedPendingFailsInsteadOfBlocking) {
    auto e = real::testing::detached_event_channel();
    EXPECT_EQ(e->fd(), -1);
    EXPECT_EQ(err(e->pending()), EBADF);
    EXPECT_EQ(err(e->bind_interdomain(x::kDomIdInvalid, 3)), EINVAL);
    EXPECT_EQ(err(e->bind_unbound(x::kDomIdInvalid)), EINVAL);
    EXPECT_EQ(err(e->bind_unbound(1)), EBADF);
}

TEST(RealStore, EmbeddedNulIsEinvalEverywhere) {
    auto s = real::testing::detached_store();
    using namespace std::string_view_literals;
    const auto bad = "/local/domain/1\0/evil"sv;
    const auto good = "/local/domain/1"sv;
    EXPECT_EQ(err(s->read(x::kNoTx, bad)), EINVAL);
    EXPECT_EQ(err(s->write(x::kNoTx, bad, "v")), EINVAL);
    EXPECT_EQ(err(s->mkdir(x::kNoTx, bad)), EINVAL);
    EXPECT_EQ(err(s->rm(x::kNoTx, bad)), EINVAL);
    EXPECT_EQ(err(s->directory(x::kNoTx, bad)), EINVAL);
    EXPECT_EQ(err(s->get_perms(x::kNoTx, bad)), EINVAL);
    EXPECT_EQ(err(s->set_perms(x::kNoTx, bad, {{0, x::StoreAccess::none}})), EINVAL);
    EXPECT_EQ(err(s->watch(bad, "t")), EINVAL);
    EXPECT_EQ(err(s->watch(good, "t\0u"sv)), EINVAL);
    EXPECT_EQ(err(s->unwatch(good, "t\0u"sv)), EINVAL);
    // Values are length-counted: a NUL in a value is fine and reaches the library gate.
    EXPECT_EQ(err(s->write(x::kNoTx, good, "a\0b"sv)), EBADF);
    EXPECT_EQ(err(s->read(x::kNoTx, good)), EBADF);
}

TEST(RealStore, RejectsEmptyPermsAndTheNullTransaction) {
    auto s = real::testing::detached_store();
    EXPECT_EQ(err(s->set_perms(x::kNoTx, "/a", {})), EINVAL);
    EXPECT_EQ(err(s->transaction_end(x::kNoTx, true)), EINVAL);
    EXPECT_EQ(err(s->transaction_end(x::kNoTx, false)), EINVAL);
    EXPECT_EQ(err(s->transaction_start()), EBADF);
    EXPECT_EQ(err(s->next_event()), EBADF);
    EXPECT_EQ(s->fd(), -1);
}

// ---- Domains over a fake Store --------------------------------------------------------

class FakeStore final : public x::Store {
public:
    std::map<std::string, Result<std::string>> nodes;
    std::vector<std::string> reads;

    Result<std::string> read(x::TxId, std::string_view path) override {
        reads.emplace_back(path);
        auto it = nodes.find(std::string(path));
        if (it == nodes.end()) return errno_code(ENOENT);
        return it->second;
    }
    Result<void> write(x::TxId, std::string_view, std::string_view) override { return nosys(); }
    Result<void> mkdir(x::TxId, std::string_view) override { return nosys(); }
    Result<void> rm(x::TxId, std::string_view) override { return nosys(); }
    Result<std::vector<std::string>> directory(x::TxId, std::string_view) override {
        return nosys();
    }
    Result<std::vector<x::StorePerm>> get_perms(x::TxId, std::string_view) override {
        return nosys();
    }
    Result<void> set_perms(x::TxId, std::string_view, const std::vector<x::StorePerm>&) override {
        return nosys();
    }
    Result<x::TxId> transaction_start() override { return nosys(); }
    Result<void> transaction_end(x::TxId, bool) override { return nosys(); }
    Result<void> watch(std::string_view, std::string_view) override { return nosys(); }
    Result<void> unwatch(std::string_view, std::string_view) override { return nosys(); }
    [[nodiscard]] int fd() const noexcept override { return -1; }
    Result<std::optional<x::WatchEvent>> next_event() override { return nosys(); }

private:
    static std::error_code nosys() { return errno_code(ENOSYS); }
};

struct DomainsFixture {
    FakeStore* store = nullptr;
    std::unique_ptr<x::Domains> domains;
};

DomainsFixture make(std::string domid, bool want_domctl = false) {
    auto s = std::make_unique<FakeStore>();
    s->nodes.emplace("domid", std::move(domid));
    s->nodes.emplace("/local/domain/7", std::string());
    s->nodes.emplace("/local/domain/9", errno_code(EACCES));
    DomainsFixture f{s.get(), nullptr};
    real::RealOptions opts;
    opts.want_domctl = want_domctl;
    auto d = real::make_domains(std::move(s), opts);
    if (d) f.domains = std::move(d.value());
    return f;
}

TEST(RealDomains, SelfIsTheRelativeDomidKey) {
    auto f = make("3");
    ASSERT_TRUE(f.domains);
    EXPECT_EQ(f.domains->self(), 3);
    ASSERT_EQ(f.store->reads.size(), 1u);
    EXPECT_EQ(f.store->reads[0], "domid");
}

TEST(RealDomains, MalformedOrMissingDomidFailsTheOpen) {
    for (const char* bad : {"", "03", "-1", "3 ", "0x3"}) {
        auto s = std::make_unique<FakeStore>();
        s->nodes.emplace("domid", std::string(bad));
        auto d = real::make_domains(std::move(s), {});
        ASSERT_FALSE(d) << '"' << bad << '"';
        EXPECT_EQ(d.error().value(), EINVAL) << '"' << bad << '"';
    }
    auto s = std::make_unique<FakeStore>();
    s->nodes.emplace("domid", std::string("32752"));  // DOMID_FIRST_RESERVED
    EXPECT_EQ(err(real::make_domains(std::move(s), {})), ERANGE);
    EXPECT_EQ(err(real::make_domains(std::make_unique<FakeStore>(), {})), ENOENT);
    EXPECT_EQ(err(real::make_domains(nullptr, {})), EINVAL);
}

TEST(RealDomains, XenstoreFallbackAnswersFromTheDomainsHome) {
    auto f = make("0");
    ASSERT_TRUE(f.domains);
    EXPECT_EQ(f.domains->alive(7).value(), true);
    EXPECT_EQ(f.store->reads.back(), "/local/domain/7");
    EXPECT_EQ(f.domains->alive(8).value(), false);
    EXPECT_EQ(f.store->reads.back(), "/local/domain/8");
    // Unreadable: xenstored says EACCES whether or not the domain exists. Not a guess.
    EXPECT_EQ(err(f.domains->alive(9)), EACCES);
}

TEST(RealDomains, ReservedIdsAreEinvalWithoutAStoreRead) {
    auto f = make("1");
    ASSERT_TRUE(f.domains);
    const auto reads = f.store->reads.size();
    EXPECT_EQ(err(f.domains->alive(x::kDomIdSelf)), EINVAL);
    EXPECT_EQ(err(f.domains->alive(x::kDomIdInvalid)), EINVAL);
    EXPECT_EQ(f.store->reads.size(), reads);
}

TEST(RealDomains, WithoutPrivcmdDomctlFallsBackToXenstore) {
    if (have("/dev/xen/privcmd")) {
        GTEST_SKIP() << "privcmd present: libxenctrl may open";
    }
    const int fds = open_fds();
    {
        auto f = make("2", /*want_domctl=*/true);
        ASSERT_TRUE(f.domains);  // a driver domain must work without libxenctrl
        EXPECT_EQ(f.domains->alive(7).value(), true);
        EXPECT_EQ(f.domains->alive(8).value(), false);
        EXPECT_EQ(f.store->reads.back(), "/local/domain/8");
    }
    EXPECT_EQ(open_fds(), fds);
}

}  // namespace
