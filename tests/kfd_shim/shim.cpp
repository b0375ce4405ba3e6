#include "shim.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "call_log.hpp"
#include "drm_device.hpp"
#include "machine.hpp"
#include "real_libc.hpp"

namespace xenhsa::kfd_shim {

namespace {

std::atomic<KfdProcess*> g_process{nullptr};

ShimOptions options_from_env() {
    ShimOptions options;
    if (const char* mode = std::getenv("XENHSA_KFD_SHIM_MODE"); mode != nullptr) {
        options.dom0 = std::strcmp(mode, "pv") == 0 ? DomKind::pv : DomKind::pvh;
    }
    if (const char* domid = std::getenv("XENHSA_KFD_SHIM_DOMID"); domid != nullptr) {
        options.own_domid = static_cast<uint32_t>(std::strtoul(domid, nullptr, 10));
    }
    return options;
}

bool is_render(int fd) { return Shim::get().node_of(fd) == Node::render; }

}  // namespace

struct Shim::FakeDir {
    std::string path;
    const std::vector<std::string>* names = nullptr;
    size_t next = 0;
    struct dirent entry {};
};

Shim::Shim() : options_(options_from_env()) {}

Shim& Shim::get() {
    static Shim* shim = new Shim();  // never destroyed: the process may exit anywhere
    return *shim;
}

KfdProcess* Shim::process_if_open() noexcept { return g_process.load(std::memory_order_acquire); }

Node Shim::node_at(const char* path) noexcept {
    if (path == nullptr) {
        return Node::none;
    }
    if (std::strcmp(path, kKfdPath) == 0) {
        return Node::kfd;
    }
    if (std::strcmp(path, kRenderPath) == 0) {
        return Node::render;
    }
    return Node::none;
}

Node Shim::node_of(int fd) {
    const std::lock_guard lock(mutex_);
    auto it = fds_.find(fd);
    return it == fds_.end() ? Node::none : it->second;
}

int Shim::open_node(Node node, int flags) {
    const int fd = real::open("/dev/null", O_RDWR | (flags & (O_CLOEXEC | O_NONBLOCK)), 0);
    if (fd < 0) {
        return -1;
    }
    const std::lock_guard lock(mutex_);
    fds_[fd] = node;
    if (node == Node::kfd && !process_) {
        process_ = std::make_unique<KfdProcess>(options_);
        process_->set_render_fd_checker(&is_render);
        g_process.store(process_.get(), std::memory_order_release);
    }
    call_log().line(std::string("open ") + (node == Node::kfd ? kKfdPath : kRenderPath) +
                    " -> fd=" + std::to_string(fd));
    return fd;
}

void Shim::forget(int fd) {
    bool last_kfd = false;
    {
        const std::lock_guard lock(mutex_);
        auto it = fds_.find(fd);
        if (it == fds_.end()) {
            return;
        }
        const bool kfd = it->second == Node::kfd;
        fds_.erase(it);
        last_kfd = kfd;
        for (const auto& [other, node] : fds_) {
            last_kfd = last_kfd && node != Node::kfd;
        }
    }
    if (last_kfd && process_) {
        process_->log_holdings("close kfd");
    }
}

void Shim::duplicated(int from, int to) {
    const std::lock_guard lock(mutex_);
    auto it = fds_.find(from);
    if (it == fds_.end()) {
        fds_.erase(to);
    } else {
        fds_[to] = it->second;
    }
}

void Shim::fill_stat(Node node, struct stat* st) const {
    std::memset(st, 0, sizeof *st);
    st->st_mode = S_IFCHR | 0666;
    st->st_rdev = node == Node::render ? makedev(kDrmMajor, kRenderMinor) : makedev(kKfdMajor, 0);
    st->st_nlink = 1;
    st->st_blksize = 4096;
}

const std::string* Shim::file(const char* path) {
    if (path == nullptr) {
        return nullptr;
    }
    const auto& files = sysfs_tree().files;
    auto it = files.find(path);
    return it == files.end() ? nullptr : &it->second;
}

bool Shim::is_dir(const char* path) {
    return path != nullptr &&
           (sysfs_tree().dirs.contains(path) || std::strcmp(path, kRenderSysfsDrm) == 0);
}

DIR* Shim::open_dir(const char* path) {
    const auto& dirs = sysfs_tree().dirs;
    auto it = path == nullptr ? dirs.end() : dirs.find(path);
    if (it == dirs.end()) {
        return nullptr;
    }
    auto* dir = new FakeDir{path, &it->second};
    const std::lock_guard lock(mutex_);
    dirs_.insert(dir);
    return reinterpret_cast<DIR*>(dir);
}

bool Shim::read_dir(DIR* handle, struct dirent*& entry) {
    auto* dir = reinterpret_cast<FakeDir*>(handle);
    const std::lock_guard lock(mutex_);
    if (!dirs_.contains(dir)) {
        return false;
    }
    // ".", ".." and then the entries, as readdir lists a directory.
    const size_t i = dir->next++;
    const size_t count = dir->names->size() + 2;
    if (i >= count) {
        entry = nullptr;
        return true;
    }
    const std::string name = i == 0 ? "." : i == 1 ? ".." : (*dir->names)[i - 2];
    std::memset(&dir->entry, 0, sizeof dir->entry);
    dir->entry.d_ino = i + 1;
    dir->entry.d_type = i < 2 || is_dir((dir->path + "/" + name).c_str()) ? DT_DIR : DT_REG;
    std::strncpy(dir->entry.d_name, name.c_str(), sizeof dir->entry.d_name - 1);
    entry = &dir->entry;
    return true;
}

bool Shim::close_dir(DIR* handle) {
    auto* dir = reinterpret_cast<FakeDir*>(handle);
    {
        const std::lock_guard lock(mutex_);
        if (dirs_.erase(dir) == 0) {
            return false;
        }
    }
    delete dir;
    return true;
}

int Shim::ioctl(Node node, unsigned long request, void* arg) {
    if (node == Node::render) {
        return drm_ioctl(request, arg);
    }
    KfdProcess* process = process_if_open();
    return process == nullptr ? ENODEV : process->ioctl(request, arg);
}

void* Shim::mmap(Node node, void* addr, size_t length, int prot, int flags, uint64_t offset) {
    KfdProcess* process = process_if_open();
    if (process == nullptr) {
        errno = ENODEV;
        return MAP_FAILED;
    }
    return node == Node::kfd ? process->mmap_kfd(addr, length, prot, flags, offset)
                             : process->mmap_render(addr, length, prot, flags, offset);
}

}  // namespace xenhsa::kfd_shim
