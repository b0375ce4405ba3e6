#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xenhsa/proto.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>
#include <xenhsa/frontend/device_claim.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::frontend {

namespace {

std::error_code claim_errno(int e) { return {e, std::generic_category()}; }

std::string device_dir(xen::DomId self) {
    return "/local/domain/" + std::to_string(self) + "/device/" XENHSA_XS_DEVICE_TYPE;
}

// The plugged devices of `self`, lowest first; an error only when the store fails.
boost::outcome_v2::unchecked<std::vector<uint32_t>, ClaimError> plugged_devices(xen::Store& store,
                                                                                xen::DomId self) {
    const std::string dir = device_dir(self);
    auto names = store.directory(xen::kNoTx, dir);
    if (!names) {
        if (names.error() == std::errc::no_such_file_or_directory) {
            return std::vector<uint32_t>{};
        }
        return ClaimError{names.error(),
                          "cannot list " + dir + " in xenstore: " + names.error().message()};
    }
    std::vector<uint32_t> devids;
    for (const std::string& name : names.value()) {
        const auto devid = xen::parse_store_uint(name, std::numeric_limits<uint32_t>::max());
        if (devid && store.read(xen::kNoTx, dir + "/" + name + "/backend")) {
            devids.push_back(static_cast<uint32_t>(devid.value()));
        }
    }
    std::sort(devids.begin(), devids.end());
    return devids;
}

// Who holds a busy lock, as its holder wrote it ("" when unreadable).
std::string holder_of(int fd) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) {
        return "";
    }
    std::string pid(buf, static_cast<std::size_t>(n));
    pid.erase(std::find_if(pid.begin(), pid.end(), [](char c) { return c < '0' || c > '9'; }),
              pid.end());
    return pid;
}

struct Attempt {
    std::optional<DeviceClaim> claim;
    std::error_code error;  // EBUSY: another process's; else the lock file failed
    std::string holder;
};

Attempt try_claim(const std::filesystem::path& lock_dir, xen::DomId self, uint32_t devid) {
    Attempt attempt;
    const std::string path = claim_lock_path(lock_dir, self, devid).string();
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0660);
    if (fd >= 0) {
        // For the group's other members, whatever this process's umask (only the file's
        // owner can, and needs to).
        (void)::fchmod(fd, 0660);
    } else if (errno == EACCES) {
        // Another user's file, not writable to us: a lock needs no write access.
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    }
    if (fd < 0) {
        attempt.error = claim_errno(errno);
        return attempt;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int e = errno;
        attempt.error = claim_errno(e == EWOULDBLOCK ? EBUSY : e);
        if (e == EWOULDBLOCK) {
            attempt.holder = holder_of(fd);
        }
        ::close(fd);
        return attempt;
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) == 0) {
        (void)!::pwrite(fd, pid.data(), pid.size(), 0);  // only for the next one's message
    }
    attempt.claim.emplace(fd, devid);
    return attempt;
}

std::string in_use_text(uint32_t devid, const std::string& holder) {
    return "device/" XENHSA_XS_DEVICE_TYPE "/" + std::to_string(devid) +
           " is in use by another process" + (holder.empty() ? "" : " (pid " + holder + ")");
}

}  // namespace

DeviceClaim::DeviceClaim(DeviceClaim&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), devid_(other.devid_) {}

DeviceClaim& DeviceClaim::operator=(DeviceClaim&& other) noexcept {
    if (this != &other) {
        release();
        fd_ = std::exchange(other.fd_, -1);
        devid_ = other.devid_;
    }
    return *this;
}

DeviceClaim::~DeviceClaim() { release(); }

void DeviceClaim::release() noexcept {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

std::filesystem::path claim_lock_path(const std::filesystem::path& lock_dir, xen::DomId self,
                                      uint32_t devid) {
    return lock_dir / ("device-" + std::to_string(self) + "-" + std::to_string(devid) + ".lock");
}

ClaimResult claim_device(xen::Store& store, xen::DomId self, const ClaimOptions& options) {
    if (::mkdir(options.lock_dir.c_str(), 0770) != 0 && errno != EEXIST) {
        const int e = errno;
        return ClaimError{claim_errno(e), "cannot make the device lock directory " +
                                              options.lock_dir.string() + ": " + std::strerror(e)};
    }
    auto plugged = plugged_devices(store, self);
    if (!plugged) {
        return plugged.error();
    }
    const std::vector<uint32_t>& devids = plugged.value();
    const std::string domain = "domain " + std::to_string(self);
    if (options.devid) {
        if (std::find(devids.begin(), devids.end(), *options.devid) == devids.end()) {
            return ClaimError{claim_errno(ENODEV), "no device/" XENHSA_XS_DEVICE_TYPE "/" +
                                                       std::to_string(*options.devid) +
                                                       " is plugged for " + domain};
        }
        Attempt attempt = try_claim(options.lock_dir, self, *options.devid);
        if (attempt.claim) {
            return std::move(*attempt.claim);
        }
        if (attempt.error == std::errc::device_or_resource_busy) {
            return ClaimError{attempt.error, in_use_text(*options.devid, attempt.holder)};
        }
        return ClaimError{attempt.error,
                          "cannot lock " +
                              claim_lock_path(options.lock_dir, self, *options.devid).string() +
                              ": " + attempt.error.message()};
    }
    if (devids.empty()) {
        return ClaimError{claim_errno(ENODEV),
                          "no xenhsa device is plugged for " + domain +
                              " (the toolstack plugs them: xenhsa-ctl plug --domid " +
                              std::to_string(self) + " --devices N)"};
    }
    for (const uint32_t devid : devids) {
        Attempt attempt = try_claim(options.lock_dir, self, devid);
        if (attempt.claim) {
            return std::move(*attempt.claim);
        }
        if (attempt.error != std::errc::device_or_resource_busy) {
            return ClaimError{attempt.error,
                              "cannot lock " +
                                  claim_lock_path(options.lock_dir, self, devid).string() + ": " +
                                  attempt.error.message()};
        }
    }
    return ClaimError{claim_errno(EBUSY),
                      "all " + std::to_string(devids.size()) + " xenhsa devices of " + domain +
                          " are in use by other processes: that is how many ROCm processes "
                          "this guest may run at once (the toolstack raises it: xenhsa-ctl "
                          "plug --domid " +
                          std::to_string(self) + " --devid " + std::to_string(devids.back() + 1) +
                          " --devices N)"};
}

}  // namespace xenhsa::frontend
