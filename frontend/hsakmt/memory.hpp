// The guest's GPU memory as libhsakmt sees it, kept by VA. Every kind sits in the
// negotiated window, so the backend mirrors it at the same VA and GPU VA == guest VA, but
// a registered user range, which the guest keeps at its own VA outside the window:
//
//   system (CPU node)   guest pages granted at their VA, MAPped (one MAP per 208 MiB
//                       chunk, indirect grants past 52 pages) and PINned once; MAP_TO_GPU
//                       on hsaKmtMapMemoryToGPU(Nodes). Where the backend's kernel cannot
//                       pin grant mappings (a PV dom0: PIN answers UNSUPPORTED), the
//                       backend's pages LENT at the VA instead, chunk by chunk, and PINned.
//   device (GPU node)   ALLOC DEVICE_LOCAL at a VA the guest keeps PROT_NONE: a guest CPU
//                       cannot reach device memory through Xen, so HostAccess is refused.
//   scratch (GPU node)  a VA reservation only (ROCr reserves 4 GiB); a sub-range mapped to
//                       the GPU becomes an ALLOC + MAP_TO_GPU there, undone on unmap.
//   user (registered)   the process's own private memory (hsaKmtRegisterMemory, as for
//                       hipMemcpy's pinned copies): its pages move onto pages granted
//                       (or lent) as system memory's, placed at the user's VA in the guest
//                       and at a VA of the window in the backend, the GPU's address
//                       (AlternateVAGPU, as the thunk's userptr); they move back to private
//                       anonymous memory with the same bytes at deregistration.
//
// Memory a live queue uses (ring, read/write pointers) can be freed while the queue
// lives: the backend defers those releases (protocol 5.20), and the guest keeps the pages
// and the VA until the queue is destroyed (release_held).
//
// Not thread-safe: the library's mutex serialises every call.
#ifndef XENHSA_FRONTEND_HSAKMT_MEMORY_HPP
#define XENHSA_FRONTEND_HSAKMT_MEMORY_HPP

#include <hsakmt.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>
#include <xenhsa/frontend/client.hpp>

#include "memory_limits.hpp"
#include "private_pages.hpp"
#include "topology.hpp"

namespace xenhsa::frontend::hsakmt {

class Memory {
public:
    // `limits`: this guest's memory limits as they are now (Connection::memory_limits).
    Memory(Client& client, const Topology& topology, std::function<MemoryLimits()> limits) noexcept
        : client_(client), topology_(topology), limits_(std::move(limits)) {}
    ~Memory();  // releases everything, best effort (the device closes next)
    Memory(const Memory&) = delete;
    Memory& operator=(const Memory&) = delete;

    // hsaKmtAllocMemory(Align). `fixed`: the FixedAddress flag's address; `align`: 0 or
    // a power of two of at least a page.
    Result<uint64_t> alloc(uint32_t node, uint64_t size, HsaMemFlags flags,
                           std::optional<uint64_t> fixed, uint64_t align = 0);
    Result<void> free(uint64_t va);
    // `nodes` empty: every GPU node. Returns the GPU VA (the same VA).
    Result<uint64_t> map_to_gpu(uint64_t va, uint64_t size, std::span<const uint32_t> nodes);
    Result<void> unmap_from_gpu(uint64_t va);
    // hsaKmtRegisterMemory*: memory this library allocated counts a registration; the
    // process's own memory elsewhere moves onto shared pages (user_memory.cpp).
    Result<void> register_user(uint64_t va, uint64_t size);
    Result<void> deregister_user(uint64_t va);
    Result<HsaPointerInfo> pointer_info(uint64_t va);
    Result<void> set_user_data(uint64_t va, void* data);

    // For queues and events: whether [va, va + len) lies in memory mapped to GPU `node`.
    [[nodiscard]] bool gpu_mapped(uint64_t va, uint64_t len, uint32_t node) const noexcept;
    // A live queue holds the allocation containing va (its frees are deferred).
    void hold(uint64_t va) noexcept;
    void release_held(uint64_t va) noexcept;

    [[nodiscard]] std::size_t live() const noexcept { return allocs_.size(); }
    // Bytes of system memory this guest can have at most: the system heap's size.
    [[nodiscard]] uint64_t system_capacity() const;
    // hsaKmtAvailableMemory: GPU `node`'s local heap less what this process allocated of it.
    [[nodiscard]] Result<uint64_t> available(uint32_t node) const;

private:
    enum class Kind : uint8_t { system, device, scratch };
    struct ScratchMap {
        uint64_t size = 0;
        Handle alloc = 0;
        bool gpu_mapped = true;  // false once UNMAP_FROM_GPU succeeded and FREE did not
    };
    struct Allocation {
        uint64_t va = 0;
        uint64_t size = 0;
        Kind kind = Kind::system;
        uint32_t node = 0;
        HsaMemFlags flags{};
        std::vector<GuestBuffer> chunks;  // system
        std::vector<Handle> maps;         // system: one MAP per chunk
        std::vector<LentBuffer> lent;     // system where grants cannot be pinned
        Handle pin = 0;                   // system
        Handle alloc = 0;                 // device
        uint64_t gpu_mask = 0;            // nodes it is mapped to
        std::vector<uint32_t> mapped_nodes;
        std::map<uint64_t, ScratchMap> scratch;  // scratch: mapped sub-ranges
        uint32_t registrations = 0;
        void* user_data = nullptr;
        uint32_t holds = 0;  // live queues using it
        bool freed = false;  // freed while held: released with the last hold
        // user: the process's pages [user_start, user_start + size), registered as
        // [user_addr, user_addr + user_size) with protection user_prot.
        uint64_t user_start = 0;
        uint64_t user_addr = 0;
        uint64_t user_size = 0;
        int user_prot = 0;
        uint32_t user_gpu_maps = 0;  // nested locks of one range map it once
    };
    // An address as the allocation holding it and its VA there (the window's VA of a
    // user range's address).
    struct Located {
        Allocation* a = nullptr;
        uint64_t va = 0;
    };

    Allocation* find(uint64_t va) noexcept;  // the allocation containing va
    // find(), or the user range containing va.
    Located locate(uint64_t va) noexcept;
    // `contents`: a user range's bytes, copied into its pages once they are in place.
    Result<void> fill_system(Allocation& a, const std::byte* contents = nullptr);
    Result<void> fill_lent(Allocation& a, const std::byte* contents = nullptr);
    // Where this process maps the pages at `off` of `a`: nullptr for the window's VA.
    static std::byte* placed_at(const Allocation& a, uint64_t off) noexcept;
    Result<void> register_moved(uint64_t va, uint64_t size);
    // Gives a user range back: its bytes to private anonymous memory at its VA, then the
    // backend's records and the pages.
    Result<void> unregister_moved(std::map<uint64_t, Allocation>::iterator it) noexcept;
    // The guest's mappings of a's pages go (the range is left PROT_NONE).
    static void unmap_pieces(Allocation& a) noexcept;
    // A registered range's bytes back in private memory at its VA, its pieces given up.
    // `lent`: its pages were lent (then `copy` holds their bytes already).
    static void move_back(Allocation& a, PageCopy& copy, bool lent) noexcept;
    Result<void> pin_system(Allocation& a);
    // Says once which limit refused `step` (memory_limits.hpp); returns `error`.
    std::error_code refused(SystemStep step, const std::error_code& error, const Allocation& a,
                            uint64_t step_pages) const;
    // The guest's mappings of lent pages, then their LENDs; false if the backend failed.
    bool release_lent(Allocation& a) noexcept;
    Result<void> map_handle(Allocation& a, Handle handle, uint64_t mask);
    // The backend releases in teardown order; false if the backend failed (then the pages
    // and the VA stay out of use).
    bool release_backend(Allocation& a) noexcept;
    void drop(std::map<uint64_t, Allocation>::iterator it) noexcept;
    Result<uint64_t> mask_of(std::span<const uint32_t> nodes) const;

    Client& client_;
    const Topology& topology_;
    std::function<MemoryLimits()> limits_;
    std::map<uint64_t, Allocation> allocs_;  // by VA
    std::map<uint64_t, uint64_t> user_;      // a user range's start -> its allocation's VA
    bool lend_system_ = false;               // the backend cannot pin grant mappings
};

}  // namespace xenhsa::frontend::hsakmt

#endif
