// Reads a fuzz input front to back as little-endian integers and byte strings. Past the
// end every read yields zeroes, so a harness never has to check the length.
#ifndef XENHSA_TESTS_FUZZ_FUZZ_INPUT_HPP
#define XENHSA_TESTS_FUZZ_FUZZ_INPUT_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace xenhsa::fuzz {

class FuzzInput {
public:
    FuzzInput(const uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}

    [[nodiscard]] bool empty() const noexcept { return pos_ >= size_; }
    [[nodiscard]] std::size_t remaining() const noexcept { return size_ - pos_; }

    uint8_t u8() noexcept { return static_cast<uint8_t>(take(1)); }
    uint16_t u16() noexcept { return static_cast<uint16_t>(take(2)); }
    uint32_t u32() noexcept { return static_cast<uint32_t>(take(4)); }
    uint64_t u64() noexcept { return take(8); }

    // Copies up to `n` bytes into `dst` and zero-fills the rest; returns the bytes read.
    std::size_t fill(void* dst, std::size_t n) noexcept {
        if (n == 0) {
            return 0;
        }
        const std::size_t got = std::min(n, remaining());
        if (got != 0) {
            std::memcpy(dst, data_ + pos_, got);
        }
        std::memset(static_cast<uint8_t*>(dst) + got, 0, n - got);
        pos_ += got;
        return got;
    }

    // A string of at most `max` bytes: one length byte, then the bytes.
    std::string str(std::size_t max) {
        const std::size_t want = u8();
        const std::size_t n = std::min(want, std::min(max, remaining()));
        std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
        pos_ += n;
        return s;
    }

private:
    uint64_t take(std::size_t n) noexcept {
        uint64_t v = 0;
        for (std::size_t i = 0; i < n && pos_ < size_; ++i) {
            v |= uint64_t{data_[pos_++]} << (8 * i);
        }
        return v;
    }

    const uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

}  // namespace xenhsa::fuzz

#endif
