#include "mutator.hpp"

#include <algorithm>
#include <array>
#include <iterator>

namespace xenhsa::fuzz {
namespace {

// Values at the protocol's edges: counts, sizes, page and window bounds, index wraps.
constexpr std::array<uint64_t, 40> kInteresting{0,
                                                1,
                                                2,
                                                3,
                                                7,
                                                8,
                                                15,
                                                16,
                                                17,
                                                31,
                                                32,
                                                52,
                                                53,
                                                63,
                                                64,
                                                100,
                                                127,
                                                128,
                                                255,
                                                256,
                                                504,
                                                1023,
                                                1024,
                                                1025,
                                                4095,
                                                4096,
                                                4097,
                                                0x7fff,
                                                0xffff,
                                                53248,
                                                53249,
                                                0x7fffffff,
                                                0x80000000,
                                                0xffffffff,
                                                uint64_t{1} << 30,
                                                uint64_t{1} << 43,
                                                (uint64_t{1} << 47) - 4096,
                                                uint64_t{1} << 47,
                                                0x8000000000000000ull,
                                                ~uint64_t{0}};

void put(Bytes& b, std::size_t at, uint64_t v, std::size_t width) {
    for (std::size_t i = 0; i < width && at + i < b.size(); ++i) {
        b[at + i] = static_cast<uint8_t>(v >> (8 * i));
    }
}

uint64_t get(const Bytes& b, std::size_t at, std::size_t width) {
    uint64_t v = 0;
    for (std::size_t i = 0; i < width && at + i < b.size(); ++i) {
        v |= uint64_t{b[at + i]} << (8 * i);
    }
    return v;
}

}  // namespace

uint64_t Mutator::next() noexcept {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void Mutator::edit(Bytes& b, const std::vector<Bytes>& corpus) {
    const std::size_t widths[] = {1, 2, 4, 8};
    switch (below(b.empty() ? 2 : 10)) {
        case 0: {  // insert random bytes
            const std::size_t at = below(b.size() + 1);
            const std::size_t n = 1 + below(16);
            Bytes add(n);
            for (auto& x : add) {
                x = static_cast<uint8_t>(next());
            }
            b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), add.begin(), add.end());
            break;
        }
        case 1: {  // splice: a piece of another input
            const Bytes& other = corpus[below(corpus.size())];
            if (other.empty()) {
                break;
            }
            const std::size_t from = below(other.size());
            const std::size_t n = 1 + below(other.size() - from);
            const std::size_t at = below(b.size() + 1);
            b.resize(at);
            b.insert(b.end(), other.begin() + static_cast<std::ptrdiff_t>(from),
                     other.begin() + static_cast<std::ptrdiff_t>(from + n));
            break;
        }
        case 2:
            b[below(b.size())] ^= static_cast<uint8_t>(1u << below(8));
            break;
        case 3:
            b[below(b.size())] = static_cast<uint8_t>(next());
            break;
        case 4:
        case 5: {  // an interesting value, sometimes negated
            const std::size_t width = widths[below(4)];
            uint64_t v = kInteresting[below(kInteresting.size())];
            if (below(4) == 0) {
                v = ~v + 1;
            }
            put(b, below(b.size()), v, width);
            break;
        }
        case 6: {  // arithmetic on a field
            const std::size_t width = widths[below(4)];
            const std::size_t at = below(b.size());
            const uint64_t delta = 1 + below(35);
            put(b, at, get(b, at, width) + (below(2) == 0 ? delta : ~delta + 1), width);
            break;
        }
        case 7: {  // erase
            const std::size_t at = below(b.size());
            const std::size_t n = 1 + below(std::min<std::size_t>(16, b.size() - at));
            b.erase(b.begin() + static_cast<std::ptrdiff_t>(at),
                    b.begin() + static_cast<std::ptrdiff_t>(at + n));
            break;
        }
        case 8: {  // copy a chunk within the input
            const std::size_t from = below(b.size());
            const std::size_t to = below(b.size());
            const std::size_t n = 1 + below(std::min<std::size_t>(32, b.size() - from));
            Bytes chunk(b.begin() + static_cast<std::ptrdiff_t>(from),
                        b.begin() + static_cast<std::ptrdiff_t>(from + n));
            for (std::size_t i = 0; i < chunk.size() && to + i < b.size(); ++i) {
                b[to + i] = chunk[i];
            }
            break;
        }
        default:  // truncate
            b.resize(below(b.size()));
            break;
    }
}

Bytes Mutator::mutate(const Bytes& base, const std::vector<Bytes>& corpus, std::size_t max_len) {
    Bytes b = base;
    const uint64_t edits = 1 + below(8);
    for (uint64_t i = 0; i < edits; ++i) {
        edit(b, corpus);
    }
    if (b.size() > max_len) {
        b.resize(max_len);
    }
    return b;
}

}  // namespace xenhsa::fuzz
