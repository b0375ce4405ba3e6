// A keyed permutation of 64-bit values, so that handles say nothing about each other or
// about the slots behind them: Speck64/128 (Beaulieu et al., "The SIMON and SPECK
// Families of Lightweight Block Ciphers", 2013), 27 rounds over two 32-bit words. The key
// comes from the OS (getrandom) for each table, so one context's handles tell nothing
// about another's either.
#ifndef XENHSA_HSA_HANDLE_CIPHER_HPP
#define XENHSA_HSA_HANDLE_CIPHER_HPP

#include <array>
#include <cstdint>
#include <system_error>
#include <xenhsa/hsa/os_random.hpp>

namespace xenhsa::hsa {

class HandleCipher {
public:
    using Key = std::array<uint32_t, 4>;  // (l2, l1, l0, k0), the paper's word order

    // A fresh random key. Throws std::system_error when the OS has no randomness to give.
    static HandleCipher random() {
        Key key{};
        if (const std::error_code error = os_random(key.data(), sizeof key)) {
            throw std::system_error(error, "getrandom");
        }
        return HandleCipher(key);
    }

    explicit HandleCipher(const Key& key) noexcept {
        std::array<uint32_t, kRounds + 2> l{};
        l[2] = key[0];
        l[1] = key[1];
        l[0] = key[2];
        round_keys_[0] = key[3];
        for (uint32_t i = 0; i + 1 < kRounds; ++i) {
            l[i + 3] = (round_keys_[i] + ror(l[i], 8)) ^ i;
            round_keys_[i + 1] = rol(round_keys_[i], 3) ^ l[i + 3];
        }
    }

    [[nodiscard]] uint64_t encrypt(uint64_t value) const noexcept {
        auto x = static_cast<uint32_t>(value >> 32);
        auto y = static_cast<uint32_t>(value);
        for (const uint32_t k : round_keys_) {
            x = (ror(x, 8) + y) ^ k;
            y = rol(y, 3) ^ x;
        }
        return uint64_t{x} << 32 | y;
    }

    [[nodiscard]] uint64_t decrypt(uint64_t value) const noexcept {
        auto x = static_cast<uint32_t>(value >> 32);
        auto y = static_cast<uint32_t>(value);
        for (auto k = round_keys_.rbegin(); k != round_keys_.rend(); ++k) {
            y = ror(y ^ x, 3);
            x = rol((x ^ *k) - y, 8);
        }
        return uint64_t{x} << 32 | y;
    }

private:
    static constexpr uint32_t kRounds = 27;

    static constexpr uint32_t rol(uint32_t v, int s) noexcept { return v << s | v >> (32 - s); }
    static constexpr uint32_t ror(uint32_t v, int s) noexcept { return v >> s | v << (32 - s); }

    std::array<uint32_t, kRounds> round_keys_{};
};

}  // namespace xenhsa::hsa

#endif
