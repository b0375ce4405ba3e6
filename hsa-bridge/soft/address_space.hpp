// One agent's GPU address space: which worker VAs the GPU may reach, and how.
//
// A range is an allocation (alloc: anonymous memory placed over the caller's PROT_NONE
// reservation) or a registration (register_user: worker memory already mapped). The GPU
// reaches a range only while it is mapped to the GPU. Every GPU access (packet fetch
// aside: a queue holds its ring) goes through a View, which holds the space shared, so
// that unmap_from_gpu waits for accesses in progress and no access starts after it. Views
// cost no mutex (rw_lock.hpp): a few atomic operations on a count.
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

#include "rw_lock.hpp"

namespace xenhsa::hsa::soft {

enum class Access : uint8_t { read, write };

// The host pointer of a VA: the backend mirrors guest VAs, so they are the same number.
inline std::byte* host_ptr(Va va) noexcept {
    return reinterpret_cast<std::byte*>(static_cast<uintptr_t>(va));
}

// An atomic T at a VA: naturally aligned, checked reachable (View::check) and held by the
// caller (a View, or a queue's hold on its ring and pointers).
template <class T>
std::atomic_ref<T> guest_atomic(Va va) noexcept {
    return std::atomic_ref<T>(*reinterpret_cast<T*>(host_ptr(va)));
}

// The memory a queue holds while it lives.
struct QueueMemory {
    Va ring = 0;
    uint64_t ring_size = 0;
    Va rptr = 0;  // 8 bytes, GPU-written
    Va wptr = 0;  // 8 bytes, GPU-read
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
    // read pointer writable) and takes a queue reference on every range they lie in.
    // Returns whether the GPU may write the ring (the agent resets fetched headers).
    Result<bool> hold_queue_memory(const QueueMemory& memory, uint64_t node_bit);
    void release_queue_memory(const QueueMemory& memory) noexcept;

    // A GPU access in progress: holds the space shared while it lives.
    class View {
    public:
        explicit View(const AddressSpace& space) : space_(&space), lock_(space.lock_) {}
        // nullopt when the GPU may access all of [va, va + len) this way; else the first
        // address it may not.
        [[nodiscard]] std::optional<Va> check(Va va, uint64_t len, Access access) const {
            return space_->first_unreachable(va, len, access, space_->gpu_nodes_);
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
