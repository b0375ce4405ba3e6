// Shared pieces of the xenhsa-sim daemon tests: a daemon and a dom0 attachment per test,
// guests in forked children, bounded waits.
#ifndef XENHSA_TESTS_SIM_SIM_FIXTURE_HPP
#define XENHSA_TESTS_SIM_SIM_FIXTURE_HPP

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>

#include <child_process.hpp>
#include <chrono>
#include <fstream>
#include <optional>
#include <sim_instance.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <xenhsa/xen/sim/client.hpp>

namespace xenhsa::testing {

using xen::DomId;
using xen::GrantRef;
using xen::Platform;
using xen::Port;

inline constexpr std::size_t kPage = 4096;

// Waits until `fd` is readable.
inline bool wait_readable(int fd, std::chrono::milliseconds timeout = 10s) {
    pollfd pfd{fd, POLLIN, 0};
    int n = 0;
    do {
        n = ::poll(&pfd, 1, static_cast<int>(timeout.count()));
    } while (n < 0 && errno == EINTR);
    return n > 0 && (pfd.revents & POLLIN) != 0;
}

// The next port an event channel delivers, waiting on its fd (readiness may also come
// from bookkeeping, e.g. a peer binding: those wake-ups deliver nothing and are retried).
inline std::optional<Port> next_port(xen::EventChannel& ev,
                                     std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        auto port = ev.pending();
        if (!port) return std::nullopt;
        if (port.value()) return port.value();
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 || !wait_readable(ev.fd(), left)) return std::nullopt;
    }
}

// Polls `cond` until it holds (10 s at most).
template <class F>
bool eventually(F&& cond, std::chrono::milliseconds timeout = 10s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!cond()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(2ms);
    }
    return true;
}

// The permissions of the mapping that contains `addr` ("rw-s", "---p", ...), from
// /proc/self/maps; empty when nothing is mapped there.
inline std::string protection_at(const void* addr) {
    std::ifstream maps("/proc/self/maps");
    const auto a = reinterpret_cast<uintptr_t>(addr);
    std::string line;
    while (std::getline(maps, line)) {
        std::istringstream in(line);
        std::string range;
        std::string perms;
        in >> range >> perms;
        const auto dash = range.find('-');
        const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
        const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
        if (a >= lo && a < hi) return perms;
    }
    return {};
}

// A PROT_NONE reservation owned by a test (for maps and shares at a fixed address).
class Reservation {
public:
    explicit Reservation(std::size_t pages) : len_(pages * kPage) {
        void* p =
            ::mmap(nullptr, len_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) throw std::runtime_error("mmap reservation");
        base_ = static_cast<std::byte*>(p);
    }
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation() { ::munmap(base_, len_); }
    [[nodiscard]] std::byte* page(std::size_t i) const { return base_ + i * kPage; }

private:
    std::size_t len_;
    std::byte* base_ = nullptr;
};

class SimTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto p = xen::sim::attach(sim.dir(), 0);
        ASSERT_TRUE(p) << p.error().message();
        dom0 = std::move(p.value());
    }

    DomId create_guest(const std::string& name, std::size_t pages = 1024) {
        auto id = xen::sim::create_domain(sim.dir(), name, pages);
        EXPECT_TRUE(id) << id.error().message();
        return id ? id.value() : xen::kDomIdInvalid;
    }

    bool alive(DomId id) {
        auto r = dom0.domains->alive(id);
        return r && r.value();
    }

    // A child process attached to `domid`, running body(platform, link).
    ChildProcess spawn_in(DomId domid, std::function<int(Platform&, Link&)> body) {
        const std::filesystem::path dir = sim.dir();
        return ChildProcess::spawn([dir, domid, body = std::move(body)](Link& link) {
            auto p = xen::sim::attach(dir, domid);
            if (!p) {
                std::fprintf(stderr, "child: attach %u: %s\n", domid, p.error().message().c_str());
                return 99;
            }
            return body(p.value(), link);
        });
    }

    SimInstance sim = SimInstance::start();
    Platform dom0;
};

}  // namespace xenhsa::testing

#endif
