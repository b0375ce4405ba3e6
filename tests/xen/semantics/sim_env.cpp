// The xenhsa-sim environment (sem_env.hpp): a fresh daemon per test; the peer is a forked
// child attached as a guest domain, running PeerExecutor on commands from a socketpair.
// The child prints nothing unless XENHSA_SEM_TRACE is set.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <child_process.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sim_instance.hpp>
#include <xenhsa/xen/sim/client.hpp>

#include "peer_executor.hpp"
#include "sem_env.hpp"

namespace xenhsa::sem {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
constexpr auto kReplyTimeout = 30s;
constexpr std::size_t kPeerPages = 1024;

bool write_line(int fd, std::string line) {
    line.push_back('\n');
    std::size_t done = 0;
    while (done < line.size()) {
        const ssize_t n = ::send(fd, line.data() + done, line.size() - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

// One line from `fd` (buffered in `buf`); ETIMEDOUT, or EPIPE when the other side is gone.
xen::Result<std::string> read_line(int fd, std::string& buf,
                                   std::optional<Clock::time_point> deadline) {
    while (true) {
        if (const auto nl = buf.find('\n'); nl != std::string::npos) {
            std::string line = buf.substr(0, nl);
            buf.erase(0, nl + 1);
            return line;
        }
        int wait_ms = -1;
        if (deadline) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
            if (left.count() <= 0) return xen::errno_code(ETIMEDOUT);
            wait_ms = static_cast<int>(left.count());
        }
        pollfd p{fd, POLLIN, 0};
        const int r = ::poll(&p, 1, wait_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return xen::errno_code(errno);
        if (r == 0) continue;  // the deadline check above ends it
        std::array<char, 4096> chunk{};
        const ssize_t n = ::recv(fd, chunk.data(), chunk.size(), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return xen::errno_code(EPIPE);
        buf.append(chunk.data(), static_cast<std::size_t>(n));
    }
}

// The child: attach as the guest, then serve until "exit" or the parent goes away.
int serve_peer(const std::filesystem::path& dir, xen::DomId domid, int fd) {
    const bool trace = std::getenv("XENHSA_SEM_TRACE") != nullptr;
    auto platform = xen::sim::attach(dir, domid);
    if (!platform) {
        write_line(fd, "fail " + platform.error().message());
        return 1;
    }
    PeerExecutor exec(platform.value());
    if (!write_line(fd, "ready")) return 2;
    std::string buf;
    while (!exec.exit_requested()) {
        auto line = read_line(fd, buf, std::nullopt);
        if (!line) return 0;  // the test is gone
        std::string reply = exec.execute(line.value());
        if (trace)
            std::fprintf(stderr, "sem peer: %s -> %s\n", line.value().c_str(), reply.c_str());
        if (!write_line(fd, std::move(reply))) return 0;
    }
    return 0;
}

class SimEnv final : public SemEnv {
public:
    static std::shared_ptr<SemEnv> open(std::string& why) {
        auto env = std::shared_ptr<SimEnv>(new SimEnv(SimInstance::start()));
        if (auto r = env->start(); !r) {
            why = r.error();
            return nullptr;
        }
        return env;
    }

    ~SimEnv() override {
        if (child_) {
            (void)command("exit");
            if (!child_->wait(5s)) child_->kill(SIGKILL);
            child_.reset();  // SIGKILLs and reaps one still running
        }
        if (sock_ >= 0) ::close(sock_);
        self_ = {};  // detach before the daemon stops (sim_ goes last)
    }

    Tier tier() const noexcept override { return Tier::sim; }
    xen::Platform& self() noexcept override { return self_; }
    xen::DomId peer_domid() const noexcept override { return peer_; }
    xen::DomId other_domid() const noexcept override { return other_; }

    xen::Result<std::string> command(std::string_view line) override {
        if (!child_ || sock_ < 0) return xen::errno_code(ESRCH);
        if (!write_line(sock_, std::string(line))) return xen::errno_code(EPIPE);
        return read_line(sock_, buf_, Clock::now() + kReplyTimeout);
    }

    xen::Result<void> kill_peer() override {
        if (!child_) return xen::errno_code(ESRCH);
        child_->kill(SIGKILL);
        const auto status = child_->wait(10s);
        child_.reset();
        if (!status) return xen::errno_code(ETIMEDOUT);
        return boost::outcome_v2::success();
    }

private:
    explicit SimEnv(SimInstance sim) : sim_(std::move(sim)) {}

    boost::outcome_v2::result<void, std::string> start() {
        auto peer = xen::sim::create_domain(sim_.dir(), "sem-peer", kPeerPages);
        if (!peer) return "create_domain(sem-peer): " + peer.error().message();
        peer_ = peer.value();
        auto other = xen::sim::create_domain(sim_.dir(), "sem-other", 16);
        if (!other) return "create_domain(sem-other): " + other.error().message();
        other_ = other.value();

        std::array<int, 2> sv{-1, -1};
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv.data()) != 0) {
            return std::string("socketpair failed");
        }
        const std::filesystem::path dir = sim_.dir();
        const xen::DomId peer_id = peer_;
        const int child_end = sv[1];
        const int parent_end = sv[0];
        // Forked before this process attaches anywhere: the child holds no dom0 connection.
        child_.emplace(ChildProcess::spawn([dir, peer_id, child_end, parent_end](auto&) {
            ::close(parent_end);
            return serve_peer(dir, peer_id, child_end);
        }));
        ::close(child_end);
        sock_ = parent_end;

        auto hello = read_line(sock_, buf_, Clock::now() + kReplyTimeout);
        if (!hello || hello.value() != "ready") {
            return "the peer did not start: " + (hello ? hello.value() : hello.error().message());
        }
        auto self = xen::sim::attach(sim_.dir(), 0);
        if (!self) return "attach(dom0): " + self.error().message();
        self_ = std::move(self.value());
        return boost::outcome_v2::success();
    }

    SimInstance sim_;  // first: outlives everything attached to it
    xen::Platform self_;
    xen::DomId peer_ = 0;
    xen::DomId other_ = 0;
    std::optional<ChildProcess> child_;
    int sock_ = -1;
    std::string buf_;
};

}  // namespace

std::shared_ptr<SemEnv> open_env(std::string& why) {
    try {
        return SimEnv::open(why);
    } catch (const std::exception& e) {  // SimInstance::start() throws when the daemon fails
        why = e.what();
        return nullptr;
    }
}

}  // namespace xenhsa::sem
