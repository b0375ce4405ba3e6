#include <spdlog/spdlog.h>

#include <cerrno>
#include <limits>
#include <xenhsa/backend/service/xenbus.hpp>

#include "supervisor_impl.hpp"

namespace xenhsa::backend::service::supervision {

namespace {

constexpr std::string_view kFrontendTokenPrefix = "xenhsa-fe/";

}  // namespace

std::string frontend_token(const DeviceId& id) {
    return std::string(kFrontendTokenPrefix) + std::to_string(id.fe) + "/" +
           std::to_string(id.devid);
}

std::optional<DeviceId> parse_frontend_token(std::string_view token) {
    if (!token.starts_with(kFrontendTokenPrefix)) {
        return std::nullopt;
    }
    token.remove_prefix(kFrontendTokenPrefix.size());
    const auto slash = token.find('/');
    if (slash == std::string_view::npos) {
        return std::nullopt;
    }
    const auto fe = xen::parse_store_uint(token.substr(0, slash), kMaxGuestDomId);
    const auto devid =
        xen::parse_store_uint(token.substr(slash + 1), std::numeric_limits<uint32_t>::max());
    if (!fe || !devid) {
        return std::nullopt;
    }
    return DeviceId{static_cast<xen::DomId>(fe.value()), static_cast<uint32_t>(devid.value())};
}

void Supervisor::on_watch(const xen::WatchEvent& event) {
    if (shutting_down_) {
        return;
    }
    if (event.token == kDevicesToken) {
        rescan();
    } else if (event.token == kReleaseToken) {
        domains_released();
    } else if (const auto id = parse_frontend_token(event.token)) {
        frontend_changed(*id);
    }
}

std::set<DeviceId> Supervisor::scan() {
    std::set<DeviceId> found;
    auto domains = platform_.store->directory(xen::kNoTx, root_);
    if (!domains) {
        if (domains.error() != std::errc::no_such_file_or_directory) {
            log_->warn("cannot list {}: {}", root_, domains.error().message());
        }
        return found;
    }
    for (const auto& fe_name : domains.value()) {
        const auto fe = xen::parse_store_uint(fe_name, kMaxGuestDomId);
        if (!fe) {
            log_->warn("ignoring {}/{}: not a guest domain id", root_, fe_name);
            continue;
        }
        auto devids = platform_.store->directory(xen::kNoTx, root_ + "/" + fe_name);
        if (!devids) {
            continue;  // removed meanwhile
        }
        for (const auto& dev_name : devids.value()) {
            const auto devid =
                xen::parse_store_uint(dev_name, std::numeric_limits<uint32_t>::max());
            if (!devid) {
                log_->warn("ignoring {}/{}/{}: not a device id", root_, fe_name, dev_name);
                continue;
            }
            found.insert(DeviceId{static_cast<xen::DomId>(fe.value()),
                                  static_cast<uint32_t>(devid.value())});
        }
    }
    return found;
}

void Supervisor::rescan() {
    const auto found = scan();
    for (const auto& id : found) {
        if (!devices_.contains(id)) {
            add_device(id);
        }
    }
    std::vector<DeviceId> gone;
    for (const auto& [id, dev] : devices_) {
        if (!found.contains(id) && !dev.removing) {
            gone.push_back(id);
        }
    }
    for (const auto& id : gone) {
        log_->info("device {} unplugged", to_string(id));
        retire(id);
    }
}

xen::Result<bool> Supervisor::guest_alive(const DeviceId& id) {
    auto alive = platform_.domains->alive(id.fe);
    if (alive || alive.error().value() != EACCES) {
        return alive;
    }
    // EACCES here too means the directory is gone: the first node up the path that exists
    // (/local/domain) is not ours to read.
    return static_cast<bool>(platform_.store->read(xen::kNoTx, frontend_dir(id) + "/state"));
}

void Supervisor::add_device(const DeviceId& id) {
    const auto alive = guest_alive(id);
    if (alive && !alive.value()) {
        log_->debug("ignoring device {}: domain {} is gone", to_string(id), id.fe);
        return;
    }
    log_->info("new device {}", to_string(id));
    auto& dev = devices_.try_emplace(id, io_, id).first->second;
    start_worker(dev);
}

void Supervisor::domains_released() {
    std::vector<DeviceId> dead;
    std::set<xen::DomId> checked;
    for (const auto& [id, dev] : devices_) {
        if (dev.removing) {
            continue;
        }
        const auto alive = guest_alive(id);
        if (alive && !alive.value()) {
            dead.push_back(id);
            if (checked.insert(id.fe).second) {
                log_->info("domain {} is gone", id.fe);
            }
        }
    }
    for (const auto& id : dead) {
        devices_.at(id).domain_gone = true;
        retire(id);
    }
    // A later domain with the same id starts from the global quotas.
    for (auto it = domain_settings_.begin(); it != domain_settings_.end();) {
        const auto alive = platform_.domains->alive(it->first);
        it = alive && !alive.value() ? domain_settings_.erase(it) : std::next(it);
    }
}

void Supervisor::retire(const DeviceId& id) {
    const auto it = devices_.find(id);
    if (it == devices_.end()) {
        return;
    }
    Device& dev = it->second;
    dev.removing = true;
    dev.restart.cancel();
    unwatch_frontend(dev);
    if (!dev.worker) {
        forget(id);
        return;
    }
    stop_worker(dev);
}

void Supervisor::forget(const DeviceId& id) {
    if (const auto it = devices_.find(id); it != devices_.end() && it->second.domain_gone) {
        remove_backend_dir(id);
    }
    devices_.erase(id);
    const bool had_slot = shares_.admitted(id);
    shares_.leave(id);
    if (!had_slot || shutting_down_) {
        return;
    }
    for (auto& [other, dev] : devices_) {
        if (dev.refused && !dev.removing && !dev.worker) {
            log_->info("device {}: a guest slot is free", to_string(other));
            unwatch_frontend(dev);
            start_worker(dev);
            return;
        }
    }
}

void Supervisor::remove_backend_dir(const DeviceId& id) {
    // xl knows no xenhsa device: its toolstack leaves the backend's directories of a dead
    // guest to the backend, as libxl leaves a driver domain's to it.
    const std::string dir = backend_dir(be_, id);
    if (auto removed = platform_.store->rm(xen::kNoTx, dir);
        !removed && removed.error().value() != ENOENT) {
        log_->warn("device {}: cannot remove {}: {}", to_string(id), dir,
                   removed.error().message());
        return;
    }
    const std::string level = root_ + "/" + std::to_string(id.fe);
    if (auto left = platform_.store->directory(xen::kNoTx, level); left && left.value().empty()) {
        (void)platform_.store->rm(xen::kNoTx, level);
    }
}

}  // namespace xenhsa::backend::service::supervision
