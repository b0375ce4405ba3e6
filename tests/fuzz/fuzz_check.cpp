#include "fuzz_check.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace xenhsa::fuzz {
namespace {

std::atomic<ViolationHook> g_hook{nullptr};
std::atomic<bool> g_sabotage{false};

}  // namespace

void violated(const char* what, const char* file, int line) noexcept {
    std::fprintf(stderr, "xenhsa-fuzz: invariant violated: %s (%s:%d)\n", what, file, line);
    if (auto hook = g_hook.load()) {
        hook();
    }
    std::fflush(stderr);
    std::abort();
}

void set_violation_hook(ViolationHook hook) noexcept { g_hook.store(hook); }

void set_sabotage(bool on) noexcept { g_sabotage.store(on); }

bool sabotage() noexcept { return g_sabotage.load(std::memory_order_relaxed); }

bool tracing() noexcept {
    static const bool on = [] {
        const char* v = std::getenv("XENHSA_FUZZ_TRACE");
        return v != nullptr && v[0] != '\0' && v[0] != '0';
    }();
    return on;
}

}  // namespace xenhsa::fuzz
