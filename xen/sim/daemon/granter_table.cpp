#include "granter_table.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <new>
#include <string>

namespace xenhsa::xen::sim::daemon {

namespace {

using boost::outcome_v2::success;

// Grant v1 frames are 32 bits wide.
constexpr uint64_t kGfnLimit = uint64_t{1} << 32;

}  // namespace

Result<std::shared_ptr<Segment>> Segment::create(DomId owner, uint64_t gfn, uint64_t pages) {
    const std::string name = "xenhsa-sim-d" + std::to_string(owner) + "-gfn" + std::to_string(gfn);
    UniqueFd rw(::memfd_create(name.c_str(), MFD_CLOEXEC));
    if (!rw) return errno_code(errno);
    if (::ftruncate(rw.get(), static_cast<off_t>(pages * kPageSize)) != 0) {
        return errno_code(errno);
    }
    auto seg = std::make_shared<Segment>();
    seg->owner = owner;
    seg->gfn = gfn;
    seg->pages = pages;
    seg->rw = std::move(rw);
    return seg;
}

Result<int> Segment::read_only_fd() {
    if (!ro_) {
        const std::string self = "/proc/self/fd/" + std::to_string(rw.get());
        ro_.reset(::open(self.c_str(), O_RDONLY | O_CLOEXEC));
        if (!ro_) return errno_code(errno);
    }
    return ro_.get();
}

void Segment::clear_byte(uint64_t page, uint32_t offset) const noexcept {
    if (revoked || page >= pages || offset >= kPageSize) return;
    const unsigned char zero = 0;
    // pwrite, not a mapping: the daemon maps no guest memory. Never past EOF (after a
    // revoke the file is empty; revoked is checked above, and the size is fixed otherwise).
    (void)::pwrite(rw.get(), &zero, 1, static_cast<off_t>(page * kPageSize + offset));
}

void Segment::truncate() noexcept {
    revoked = true;
    (void)::ftruncate(rw.get(), 0);
}

Result<std::shared_ptr<GranterTable>> GranterTable::create(DomId owner, uint32_t entries) {
    std::shared_ptr<GranterTable> t(new (std::nothrow) GranterTable());
    if (!t) return errno_code(ENOMEM);
    t->owner_ = owner;
    const std::string name = "xenhsa-sim-gnttab-d" + std::to_string(owner);
    t->memfd_.reset(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!t->memfd_) return errno_code(errno);
    t->len_ = std::size_t{entries} * sizeof(grant_entry_v1_t);
    if (::ftruncate(t->memfd_.get(), static_cast<off_t>(t->len_)) != 0) return errno_code(errno);
    // The table cannot shrink under us: SIGBUS in the daemon would take every domain down.
    if (::fcntl(t->memfd_.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
        return errno_code(errno);
    }
    void* p = ::mmap(nullptr, t->len_, PROT_READ | PROT_WRITE, MAP_SHARED, t->memfd_.get(), 0);
    if (p == MAP_FAILED) return errno_code(errno);
    t->mem_ = p;
    auto* first = static_cast<grant_entry_v1_t*>(p);
    t->table_.emplace(owner, std::span<grant_entry_v1_t>(first, entries), kGfnLimit);
    t->refs_.resize(entries);
    for (GrantRef r = kFirstRef; r < entries; ++r) t->free_.insert(t->free_.end(), r);
    return t;
}

GranterTable::~GranterTable() {
    if (mem_ != nullptr) ::munmap(mem_, len_);
}

Result<uint64_t> GranterTable::take_gfns(uint64_t pages) noexcept {
    if (pages > kGfnLimit - next_gfn_) return errno_code(ENOMEM);
    const uint64_t gfn = next_gfn_;
    next_gfn_ += pages;
    return gfn;
}

Result<std::vector<GrantRef>> GranterTable::grant(const std::shared_ptr<Segment>& segment,
                                                  DomId peer, bool readonly) {
    std::vector<GrantRef> refs;
    refs.reserve(segment->pages);
    // A ref the guest re-granted behind our back may be pinned although we think it free:
    // skip those until they are unpinned.
    for (auto it = free_.begin(); it != free_.end() && refs.size() < segment->pages; ++it) {
        if (table_->pins(*it) == 0) refs.push_back(*it);
    }
    if (refs.size() < segment->pages) return errno_code(ENOSPC);
    segments_.emplace(segment->gfn, segment);
    auto entries = std::span(static_cast<grant_entry_v1_t*>(mem_), refs_.size());
    for (std::size_t i = 0; i < refs.size(); ++i) {
        const GrantRef r = refs[i];
        free_.erase(r);
        refs_[r] = Ref{RefState::shared, segment, peer};
        GrantTable::grant(entries[r], peer, static_cast<uint32_t>(segment->gfn + i), readonly);
    }
    segment->granting_refs += refs.size();
    return refs;
}

uint32_t GranterTable::held_by(DomId peer) const noexcept {
    uint32_t held = 0;
    for (const Ref& r : refs_) {
        held += r.state != RefState::free && r.peer == peer ? 1 : 0;
    }
    return held;
}

Result<void> GranterTable::end_access(std::span<const GrantRef> refs) noexcept {
    for (const GrantRef r : refs) {
        if (table_->pins(r) != 0) return errno_code(EBUSY);
    }
    for (const GrantRef r : refs) {
        force_end(r);
        free_ref(r);
    }
    return success();
}

void GranterTable::release(std::span<const GrantRef> refs) noexcept {
    for (const GrantRef r : refs) {
        if (table_->pins(r) == 0) {
            force_end(r);
            free_ref(r);
        } else {
            refs_[r].state = RefState::draining_end;
        }
    }
}

void GranterTable::revoke(std::span<const GrantRef> refs) noexcept {
    for (const GrantRef r : refs) {
        force_end(r);
        if (table_->pins(r) == 0) {
            free_ref(r);
        } else {
            refs_[r].state = RefState::draining_revoked;
        }
    }
}

void GranterTable::retire() noexcept {
    segments_.clear();
    for (Ref& r : refs_) r.segment.reset();
}

Resolved GranterTable::resolve(uint64_t gfn) const {
    auto it = segments_.upper_bound(gfn);
    if (it == segments_.begin()) return {};
    --it;
    const Segment& seg = *it->second;
    if (gfn - seg.gfn >= seg.pages || seg.revoked) return {};
    return {it->second, gfn - seg.gfn};
}

void GranterTable::unpin(GrantRef ref, bool writable) noexcept {
    table_->unpin(ref, writable);
    if (table_->pins(ref) != 0) return;
    switch (refs_[ref].state) {
        case RefState::draining_end:
            force_end(ref);
            free_ref(ref);
            break;
        case RefState::draining_revoked:
            free_ref(ref);
            break;
        case RefState::free:
        case RefState::shared:
            break;
    }
}

// The hypervisor ends a grant whatever the guest wrote: the entry is the guest's memory,
// but the daemon's own pin counts say nobody maps it (or revoke says it does not matter).
void GranterTable::force_end(GrantRef ref) noexcept {
    auto* e = static_cast<grant_entry_v1_t*>(mem_) + ref;
    __atomic_store_n(&e->flags, uint16_t{0}, __ATOMIC_RELEASE);
}

void GranterTable::free_ref(GrantRef ref) noexcept {
    Ref& r = refs_[ref];
    if (r.state == RefState::free) return;
    std::shared_ptr<Segment> seg = std::move(r.segment);
    r = Ref{};
    try {
        free_.insert(ref);
    } catch (const std::bad_alloc&) {
        // The ref leaks (never handed out again): safe, only the table gets smaller.
    }
    if (seg && --seg->granting_refs == 0) {
        auto it = segments_.find(seg->gfn);
        if (it != segments_.end() && it->second == seg) segments_.erase(it);
    }
}

}  // namespace xenhsa::xen::sim::daemon
