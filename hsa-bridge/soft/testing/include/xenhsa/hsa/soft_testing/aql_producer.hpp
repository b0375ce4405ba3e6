// The producer's side of a KfdDevice, for tests and benchmarks: GPU-mapped host memory,
// HSA signals, AQL packets, and a queue whose ring and pointers live in host memory,
// written the way ROCr writes them (body, then header with release, then the write
// dispatch id, then the doorbell). Errors throw std::runtime_error.
#ifndef XENHSA_HSA_SOFT_TESTING_AQL_PRODUCER_HPP
#define XENHSA_HSA_SOFT_TESTING_AQL_PRODUCER_HPP

#include <hsa/amd_hsa_queue.h>
#include <hsa/amd_hsa_signal.h>
#include <hsa/hsa.h>
#include <sys/mman.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <xenhsa/hsa/kfd_device.hpp>
#include <xenhsa/hsa/soft_agent.hpp>

namespace xenhsa::hsa::soft_testing {

inline constexpr uint64_t kGpuNodeMask = uint64_t{1} << kSoftGpuNode;
inline constexpr uint64_t kPage = 4096;

[[noreturn]] inline void fail(const std::string& what) { throw std::runtime_error(what); }

template <class T>
void check(const Result<T>& result, const char* what) {
    if (!result) {
        fail(std::string(what) + ": " + result.error().message());
    }
}

// Anonymous host memory (zeroed, page aligned), or a PROT_NONE reservation for alloc.
class HostMemory {
public:
    explicit HostMemory(uint64_t bytes, bool reserve_only = false)
        : size_((bytes + kPage - 1) / kPage * kPage) {
        const int prot = reserve_only ? PROT_NONE : PROT_READ | PROT_WRITE;
        const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (reserve_only ? MAP_NORESERVE : 0);
        void* p = ::mmap(nullptr, size_, prot, flags, -1, 0);
        if (p == MAP_FAILED) {
            fail("mmap failed");
        }
        base_ = static_cast<std::byte*>(p);
    }
    ~HostMemory() { ::munmap(base_, size_); }
    HostMemory(const HostMemory&) = delete;
    HostMemory& operator=(const HostMemory&) = delete;

    [[nodiscard]] Va va(uint64_t offset = 0) const {
        return reinterpret_cast<uintptr_t>(base_) + offset;
    }
    [[nodiscard]] uint64_t size() const { return size_; }
    template <class T>
    [[nodiscard]] T* at(uint64_t offset = 0) const {
        return reinterpret_cast<T*>(base_ + offset);
    }

private:
    uint64_t size_;
    std::byte* base_ = nullptr;
};

// Host memory registered with the device and mapped to its GPU; undone when destroyed
// (errors ignored there: a test may have unmapped it already).
class GpuBuffer {
public:
    GpuBuffer(KfdDevice& device, uint64_t bytes, bool gpu_read_only = false,
              bool register_read_only = false)
        : device_(device), memory_(bytes) {
        check(device_.register_user(memory_.va(), memory_.size(), register_read_only),
              "register_user");
        check(device_.map_to_gpu(memory_.va(), kGpuNodeMask, gpu_read_only), "map_to_gpu");
    }
    ~GpuBuffer() {
        (void)device_.unmap_from_gpu(memory_.va());
        (void)device_.deregister_user(memory_.va());
    }
    GpuBuffer(const GpuBuffer&) = delete;
    GpuBuffer& operator=(const GpuBuffer&) = delete;

    [[nodiscard]] Va va(uint64_t offset = 0) const { return memory_.va(offset); }
    [[nodiscard]] uint64_t size() const { return memory_.size(); }
    template <class T>
    [[nodiscard]] T* at(uint64_t offset = 0) const {
        return memory_.at<T>(offset);
    }

private:
    KfdDevice& device_;
    HostMemory memory_;
};

// A page of amd_signal_t, GPU-mapped. signal(i) is the hsa_signal_t handle.
class SignalPage {
public:
    static constexpr uint32_t kSignals = kPage / sizeof(amd_signal_t);

    explicit SignalPage(KfdDevice& device) : page_(device, kPage) {}

    [[nodiscard]] uint64_t signal(uint32_t i) const { return page_.va(i * sizeof(amd_signal_t)); }
    uint64_t init(uint32_t i, int64_t value, uint64_t mailbox = 0, uint32_t event_id = 0) {
        auto* s = page_.at<amd_signal_t>(i * sizeof(amd_signal_t));
        std::memset(static_cast<void*>(s), 0, sizeof *s);
        s->kind = AMD_SIGNAL_KIND_USER;
        s->event_mailbox_ptr = mailbox;
        s->event_id = event_id;
        value_ref(i).store(value, std::memory_order_release);
        return signal(i);
    }
    [[nodiscard]] int64_t value(uint32_t i) const {
        return value_ref(i).load(std::memory_order_acquire);
    }
    void store(uint32_t i, int64_t value) { value_ref(i).store(value, std::memory_order_release); }
    // Polls until the value equals `expected`; false after `timeout`.
    bool wait_eq(uint32_t i, int64_t expected,
                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (value(i) != expected) {
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
            std::this_thread::yield();
        }
        return true;
    }

private:
    [[nodiscard]] std::atomic_ref<int64_t> value_ref(uint32_t i) const {
        auto* s = page_.at<amd_signal_t>(i * sizeof(amd_signal_t));
        return std::atomic_ref<int64_t>(*const_cast<int64_t*>(&s->value));
    }

    GpuBuffer page_;
};

inline uint16_t packet_header(hsa_packet_type_t type, bool barrier = false,
                              hsa_fence_scope_t acquire = HSA_FENCE_SCOPE_SYSTEM,
                              hsa_fence_scope_t release = HSA_FENCE_SCOPE_SYSTEM) {
    return static_cast<uint16_t>((type << HSA_PACKET_HEADER_TYPE) |
                                 ((barrier ? 1 : 0) << HSA_PACKET_HEADER_BARRIER) |
                                 (acquire << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                                 (release << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

struct Grid {
    std::array<uint32_t, 3> size{1, 1, 1};
    std::array<uint16_t, 3> workgroup{1, 1, 1};
    uint16_t dims = 1;
};

inline Grid grid_1d(uint32_t items, uint16_t workgroup = 64) {
    return Grid{{items, 1, 1}, {workgroup, 1, 1}, 1};
}

inline hsa_kernel_dispatch_packet_t dispatch_packet(uint64_t kernel_object, Va kernarg,
                                                    const Grid& grid, uint64_t completion_signal,
                                                    bool barrier = false) {
    hsa_kernel_dispatch_packet_t p{};
    p.header = packet_header(HSA_PACKET_TYPE_KERNEL_DISPATCH, barrier);
    p.setup = static_cast<uint16_t>(grid.dims << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
    p.workgroup_size_x = grid.workgroup[0];
    p.workgroup_size_y = grid.workgroup[1];
    p.workgroup_size_z = grid.workgroup[2];
    p.grid_size_x = grid.size[0];
    p.grid_size_y = grid.size[1];
    p.grid_size_z = grid.size[2];
    p.kernel_object = kernel_object;
    p.kernarg_address = reinterpret_cast<void*>(static_cast<uintptr_t>(kernarg));
    p.completion_signal.handle = completion_signal;
    return p;
}

// Barrier-AND (or, with `type`, barrier-OR) over up to five dependency signals.
inline hsa_barrier_and_packet_t barrier_packet(std::initializer_list<uint64_t> deps,
                                               uint64_t completion_signal,
                                               hsa_packet_type_t type = HSA_PACKET_TYPE_BARRIER_AND,
                                               bool barrier = false) {
    if (deps.size() > 5) {
        fail("a barrier packet has five dependency slots");
    }
    hsa_barrier_and_packet_t p{};
    p.header = packet_header(type, barrier);
    size_t i = 0;
    for (uint64_t dep : deps) {
        p.dep_signal[i++].handle = dep;
    }
    p.completion_signal.handle = completion_signal;
    return p;
}

// The kernel_object of a built-in, looked up by name as a guest would.
inline xenhsa_kernel_info find_builtin(KfdDevice& device, const char* name) {
    for (uint32_t i = 0;; ++i) {
        auto info = device.kernel(i);
        if (!info) {
            fail(std::string("no built-in kernel ") + name);
        }
        if (std::strncmp(reinterpret_cast<const char*>(info.value().name), name,
                         sizeof info.value().name) == 0) {
            return info.value();
        }
    }
}

struct QueueOptions {
    uint32_t packets = 64;  // ring slots, a power of two
    EventId error_event = 0;
    bool ring_gpu_read_only = false;
    uint32_t percentage = 100;
    // The amd_queue_t's queue_inactive_signal (a handle; 0 for none), where the GPU stores
    // the code of an error that stops the queue.
    uint64_t inactive_signal = 0;
    bool profiling = false;  // ENABLE_PROFILING in the amd_queue_t's queue_properties
};

// An AQL queue whose ring and amd_queue_t (read/write dispatch ids) live in GPU-mapped
// host memory. One producer thread at a time.
class AqlTestQueue {
public:
    AqlTestQueue(KfdDevice& device, QueueOptions options = {})
        : device_(device),
          packets_(options.packets),
          ring_(device, uint64_t{options.packets} * sizeof(hsa_kernel_dispatch_packet_t),
                options.ring_gpu_read_only),
          pointers_(device, kPage) {
        for (uint32_t i = 0; i < packets_; ++i) {  // ROCr fills the ring with INVALID headers
            slot(i)->header = packet_header(HSA_PACKET_TYPE_INVALID);
        }
        // As ROCr lays out its amd_queue_t.
        *pointers_.at<uint32_t>(offsetof(amd_queue_t, read_dispatch_id_field_base_byte_offset)) =
            kReadOffset;
        *pointers_.at<uint64_t>(offsetof(amd_queue_t, queue_inactive_signal)) =
            options.inactive_signal;
        *pointers_.at<uint32_t>(offsetof(amd_queue_t, queue_properties)) =
            options.profiling ? AMD_QUEUE_PROPERTIES_ENABLE_PROFILING : 0;
        QueueSpec spec;
        spec.node = kSoftGpuNode;
        spec.percentage = options.percentage;
        spec.ring = ring_.va();
        spec.ring_size = ring_.size();
        spec.rptr = rptr_va();
        spec.wptr = wptr_va();
        spec.error_event = options.error_event;
        auto id = device_.create_queue(spec);
        check(id, "create_queue");
        id_ = id.value();
    }
    ~AqlTestQueue() { destroy(); }
    AqlTestQueue(const AqlTestQueue&) = delete;
    AqlTestQueue& operator=(const AqlTestQueue&) = delete;

    void destroy() {
        if (id_ != 0) {
            (void)device_.destroy_queue(std::exchange(id_, 0));
        }
    }

    [[nodiscard]] QueueId id() const { return id_; }
    [[nodiscard]] Va ring_va() const { return ring_.va(); }
    [[nodiscard]] Va pointers_va() const { return pointers_.va(); }
    [[nodiscard]] Va rptr_va() const { return pointers_.va(kReadOffset); }
    [[nodiscard]] Va wptr_va() const { return pointers_.va(kWriteOffset); }
    [[nodiscard]] uint64_t read_index() const {
        return std::atomic_ref<uint64_t>(*pointers_.at<uint64_t>(kReadOffset))
            .load(std::memory_order_acquire);
    }
    [[nodiscard]] uint64_t write_index() const { return next_; }

    // Writes a packet and publishes it; returns its dispatch id.
    template <class Packet>
    uint64_t submit(const Packet& packet) {
        static_assert(sizeof(Packet) == 64);
        const uint64_t index = reserve();
        write_body(index, packet);
        publish_header(index, packet);
        publish_write_index();
        return index;
    }

    // The steps of submit, for tests that play with their order.
    uint64_t reserve(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (next_ - read_index() >= packets_) {
            if (std::chrono::steady_clock::now() > deadline) {
                fail("AQL ring stayed full");
            }
            std::this_thread::yield();
        }
        return next_++;
    }
    template <class Packet>
    void write_body(uint64_t index, const Packet& packet) {
        auto* dst = reinterpret_cast<std::byte*>(slot(index));
        std::memcpy(dst + 4, reinterpret_cast<const std::byte*>(&packet) + 4, 60);
    }
    // Header and setup as one 32-bit release store, as ROCr does.
    template <class Packet>
    void publish_header(uint64_t index, const Packet& packet) {
        uint32_t word = 0;
        std::memcpy(&word, &packet, 4);
        std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(slot(index)))
            .store(word, std::memory_order_release);
    }
    void publish_write_index() {
        store_write_index();
        ring_doorbell();
    }
    // The write index alone, for producers that ring only when asked (doorbell kicks).
    void store_write_index() {
        std::atomic_ref<uint64_t>(*pointers_.at<uint64_t>(kWriteOffset))
            .store(next_, std::memory_order_release);
    }
    void ring_doorbell() { check(device_.ring_doorbell(id_, next_), "ring_doorbell"); }

    // Polls until the read index reaches `index`; false after `timeout`.
    bool wait_read_index(uint64_t index,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (read_index() < index) {
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
            std::this_thread::yield();
        }
        return true;
    }

    [[nodiscard]] hsa_kernel_dispatch_packet_t* slot(uint64_t index) const {
        return ring_.at<hsa_kernel_dispatch_packet_t>((index % packets_) * 64);
    }

private:
    static constexpr uint64_t kReadOffset = offsetof(amd_queue_t, read_dispatch_id);
    static constexpr uint64_t kWriteOffset = offsetof(amd_queue_t, write_dispatch_id);

    KfdDevice& device_;
    uint32_t packets_;
    GpuBuffer ring_;
    GpuBuffer pointers_;  // an amd_queue_t
    QueueId id_ = 0;
    uint64_t next_ = 0;
};

}  // namespace xenhsa::hsa::soft_testing

#endif
