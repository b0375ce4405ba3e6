#include <xenhsa/proto/common.h>

#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <xenhsa/frontend/errors.hpp>
#include <xenhsa/frontend/probe.hpp>

namespace xenhsa::frontend {

namespace {

// Per-thread landing point of the current probe, null outside one.
thread_local sigjmp_buf* t_landing = nullptr;

struct sigaction g_previous_bus;
struct sigaction g_previous_segv;

void on_fault(int sig, siginfo_t* info, void* context) {
    if (sigjmp_buf* landing = t_landing; landing != nullptr) {
        t_landing = nullptr;
        siglongjmp(*landing, sig);
    }
    // Not ours: hand the fault to whoever handled it before us.
    const struct sigaction& prev = sig == SIGBUS ? g_previous_bus : g_previous_segv;
    if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
        prev.sa_sigaction(sig, info, context);
        return;
    }
    if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler != nullptr) {
        prev.sa_handler(sig);
        return;
    }
    // Default action: restore it; returning re-runs the faulting access, which now kills.
    signal(sig, SIG_DFL);
}

void install_handlers() noexcept {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction act;
        std::memset(&act, 0, sizeof act);
        act.sa_sigaction = on_fault;
        act.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&act.sa_mask);
        sigaction(SIGBUS, &act, &g_previous_bus);
        sigaction(SIGSEGV, &act, &g_previous_segv);
    });
}

// The access itself: kept out of line so that the compiler cannot move it across the
// sigsetjmp in probe().
[[gnu::noinline]] void touch(const void* addr, ProbeAccess access) noexcept {
    auto* byte = static_cast<uint8_t*>(const_cast<void*>(addr));
    if (access == ProbeAccess::write) {
        __atomic_fetch_add(byte, uint8_t{0}, __ATOMIC_RELAXED);
    } else {
        (void)__atomic_load_n(byte, __ATOMIC_RELAXED);
    }
}

[[gnu::noinline]] void copy_bytes(void* dst, const void* src, std::size_t len) noexcept {
    auto* d = static_cast<volatile uint8_t*>(dst);
    const auto* s = static_cast<const volatile uint8_t*>(src);
    for (std::size_t i = 0; i < len; ++i) {
        d[i] = s[i];
    }
}

template <class Fn>
Result<void> guarded(Fn&& fn) noexcept {
    install_handlers();
    sigjmp_buf landing;
    // sigsetjmp saves the signal mask (1), so the mask is restored on the way back.
    const int sig = sigsetjmp(landing, 1);
    if (sig == 0) {
        t_landing = &landing;
        fn();
        t_landing = nullptr;
        return boost::outcome_v2::success();
    }
    t_landing = nullptr;
    return sig == SIGBUS ? Errc::revoked_access : Errc::access_fault;
}

}  // namespace

Result<void> probe(const void* addr, ProbeAccess access) noexcept {
    return guarded([addr, access] { touch(addr, access); });
}

Result<void> probe_range(const void* addr, std::size_t len, ProbeAccess access) noexcept {
    if (len == 0) {
        return boost::outcome_v2::success();
    }
    const auto* p = static_cast<const std::byte*>(addr);
    for (std::size_t off = 0; off < len; off += XENHSA_PAGE_SIZE) {
        if (auto r = probe(p + off, access); !r) {
            return r;
        }
    }
    return probe(p + len - 1, access);
}

Result<void> probed_copy(void* dst, const void* src, std::size_t len) noexcept {
    auto* d = static_cast<std::byte*>(dst);
    const auto* s = static_cast<const std::byte*>(src);
    for (std::size_t off = 0; off < len; off += XENHSA_PAGE_SIZE) {
        const std::size_t n = len - off < XENHSA_PAGE_SIZE ? len - off : XENHSA_PAGE_SIZE;
        if (auto r = guarded([=] { copy_bytes(d + off, s + off, n); }); !r) {
            return r;
        }
    }
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::frontend
