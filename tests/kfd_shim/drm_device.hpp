// The render node's DRM ioctls that libdrm_amdgpu's amdgpu_device_initialize issues (the
// thunk names a GPU by amdgpu_get_marketing_name): DRM_IOCTL_VERSION (amdgpu 3.49.0, as
// Linux 6.1), DRM_IOCTL_GET_CLIENT, and DRM_IOCTL_AMDGPU_INFO's ACCEL_WORKING, DEV_INFO
// (the MI25's, so that amdgpu.ids names it), READ_MMR_REG of GB_ADDR_CONFIG and VRAM_GTT.
// Anything else: EINVAL, logged.
#ifndef XENHSA_TESTS_KFD_SHIM_DRM_DEVICE_HPP
#define XENHSA_TESTS_KFD_SHIM_DRM_DEVICE_HPP

namespace xenhsa::kfd_shim {

// 0 or a positive errno.
int drm_ioctl(unsigned long request, void* arg);

}  // namespace xenhsa::kfd_shim

#endif
