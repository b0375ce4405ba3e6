// The workgroups of one kernel dispatch and how a thread runs a run of them: the queue's
// own thread for a small dispatch (inline), the pool's workers for a big one
// (dispatch_job.hpp).
#ifndef XENHSA_HSA_SOFT_WORKGROUPS_HPP
#define XENHSA_HSA_SOFT_WORKGROUPS_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "kernels.hpp"

namespace xenhsa::hsa::soft {

struct DispatchShape {
    std::array<uint32_t, 3> grid{};       // work-items per dimension, >= 1
    std::array<uint32_t, 3> workgroup{};  // work-items per workgroup per dimension, >= 1
    std::array<uint64_t, 3> groups{};     // workgroups per dimension
    uint64_t total_groups = 0;
};

// Runs workgroups [first, last) (linear ids) with the address space held shared; a writer
// that waits is let in between workgroups, except in a one-dimensional grid, whose
// workgroups are one run of work-items, done in one kernel call (the caller bounds the
// run). Returns the first address the GPU may not access; the run stops there.
std::optional<Va> run_workgroups(const BuiltinKernel& kernel, const DispatchShape& shape,
                                 std::span<const std::byte> kernarg, const AddressSpace& space,
                                 uint64_t first, uint64_t last) noexcept;

}  // namespace xenhsa::hsa::soft

#endif
