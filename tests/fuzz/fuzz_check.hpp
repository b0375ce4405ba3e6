// Invariant checks of the fuzz targets. A violated invariant is a bug: it is reported on
// stderr (with what the replay driver or libFuzzer knows about the input) and the process
// aborts, so libFuzzer saves the input and the replay gtest fails.
#ifndef XENHSA_TESTS_FUZZ_FUZZ_CHECK_HPP
#define XENHSA_TESTS_FUZZ_FUZZ_CHECK_HPP

#include <cstddef>
#include <cstdint>

namespace xenhsa::fuzz {

[[noreturn]] void violated(const char* what, const char* file, int line) noexcept;

// Called by violated() before it aborts (the replay driver names and saves the input).
using ViolationHook = void (*)() noexcept;
void set_violation_hook(ViolationHook hook) noexcept;

// A deliberately broken harness, for the tests that prove the invariants are live: each
// target breaks one of its own checks' preconditions when this is set. Never set by the
// libFuzzer binaries.
void set_sabotage(bool on) noexcept;
[[nodiscard]] bool sabotage() noexcept;

// XENHSA_FUZZ_TRACE=1 in the environment: targets print what they do to stderr (to see
// what a corpus file exercises, or how a saved input gets where it fails).
[[nodiscard]] bool tracing() noexcept;

}  // namespace xenhsa::fuzz

#define XENHSA_FUZZ_CHECK(cond, what)                             \
    do {                                                          \
        if (!(cond)) {                                            \
            ::xenhsa::fuzz::violated((what), __FILE__, __LINE__); \
        }                                                         \
    } while (0)

// Every target defines this (libFuzzer's entry point); it returns 0.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#endif
