// probe(): a revoked page (SIGBUS) or an inaccessible one (SIGSEGV) is reported, not fatal.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/probe.hpp>

namespace {

using namespace xenhsa::frontend;

constexpr std::size_t kPage = 4096;

// Two pages of a memfd mapped shared, as the simulated hypervisor maps a LEND.
class MemfdMapping {
public:
    MemfdMapping() {
        fd_ = memfd_create("probe-test", MFD_CLOEXEC);
        if (fd_ < 0 || ftruncate(fd_, 2 * kPage) != 0) {
            return;
        }
        void* p = mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        addr_ = p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
    }
    ~MemfdMapping() {
        if (addr_ != nullptr) {
            munmap(addr_, 2 * kPage);
        }
        if (fd_ >= 0) {
            close(fd_);
        }
    }
    // What enforced revoke does: the segment is truncated under the mapping.
    bool truncate() { return ftruncate(fd_, 0) == 0; }
    std::byte* addr() const { return addr_; }

private:
    int fd_ = -1;
    std::byte* addr_ = nullptr;
};

TEST(Probe, LivePageReadsAndWrites) {
    MemfdMapping m;
    ASSERT_NE(m.addr(), nullptr);
    m.addr()[10] = std::byte{42};
    EXPECT_TRUE(probe(m.addr() + 10));
    EXPECT_TRUE(probe(m.addr() + 10, ProbeAccess::write));
    EXPECT_EQ(m.addr()[10], std::byte{42});  // a write probe keeps the value
    EXPECT_TRUE(probe_range(m.addr(), 2 * kPage));
}

TEST(Probe, TruncatedMemfdIsRevokedAccess) {
    MemfdMapping m;
    ASSERT_NE(m.addr(), nullptr);
    ASSERT_TRUE(m.truncate());
    auto r = probe(m.addr());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), Errc::revoked_access);
    EXPECT_EQ(probe(m.addr() + kPage, ProbeAccess::write).error(), Errc::revoked_access);
    EXPECT_EQ(probe_range(m.addr(), 2 * kPage).error(), Errc::revoked_access);
    // And again: the handler stays in place after a fault.
    EXPECT_EQ(probe(m.addr() + 5).error(), Errc::revoked_access);
}

TEST(Probe, ProtNoneIsAccessFault) {
    void* p = mmap(nullptr, kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    EXPECT_EQ(probe(p).error(), Errc::access_fault);
    munmap(p, kPage);
}

TEST(Probe, WriteToReadOnlyIsAccessFault) {
    void* p = mmap(nullptr, kPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    EXPECT_TRUE(probe(p));
    EXPECT_EQ(probe(p, ProbeAccess::write).error(), Errc::access_fault);
    munmap(p, kPage);
}

TEST(Probe, CopyStopsAtTheRevokedPage) {
    MemfdMapping m;
    ASSERT_NE(m.addr(), nullptr);
    std::memset(m.addr(), 0x5A, 2 * kPage);
    std::array<std::byte, 2 * kPage> out{};
    ASSERT_TRUE(probed_copy(out.data(), m.addr(), out.size()));
    EXPECT_EQ(out[kPage + 7], std::byte{0x5A});
    ASSERT_TRUE(m.truncate());
    EXPECT_EQ(probed_copy(out.data(), m.addr(), out.size()).error(), Errc::revoked_access);
}

TEST(Probe, WorksOnOtherThreads) {
    MemfdMapping m;
    ASSERT_NE(m.addr(), nullptr);
    ASSERT_TRUE(m.truncate());
    std::error_code seen;
    std::thread t([&] {
        auto r = probe(m.addr());
        seen = r ? std::error_code{} : r.error();
    });
    t.join();
    EXPECT_EQ(seen, Errc::revoked_access);
}

TEST(ProbeDeathTest, FaultOutsideAProbeStillKills) {
    MemfdMapping m;
    ASSERT_NE(m.addr(), nullptr);
    ASSERT_TRUE(probe(m.addr()));  // handlers installed
    ASSERT_TRUE(m.truncate());
    EXPECT_DEATH(
        {
            volatile auto* p = reinterpret_cast<volatile unsigned char*>(m.addr());
            (void)*p;
        },
        "");
}

}  // namespace
