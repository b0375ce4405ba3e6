// The process's own memory map (/proc/self/maps, opened once before the worker confines
// itself and read again with pread), for what the kernel checks against VMAs: which pages
// a USERPTR BO may pin (hmm_range_fault: mapped, readable, writable when asked; in a PV
// dom0 not a gntdev grant mapping), and whether a range is free or only reserved.
#ifndef XENHSA_TESTS_KFD_SHIM_HOST_MAPS_HPP
#define XENHSA_TESTS_KFD_SHIM_HOST_MAPS_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace xenhsa::kfd_shim {

struct Vma {
    uint64_t start = 0;
    uint64_t end = 0;
    bool read = false;
    bool write = false;
    bool shared = false;
    std::string path;  // empty for anonymous memory
};

// Whose grant a mapping is: gntdev maps other domains' grants ("/dev/xen/gntdev");
// xenhsa-sim's grant mapper maps a granting domain's memfd ("xenhsa-sim-d<N>-gfn...").
// The sim's segments of `own_domid` are the worker's own pages (what LEND shares).
bool is_grant_mapping(const Vma& vma, uint32_t own_domid);

class HostMaps {
public:
    // Opens /proc/self/maps (before confinement); false when it cannot.
    bool open();
    // The VMAs that intersect [start, end), in order; empty when none or on a read error.
    [[nodiscard]] std::vector<Vma> covering(uint64_t start, uint64_t end) const;

private:
    int fd_ = -1;
};

// Parses one line of /proc/<pid>/maps; false when it is not one.
bool parse_maps_line(const std::string& line, Vma& vma);

}  // namespace xenhsa::kfd_shim

#endif
