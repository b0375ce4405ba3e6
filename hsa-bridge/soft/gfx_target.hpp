// What each SoftGfx target makes the GPU node report: its HSA_ENGINE_ID version, its
// name, and whether SRAM ECC is on (ROCr then reports the ISA as "<name>:sramecc+").
#ifndef XENHSA_HSA_SOFT_GFX_TARGET_HPP
#define XENHSA_HSA_SOFT_GFX_TARGET_HPP

#include <cstdint>
#include <xenhsa/hsa/soft_agent.hpp>

namespace xenhsa::hsa::soft {

struct GfxTarget {
    const char* name;
    uint32_t major;
    uint32_t minor;
    uint32_t stepping;
    bool sram_ecc;
};

const GfxTarget& gfx_target(SoftGfx gfx) noexcept;

}  // namespace xenhsa::hsa::soft

#endif
