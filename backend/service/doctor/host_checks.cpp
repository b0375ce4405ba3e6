#include "host_checks.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>
#include <system_error>

#include "atomics_path.hpp"

namespace xenhsa::backend::doctor {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kAmdVendor = "0x1002";

fs::path under(const DoctorOptions& o, std::string_view absolute) {
    return o.root / fs::path(absolute).relative_path();
}

std::optional<std::string> read_text(const fs::path& p) {
    std::ifstream in(p);
    if (!in) {
        return std::nullopt;
    }
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) {
        s.pop_back();
    }
    return s;
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool present(const fs::path& p) {
    std::error_code ec;
    return fs::exists(p, ec);
}

bool is_pci_address(const std::string& name) {
    static const std::regex kAddress("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]");
    return std::regex_match(name, kAddress);
}

// The function at `device` and every PCI function above it, from its sysfs path
// (/sys/devices/pci0000:00/0000:00:03.1/0000:0b:00.0): the GPU first.
std::vector<PciFunction> upstream_path(const fs::path& device) {
    std::error_code ec;
    const fs::path real = fs::canonical(device, ec);
    std::vector<PciFunction> path;
    if (ec) {
        return path;
    }
    for (fs::path p = real; p.has_filename() && is_pci_address(p.filename().string());
         p = p.parent_path()) {
        path.push_back({p.filename().string(), parse_pcie_config(read_bytes(p / "config"))});
    }
    return path;
}

struct Gpu {
    std::string address;
    fs::path dir;
};

std::vector<Gpu> amd_gpus(const DoctorOptions& o) {
    std::vector<Gpu> gpus;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(under(o, "/sys/bus/pci/devices"), ec)) {
        const auto vendor = read_text(entry.path() / "vendor");
        const auto cls = read_text(entry.path() / "class");
        // Display controllers (0x03) and processing accelerators (0x12).
        if (vendor == kAmdVendor && cls &&
            (cls->rfind("0x03", 0) == 0 || cls->rfind("0x12", 0) == 0)) {
            gpus.push_back({entry.path().filename().string(), entry.path()});
        }
    }
    std::sort(gpus.begin(), gpus.end(),
              [](const Gpu& a, const Gpu& b) { return a.address < b.address; });
    return gpus;
}

// gfx_target_version 90010 -> gfx90a (major, minor, stepping in hex).
std::string gfx_name(uint64_t version) {
    const uint64_t major = version / 10000;
    const uint64_t minor = version / 100 % 100;
    const uint64_t stepping = version % 100;
    const char* hex = "0123456789abcdef";
    return "gfx" + std::to_string(major) + std::to_string(minor) +
           (stepping < 16 ? std::string(1, hex[stepping]) : std::to_string(stepping));
}

std::vector<std::string> kfd_gfx_targets(const DoctorOptions& o) {
    std::vector<std::string> targets;
    std::error_code ec;
    std::vector<fs::path> nodes;
    for (const auto& e :
         fs::directory_iterator(under(o, "/sys/class/kfd/kfd/topology/nodes"), ec)) {
        nodes.push_back(e.path());
    }
    std::sort(nodes.begin(), nodes.end());
    for (const fs::path& node : nodes) {
        std::ifstream in(node / "properties");
        std::string key;
        uint64_t value = 0;
        while (in >> key >> value) {
            if (key == "gfx_target_version" && value != 0) {
                targets.push_back(gfx_name(value));
            }
        }
    }
    return targets;
}

// A Xen domU: the backend runs in a driver domain there.
bool xen_domu(const DoctorOptions& o) {
    if (read_text(under(o, "/sys/hypervisor/type")) != "xen") {
        return false;
    }
    const auto caps = read_text(under(o, "/proc/xen/capabilities"));
    return !(caps && caps->find("control_d") != std::string::npos);
}

void gpu_checks(const DoctorOptions& o, std::vector<Check>& out) {
    const std::vector<Gpu> gpus = amd_gpus(o);
    if (gpus.empty()) {
        if (xen_domu(o)) {
            out.push_back({"AMD GPU", Status::warn,
                           "no AMD GPU passed through to this domain: the backend will give "
                           "guests the software GPU agent (--gpu soft), which runs kernels on "
                           "the CPU",
                           "in dom0: xl pci-assignable-add BDF, then pci = [ 'BDF' ] in this "
                           "driver domain's xl config (docs/operations.md, In a driver domain)"});
            return;
        }
        out.push_back({"AMD GPU", Status::warn,
                       "no AMD GPU on this host: the backend will give guests the software "
                       "GPU agent (--gpu soft), which runs kernels on the CPU",
                       ""});
        return;
    }
    std::string list;
    for (const Gpu& g : gpus) {
        list += (list.empty() ? "" : ", ") + g.address;
    }
    out.push_back({"AMD GPU", Status::pass,
                   std::to_string(gpus.size()) + ": " + list +
                       (xen_domu(o) ? " (passed through to this domain)" : ""),
                   ""});
    for (const Gpu& g : gpus) {
        const AtomicsVerdict v = check_atomics_path(upstream_path(g.dir));
        out.push_back({"PCIe AtomicOps " + g.address, v.ok ? Status::pass : Status::fail, v.detail,
                       v.remedy});
    }

    const fs::path kfd = under(o, "/dev/kfd");
    if (!present(kfd)) {
        out.push_back({"/dev/kfd", Status::fail, "missing: amdgpu is not loaded, or without KFD",
                       "modprobe amdgpu (kernel with CONFIG_HSA_AMD); see dmesg for why KFD "
                       "did not start"});
    } else {
        const int fd = ::open(kfd.c_str(), O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            out.push_back({"/dev/kfd", Status::fail,
                           "present but not openable by this user: " +
                               std::error_code(errno, std::generic_category()).message(),
                           "run the backend as root (it opens /dev/kfd before it drops "
                           "privileges), or add its user to the render group"});
        } else {
            ::close(fd);
            out.push_back({"/dev/kfd", Status::pass, "present and openable", ""});
        }
    }
    const auto targets = kfd_gfx_targets(o);
    std::string names;
    for (const auto& t : targets) {
        names += (names.empty() ? "" : ", ") + t;
    }
    out.push_back({"GPU targets", targets.empty() ? Status::warn : Status::pass,
                   targets.empty() ? "KFD's topology lists no GPU node" : names, ""});
    const auto noretry = read_text(under(o, "/sys/module/amdgpu/parameters/noretry"));
    std::string xnack = "amdgpu.noretry unknown";
    if (noretry) {
        xnack = "amdgpu.noretry=" + *noretry +
                (*noretry == "0"   ? " (XNACK on where the GPU has it: pageable memory)"
                 : *noretry == "1" ? " (XNACK off: guest buffers are pinned, as xenhsa does)"
                                   : " (the driver's default for each GPU)");
    }
    out.push_back({"XNACK", Status::info, xnack, ""});
}

void iommu_check(const DoctorOptions& o, std::vector<Check>& out) {
    std::error_code ec;
    std::size_t units = 0;
    for (auto it = fs::directory_iterator(under(o, "/sys/class/iommu"), ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
        ++units;
    }
    out.push_back({"IOMMU", Status::info,
                   units == 0
                       ? "off (no unit in /sys/class/iommu)"
                       : "on (" + std::to_string(units) + " unit" + (units == 1 ? "" : "s") + ")",
                   ""});
}

void xen_checks(const DoctorOptions& o, std::vector<Check>& out) {
    if (read_text(under(o, "/sys/hypervisor/type")) != "xen") {
        out.push_back({"Xen", Status::warn,
                       "not running on Xen: guests can only be served on the embedded "
                       "hypervisor (xenhsa-backend --sim-dir, with xenhsa-sim)",
                       ""});
        return;
    }
    const auto major = read_text(under(o, "/sys/hypervisor/version/major"));
    const auto minor = read_text(under(o, "/sys/hypervisor/version/minor"));
    const auto extra = read_text(under(o, "/sys/hypervisor/version/extra"));
    const bool dom0 = !xen_domu(o);  // on Xen here
    out.push_back({"Xen", Status::pass,
                   "Xen " + major.value_or("?") + "." + minor.value_or("?") + extra.value_or("") +
                       (dom0 ? ", this is dom0" : ", this is a domU (a driver domain?)"),
                   ""});
    if (o.backend_devices) {
        const BackendDevices& d = *o.backend_devices;
        out.push_back(
            {"backend devices", Status::info,
             d.devices == 0
                 ? std::string("none plugged with this domain as backend yet")
                 : std::to_string(d.devices) + " xenhsa device(s) of " + std::to_string(d.guests) +
                       " guest(s) plugged with this domain as backend",
             d.devices != 0 || dom0
                 ? ""
                 : "dom0's toolstack plugs them with this domain as backend (xenhsa-ctl plug "
                   "--domid GUEST --backend-domid THIS) and lets it watch @releaseDomain "
                   "(xenstore-chmod @releaseDomain n0 rTHIS) (docs/operations.md, In a "
                   "driver domain)"});
    }
    if (!dom0 && o.xen_on_arm) {
        out.push_back({"XSM", Status::info,
                       "Debian's arm64 Xen enforces XSM SILO unless booted with xsm=dummy (or a "
                       "FLASK policy): under SILO a domU shares grants and event channels with "
                       "dom0 only, so a driver domain's guests cannot connect",
                       "add xsm=dummy to Xen's command line (GRUB_CMDLINE_XEN) for a driver "
                       "domain (docs/operations.md, arm64 Xen)"});
    }
    if (!dom0) {
        out.push_back({"grant maps (maptrack)", Status::info,
                       "not readable from a domU: Xen's gnttab_max_maptrack_frames, or "
                       "max_maptrack_frames in this domain's xl config, bounds what it maps "
                       "for all its guests (256 pages per frame)",
                       ""});
    }

    const bool store = present(under(o, "/dev/xen/xenbus")) ||
                       present(under(o, "/dev/xen/xenbus_backend")) ||
                       present(under(o, "/var/run/xenstored/socket")) ||
                       present(under(o, "/run/xenstored/socket"));
    out.push_back({"xenstore", store ? Status::pass : Status::fail,
                   store ? "reachable" : "neither /dev/xen/xenbus nor xenstored's socket",
                   store ? "" : "start xenstored (dom0) or load xenfs"});
    for (const char* dev : {"gntdev", "gntalloc", "evtchn"}) {
        const bool here = present(under(o, std::string("/dev/xen/") + dev));
        out.push_back({std::string("/dev/xen/") + dev, here ? Status::pass : Status::fail,
                       here ? "present" : "missing",
                       here ? "" : std::string("modprobe xen-") + dev});
    }
    const auto limit = read_text(under(o, "/sys/module/xen_gntalloc/parameters/limit"));
    if (limit) {
        uint64_t pages = 0;
        try {
            pages = std::stoull(*limit);
        } catch (const std::exception&) {
        }
        const bool enough = pages >= o.lend_pages;
        out.push_back({"gntalloc limit", enough ? Status::pass : Status::warn,
                       *limit + " pages in all, against a LEND quota of " +
                           std::to_string(o.lend_pages) + " pages per guest",
                       enough ? ""
                              : "raise it (xen_gntalloc.limit=N on the kernel command line, "
                                "or /sys/module/xen_gntalloc/parameters/limit) or lower "
                                "max_lend_pages"});
    }
}

std::string gib(uint64_t pages) {
    if (pages < 262144) {
        return std::to_string(pages * 4096 >> 20) + " MiB";
    }
    const uint64_t tenths = pages * 4096 * 10 >> 30;
    return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " GiB";
}

// What the guests' shares let them map and borrow at once, against what Xen lets the
// backend domain map (maptrack) and grant (its grant table).
void grant_capacity_checks(const DoctorOptions& o, std::vector<Check>& out) {
    if (!o.grant_limits) {
        return;
    }
    const XenGrantLimits& x = *o.grant_limits;
    const uint64_t maps = uint64_t{x.maptrack_frames} * 256;
    const uint64_t map_share =
        std::min(o.map_pages, o.map_pool_pages / std::max<uint64_t>(o.max_guests, 1));
    const uint64_t map_need = map_share * o.max_guests;
    const bool maps_enough = maps >= map_need;
    out.push_back(
        {"grant maps (maptrack)", maps_enough ? Status::pass : Status::warn,
         std::to_string(x.maptrack_frames) + " frames" +
             (x.maptrack_default ? " (Xen's default)" : "") + ": " + std::to_string(maps) +
             " pages (" + gib(maps) + ") this domain may map for all guests, against " +
             std::to_string(o.max_guests) + " guests x a map share of " +
             std::to_string(map_share) + " pages (" + gib(map_need) + ")",
         maps_enough ? ""
                     : "gnttab_max_maptrack_frames=" + std::to_string((map_need + 255) / 256) +
                           " on Xen's command line, or lower --map-pool-pages, max_map_pages "
                           "or --max-guests (a guest past the bound gets NO_MEMORY on MAP)"});
    const uint64_t entries = uint64_t{x.grant_frames} * 512;
    const uint64_t lend_need = o.lend_pages * o.max_guests;
    const bool lends_enough = entries >= lend_need + 8;
    out.push_back({"grant table (lends)", lends_enough ? Status::pass : Status::warn,
                   std::to_string(x.grant_frames) + " frames: " + std::to_string(entries) +
                       " pages (" + gib(entries) + ") this domain may grant, against " +
                       std::to_string(o.max_guests) + " guests x a lend quota of " +
                       std::to_string(o.lend_pages) + " pages (" + gib(lend_need) + ")",
                   lends_enough
                       ? ""
                       : "gnttab_max_frames=" + std::to_string((lend_need + 8 + 511) / 512) +
                             " on Xen's command line, or lower max_lend_pages or --max-guests "
                             "(the lend pool is the smaller of this and gntalloc's limit)"});
    out.push_back({"GPU-visible system memory per guest", Status::info,
                   "up to " + gib(map_share) +
                       " (the map share), bounded also by each guest's grant table "
                       "(max_grant_frames in xl.cfg, 512 pages per frame; Xen's default 64 "
                       "is 128 MiB) and by the guest's RAM; where the kernel cannot pin grant "
                       "mappings (a PV dom0) the lend share instead (docs/operations.md, "
                       "Sizing)",
                   ""});
}

void memlock_check(std::vector<Check>& out) {
    rlimit r{};
    if (::getrlimit(RLIMIT_MEMLOCK, &r) != 0) {
        return;
    }
    const bool unlimited = r.rlim_cur == RLIM_INFINITY;
    out.push_back(
        {"memlock limit", unlimited ? Status::pass : Status::info,
         unlimited ? "unlimited" : std::to_string(r.rlim_cur / 1024) + " KiB for this process",
         unlimited ? ""
                   : "the systemd unit sets LimitMEMLOCK=infinity; run by hand, "
                     "raise it (ulimit -l unlimited) before pinning large buffers"});
}

}  // namespace

std::vector<Check> run_checks(const DoctorOptions& options) {
    std::vector<Check> checks;
    gpu_checks(options, checks);
    iommu_check(options, checks);
    xen_checks(options, checks);
    grant_capacity_checks(options, checks);
    memlock_check(checks);
    return checks;
}

std::string_view status_name(Status status) noexcept {
    switch (status) {
        case Status::pass:
            return "pass";
        case Status::info:
            return "info";
        case Status::warn:
            return "warn";
        case Status::fail:
            return "FAIL";
    }
    return "?";
}

bool any_failed(const std::vector<Check>& checks) noexcept {
    return std::any_of(checks.begin(), checks.end(),
                       [](const Check& c) { return c.status == Status::fail; });
}

}  // namespace xenhsa::backend::doctor
