#include "workgroups.hpp"

#include <algorithm>

namespace xenhsa::hsa::soft {

std::optional<Va> run_workgroups(const BuiltinKernel& kernel, const DispatchShape& shape,
                                 std::span<const std::byte> kernarg, const AddressSpace& space,
                                 uint64_t first, uint64_t last) noexcept {
    const auto& grid = shape.grid;
    const auto& size = shape.workgroup;
    GpuMemory memory(space);
    if (grid[1] == 1 && grid[2] == 1) {
        // Linear ids: the run's work-items follow each other.
        const uint64_t begin = first * size[0];
        const uint64_t end = std::min<uint64_t>(last * size[0], grid[0]);
        kernel.run(kernarg, begin, end, memory);
        return memory.fault();
    }
    for (uint64_t index = first; index < last; ++index) {
        if (index != first) {
            memory.let_writer_in();
        }
        const uint64_t gx = index % shape.groups[0];
        const uint64_t gy = index / shape.groups[0] % shape.groups[1];
        const uint64_t gz = index / (shape.groups[0] * shape.groups[1]);
        const uint64_t x0 = gx * size[0];
        const uint64_t x1 = std::min<uint64_t>(x0 + size[0], grid[0]);
        const uint64_t y0 = gy * size[1];
        const uint64_t y1 = std::min<uint64_t>(y0 + size[1], grid[1]);
        const uint64_t z0 = gz * size[2];
        const uint64_t z1 = std::min<uint64_t>(z0 + size[2], grid[2]);
        for (uint64_t z = z0; z < z1; ++z) {
            for (uint64_t y = y0; y < y1; ++y) {
                const uint64_t row = (z * grid[1] + y) * grid[0];
                kernel.run(kernarg, row + x0, row + x1, memory);
                if (auto fault = memory.fault()) {
                    return fault;
                }
            }
        }
    }
    return std::nullopt;
}

}  // namespace xenhsa::hsa::soft
