#include "worker_fd_store.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <limits>

#if XENHSA_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace xenhsa::backend::service {

namespace {

constexpr std::string_view kPrefix = "worker-";

std::optional<uint64_t> field(std::string_view& rest, bool last) {
    const auto dash = rest.find('-');
    if (last != (dash == std::string_view::npos)) {
        return std::nullopt;
    }
    const std::string_view text = rest.substr(0, dash);
    uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
        return std::nullopt;
    }
    rest = last ? std::string_view{} : rest.substr(dash + 1);
    return value;
}

}  // namespace

std::string WorkerFdStore::name(const DeviceId& device, pid_t pid) {
    return std::string(kPrefix) + std::to_string(device.fe) + "-" + std::to_string(device.devid) +
           "-" + std::to_string(pid);
}

std::optional<StoredWorker> WorkerFdStore::parse(std::string_view name) {
    if (!name.starts_with(kPrefix)) {
        return std::nullopt;
    }
    name.remove_prefix(kPrefix.size());
    const auto fe = field(name, false);
    const auto devid = field(name, false);
    const auto pid = field(name, true);
    if (!fe || !devid || !pid || *fe == 0 || *fe > 0x7FEF ||
        *devid > std::numeric_limits<uint32_t>::max() || *pid == 0 ||
        *pid > static_cast<uint64_t>(std::numeric_limits<pid_t>::max())) {
        return std::nullopt;
    }
    return StoredWorker{{static_cast<xen::DomId>(*fe), static_cast<uint32_t>(*devid)},
                        static_cast<pid_t>(*pid)};
}

#if XENHSA_HAVE_SYSTEMD

bool WorkerFdStore::available() noexcept {
    const char* socket = std::getenv("NOTIFY_SOCKET");
    return socket != nullptr && *socket != '\0';
}

bool WorkerFdStore::keep(const DeviceId& device, pid_t pid, int fd) noexcept {
    if (!available()) {
        return false;
    }
    const std::string state = "FDSTORE=1\nFDNAME=" + name(device, pid);
    return sd_pid_notify_with_fds(0, 0, state.c_str(), &fd, 1) > 0;
}

void WorkerFdStore::drop(const DeviceId& device, pid_t pid) noexcept {
    if (available()) {
        const std::string state = "FDSTOREREMOVE=1\nFDNAME=" + name(device, pid);
        (void)sd_notify(0, state.c_str());
    }
}

std::vector<StoredWorker> WorkerFdStore::take() {
    char** names = nullptr;
    const int n = sd_listen_fds_with_names(1, &names);
    std::vector<StoredWorker> workers;
    for (int i = 0; i < n; ++i) {
        const int fd = SD_LISTEN_FDS_START + i;
        auto worker = names != nullptr && names[i] != nullptr ? parse(names[i]) : std::nullopt;
        if (worker) {
            worker->fd = fd;
            workers.push_back(*worker);
        } else {
            ::close(fd);
        }
    }
    if (names != nullptr) {
        for (int i = 0; i < n; ++i) {
            std::free(names[i]);
        }
        std::free(names);
    }
    return workers;
}

#else

bool WorkerFdStore::available() noexcept { return false; }
bool WorkerFdStore::keep(const DeviceId&, pid_t, int) noexcept { return false; }
void WorkerFdStore::drop(const DeviceId&, pid_t) noexcept {}
std::vector<StoredWorker> WorkerFdStore::take() { return {}; }

#endif

}  // namespace xenhsa::backend::service
