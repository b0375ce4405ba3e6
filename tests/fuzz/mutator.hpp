// A small deterministic mutator for the replay tests: seeded, so every run of the `fuzz`
// label feeds the targets the same inputs. libFuzzer's own mutator replaces it in the
// xenhsa-fuzz-<target> binaries.
#ifndef XENHSA_TESTS_FUZZ_MUTATOR_HPP
#define XENHSA_TESTS_FUZZ_MUTATOR_HPP

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xenhsa::fuzz {

using Bytes = std::vector<uint8_t>;

class Mutator {
public:
    explicit Mutator(uint64_t seed) noexcept : state_(seed) {}

    // 1..8 stacked edits of `base` (bit flips, interesting values, arithmetic, inserts,
    // erases, copies, splices with another corpus entry), at most `max_len` bytes.
    Bytes mutate(const Bytes& base, const std::vector<Bytes>& corpus, std::size_t max_len);

    uint64_t next() noexcept;  // splitmix64
    uint64_t below(uint64_t n) noexcept { return n == 0 ? 0 : next() % n; }

private:
    void edit(Bytes& b, const std::vector<Bytes>& corpus);

    uint64_t state_;
};

}  // namespace xenhsa::fuzz

#endif
