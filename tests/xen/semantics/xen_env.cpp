// The real-Xen environment (sem_env.hpp), for dom0 in the xen-qemu tier. The domU's
// domid comes from $XENHSA_PEER_DOMID (dom0-init sets it); the domU runs
// xen_semantics_peer, which publishes <channel dir>/ready once it serves commands.
// Every command and reply is echoed to stdout ("XENHSA-DOM0:"), so the serial log shows
// what dom0 and the domU exchanged.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <xenhsa/xen/real/platform.hpp>

#include "sem_env.hpp"
#include "sem_protocol.hpp"
#include "store_channel.hpp"
#include "waits.hpp"

namespace xenhsa::sem {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kReplyTimeout = std::chrono::seconds(60);
constexpr auto kReadyTimeout = std::chrono::seconds(150);
constexpr auto kDestroyTimeout = std::chrono::seconds(90);
constexpr xen::DomId kOtherDomain = 0x7FE1;  // nobody: Xen grants and offers ports to any id

class XenEnv final : public SemEnv {
public:
    static std::shared_ptr<XenEnv> open(std::string& why) {
        const char* env = std::getenv("XENHSA_PEER_DOMID");
        auto peer = env != nullptr ? to_uint(env, 0x7FEF) : std::nullopt;
        if (!peer || *peer == 0) {
            why = "XENHSA_PEER_DOMID is not a domU's domid";
            return nullptr;
        }
        auto platform = xen::real::open_real_platform({});
        if (!platform) {
            why = "open_real_platform: " + platform.error().message();
            return nullptr;
        }
        auto chan = xen::real::open_store({});
        if (!chan) {
            why = "open_store: " + chan.error().message();
            return nullptr;
        }
        auto e = std::shared_ptr<XenEnv>(new XenEnv(
            std::move(platform.value()), std::move(chan.value()), static_cast<xen::DomId>(*peer)));
        if (auto r = e->wait_ready(); !r) {
            why = "the peer in dom" + std::to_string(*peer) +
                  " never got ready: " + r.error().message();
            return nullptr;
        }
        return e;
    }

    ~XenEnv() override {
        if (!peer_dead_) {
            (void)command("exit");
        }
    }

    Tier tier() const noexcept override { return Tier::xen; }
    xen::Platform& self() noexcept override { return self_; }
    xen::DomId peer_domid() const noexcept override { return peer_; }
    xen::DomId other_domid() const noexcept override { return kOtherDomain; }

    xen::Result<std::string> command(std::string_view line) override {
        if (peer_dead_) {
            return xen::errno_code(ESRCH);
        }
        const uint64_t seq = ++seq_;
        std::printf("XENHSA-DOM0: > %.*s\n", static_cast<int>(line.size()), line.data());
        if (auto w = chan_->write(xen::kNoTx, dir_ + "/cmd", channel::frame(seq, line)); !w) {
            return w.error();
        }
        const auto sent = Clock::now();
        const auto deadline = sent + kReplyTimeout;
        while (true) {
            if (auto v = chan_->read(xen::kNoTx, dir_ + "/reply"); v) {
                auto f = channel::unframe(v.value());
                if (f && f->first == seq) {
                    const auto ms =
                        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - sent);
                    std::printf("XENHSA-DOM0: < %s [%lld ms]\n", f->second.c_str(),
                                static_cast<long long>(ms.count()));
                    return std::move(f->second);
                }
            }
            if (Clock::now() >= deadline) {
                std::printf("XENHSA-DOM0: < (no reply)\n");
                return xen::errno_code(ETIMEDOUT);
            }
            if (auto ev = wait_watch(*chan_, Millis(500)); !ev) {
                return ev.error();
            }
        }
    }

    xen::Result<void> kill_peer() override {
        std::printf("XENHSA-DOM0: destroying the peer dom%u (xl destroy)\n", peer_);
        std::fflush(stdout);
        if (const char* marker = std::getenv("XENHSA_DOMU_DESTROYED_MARKER")) {
            const int fd = ::open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
            if (fd >= 0) {
                ::close(fd);
            }
        }
        peer_dead_ = true;
        const std::string domid = std::to_string(peer_);
        const pid_t pid = ::fork();
        if (pid < 0) {
            return xen::errno_code(errno);
        }
        if (pid == 0) {
            ::execlp("xl", "xl", "destroy", domid.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        const auto deadline = Clock::now() + kDestroyTimeout;
        int status = 0;
        while (::waitpid(pid, &status, WNOHANG) == 0) {
            if (Clock::now() >= deadline) {
                ::kill(pid, SIGKILL);
                ::waitpid(pid, &status, 0);
                return xen::errno_code(ETIMEDOUT);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            return xen::errno_code(ECHILD);
        }
        return boost::outcome_v2::success();
    }

private:
    XenEnv(xen::Platform self, std::unique_ptr<xen::Store> chan, xen::DomId peer)
        : self_(std::move(self)), chan_(std::move(chan)), peer_(peer), dir_(channel::dir(peer)) {}

    xen::Result<void> wait_ready() {
        std::printf("XENHSA-DOM0: waiting for the peer in dom%u (%s/ready)\n", peer_, dir_.c_str());
        if (auto w = chan_->watch(dir_ + "/ready", "ready"); !w) return w.error();
        if (auto w = chan_->watch(dir_ + "/reply", "reply"); !w) return w.error();
        const auto deadline = Clock::now() + kReadyTimeout;
        while (true) {
            if (auto v = chan_->read(xen::kNoTx, dir_ + "/ready"); v && v.value() == "1") {
                std::printf("XENHSA-DOM0: the peer in dom%u is ready\n", peer_);
                return boost::outcome_v2::success();
            }
            if (auto alive = self_.domains->alive(peer_); alive && !alive.value()) {
                return xen::errno_code(ESRCH);
            }
            if (Clock::now() >= deadline) {
                return xen::errno_code(ETIMEDOUT);
            }
            if (auto ev = wait_watch(*chan_, Millis(500)); !ev) {
                return ev.error();
            }
        }
    }

    xen::Platform self_;
    std::unique_ptr<xen::Store> chan_;
    xen::DomId peer_;
    std::string dir_;
    uint64_t seq_ = 0;
    bool peer_dead_ = false;
};

}  // namespace

std::shared_ptr<SemEnv> open_env(std::string& why) {
    // One environment for the whole run: there is one domU. A failure is remembered.
    static std::string failure;
    static std::shared_ptr<XenEnv> env = XenEnv::open(failure);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    why = failure;
    return env;
}

}  // namespace xenhsa::sem
