// Section `map`: a guest MAPs granted pages at its VA and revokes them (UNMAP), through
// the guest library (Client::map, Client::unmap), against mmap(MAP_SHARED | MAP_POPULATE)
// and munmap of as many pages of a memfd, measured in the same rounds.
#ifndef XENHSA_BENCH_GUESTS_MAP_REVOKE_HPP
#define XENHSA_BENCH_GUESTS_MAP_REVOKE_HPP

#include <cstdint>
#include <filesystem>
#include <vector>

namespace xenhsa::bench {

struct MapRevokeOptions {
    std::vector<uint64_t> pages{1, 64, 4096, 262144};  // 4 KiB pages; 262144 = 1 GiB
    uint32_t rounds = 3;
};

// Starts its own xenhsa-sim and xenhsa-backend, prints one `map_pages=...` line per size
// (medians of the rounds). Throws on failure.
void run_map_revoke(const std::filesystem::path& bin_dir, const MapRevokeOptions& options);

}  // namespace xenhsa::bench

#endif
