// ROCr 6's libdrm device handles (hsaKmtGetAMDGPUDeviceHandle), and the libdrm_amdgpu calls
// ROCr 6 makes with them.
//
// ROCr 6 asks the thunk for each GPU's libdrm_amdgpu device and calls libdrm_amdgpu with
// it: amdgpu_query_gpu_info when it creates the agent (for the GPU counter's frequency),
// amdgpu_bo_import and amdgpu_device_get_fd for IPC and dma-buf memory. A guest has no
// amdgpu DRM device, so the handle is one of this library's GuestDrmDevice records, and the
// library defines those three functions: ROCr's libhsa-runtime64 needs libhsakmt.so.1
// before libdrm_amdgpu.so.1, so its calls come here first. A handle that is not one of
// ours goes on to libdrm_amdgpu's own function (RTLD_NEXT): the rest of the process uses
// libdrm as before.
#include <amdgpu.h>
#include <dlfcn.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <thread>

#include "rocm6.hpp"
#include "thunk.hpp"

using namespace xenhsa::frontend::hsakmt;

namespace {

struct GuestDrmDevice {
    bool ready = false;
    amdgpu_gpu_info info{};
};

// For the life of the process: ROCr keeps a handle as long as its agent, which may
// outlive hsaKmtCloseKFD at exit.
std::mutex devices_mutex;
std::array<GuestDrmDevice, XENHSA_QUERY_MAX_NODES> devices;

GuestDrmDevice* ours(const void* handle) noexcept {
    for (GuestDrmDevice& d : devices) {
        if (static_cast<const void*>(&d) == handle) {
            return &d;
        }
    }
    return nullptr;
}

template <class F>
F* next(const char* name) noexcept {
    return reinterpret_cast<F*>(::dlsym(RTLD_NEXT, name));
}

// The GPU counter's frequency in kHz, as libdrm reports it. The wire carries the counter,
// not its frequency: it is measured against this domain's clock, as ROCr 5 measured it.
uint32_t counter_khz(HSAuint32 node) noexcept {
    HsaClockCounters first{};
    HsaClockCounters second{};
    if (hsaKmtGetClockCounters(node, &first) != HSAKMT_STATUS_SUCCESS) {
        return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (hsaKmtGetClockCounters(node, &second) != HSAKMT_STATUS_SUCCESS) {
        return 0;
    }
    const double ticks = static_cast<double>(second.GPUClockCounter - first.GPUClockCounter);
    const double seconds =
        static_cast<double>(second.SystemClockCounter - first.SystemClockCounter) /
        static_cast<double>(first.SystemClockFrequencyHz);
    return seconds > 0 ? static_cast<uint32_t>(std::lround(ticks / seconds / 1000.0)) : 0;
}

amdgpu_gpu_info gpu_info(const HsaNodeProperties& p, uint32_t khz) noexcept {
    amdgpu_gpu_info info{};
    info.asic_id = p.DeviceId;
    info.family_id = rocm6::tail(p).family_id;
    info.max_engine_clk = uint64_t{p.MaxEngineClockMhzFCompute} * 1000;  // kHz
    info.num_shader_engines = p.NumShaderBanks;
    info.num_shader_arrays_per_engine = p.NumArrays;
    info.gpu_counter_freq = khz;
    info.cu_active_number = p.NumSIMDPerCU != 0 ? p.NumFComputeCores / p.NumSIMDPerCU : 0;
    return info;
}

}  // namespace

extern "C" {

HSAKMT_STATUS HSAKMTAPI hsaKmtGetAMDGPUDeviceHandle(HSAuint32 NodeId,
                                                    HsaAMDGPUDeviceHandle* DeviceHandle) {
    const HSAKMT_STATUS checked = call("hsaKmtGetAMDGPUDeviceHandle", [&](Session& s) {
        if (DeviceHandle == nullptr) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        if (!s.topology().is_gpu(NodeId) || NodeId >= devices.size()) {
            return HSAKMT_STATUS_INVALID_NODE_UNIT;
        }
        // Should libdrm_amdgpu come first in the process's lookup order, ROCr would hand
        // our record to libdrm's own function: refused, rather than read as libdrm's.
        if (::dlsym(RTLD_DEFAULT, "amdgpu_query_gpu_info") !=
            reinterpret_cast<void*>(&amdgpu_query_gpu_info)) {
            log().error(
                "hsaKmtGetAMDGPUDeviceHandle: libdrm_amdgpu.so.1 was loaded before the guest "
                "libhsakmt.so.1, so ROCr's libdrm calls would not reach it; preload it "
                "(LD_PRELOAD=libhsakmt.so.1 from xenhsa's library directory)");
            return HSAKMT_STATUS_ERROR;
        }
        return HSAKMT_STATUS_SUCCESS;
    });
    if (checked != HSAKMT_STATUS_SUCCESS) {
        return checked;
    }
    std::lock_guard lock(devices_mutex);
    GuestDrmDevice& d = devices[NodeId];
    if (!d.ready) {
        const uint32_t khz = counter_khz(NodeId);
        HsaNodeProperties props{};
        if (khz == 0 || hsaKmtGetNodeProperties(NodeId, &props) != HSAKMT_STATUS_SUCCESS) {
            return HSAKMT_STATUS_ERROR;
        }
        d.info = gpu_info(props, khz);
        d.ready = true;
    }
    *DeviceHandle = &d;
    return HSAKMT_STATUS_SUCCESS;
}

int amdgpu_query_gpu_info(amdgpu_device_handle dev, struct amdgpu_gpu_info* info) {
    if (const GuestDrmDevice* d = ours(dev)) {
        if (info == nullptr) {
            return -EINVAL;
        }
        std::lock_guard lock(devices_mutex);
        *info = d->info;
        return 0;
    }
    auto* f = next<int(amdgpu_device_handle, amdgpu_gpu_info*)>("amdgpu_query_gpu_info");
    return f != nullptr ? f(dev, info) : -ENOSYS;
}

int amdgpu_bo_import(amdgpu_device_handle dev, enum amdgpu_bo_handle_type type,
                     uint32_t shared_handle, struct amdgpu_bo_import_result* output) {
    if (ours(dev) != nullptr) {
        refused_once("amdgpu_bo_import",
                     "another process's GPU memory (IPC, dma-buf) cannot be imported in a guest");
        return -EINVAL;
    }
    auto* f =
        next<int(amdgpu_device_handle, amdgpu_bo_handle_type, uint32_t, amdgpu_bo_import_result*)>(
            "amdgpu_bo_import");
    return f != nullptr ? f(dev, type, shared_handle, output) : -ENOSYS;
}

int amdgpu_device_get_fd(amdgpu_device_handle dev) {
    if (ours(dev) != nullptr) {
        return -1;  // no DRM file behind a guest's GPU
    }
    auto* f = next<int(amdgpu_device_handle)>("amdgpu_device_get_fd");
    return f != nullptr ? f(dev) : -1;
}

}  // extern "C"
