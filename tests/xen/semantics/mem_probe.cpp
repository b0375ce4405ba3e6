#include "mem_probe.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace xenhsa::sem {

namespace {

struct Pipe {
    Pipe() noexcept { ok = ::pipe2(fds.data(), O_CLOEXEC | O_NONBLOCK) == 0; }
    ~Pipe() {
        if (ok) {
            ::close(fds[0]);
            ::close(fds[1]);
        }
    }
    Pipe(const Pipe&) = delete;
    Pipe& operator=(const Pipe&) = delete;
    std::array<int, 2> fds{-1, -1};
    bool ok = false;
};

sigjmp_buf g_fault_jump;
volatile sig_atomic_t g_faulted = 0;

void on_fault(int /*sig*/) {
    g_faulted = 1;
    siglongjmp(g_fault_jump, 1);
}

}  // namespace

xen::Result<uint8_t> probe_read(const std::byte* addr) {
    Pipe p;
    if (!p.ok) {
        return xen::errno_code(errno);
    }
    if (::write(p.fds[1], addr, 1) != 1) {
        return xen::errno_code(errno);
    }
    uint8_t b = 0;
    if (::read(p.fds[0], &b, 1) != 1) {
        return xen::errno_code(errno);
    }
    return b;
}

xen::Result<void> probe_write(std::byte* addr, uint8_t value) {
    Pipe p;
    if (!p.ok) {
        return xen::errno_code(errno);
    }
    if (::write(p.fds[1], &value, 1) != 1) {
        return xen::errno_code(errno);
    }
    if (::read(p.fds[0], addr, 1) != 1) {
        return xen::errno_code(errno);
    }
    return boost::outcome_v2::success();
}

xen::Result<std::size_t> probe_pin(const std::byte* addr, std::size_t len) {
    std::vector<std::byte> copy(len);
    const iovec local{copy.data(), len};
    const iovec remote{const_cast<std::byte*>(addr), len};
    const ssize_t n = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
    if (n < 0) {
        return xen::errno_code(errno);
    }
    return static_cast<std::size_t>(n);
}

bool store_faults(std::byte* addr, uint8_t value) {
    struct sigaction act = {};
    act.sa_handler = &on_fault;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_NODEFER;
    struct sigaction old_segv = {};
    struct sigaction old_bus = {};
    ::sigaction(SIGSEGV, &act, &old_segv);
    ::sigaction(SIGBUS, &act, &old_bus);
    g_faulted = 0;
    if (sigsetjmp(g_fault_jump, 1) == 0) {
        *reinterpret_cast<volatile uint8_t*>(addr) = value;
    }
    ::sigaction(SIGSEGV, &old_segv, nullptr);
    ::sigaction(SIGBUS, &old_bus, nullptr);
    return g_faulted != 0;
}

Reservation::Reservation(std::size_t pages) : len_(pages * kPage) {
    void* p = ::mmap(nullptr, len_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base_ = p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
}

Reservation::~Reservation() {
    if (base_ != nullptr) {
        ::munmap(base_, len_);
    }
}

namespace {

struct MapsLine {
    uintptr_t start = 0;
    uintptr_t end = 0;
    std::string perms;
    std::string text;
};

std::vector<MapsLine> maps_overlapping(uintptr_t lo, uintptr_t hi) {
    std::vector<MapsLine> out;
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        unsigned long start = 0;
        unsigned long end = 0;
        std::array<char, 8> perms{};
        if (std::sscanf(line.c_str(), "%lx-%lx %7s", &start, &end, perms.data()) == 3 &&
            start < hi && lo < end) {
            out.push_back({start, end, perms.data(), line});
        }
    }
    return out;
}

}  // namespace

bool reserved_prot_none(const std::byte* addr, std::size_t len) {
    // The kernel may keep a restored range as several VMAs (flags that do not merge):
    // what counts is that every byte is mapped, inaccessible and private, with no hole.
    const auto lo = reinterpret_cast<uintptr_t>(addr);
    const uintptr_t hi = lo + len;
    uintptr_t covered = lo;
    for (const MapsLine& m : maps_overlapping(lo, hi)) {  // sorted by address
        if (m.start > covered || m.perms != "---p") {
            return false;
        }
        covered = m.end;
    }
    return covered >= hi;
}

std::string describe_maps(const std::byte* addr, std::size_t len) {
    const auto lo = reinterpret_cast<uintptr_t>(addr);
    std::string out;
    for (const MapsLine& m : maps_overlapping(lo - kPage, lo + len + kPage)) {
        out += m.text + "\n";
    }
    return out.empty() ? std::string("(nothing mapped)\n") : out;
}

}  // namespace xenhsa::sem
