// Building fuzz inputs for the corpus generator: little-endian fields appended in order,
// the way each target's FuzzInput reads them back.
#ifndef XENHSA_TESTS_FUZZ_SEED_BYTES_HPP
#define XENHSA_TESTS_FUZZ_SEED_BYTES_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace xenhsa::fuzz {

class SeedBytes {
public:
    // Room up front: g++ 12 at -O3 sees the first growth of an empty vector as an
    // out-of-bounds copy (-Warray-bounds false positive).
    SeedBytes() { bytes_.reserve(256); }
    SeedBytes& u8(uint64_t v) { return le(v, 1); }
    SeedBytes& u16(uint64_t v) { return le(v, 2); }
    SeedBytes& u32(uint64_t v) { return le(v, 4); }
    SeedBytes& u64(uint64_t v) { return le(v, 8); }
    SeedBytes& raw(const void* p, std::size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        bytes_.insert(bytes_.end(), b, b + n);
        return *this;
    }
    template <class Pod>
    SeedBytes& pod(const Pod& p) {
        return raw(&p, sizeof p);
    }
    // A zero-padded field of exactly `n` bytes holding `p`'s bytes (fewer if p is larger).
    template <class Pod>
    SeedBytes& padded(const Pod& p, std::size_t n) {
        std::vector<uint8_t> field(n, 0);
        std::memcpy(field.data(), &p, sizeof p < n ? sizeof p : n);
        return raw(field.data(), n);
    }
    // FuzzInput::str: a length byte, then the bytes.
    SeedBytes& str(std::string_view s) {
        u8(s.size());
        return raw(s.data(), s.size());
    }
    [[nodiscard]] const std::vector<uint8_t>& bytes() const noexcept { return bytes_; }

private:
    SeedBytes& le(uint64_t v, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
            bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
        }
        return *this;
    }
    std::vector<uint8_t> bytes_;
};

}  // namespace xenhsa::fuzz

#endif
