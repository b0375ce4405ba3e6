#include "fake_grants.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace xenhsa::backend::core::testing {
namespace {

std::string hex(const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%#lx",
                  static_cast<unsigned long>(reinterpret_cast<uintptr_t>(p)));
    return buf;
}

void must(bool ok, const char* what) {
    if (!ok) {
        std::perror(what);
        std::abort();
    }
}

int make_memfd(std::size_t bytes) {
    const int fd = ::memfd_create("xenhsa-fake", MFD_CLOEXEC);
    must(fd >= 0, "memfd_create");
    must(::ftruncate(fd, static_cast<off_t>(bytes)) == 0, "ftruncate");
    return fd;
}

void rereserve(std::byte* at, std::size_t bytes) {
    void* p = ::mmap(at, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
                     -1, 0);
    must(p != MAP_FAILED, "re-reserve");
}

// n pages of PROT_NONE somewhere, to place fixed mappings in.
std::byte* reserve_anywhere(std::size_t bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    must(p != MAP_FAILED, "reserve");
    return static_cast<std::byte*>(p);
}

}  // namespace

GuestMemory::GuestMemory(std::size_t pages) : fd_(make_memfd(pages * kPage)), pages_(pages) {
    void* p = ::mmap(nullptr, pages * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    must(p != MAP_FAILED, "guest view");
    view_ = static_cast<std::byte*>(p);
}

GuestMemory::~GuestMemory() {
    ::munmap(view_, pages_ * kPage);
    ::close(fd_);
}

std::byte* GuestMemory::page(std::size_t index) const noexcept { return view_ + index * kPage; }

xen::GrantRef GuestMemory::grant(std::size_t page, bool writable) {
    if (page >= pages_) {
        throw std::out_of_range("guest page");
    }
    const xen::GrantRef ref = next_++;
    grants_[ref] = Grant{page, writable};
    return ref;
}

const GuestMemory::Grant* GuestMemory::find(xen::GrantRef ref) const noexcept {
    auto it = grants_.find(ref);
    return it != grants_.end() ? &it->second : nullptr;
}

xen::Result<xen::GrantMapping> FakeGrantMapper::map(const xen::GrantMapSpec& spec,
                                                    std::span<int> status) {
    ++attempts_;
    const std::size_t n = spec.refs.size();
    if (n == 0 || spec.domid != kGuestDomId) {
        return xen::errc(std::errc::invalid_argument);
    }
    if (!status.empty() && status.size() != n) {
        return xen::errc(std::errc::invalid_argument);
    }
    int first_error = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const GuestMemory::Grant* g = guest_.find(spec.refs[i]);
        int e = 0;
        if (fail_refs.count(spec.refs[i]) != 0) {
            e = fail_errno;
        } else if (g == nullptr) {
            e = ENOENT;
        } else if (spec.writable && !g->writable) {
            e = EPERM;
        }
        if (!status.empty()) {
            status[i] = e;
        }
        if (e != 0 && first_error == 0) {
            first_error = e;
        }
    }
    if (first_error != 0) {
        if (log_ != nullptr) {
            log_->add("grant_map_failed");
        }
        return xen::errno_code(first_error);
    }
    const int prot = spec.writable ? PROT_READ | PROT_WRITE : PROT_READ;
    const bool fixed = spec.at != nullptr;
    std::byte* base = fixed ? spec.at : reserve_anywhere(n * kPage);
    for (std::size_t i = 0; i < n; ++i) {
        const GuestMemory::Grant* g = guest_.find(spec.refs[i]);
        // MAP_FIXED inside the caller's reservation (GrantMapSpec's contract).
        void* p = ::mmap(base + i * kPage, kPage, prot, MAP_SHARED | MAP_FIXED, guest_.fd(),
                         static_cast<off_t>(g->page * kPage));
        must(p != MAP_FAILED, "fake grant map");
    }
    live_[base] = n;
    if (log_ != nullptr) {
        log_->add("grant_map " + hex(base) + " " + std::to_string(n));
    }
    return xen::GrantMapping(this, base, n, fixed);
}

xen::Result<xen::GrantMapping> FakeGrantMapper::map_notify(xen::DomId domid, xen::GrantRef ref,
                                                           bool writable, const xen::UnmapNotify&) {
    const xen::GrantRef refs[1] = {ref};
    return map(xen::GrantMapSpec{domid, refs, writable, nullptr});
}

std::size_t FakeGrantMapper::live_pages() const noexcept {
    std::size_t n = 0;
    for (const auto& [addr, pages] : live_) {
        n += pages;
    }
    return n;
}

void FakeGrantMapper::unmap(std::byte* addr, std::size_t pages, bool fixed) noexcept {
    if (log_ != nullptr) {
        log_->add("grant_unmap " + hex(addr) + " " + std::to_string(pages));
    }
    live_.erase(addr);
    if (fixed) {
        rereserve(addr, pages * kPage);
    } else {
        must(::munmap(addr, pages * kPage) == 0, "fake grant unmap");
    }
}

FakeGrantSharer::~FakeGrantSharer() {
    while (!shares_.empty()) {
        drop(shares_.begin()->first);
    }
}

xen::Result<xen::SharedPages> FakeGrantSharer::share(const xen::ShareSpec& spec) {
    last_peer_ = spec.peer;
    if (spec.pages == 0) {
        return xen::errc(std::errc::invalid_argument);
    }
    if (fail_shares > 0) {
        --fail_shares;
        return xen::errc(std::errc::not_enough_memory);
    }
    if (fail_nth_share > 0 && --fail_nth_share == 0) {
        return xen::errc(std::errc::not_enough_memory);
    }
    Share share;
    share.fd = make_memfd(spec.pages * kPage);
    share.pages = spec.pages;
    share.fixed = spec.at != nullptr;
    std::byte* base = share.fixed ? spec.at : reserve_anywhere(spec.pages * kPage);
    void* p = ::mmap(base, spec.pages * kPage, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                     share.fd, 0);
    must(p != MAP_FAILED, "fake share map");
    for (std::size_t i = 0; i < spec.pages; ++i) {
        share.refs.push_back(next_++);
    }
    std::vector<xen::GrantRef> refs = share.refs;
    shares_[base] = std::move(share);
    if (log_ != nullptr) {
        log_->add("share " + hex(base) + " " + std::to_string(spec.pages));
    }
    return xen::SharedPages(this, base, std::move(refs));
}

std::vector<std::byte> FakeGrantSharer::read_page(xen::GrantRef ref) const {
    for (const auto& [addr, share] : shares_) {
        for (std::size_t i = 0; i < share.refs.size(); ++i) {
            if (share.refs[i] == ref) {
                std::vector<std::byte> out(kPage);
                must(::pread(share.fd, out.data(), kPage, static_cast<off_t>(i * kPage)) ==
                         static_cast<ssize_t>(kPage),
                     "pread");
                return out;
            }
        }
    }
    return {};
}

std::size_t FakeGrantSharer::live_pages() const noexcept {
    std::size_t n = 0;
    for (const auto& [addr, share] : shares_) {
        n += share.pages;
    }
    return n;
}

xen::Result<void> FakeGrantSharer::end_access(std::byte* addr,
                                              std::span<const xen::GrantRef> refs) noexcept {
    for (xen::GrantRef ref : refs) {
        if (guest_maps.count(ref) != 0) {
            return xen::errc(std::errc::device_or_resource_busy);
        }
    }
    if (log_ != nullptr) {
        log_->add("share_end " + hex(addr));
    }
    return boost::outcome_v2::success();
}

void FakeGrantSharer::release(std::byte* addr, std::span<const xen::GrantRef>) noexcept {
    if (log_ != nullptr) {
        log_->add("share_release " + hex(addr));
    }
    drop(addr);
}

xen::RevokeEffect FakeGrantSharer::revoke(std::byte* addr,
                                          std::span<const xen::GrantRef>) noexcept {
    if (log_ != nullptr) {
        log_->add("share_revoke " + hex(addr));
    }
    auto it = shares_.find(addr);
    if (it != shares_.end()) {
        std::memset(addr, 0, it->second.pages * kPage);  // scrubbed
    }
    drop(addr);
    return effect;
}

void FakeGrantSharer::drop(std::byte* addr) noexcept {
    auto it = shares_.find(addr);
    if (it == shares_.end()) {
        return;
    }
    if (it->second.fixed) {
        rereserve(addr, it->second.pages * kPage);
    } else {
        ::munmap(addr, it->second.pages * kPage);
    }
    ::close(it->second.fd);
    shares_.erase(it);
}

std::string protection_at(const void* addr) {
    const auto a = reinterpret_cast<uintptr_t>(addr);
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        std::istringstream in(line);
        std::string range;
        std::string perms;
        in >> range >> perms;
        const auto dash = range.find('-');
        const uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
        const uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
        if (a >= lo && a < hi) {
            return perms;
        }
    }
    return "";
}

}  // namespace xenhsa::backend::core::testing
