/*
 * Portable include of the ROCt thunk (libhsakmt) API.
 *
 * ROCm >= 6 installs the header as <hsakmt/hsakmt.h>; Debian's libhsakmt-dev
 * installs it as <hsakmt.h>. Include this header instead of either.
 */
#ifndef XENHSA_HSA_HSAKMT_INCLUDE_H
#define XENHSA_HSA_HSAKMT_INCLUDE_H

#if defined(__has_include)
#if __has_include(<hsakmt/hsakmt.h>)
#include <hsakmt/hsakmt.h>
#else
#include <hsakmt.h>
#endif
#else
#include <hsakmt.h>
#endif

#endif /* XENHSA_HSA_HSAKMT_INCLUDE_H */
