/*
 * Debian's linux-libc-dev ships <linux/kfd_ioctl.h> (KFD's ABI) without the DRM uapi
 * headers it includes (libdrm-dev has them, under libdrm/). kfd_ioctl.h uses nothing of
 * <drm/drm.h> but the kernel's fixed-width types: this is all it gets.
 */
#ifndef XENHSA_KFD_UAPI_DRM_DRM_H
#define XENHSA_KFD_UAPI_DRM_DRM_H

#include <linux/ioctl.h>
#include <linux/types.h>

#endif
