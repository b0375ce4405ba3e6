// A number from the environment, for the knobs of long test runs (XENHSA_SOAK_*,
// XENHSA_SEQUENCE_*): `fallback` when unset or empty.
#ifndef XENHSA_TESTS_SUPPORT_ENV_KNOB_HPP
#define XENHSA_TESTS_SUPPORT_ENV_KNOB_HPP

#include <cstdint>
#include <cstdlib>

namespace xenhsa::testing {

inline uint64_t env_number(const char* name, uint64_t fallback) {
    const char* text = std::getenv(name);
    return text != nullptr && *text != '\0' ? std::strtoull(text, nullptr, 10) : fallback;
}

}  // namespace xenhsa::testing

#endif
