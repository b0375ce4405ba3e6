#include "drm_device.hpp"

#include <libdrm/amdgpu_drm.h>
#include <libdrm/drm.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "call_log.hpp"
#include "machine.hpp"

namespace xenhsa::kfd_shim {

namespace {

void put_string(std::string_view value, char* to, __kernel_size_t& length) {
    if (to != nullptr && length > 0) {
        std::memcpy(to, value.data(), std::min<size_t>(length, value.size()));
    }
    length = value.size();
}

int version(drm_version& v) {
    v.version_major = 3;
    v.version_minor = 49;
    v.version_patchlevel = 0;
    put_string("amdgpu", v.name, v.name_len);
    put_string("20150101", v.date, v.date_len);
    put_string("AMD GPU", v.desc, v.desc_len);
    return 0;
}

drm_amdgpu_info_device dev_info() {
    drm_amdgpu_info_device d{};
    d.device_id = 0x6860;
    d.chip_rev = 0;
    d.external_rev = 0x1;
    d.pci_rev = 0x00;
    d.family = AMDGPU_FAMILY_AI;
    d.num_shader_engines = 4;
    d.num_shader_arrays_per_engine = 1;
    d.gpu_counter_freq = 100000;
    d.max_engine_clock = 1500000;
    d.max_memory_clock = 945000;
    d.cu_active_number = 64;
    for (uint32_t se = 0; se < 4; ++se) {
        d.cu_bitmap[se][0] = 0xffff;
    }
    d.enabled_rb_pipes_mask = 0xffff;
    d.num_rb_pipes = 16;
    d.num_hw_gfx_contexts = 8;
    d.virtual_address_offset = 0x200000;
    d.virtual_address_max = 0x800000000000ull;
    d.virtual_address_alignment = 4096;
    d.pte_fragment_size = 0x200000;
    d.gart_page_size = 4096;
    d.ce_ram_size = 0x8000;
    d.vram_type = AMDGPU_VRAM_TYPE_HBM;
    d.vram_bit_width = 2048;
    d.wave_front_size = 64;
    d.num_shader_visible_vgprs = 256;
    d.num_cu_per_sh = 16;
    d.num_tcc_blocks = 16;
    d.gs_vgt_table_depth = 32;
    d.gs_prim_buffer_depth = 1792;
    d.max_gs_waves_per_vgt = 32;
    d.high_va_offset = 0xffff800000000000ull;
    d.high_va_max = 0xffffffffffe00000ull;
    return d;
}

template <class T>
int answer(const drm_amdgpu_info& request, const T& value) {
    if (request.return_pointer == 0) {
        return EFAULT;
    }
    std::memcpy(reinterpret_cast<void*>(request.return_pointer), &value,
                std::min<size_t>(request.return_size, sizeof value));
    return 0;
}

int amdgpu_info(const drm_amdgpu_info& request) {
    switch (request.query) {
        case AMDGPU_INFO_ACCEL_WORKING:
            return answer(request, uint32_t{1});
        case AMDGPU_INFO_DEV_INFO:
            return answer(request, dev_info());
        case AMDGPU_INFO_READ_MMR_REG:
            // GB_ADDR_CONFIG: VEGA10_GB_ADDR_CONFIG_GOLDEN (gfx_v9_0.c); nothing else is read.
            if (request.read_mmr_reg.dword_offset == 0x263e && request.read_mmr_reg.count == 1) {
                return answer(request, uint32_t{0x2a114042});
            }
            return EINVAL;
        case AMDGPU_INFO_VRAM_GTT: {
            drm_amdgpu_info_vram_gtt vram{};
            vram.vram_size = kVramBytes;
            vram.vram_cpu_accessible_size = kVramBytes;
            vram.gtt_size = kVramBytes;
            return answer(request, vram);
        }
        default:
            return EINVAL;
    }
}

}  // namespace

int drm_ioctl(unsigned long request, void* arg) {
    int err = EINVAL;
    std::string what = hex(request);
    if (arg == nullptr) {
        err = EFAULT;
    } else if (request == DRM_IOCTL_VERSION) {
        what = "VERSION";
        err = version(*static_cast<drm_version*>(arg));
    } else if (request == DRM_IOCTL_GET_CLIENT) {
        what = "GET_CLIENT";
        auto& client = *static_cast<drm_client*>(arg);
        err = client.idx == 0 ? 0 : EINVAL;
        client.auth = 1;
        client.pid = static_cast<unsigned long>(::getpid());
        client.uid = ::getuid();
    } else if (request == DRM_IOCTL_AMDGPU_INFO) {
        const auto& info = *static_cast<drm_amdgpu_info*>(arg);
        what = "AMDGPU_INFO query=" + hex(info.query);
        err = amdgpu_info(info);
    }
    call_log().line("drm " + what + " -> " + result_text(err));
    return err;
}

}  // namespace xenhsa::kfd_shim
