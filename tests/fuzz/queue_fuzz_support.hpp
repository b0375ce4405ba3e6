// What the two queue fuzz targets of the software agent share: the AQL and the SDMA
// harness both count the process's threads (destroying the agent must end every thread
// it started) and log the faults the agent reports with the queue's read index at that
// moment; their seed scripts share the queue operations.
#ifndef XENHSA_TESTS_FUZZ_QUEUE_FUZZ_SUPPORT_HPP
#define XENHSA_TESTS_FUZZ_QUEUE_FUZZ_SUPPORT_HPP

#include <dirent.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>
#include <xenhsa/hsa/kfd_device.hpp>

#include "seed_bytes.hpp"

namespace xenhsa::fuzz {

// Threads of this process now.
inline std::size_t threads() {
    std::size_t n = 0;
    if (DIR* d = ::opendir("/proc/self/task")) {
        while (::readdir(d) != nullptr) {
            ++n;
        }
        ::closedir(d);
    }
    return n;
}

// The faults the agent reported, from its threads.
class FaultLog {
public:
    void record(const hsa::GpuFault& f, uint64_t rptr) {
        std::lock_guard lock(mutex_);
        faults_.push_back(f);
        rptr_at_fault_ = rptr;
    }
    std::vector<hsa::GpuFault> faults() const {
        std::lock_guard lock(mutex_);
        return faults_;
    }
    uint64_t rptr_at_fault() const {
        std::lock_guard lock(mutex_);
        return rptr_at_fault_;
    }

private:
    mutable std::mutex mutex_;
    std::vector<hsa::GpuFault> faults_;
    uint64_t rptr_at_fault_ = 0;
};

// A seed script's queue operations, for a target whose operation enum `Op` has
// kPublish, kRun, kRawWptr and kDoorbell. Derived adds the target's own operations.
template <class Derived, class Op>
class QueueScript {
public:
    Derived& op(Op o) {
        b_.u8(o);
        return self();
    }
    Derived& run() { return op(Op::kPublish).op(Op::kRun); }
    Derived& raw_wptr(uint64_t v) {
        b_.u8(Op::kRawWptr).u64(v);
        return self();
    }
    Derived& doorbell(uint64_t v) {
        b_.u8(Op::kDoorbell).u64(v);
        return self();
    }
    [[nodiscard]] const std::vector<uint8_t>& bytes() const { return b_.bytes(); }

protected:
    SeedBytes b_;

private:
    Derived& self() { return static_cast<Derived&>(*this); }
};

}  // namespace xenhsa::fuzz

#endif
