// One agent's GPU address space: which worker VAs the GPU may reach, and how.
//
// A range is an allocation (alloc: anonymous memory placed over the caller's PROT_NONE
// reservation) or a registration (register_user: worker memory already mapped). The GPU
// reaches a range only while it is mapped to the GPU. Every GPU access goes through a
// GuestSlice (guest_slice.hpp) the space hands out checked: from a View (packet fetch
// aside: a queue holds its ring and pointers, HeldQueueMemory), which holds the space
// shared, so that unmap_from_gpu waits for accesses in progress and no access starts
// after it. Views cost no mutex (rw_lock.hpp): a few atomic operations on a count.
#ifndef XENHSA_HSA_SOFT_ADDRESS_SPACE_HPP
#define XENHSA_HSA_SOFT_ADDRESS_SPACE_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <xenhsa/hsa/types.hpp>

#include "guest_slice.hpp"
#include "rw_lock.hpp"

namespace xenhsa::hsa::soft {

// The memory a queue holds while it lives.
struct QueueMemory {
    Va ring = 0;
    uint64_t ring_size = 0;
    Va rptr = 0;  // 8 bytes, GPU-written
    Va wptr = 0;  // 8 bytes, GPU-read
};

// A queue's memory as hold_queue_memory checked it, valid until release_queue_memory
// (none of it can be unmapped meanwhile).
struct HeldQueueMemory {
    QueueMemory memory;
    GuestSlice<Access::read> ring;
    std::optional<GuestSlice<Access::write>> writable_ring;  // when the GPU may write it
    GuestAtomic<uint64_t, Access::write> rptr;
    GuestAtomic<uint64_t, Access::read> wptr;
};

class AddressSpace {
public:
    // gpu_node_mask: the node bits map_to_gpu accepts; local_limit: device-local bytes.
    AddressSpace(uint64_t gpu_node_mask, uint64_t local_limit) noexcept;
    ~AddressSpace();  // gives live allocations back to PROT_NONE
    AddressSpace(const AddressSpace&) = delete;
    AddressSpace& operator=(const AddressSpace&) = delete;

    Result<void> alloc(Va va, uint64_t size, bool device_local, bool read_only);
    Result<void> free(Va va);
    Result<void> register_user(Va va, uint64_t size, bool read_only);
    Result<void> deregister_user(Va va);
    Result<void> map_to_gpu(Va va, uint64_t node_mask, bool read_only);
    Result<void> unmap_from_gpu(Va va);

    // Checks that the ring, read and write pointers are GPU-mapped on `node_bit` (the
    // read pointer writable; the pointers 8-byte aligned) and takes a queue reference on
    // every range they lie in. The ring is writable too when the GPU may write it (the
    // agent resets fetched headers).
    Result<HeldQueueMemory> hold_queue_memory(const QueueMemory& memory, uint64_t node_bit);
    void release_queue_memory(const QueueMemory& memory) noexcept;

    // A GPU access in progress: holds the space shared while it lives.
    class View {
    public:
        explicit View(const AddressSpace& space) : space_(&space), lock_(space.lock_) {}
        // [va, va + len) when the GPU may access all of it this way; else the first
        // address it may not. Valid while this View holds the space (until it ends or
        // lets a writer in).
        template <Access A>
        [[nodiscard]] SliceOrFault<A> slice(Va va, uint64_t len) const {
            if (auto fault = space_->first_unreachable(va, len, A, space_->gpu_nodes_)) {
                return SliceOrFault<A>::at(*fault);
            }
            return SliceOrFault<A>(make_slice<A>(va, len));
        }
        // As slice, for memory the GPU accesses atomically: a `va` that is not a multiple
        // of `align` is a fault at va, whatever lies there.
        template <Access A>
        [[nodiscard]] SliceOrFault<A> aligned_slice(Va va, uint64_t len, uint64_t align) const {
            if (va % align != 0) {
                return SliceOrFault<A>::at(va);
            }
            return slice<A>(va, len);
        }
        // Between workgroups: if a writer waits, lets it in, then holds the space again.
        void let_writer_in() {
            if (space_->lock_.writer_waiting()) {
                lock_.unlock();
                lock_.lock();
            }
        }

    private:
        const AddressSpace* space_;
        std::shared_lock<WriterFirstLock> lock_;
    };

    [[nodiscard]] View view() const { return View(*this); }

private:
    struct Range {
        uint64_t size = 0;
        bool user = false;       // registration (else allocation)
        bool read_only = false;  // the memory itself
        bool device_local = false;
        bool gpu_mapped = false;
        bool gpu_read_only = false;
        uint64_t node_mask = 0;
        uint32_t queue_refs = 0;
    };

    // Only for what the space has checked and holds (a View, or a queue's hold).
    template <Access A>
    static GuestSlice<A> make_slice(Va va, uint64_t len) noexcept {
        return GuestSlice<A>(va, len);
    }

    [[nodiscard]] std::optional<Va> first_unreachable(Va va, uint64_t len, Access access,
                                                      uint64_t node_bits) const noexcept;
    [[nodiscard]] bool overlaps(Va va, uint64_t size) const noexcept;
    void add_queue_refs(Va va, uint64_t len, int delta) noexcept;

    mutable WriterFirstLock lock_;
    std::map<Va, Range> ranges_;
    uint64_t gpu_nodes_;
    uint64_t local_limit_;
    uint64_t local_used_ = 0;
};

}  // namespace xenhsa::hsa::soft

#endif
