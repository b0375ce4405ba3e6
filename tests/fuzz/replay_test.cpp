// The replay driver: runs one fuzz target (LLVMFuzzerTestOneInput, linked into this
// binary) over its checked-in corpus and over a fixed number of seeded mutations of it,
// under the build's sanitizers. A violated invariant aborts (fuzz_check.hpp): the hook
// below names the input and saves it for `xenhsa-fuzz-<target> <file>` or this binary.
//
// Environment (for longer local runs, never needed by CI):
//   XENHSA_FUZZ_MUTATIONS  mutations to run instead of the built-in count
//   XENHSA_FUZZ_SEED       mutator seed instead of the built-in one
//   XENHSA_FUZZ_INPUT      run just this file
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "mutator.hpp"

// Set by the build when a sanitizer runtime is linked (the header alone may be there
// without one).
#ifndef XENHSA_FUZZ_HAVE_SANITIZER_API
#define XENHSA_FUZZ_HAVE_SANITIZER_API 0
#endif
#if XENHSA_FUZZ_HAVE_SANITIZER_API
#include <sanitizer/common_interface_defs.h>
#endif

#ifndef XENHSA_FUZZ_TARGET
#error "XENHSA_FUZZ_TARGET, XENHSA_FUZZ_SUITE, XENHSA_FUZZ_CORPUS_DIR, XENHSA_FUZZ_MUTATIONS"
#endif

namespace xenhsa::fuzz {
namespace {

struct Seed {
    std::string name;
    Bytes bytes;
};

// What is running now, for the violation hook (no allocation there: it may run in a
// sanitizer's death path).
std::string g_label;
Bytes g_input;

void save_current() noexcept {
    std::fprintf(stderr, "xenhsa-fuzz: target %s, input %s (%zu bytes)\n", XENHSA_FUZZ_TARGET,
                 g_label.c_str(), g_input.size());
    const char* dir = std::getenv("TMPDIR");
    char path[512];
    std::snprintf(path, sizeof path, "%s/xenhsa-fuzz-%s-crash.bin",
                  dir != nullptr && dir[0] != '\0' ? dir : "/tmp", XENHSA_FUZZ_TARGET);
    if (std::FILE* f = std::fopen(path, "wb")) {
        const bool ok = std::fwrite(g_input.data(), 1, g_input.size(), f) == g_input.size();
        std::fclose(f);
        if (ok) {
            std::fprintf(stderr, "xenhsa-fuzz: input saved to %s\n", path);
        }
    }
}

void run(std::string label, const Bytes& bytes) {
    g_label = std::move(label);
    g_input = bytes;
    LLVMFuzzerTestOneInput(g_input.data(), g_input.size());
}

Bytes read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<Seed> corpus() {
    std::vector<Seed> seeds;
    const std::filesystem::path dir(XENHSA_FUZZ_CORPUS_DIR);
    if (!std::filesystem::is_directory(dir)) {
        return seeds;
    }
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.is_regular_file()) {
            seeds.push_back({entry.path().filename().string(), read_file(entry.path())});
        }
    }
    std::sort(seeds.begin(), seeds.end(),
              [](const Seed& a, const Seed& b) { return a.name < b.name; });
    return seeds;
}

uint64_t env_number(const char* name, uint64_t fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && v[0] != '\0' ? std::strtoull(v, nullptr, 0) : fallback;
}

class Replay : public ::testing::Environment {
public:
    void SetUp() override {
        set_violation_hook(&save_current);
#if XENHSA_FUZZ_HAVE_SANITIZER_API
        __sanitizer_set_death_callback([] { save_current(); });
#endif
    }
    // Leak checks and other exit-time reports come after the globals are gone.
    void TearDown() override {
        set_violation_hook(nullptr);
#if XENHSA_FUZZ_HAVE_SANITIZER_API
        __sanitizer_set_death_callback(nullptr);
#endif
    }
};

[[maybe_unused]] const auto* const g_env = ::testing::AddGlobalTestEnvironment(new Replay);

#define XENHSA_FUZZ_TEST_(suite, name) TEST(suite, name)
#define XENHSA_FUZZ_TEST(name) XENHSA_FUZZ_TEST_(XENHSA_FUZZ_SUITE, name)

XENHSA_FUZZ_TEST(CorpusIsCheckedIn) {
    const auto seeds = corpus();
    EXPECT_GE(seeds.size(), 4u) << XENHSA_FUZZ_CORPUS_DIR;
    for (const auto& s : seeds) {
        EXPECT_FALSE(s.bytes.empty()) << s.name;
    }
}

XENHSA_FUZZ_TEST(Corpus) {
    if (const char* one = std::getenv("XENHSA_FUZZ_INPUT"); one != nullptr && one[0] != '\0') {
        run(one, read_file(one));
        return;
    }
    for (const auto& s : corpus()) {
        run("corpus/" XENHSA_FUZZ_TARGET "/" + s.name, s.bytes);
    }
}

XENHSA_FUZZ_TEST(SeededMutations) {
    const auto seeds = corpus();
    ASSERT_FALSE(seeds.empty());
    std::vector<Bytes> inputs;
    for (const auto& s : seeds) {
        inputs.push_back(s.bytes);
    }
    const uint64_t count = env_number("XENHSA_FUZZ_MUTATIONS", XENHSA_FUZZ_MUTATIONS);
    const uint64_t seed = env_number("XENHSA_FUZZ_SEED", 0x78656e687361ull);
    Mutator mutator(seed);
    for (uint64_t i = 0; i < count; ++i) {
        const std::size_t base = mutator.below(seeds.size());
        Bytes input = mutator.mutate(inputs[base], inputs, XENHSA_FUZZ_MAX_LEN);
        run("mutation " + std::to_string(i) + " of " + seeds[base].name + " (seed " +
                std::to_string(seed) + ")",
            input);
    }
}

// The checks can fail: a violation aborts with its message ...
XENHSA_FUZZ_TEST(AViolationAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(XENHSA_FUZZ_CHECK(1 + 1 == 3, "arithmetic"), "invariant violated: arithmetic");
}

// ... and a harness whose precondition is broken on purpose trips its target's checks.
XENHSA_FUZZ_TEST(SabotagedHarnessIsCaught) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const auto seeds = corpus();
    ASSERT_FALSE(seeds.empty());
    EXPECT_DEATH(
        {
            set_sabotage(true);
            for (const auto& s : seeds) {
                run(s.name, s.bytes);
            }
        },
        "invariant violated");
}

}  // namespace
}  // namespace xenhsa::fuzz
