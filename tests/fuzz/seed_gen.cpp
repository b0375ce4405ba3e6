// xenhsa-fuzz-seeds: writes the fuzz targets' seed corpus (tests/fuzz/corpus), or checks
// that the checked-in corpus still holds exactly these seeds.
//
//   xenhsa-fuzz-seeds <corpus-dir>           write <corpus-dir>/<target>/<name>.bin
//   xenhsa-fuzz-seeds --check <corpus-dir>   exit 1 if a seed is missing or differs
//
// Files in the corpus that the generator does not know (inputs libFuzzer found and
// someone checked in) are left alone and pass the check.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "seeds.hpp"

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    CLI::App app{"Writes the fuzz targets' seed corpus, or checks the checked-in one"};
    bool check = false;
    fs::path root;
    app.add_flag("--check", check, "exit 1 if a seed is missing or differs; write nothing");
    app.add_option("corpus-dir", root, "the corpus directory (tests/fuzz/corpus)")->required();
    CLI11_PARSE(app, argc, argv);
    xenhsa::fuzz::SeedSet seeds;
    xenhsa::fuzz::proto_seeds(seeds);
    xenhsa::fuzz::ring_seeds(seeds);
    xenhsa::fuzz::store_seeds(seeds);
    xenhsa::fuzz::aql_seeds(seeds);
    xenhsa::fuzz::sdma_seeds(seeds);
    xenhsa::fuzz::frontend_seeds(seeds);
    int problems = 0;
    for (const auto& [name, bytes] : seeds.all()) {
        const fs::path path = root / name;
        if (check) {
            std::ifstream in(path, std::ios::binary);
            const std::vector<uint8_t> have{std::istreambuf_iterator<char>(in),
                                            std::istreambuf_iterator<char>()};
            if (!in.good() && have.empty()) {
                std::fprintf(stderr, "missing: %s\n", path.c_str());
                ++problems;
            } else if (have != bytes) {
                std::fprintf(stderr, "differs: %s (regenerate with xenhsa-fuzz-seeds)\n",
                             path.c_str());
                ++problems;
            }
            continue;
        }
        fs::create_directories(path.parent_path());
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
        if (!out) {
            std::fprintf(stderr, "cannot write %s\n", path.c_str());
            return 1;
        }
    }
    std::printf("%zu seeds %s\n", seeds.all().size(), check ? "checked" : "written");
    return problems == 0 ? 0 : 1;
}
