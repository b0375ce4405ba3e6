#include "address_space.hpp"

#include <sys/mman.h>
#include <xenhsa/proto/common.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <iterator>

namespace xenhsa::hsa::soft {

namespace {

// The worker address of a range the space itself maps (mmap, mincore): the allocator's
// business, not a GPU access, so not through a GuestSlice.
void* mapping_address(Va va) noexcept {
    return reinterpret_cast<void*>(static_cast<uintptr_t>(va));
}

bool range_ok(Va va, uint64_t size) noexcept {
    return va != 0 && xenhsa_va_range_ok(va, size) != 0;
}

// True when every page of [va, va + size) is mapped in this process.
bool all_mapped(Va va, uint64_t size) noexcept {
    constexpr uint64_t kChunkPages = 256;
    std::array<unsigned char, kChunkPages> residency{};
    for (uint64_t done = 0; done < size;) {
        const uint64_t bytes = std::min<uint64_t>(size - done, kChunkPages * XENHSA_PAGE_SIZE);
        if (::mincore(mapping_address(va + done), bytes, residency.data()) != 0) {
            return false;
        }
        done += bytes;
    }
    return true;
}

// Back to the caller's reservation: inaccessible, no memory behind it.
void reserve(Va va, uint64_t size) noexcept {
    ::mmap(mapping_address(va), size, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
}

}  // namespace

AddressSpace::AddressSpace(uint64_t gpu_node_mask, uint64_t local_limit) noexcept
    : gpu_nodes_(gpu_node_mask), local_limit_(local_limit) {}

AddressSpace::~AddressSpace() {
    for (const auto& [va, range] : ranges_) {
        if (!range.user) {
            reserve(va, range.size);
        }
    }
}

bool AddressSpace::overlaps(Va va, uint64_t size) const noexcept {
    auto it = ranges_.lower_bound(va);
    if (it != ranges_.end() && it->first < va + size) {
        return true;
    }
    if (it != ranges_.begin()) {
        --it;
        if (va - it->first < it->second.size) {
            return true;
        }
    }
    return false;
}

Result<void> AddressSpace::alloc(Va va, uint64_t size, bool device_local, bool read_only) {
    if (!range_ok(va, size)) {
        return errc(std::errc::invalid_argument);
    }
    std::unique_lock lock(lock_);
    if (overlaps(va, size)) {
        return errc(std::errc::invalid_argument);
    }
    if (device_local && size > local_limit_ - local_used_) {
        return errc(std::errc::not_enough_memory);
    }
    auto it = ranges_.emplace(va, Range{}).first;
    void* placed = ::mmap(mapping_address(va), size, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (placed == MAP_FAILED) {
        ranges_.erase(it);
        return errc(std::errc::not_enough_memory);
    }
    it->second.size = size;
    it->second.device_local = device_local;
    it->second.read_only = read_only;
    if (device_local) {
        local_used_ += size;
    }
    return boost::outcome_v2::success();
}

Result<void> AddressSpace::free(Va va) {
    std::unique_lock lock(lock_);
    auto it = ranges_.find(va);
    if (it == ranges_.end() || it->second.user) {
        return errc(std::errc::no_such_file_or_directory);
    }
    if (it->second.gpu_mapped || it->second.queue_refs != 0) {
        return errc(std::errc::device_or_resource_busy);
    }
    reserve(va, it->second.size);
    if (it->second.device_local) {
        local_used_ -= it->second.size;
    }
    ranges_.erase(it);
    return boost::outcome_v2::success();
}

Result<void> AddressSpace::register_user(Va va, uint64_t size, bool read_only) {
    if (!range_ok(va, size)) {
        return errc(std::errc::invalid_argument);
    }
    std::unique_lock lock(lock_);
    if (overlaps(va, size)) {
        return errc(std::errc::invalid_argument);
    }
    // GUP would fail on a hole; the caller vouches for the rest (writability, content).
    if (!all_mapped(va, size)) {
        return errc(std::errc::bad_address);
    }
    Range range;
    range.size = size;
    range.user = true;
    range.read_only = read_only;
    ranges_.emplace(va, range);
    return boost::outcome_v2::success();
}

Result<void> AddressSpace::deregister_user(Va va) {
    std::unique_lock lock(lock_);
    auto it = ranges_.find(va);
    if (it == ranges_.end() || !it->second.user) {
        return errc(std::errc::no_such_file_or_directory);
    }
    if (it->second.gpu_mapped || it->second.queue_refs != 0) {
        return errc(std::errc::device_or_resource_busy);
    }
    ranges_.erase(it);
    return boost::outcome_v2::success();
}

Result<void> AddressSpace::map_to_gpu(Va va, uint64_t node_mask, bool read_only) {
    if (node_mask == 0 || (node_mask & ~gpu_nodes_) != 0) {
        return errc(std::errc::invalid_argument);
    }
    std::unique_lock lock(lock_);
    auto it = ranges_.find(va);
    if (it == ranges_.end()) {
        return errc(std::errc::no_such_file_or_directory);
    }
    Range& range = it->second;
    if (range.gpu_mapped) {
        // As KFD: mapping again adds nodes. The permissions stay those of the first map,
        // so what a live queue checked at creation cannot change under it.
        if (range.gpu_read_only != read_only) {
            return errc(std::errc::invalid_argument);
        }
        range.node_mask |= node_mask;
        return boost::outcome_v2::success();
    }
    range.gpu_mapped = true;
    range.gpu_read_only = read_only;
    range.node_mask = node_mask;
    return boost::outcome_v2::success();
}

Result<void> AddressSpace::unmap_from_gpu(Va va) {
    // Exclusive: waits for GPU accesses in progress; none starts until we are done.
    std::unique_lock lock(lock_);
    auto it = ranges_.find(va);
    if (it == ranges_.end()) {
        return errc(std::errc::no_such_file_or_directory);
    }
    if (!it->second.gpu_mapped) {
        return errc(std::errc::invalid_argument);
    }
    if (it->second.queue_refs != 0) {
        return errc(std::errc::device_or_resource_busy);
    }
    it->second.gpu_mapped = false;
    it->second.node_mask = 0;
    return boost::outcome_v2::success();
}

std::optional<Va> AddressSpace::first_unreachable(Va va, uint64_t len, Access access,
                                                  uint64_t node_bits) const noexcept {
    Va cur = va;
    uint64_t remaining = len;
    while (remaining != 0) {
        auto it = ranges_.upper_bound(cur);
        if (it == ranges_.begin()) {
            return cur;
        }
        --it;
        const Range& range = it->second;
        const uint64_t offset = cur - it->first;
        if (offset >= range.size || !range.gpu_mapped ||
            (range.node_mask & node_bits) != node_bits) {
            return cur;
        }
        if (access == Access::write && (range.read_only || range.gpu_read_only)) {
            return cur;
        }
        const uint64_t avail = range.size - offset;
        if (remaining <= avail) {
            return std::nullopt;
        }
        remaining -= avail;
        cur += avail;  // the range ends below XENHSA_VA_LIMIT: no wrap
    }
    return std::nullopt;
}

void AddressSpace::add_queue_refs(Va va, uint64_t len, int delta) noexcept {
    Va cur = va;
    uint64_t remaining = len;
    while (remaining != 0) {
        auto it = std::prev(ranges_.upper_bound(cur));  // covered: checked by the caller
        it->second.queue_refs =
            static_cast<uint32_t>(static_cast<int64_t>(it->second.queue_refs) + delta);
        const uint64_t avail = it->second.size - (cur - it->first);
        if (remaining <= avail) {
            return;
        }
        remaining -= avail;
        cur += avail;
    }
}

Result<HeldQueueMemory> AddressSpace::hold_queue_memory(const QueueMemory& memory,
                                                        uint64_t node_bit) {
    std::unique_lock lock(lock_);
    if (first_unreachable(memory.ring, memory.ring_size, Access::read, node_bit) ||
        first_unreachable(memory.rptr, sizeof(uint64_t), Access::write, node_bit) ||
        first_unreachable(memory.wptr, sizeof(uint64_t), Access::read, node_bit)) {
        return errc(std::errc::bad_address);
    }
    const auto rptr = make_slice<Access::write>(memory.rptr, sizeof(uint64_t)).atomic<uint64_t>(0);
    const auto wptr = make_slice<Access::read>(memory.wptr, sizeof(uint64_t)).atomic<uint64_t>(0);
    if (!rptr || !wptr) {
        return errc(std::errc::bad_address);  // misaligned (the agent checked them already)
    }
    HeldQueueMemory held{memory, make_slice<Access::read>(memory.ring, memory.ring_size),
                         std::nullopt, *rptr, *wptr};
    if (!first_unreachable(memory.ring, memory.ring_size, Access::write, node_bit)) {
        held.writable_ring = make_slice<Access::write>(memory.ring, memory.ring_size);
    }
    add_queue_refs(memory.ring, memory.ring_size, 1);
    add_queue_refs(memory.rptr, sizeof(uint64_t), 1);
    add_queue_refs(memory.wptr, sizeof(uint64_t), 1);
    return held;
}

void AddressSpace::release_queue_memory(const QueueMemory& memory) noexcept {
    std::unique_lock lock(lock_);
    add_queue_refs(memory.ring, memory.ring_size, -1);
    add_queue_refs(memory.rptr, sizeof(uint64_t), -1);
    add_queue_refs(memory.wptr, sizeof(uint64_t), -1);
}

}  // namespace xenhsa::hsa::soft
