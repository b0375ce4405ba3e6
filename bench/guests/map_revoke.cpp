#include "map_revoke.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <xenhsa/frontend/buffers.hpp>

#include "embedded_services.hpp"
#include "guest_domain.hpp"
#include "section_stats.hpp"

namespace xenhsa::bench {

namespace {

constexpr uint64_t kPage = XENHSA_PAGE_SIZE;
constexpr uint64_t kDefaultMapQuota = 262144;  // the backend's default max_map_pages
constexpr uint32_t kDefaultGrantFrames = 256;  // xenhsa-sim's default, 512 refs each
constexpr uint64_t kRepeatedUpTo = 4096;       // sizes measured kRepeats times a round
constexpr uint32_t kRepeats = 9;

// What one size costs in one round, in microseconds.
struct MapRound {
    double grant_us = 0;   // the guest's grants (share), before the MAPs
    double map_us = 0;     // the MAP round trips
    double revoke_us = 0;  // the UNMAP round trips
    double mmap_populate_us = 0;
    double munmap_us = 0;
    double mmap_lazy_us = 0;  // without MAP_POPULATE: no page-table entries yet
    double munmap_lazy_us = 0;
};

// Pages a guest needs beside the ones it maps: indirect pages, ring, doorbell, notify.
uint64_t guest_overhead_pages(uint64_t pages) { return pages / 1024 + 1024; }

ServiceArgs service_args(uint64_t max_pages) {
    ServiceArgs args;
    const uint64_t refs = max_pages + guest_overhead_pages(max_pages);
    const uint64_t frames = (refs + 511) / 512;
    if (frames > kDefaultGrantFrames) {
        args.sim = {"--grant-frames", std::to_string(frames)};
    }
    if (max_pages > kDefaultMapQuota) {
        // One guest's quota, and a pool whose share (pool / 16 guests) allows it.
        args.backend = {"--set", "max_map_pages=" + std::to_string(max_pages), "--map-pool-pages",
                        std::to_string(max_pages * 16)};
    }
    return args;
}

class Memfd {
public:
    explicit Memfd(uint64_t bytes) : fd_(memfd_create("xenhsa-bench-map", MFD_CLOEXEC)) {
        if (fd_ < 0) {
            throw std::system_error(errno, std::generic_category(), "memfd_create");
        }
        // The pages exist before the timed mmap, as the guest's pages do before its MAP.
        if (fallocate(fd_, 0, 0, static_cast<off_t>(bytes)) != 0) {
            const int err = errno;
            ::close(fd_);
            throw std::system_error(err, std::generic_category(), "fallocate");
        }
    }
    Memfd(const Memfd&) = delete;
    Memfd& operator=(const Memfd&) = delete;
    ~Memfd() { ::close(fd_); }
    [[nodiscard]] int fd() const { return fd_; }

private:
    int fd_;
};

// mmap of `bytes` of `memfd` with `flags`, then munmap: the two times in microseconds.
std::pair<double, double> time_mmap(const Memfd& memfd, uint64_t bytes, int flags) {
    const auto start = Clock::now();
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, memfd.fd(), 0);
    const auto mapped = Clock::now();
    if (p == MAP_FAILED) {
        throw std::system_error(errno, std::generic_category(), "mmap");
    }
    munmap(p, bytes);
    return {micros(mapped - start), micros(Clock::now() - mapped)};
}

// The physical baseline: the same pages of a memfd made present in this process
// (mmap MAP_SHARED | MAP_POPULATE), then unmapped; and mapped without MAP_POPULATE (the
// page-table entries left to the first touch), as xenhsa-sim's grant map does.
void measure_mmap(uint64_t pages, MapRound& round) {
    const uint64_t bytes = pages * kPage;
    Memfd memfd(bytes);
    std::tie(round.mmap_populate_us, round.munmap_us) =
        time_mmap(memfd, bytes, MAP_SHARED | MAP_POPULATE);
    std::tie(round.mmap_lazy_us, round.munmap_lazy_us) = time_mmap(memfd, bytes, MAP_SHARED);
}

// Guest pages covering [va, va + pages), granted in pieces of at most one MAP each.
std::vector<frontend::GuestBuffer> grant(frontend::Client& client, uint64_t va, uint64_t pages) {
    std::vector<frontend::GuestBuffer> buffers;
    for (uint64_t done = 0; done < pages;) {
        const uint64_t n = std::min<uint64_t>(pages - done, XENHSA_MAP_MAX_PAGES);
        buffers.push_back(take(client.share_at(va + done * kPage, n), "grant"));
        done += n;
    }
    return buffers;
}

// The guest's side: grant, touch (untimed: the guest's data), MAP, UNMAP, end access.
void measure_map(frontend::Client& client, uint64_t pages, MapRound& round) {
    const uint64_t bytes = pages * kPage;
    const uint64_t va = take(client.window().allocate(bytes), "window");
    const auto start = Clock::now();
    std::vector<frontend::GuestBuffer> buffers = grant(client, va, pages);
    round.grant_us = micros(Clock::now() - start);
    for (const auto& b : buffers) {
        for (std::size_t off = 0; off < b.size(); off += kPage) {
            b.data()[off] = std::byte{1};
        }
    }
    std::vector<frontend::Handle> handles;
    const auto map_start = Clock::now();
    for (const auto& b : buffers) {
        handles.push_back(take(client.map(b), "MAP"));
    }
    const auto mapped = Clock::now();
    for (const auto h : handles) {
        ensure(client.unmap(h), "UNMAP");
    }
    const auto revoked = Clock::now();
    round.map_us = micros(mapped - map_start);
    round.revoke_us = micros(revoked - mapped);
    for (auto& b : buffers) {
        ensure(b.release(), "end access");
    }
    ensure(client.window().release(va, bytes), "window release");
}

double median_field(const std::vector<MapRound>& rounds, double MapRound::*field) {
    std::vector<double> v;
    for (const auto& r : rounds) {
        v.push_back(r.*field);
    }
    return median_of(std::move(v));
}

}  // namespace

void run_map_revoke(const std::filesystem::path& bin_dir, const MapRevokeOptions& options) {
    const uint64_t max_pages = *std::max_element(options.pages.begin(), options.pages.end());
    EmbeddedServices services(bin_dir, service_args(max_pages));
    GuestDomain guest(services.sim_dir(), max_pages + guest_overhead_pages(max_pages));
    frontend::Client& client = guest.client();
    const uint64_t quota = client.session()->max_map_pages;

    // The worker's first MAP, untimed.
    MapRound warmup;
    measure_map(client, 1, warmup);

    std::vector<std::vector<MapRound>> rounds(options.pages.size());
    for (uint32_t r = 0; r < options.rounds; ++r) {
        for (std::size_t i = 0; i < options.pages.size(); ++i) {
            if (options.pages[i] > quota) {
                continue;
            }
            // Small sizes several times a round: the first after a pause also pays the
            // worker's and the daemon's wake-ups, which the median leaves out.
            const uint32_t repeats = options.pages[i] <= kRepeatedUpTo ? kRepeats : 1;
            for (uint32_t k = 0; k < repeats; ++k) {
                MapRound round;
                measure_map(client, options.pages[i], round);
                measure_mmap(options.pages[i], round);
                rounds[i].push_back(round);
            }
        }
    }
    for (std::size_t i = 0; i < options.pages.size(); ++i) {
        const uint64_t pages = options.pages[i];
        if (pages > quota) {
            std::printf("map_pages=%llu refused=max_map_pages max_map_pages=%llu\n",
                        static_cast<unsigned long long>(pages),
                        static_cast<unsigned long long>(quota));
            continue;
        }
        const auto& r = rounds[i];
        const double map = median_field(r, &MapRound::map_us);
        const double mmap_populate = median_field(r, &MapRound::mmap_populate_us);
        const double revoke = median_field(r, &MapRound::revoke_us);
        const double munmap = median_field(r, &MapRound::munmap_us);
        const auto requests = (pages + XENHSA_MAP_MAX_PAGES - 1) / XENHSA_MAP_MAX_PAGES;
        const double mmap_lazy = median_field(r, &MapRound::mmap_lazy_us);
        const double munmap_lazy = median_field(r, &MapRound::munmap_lazy_us);
        std::printf(
            "map_pages=%llu map_requests=%llu map_us=%.1f mmap_populate_us=%.1f "
            "map_vs_mmap=%.3f revoke_us=%.1f munmap_us=%.1f revoke_vs_munmap=%.3f "
            "grant_us=%.1f grant_vs_mmap=%.3f mmap_lazy_us=%.1f map_vs_mmap_lazy=%.3f "
            "munmap_lazy_us=%.1f revoke_vs_munmap_lazy=%.3f\n",
            static_cast<unsigned long long>(pages), static_cast<unsigned long long>(requests), map,
            mmap_populate, ratio(map, mmap_populate), revoke, munmap, ratio(revoke, munmap),
            median_field(r, &MapRound::grant_us),
            ratio(median_field(r, &MapRound::grant_us), mmap_populate), mmap_lazy,
            ratio(map, mmap_lazy), munmap_lazy, ratio(revoke, munmap_lazy));
    }
    std::printf("map_rounds=%u map_repeats_up_to_%llu_pages=%u map_max_pages_per_request=%u\n",
                options.rounds, static_cast<unsigned long long>(kRepeatedUpTo), kRepeats,
                XENHSA_MAP_MAX_PAGES);
}

}  // namespace xenhsa::bench
