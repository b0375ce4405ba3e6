// A real-Xen worker's grant broker (backend/service/src/grant_broker.hpp): its rules over
// an authority that records what reaches it, the broker process over such an authority
// (confined, its answers, its end with the worker's), and the worker's filter refusing the
// ioctls the broker does.
#include "grant_broker.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>
#include <xenhsa/xen/public_headers.hpp>

#include "support/thread_confinement.hpp"
#include "syscall_filter.hpp"
extern "C" {
#include <xen/sys/evtchn.h>
#include <xen/sys/gntalloc.h>
#include <xen/sys/gntdev.h>
}

namespace xenhsa::backend::service {
namespace {

constexpr xen::DomId kGuest = 7;
constexpr xen::DomId kOther = 9;

// What a direct authority would be asked, answered without a device: a map's offset
// names its first ref, granted refs count up from 100, ports from 40.
class RecordingAuthority final : public xen::real::Authority {
public:
    xen::Result<uint64_t> map_grants(xen::DomId domid,
                                     std::span<const xen::GrantRef> refs) override {
        maps.emplace_back(domid, std::vector<xen::GrantRef>(refs.begin(), refs.end()));
        return uint64_t{refs[0]} * 4096;
    }
    xen::Result<void> notify_on_unmap(uint64_t byte, bool clear_byte,
                                      std::optional<xen::Port> port) override {
        notified.push_back({byte, clear_byte, port});
        return boost::outcome_v2::success();
    }
    xen::Result<uint64_t> grant_pages(xen::DomId domid, bool writable,
                                      std::span<xen::GrantRef> refs) override {
        grants.emplace_back(domid, writable);
        for (std::size_t i = 0; i < refs.size(); ++i) {
            refs[i] = static_cast<xen::GrantRef>(100 + i);
        }
        return uint64_t{8192};
    }
    xen::Result<xen::Port> bind_interdomain(xen::DomId remote, xen::Port) override {
        bound.push_back(remote);
        return next_port++;
    }
    xen::Result<void> unbind(xen::Port local) override {
        unbound.push_back(local);
        return boost::outcome_v2::success();
    }

    struct Notify {
        uint64_t byte;
        bool clear;
        std::optional<xen::Port> port;
    };
    std::vector<std::pair<xen::DomId, std::vector<xen::GrantRef>>> maps;
    std::vector<Notify> notified;
    std::vector<std::pair<xen::DomId, bool>> grants;
    std::vector<xen::DomId> bound;
    std::vector<xen::Port> unbound;
    xen::Port next_port = 40;
};

BrokerRequest request(BrokerOp op, xen::DomId domid = kGuest, uint32_t count = 0) {
    BrokerRequest r;
    r.op = static_cast<uint32_t>(op);
    r.domid = domid;
    r.count = count;
    return r;
}

class BrokerRulesTest : public ::testing::Test {
protected:
    RecordingAuthority authority;
    BrokerRules rules{authority, BrokerLimits{kGuest, 1}};
    std::vector<xen::GrantRef> buffer = std::vector<xen::GrantRef>(16, 0);
};

TEST_F(BrokerRulesTest, MapsAndGrantsForItsGuestOnly) {
    buffer[0] = 5;
    buffer[1] = 6;
    EXPECT_EQ(rules.handle(request(BrokerOp::map_grants, kOther, 2), buffer).error, EPERM);
    EXPECT_EQ(rules.handle(request(BrokerOp::grant_pages, kOther, 2), buffer).error, EPERM);
    EXPECT_TRUE(authority.maps.empty());
    EXPECT_TRUE(authority.grants.empty());

    const BrokerReply mapped = rules.handle(request(BrokerOp::map_grants, kGuest, 2), buffer);
    EXPECT_EQ(mapped.error, 0);
    EXPECT_EQ(mapped.offset, 5U * 4096);
    ASSERT_EQ(authority.maps.size(), 1U);
    EXPECT_EQ(authority.maps[0].first, kGuest);
    EXPECT_EQ(authority.maps[0].second, (std::vector<xen::GrantRef>{5, 6}));

    auto grant = request(BrokerOp::grant_pages, kGuest, 3);
    grant.flags = kBrokerWritable;
    const BrokerReply granted = rules.handle(grant, buffer);
    EXPECT_EQ(granted.error, 0);
    EXPECT_EQ(granted.offset, 8192U);
    EXPECT_EQ(buffer[0], 100U);
    EXPECT_EQ(buffer[2], 102U);
    ASSERT_EQ(authority.grants.size(), 1U);
    EXPECT_EQ(authority.grants[0], std::make_pair(kGuest, true));
}

TEST_F(BrokerRulesTest, CountsBeyondTheSharedBufferAndUnknownOpsAreRefused) {
    EXPECT_EQ(rules.handle(request(BrokerOp::map_grants, kGuest, 0), buffer).error, EINVAL);
    EXPECT_EQ(rules.handle(request(BrokerOp::map_grants, kGuest, 17), buffer).error, EINVAL);
    EXPECT_EQ(rules.handle(request(BrokerOp::grant_pages, kGuest, 17), buffer).error, EINVAL);
    auto flagged = request(BrokerOp::grant_pages, kGuest, 1);
    flagged.flags = 2;
    EXPECT_EQ(rules.handle(flagged, buffer).error, EINVAL);
    EXPECT_EQ(rules.handle(request(static_cast<BrokerOp>(0)), buffer).error, EINVAL);
    EXPECT_EQ(rules.handle(request(static_cast<BrokerOp>(99)), buffer).error, EINVAL);
    EXPECT_TRUE(authority.maps.empty());
    EXPECT_TRUE(authority.grants.empty());
}

TEST_F(BrokerRulesTest, BindsTheGuestsShareOfPortsAndNoMore) {
    EXPECT_EQ(rules.handle(request(BrokerOp::bind_interdomain, kOther), buffer).error, EPERM);
    const BrokerReply first = rules.handle(request(BrokerOp::bind_interdomain), buffer);
    EXPECT_EQ(first.error, 0);
    EXPECT_EQ(first.port, 40U);
    EXPECT_EQ(rules.handle(request(BrokerOp::bind_interdomain), buffer).error, ENOSPC);
    auto unbind = request(BrokerOp::unbind);
    unbind.port = first.port;
    EXPECT_EQ(rules.handle(unbind, buffer).error, 0);
    EXPECT_EQ(rules.handle(unbind, buffer).error, EPERM);  // not its port any more
    EXPECT_EQ(rules.handle(request(BrokerOp::bind_interdomain), buffer).error, 0);
    EXPECT_EQ(authority.bound, (std::vector<xen::DomId>{kGuest, kGuest}));
    EXPECT_EQ(authority.unbound, (std::vector<xen::Port>{40}));
}

TEST_F(BrokerRulesTest, UnmapNotificationsSignalOnlyItsOwnPorts) {
    auto notify = request(BrokerOp::notify_on_unmap);
    notify.flags = kBrokerClearByte | kBrokerSendEvent;
    notify.port = 3;  // bound by someone else in this domain
    notify.offset = 4096 + 8;
    EXPECT_EQ(rules.handle(notify, buffer).error, EPERM);
    notify.port = rules.handle(request(BrokerOp::bind_interdomain), buffer).port;
    EXPECT_EQ(rules.handle(notify, buffer).error, 0);
    auto clear_only = request(BrokerOp::notify_on_unmap);
    clear_only.flags = kBrokerClearByte;
    clear_only.port = 3;
    EXPECT_EQ(rules.handle(clear_only, buffer).error, 0);
    auto nothing = request(BrokerOp::notify_on_unmap);
    EXPECT_EQ(rules.handle(nothing, buffer).error, EINVAL);
    ASSERT_EQ(authority.notified.size(), 2U);
    EXPECT_EQ(authority.notified[0].byte, 4096U + 8);
    EXPECT_EQ(authority.notified[0].port, std::optional<xen::Port>(40));
    EXPECT_TRUE(authority.notified[1].clear);
    EXPECT_FALSE(authority.notified[1].port);
}

bool ended_within(pid_t pid, std::chrono::milliseconds limit, int& status) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
        if (::waitpid(pid, &status, WNOHANG) == pid) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
}

TEST(GrantBrokerProcess, AnswersForItsGuestRunsConfinedAndEndsWithItsClient) {
    auto started =
        start_grant_broker({}, std::make_unique<RecordingAuthority>(), BrokerLimits{kGuest, 1});
    ASSERT_TRUE(started) << started.error().message();
    auto& broker = *started.value().authority;
    const pid_t pid = started.value().pid;

    const std::vector<xen::GrantRef> refs{11, 12, 13};
    auto offset = broker.map_grants(kGuest, refs);
    ASSERT_TRUE(offset) << offset.error().message();
    EXPECT_EQ(offset.value(), 11U * 4096);
    auto refused = broker.map_grants(kOther, refs);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), std::errc::operation_not_permitted);

    std::vector<xen::GrantRef> granted(4);
    auto index = broker.grant_pages(kGuest, true, granted);
    ASSERT_TRUE(index) << index.error().message();
    EXPECT_EQ(granted, (std::vector<xen::GrantRef>{100, 101, 102, 103}));

    auto port = broker.bind_interdomain(kGuest, 5);
    ASSERT_TRUE(port) << port.error().message();
    EXPECT_TRUE(broker.notify_on_unmap(8, true, port.value()));
    EXPECT_FALSE(broker.notify_on_unmap(8, true, port.value() + 1));
    EXPECT_FALSE(broker.bind_interdomain(kGuest, 6));  // its share is one
    EXPECT_TRUE(broker.unbind(port.value()));

    const auto status = testing::proc_fields("/proc/" + std::to_string(pid) + "/status");
    EXPECT_EQ(status.at("Seccomp"), "2");
    EXPECT_EQ(status.at("NoNewPrivs"), "1");
    EXPECT_EQ(status.at("CapEff"), "0000000000000000");
    EXPECT_EQ(status.at("CapPrm"), "0000000000000000");
    if (::geteuid() == 0) {
        EXPECT_EQ(status.at("CapBnd"), "0000000000000000");
    }

    started.value().authority.reset();  // the worker's end closes
    int wstatus = 0;
    ASSERT_TRUE(ended_within(pid, std::chrono::seconds(10), wstatus));
    EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
}

TEST(GrantBrokerProcess, AGoneBrokerIsAnErrorNotAHang) {
    auto started =
        start_grant_broker({}, std::make_unique<RecordingAuthority>(), BrokerLimits{kGuest, 1});
    ASSERT_TRUE(started) << started.error().message();
    ASSERT_EQ(::kill(started.value().pid, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(started.value().pid, &wstatus, 0), started.value().pid);
    const std::vector<xen::GrantRef> refs{1};
    auto mapped = started.value().authority->map_grants(kGuest, refs);
    ASSERT_FALSE(mapped);
    EXPECT_EQ(mapped.error(), std::errc::broken_pipe);
}

#if XENHSA_HAVE_SECCOMP
// In a child: the worker's filter, then each ioctl on fd -1. The filter answers EPERM
// before the kernel looks at the fd; an allowed request gets the kernel's EBADF.
TEST(WorkerFilter, RefusesTheIoctlsOnlyTheBrokerMakes) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        std::size_t allowed = 0;
        if (install_syscall_filter(SeccompMode::kill, allowed)) {
            ::_exit(100);
        }
        int bit = 0;
        int wrong = 0;
        for (const unsigned long refused : std::initializer_list<unsigned long>{
                 IOCTL_GNTDEV_MAP_GRANT_REF, IOCTL_GNTDEV_SET_UNMAP_NOTIFY, IOCTL_GNTDEV_GRANT_COPY,
                 IOCTL_GNTALLOC_ALLOC_GREF, IOCTL_GNTALLOC_SET_UNMAP_NOTIFY,
                 IOCTL_EVTCHN_BIND_INTERDOMAIN, IOCTL_EVTCHN_BIND_UNBOUND_PORT,
                 IOCTL_EVTCHN_BIND_VIRQ, IOCTL_EVTCHN_UNBIND, IOCTL_EVTCHN_RESET,
                 IOCTL_EVTCHN_RESTRICT_DOMID}) {
            if (::ioctl(-1, refused, nullptr) != -1 || errno != EPERM) {
                wrong |= 1 << bit;
            }
            ++bit;
        }
        for (const unsigned long allowed_request : std::initializer_list<unsigned long>{
                 IOCTL_GNTDEV_UNMAP_GRANT_REF, IOCTL_GNTDEV_GET_OFFSET_FOR_VADDR,
                 IOCTL_GNTALLOC_DEALLOC_GREF, IOCTL_EVTCHN_NOTIFY}) {
            if (::ioctl(-1, allowed_request, nullptr) != -1 || errno != EBADF) {
                wrong |= 1 << bit;
            }
            ++bit;
        }
        ::_exit(wrong == 0 ? 0 : 1 + (wrong & 0x3f));
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0) << "a request answered wrongly (bits: which)";
}
#endif

}  // namespace
}  // namespace xenhsa::backend::service
