// The corpus generator's seeds, one function per fuzz target. Each seed is written in
// the input format its target documents at the top of <target>_fuzz.cpp.
#ifndef XENHSA_TESTS_FUZZ_SEEDS_HPP
#define XENHSA_TESTS_FUZZ_SEEDS_HPP

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "seed_bytes.hpp"

namespace xenhsa::fuzz {

class SeedSet {
public:
    void add(const std::string& target, const std::string& name, std::vector<uint8_t> bytes) {
        seeds_[target + "/" + name + ".bin"] = std::move(bytes);
    }
    // "<target>/<name>.bin" -> bytes
    [[nodiscard]] const std::map<std::string, std::vector<uint8_t>>& all() const noexcept {
        return seeds_;
    }

private:
    std::map<std::string, std::vector<uint8_t>> seeds_;
};

void proto_seeds(SeedSet& out);
void ring_seeds(SeedSet& out);
void store_seeds(SeedSet& out);
void aql_seeds(SeedSet& out);
void sdma_seeds(SeedSet& out);
void frontend_seeds(SeedSet& out);

}  // namespace xenhsa::fuzz

#endif
