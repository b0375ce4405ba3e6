#include "physical_baselines.hpp"

#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xenhsa/proto/ring.h>

#include <atomic>
#include <cerrno>
#include <new>
#include <system_error>

namespace xenhsa::bench {

namespace {

[[noreturn]] void fail(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

// A page shared with the child: each side writes its own cache line.
struct alignas(64) Line {
    std::atomic<uint64_t> value{0};
};
struct Shared {
    Line ping;
    Line pong;
    std::atomic<bool> stop{false};
};
constexpr uint64_t kStop = ~uint64_t{0};

class SharedPage {
public:
    SharedPage() {
        void* p = ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            fail("mmap");
        }
        shared_ = new (p) Shared;
    }
    SharedPage(const SharedPage&) = delete;
    SharedPage& operator=(const SharedPage&) = delete;
    ~SharedPage() { ::munmap(shared_, sizeof(Shared)); }
    Shared& operator*() const { return *shared_; }

private:
    Shared* shared_ = nullptr;
};

class Child {
public:
    template <class Body>
    Child(int cpu, Body&& body) {
        pid_ = ::fork();
        if (pid_ < 0) {
            fail("fork");
        }
        if (pid_ == 0) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            (void)::sched_setaffinity(0, sizeof set, &set);
            body();
            ::_exit(0);
        }
    }
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;
    ~Child() {
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }

private:
    pid_t pid_ = -1;
};

class EventFd {
public:
    EventFd() : fd_(::eventfd(0, EFD_CLOEXEC)) {
        if (fd_ < 0) {
            fail("eventfd");
        }
    }
    EventFd(const EventFd&) = delete;
    EventFd& operator=(const EventFd&) = delete;
    ~EventFd() { ::close(fd_); }
    void post(uint64_t value = 1) const noexcept { (void)::write(fd_, &value, sizeof value); }
    uint64_t take() const noexcept {
        uint64_t value = 0;
        while (::read(fd_, &value, sizeof value) < 0 && errno == EINTR) {
        }
        return value;
    }

private:
    int fd_;
};

class DatagramPair {
public:
    DatagramPair() {
        if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, fds_) != 0) {
            fail("socketpair");
        }
    }
    DatagramPair(const DatagramPair&) = delete;
    DatagramPair& operator=(const DatagramPair&) = delete;
    ~DatagramPair() {
        ::close(fds_[0]);
        ::close(fds_[1]);
    }
    // One end each: 0 for the parent, 1 for the child.
    void post(int end) const noexcept {
        const char one = 1;
        (void)::send(fds_[end], &one, 1, 0);
    }
    void take(int end) const noexcept {
        char sink = 0;
        while (::recv(fds_[end], &sink, 1, 0) < 0 && errno == EINTR) {
        }
    }

private:
    int fds_[2] = {-1, -1};
};

}  // namespace

RoundTrips shm_ping_pong(uint32_t iterations, uint32_t warmup, int child_cpu) {
    SharedPage page;
    Shared& s = *page;
    uint64_t sent = 0;
    RoundTrips result;
    {
        Child echo(child_cpu, [&s] {
            uint64_t seen = 0;
            for (;;) {
                const uint64_t v = s.ping.value.load(std::memory_order_acquire);
                if (v == seen) {
                    xenhsa_cpu_relax();
                    continue;
                }
                if (v == kStop) {
                    return;
                }
                seen = v;
                s.pong.value.store(v, std::memory_order_release);
            }
        });
        result = time_round_trips("shm_ping_pong", iterations, warmup, [&s, &sent] {
            s.ping.value.store(++sent, std::memory_order_release);
            while (s.pong.value.load(std::memory_order_acquire) != sent) {
                xenhsa_cpu_relax();
            }
        });
        s.ping.value.store(kStop, std::memory_order_release);
    }
    return result;
}

RoundTrips eventfd_round_trip(uint32_t iterations, uint32_t warmup, int child_cpu) {
    SharedPage page;
    Shared& s = *page;
    const EventFd ping;
    const EventFd pong;
    RoundTrips result;
    {
        Child echo(child_cpu, [&s, &ping, &pong] {
            for (;;) {
                (void)ping.take();
                if (s.stop.load(std::memory_order_acquire)) {
                    return;
                }
                pong.post();
            }
        });
        result = time_round_trips("eventfd", iterations, warmup, [&ping, &pong] {
            ping.post();
            (void)pong.take();
        });
        s.stop.store(true, std::memory_order_release);
        ping.post();
    }
    return result;
}

RoundTrips unix_datagram_round_trip(uint32_t iterations, uint32_t warmup, int child_cpu) {
    SharedPage page;
    Shared& s = *page;
    const DatagramPair pair;
    RoundTrips result;
    {
        Child echo(child_cpu, [&s, &pair] {
            for (;;) {
                pair.take(1);
                if (s.stop.load(std::memory_order_acquire)) {
                    return;
                }
                pair.post(1);
            }
        });
        result = time_round_trips("unix_datagram", iterations, warmup, [&pair] {
            pair.post(0);
            pair.take(0);
        });
        s.stop.store(true, std::memory_order_release);
        pair.post(0);
    }
    return result;
}

}  // namespace xenhsa::bench
