# Cross build for arm64 (aarch64) with Debian's cross compiler (g++-aarch64-linux-gnu) and
# Debian's multiarch arm64 libraries (dpkg --add-architecture arm64). `script/cross arm64`
# installs both and uses this file through the `arm64` preset.
#
# libxen-dev cannot be installed for two architectures at once (its headers are not
# Multi-Arch: same), so the script unpacks libxen-dev:arm64 into a folder of the build
# tree and passes it as XENHSA_ARM64_XEN_DEV; its runtime libraries are installed the
# multiarch way.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Test binaries run under qemu-user: gtest's test discovery at build time and ctest.
find_program(XENHSA_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${XENHSA_QEMU_AARCH64})

# pkg-config: only arm64 .pc files (and the architecture-independent ones). try_compile
# reads this file again in the same process: it must see the same folders.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES XENHSA_ARM64_XEN_DEV)
set(_xenhsa_pc_dirs /usr/lib/aarch64-linux-gnu/pkgconfig /usr/share/pkgconfig)
if(XENHSA_ARM64_XEN_DEV)
    list(PREPEND _xenhsa_pc_dirs ${XENHSA_ARM64_XEN_DEV}/usr/lib/aarch64-linux-gnu/pkgconfig)
endif()
list(JOIN _xenhsa_pc_dirs ":" _xenhsa_pc_path)
set(ENV{PKG_CONFIG_LIBDIR} "${_xenhsa_pc_path}")
set(ENV{PKG_CONFIG_PATH} "")
unset(_xenhsa_pc_dirs)
unset(_xenhsa_pc_path)
