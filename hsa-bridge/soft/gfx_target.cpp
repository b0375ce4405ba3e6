#include "gfx_target.hpp"

#include <algorithm>
#include <array>

namespace xenhsa::hsa::soft {

namespace {

// The datacenter parts of gfx906 (MI50/MI60), gfx908 (MI100) and gfx90a (MI200) run with
// SRAM ECC on, and KFD reports it; gfx900 (Vega 10) has none.
constexpr std::array<GfxTarget, 4> kTargets{{
    {"gfx900", 9, 0, 0, false},
    {"gfx906", 9, 0, 6, true},
    {"gfx908", 9, 0, 8, true},
    {"gfx90a", 9, 0, 10, true},
}};

}  // namespace

const GfxTarget& gfx_target(SoftGfx gfx) noexcept {
    return kTargets[std::min(static_cast<size_t>(gfx), kTargets.size() - 1)];
}

}  // namespace xenhsa::hsa::soft

namespace xenhsa::hsa {

std::optional<SoftGfx> parse_soft_gfx(std::string_view name) noexcept {
    for (const SoftGfx gfx : {SoftGfx::gfx900, SoftGfx::gfx906, SoftGfx::gfx908, SoftGfx::gfx90a}) {
        if (name == soft::gfx_target(gfx).name) {
            return gfx;
        }
    }
    return std::nullopt;
}

const char* soft_gfx_name(SoftGfx gfx) noexcept { return soft::gfx_target(gfx).name; }

}  // namespace xenhsa::hsa
