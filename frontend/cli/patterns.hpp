// Recognisable buffer contents for the scenarios: word i holds `seed + i`.
#ifndef XENHSA_FRONTEND_CLI_PATTERNS_HPP
#define XENHSA_FRONTEND_CLI_PATTERNS_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace xenhsa::frontend::cli {

// Word i of a buffer holds `seed + i`.
inline void fill_pattern(std::span<std::byte> bytes, uint32_t seed) {
    for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        const uint32_t v = seed + static_cast<uint32_t>(i / 4);
        std::memcpy(bytes.data() + i, &v, 4);
    }
}

inline bool has_pattern(std::span<const std::byte> bytes, uint32_t seed) {
    for (std::size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        uint32_t v = 0;
        std::memcpy(&v, bytes.data() + i, 4);
        if (v != seed + static_cast<uint32_t>(i / 4)) {
            return false;
        }
    }
    return true;
}

inline bool all_zero(std::span<const std::byte> bytes) {
    for (std::byte b : bytes) {
        if (b != std::byte{0}) {
            return false;
        }
    }
    return true;
}

}  // namespace xenhsa::frontend::cli

#endif
