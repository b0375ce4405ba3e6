# Finds every external dependency the conventional way (system packages via
# CMake config files, Find modules or pkg-config). Nothing is vendored or
# downloaded.
#
# Targets provided for project code:
#   xenhsa::xen_libs   all Xen libraries below    (XENHSA_HAVE_XEN=0/1)
#   xenhsa::xengnttab, xenhsa::xenevtchn, xenhsa::xenstore,
#   xenhsa::xenforeignmemory, xenhsa::xencontrol   (only if XENHSA_WITH_XEN)
#   xenhsa::hsakmt     libhsakmt (ROCt thunk)     (XENHSA_HAVE_HSAKMT=0/1)
#   xenhsa::systemd    libsystemd                 (XENHSA_HAVE_SYSTEMD=0/1)
#   xenhsa::seccomp    libseccomp                 (XENHSA_HAVE_SECCOMP=0/1)
#   xenhsa::asio       Boost::headers + workaround for Boost 1.74 Asio under
#                      g++ >= 11 in C++20 mode (awaitable.hpp uses std::exchange
#                      without including <utility>); use it for Boost.Asio.
#
# Helper: xenhsa_use_gnu_dialect(<target>) -- Xen's <xenctrl.h> pulls in public
# headers (xen/hvm/save.h, xen/foreign/x86_64.h) that #error / break under
# __STRICT_ANSI__, i.e. with -std=c++20 / -std=c11. A target that includes
# <xenctrl.h> must call this (switches it to -std=gnu++20 / -std=gnu11).
# <xengnttab.h>, <xenevtchn.h>, <xenstore.h>, <xenforeignmemory.h>,
# <xen/io/ring.h>, <xen/grant_table.h> are fine in strict ISO mode.
# The xenhsa::xen_libs / hsakmt / systemd INTERFACE targets always exist; when
# the feature is switched off they carry only XENHSA_HAVE_<X>=0, so code can
# test `#if XENHSA_HAVE_<X>` (which, with -Wundef, also fails loudly if the
# target is not linked).
#
# Imported targets from upstream packages:
#   Boost::headers, CLI11::CLI11, spdlog::spdlog, nlohmann_json::nlohmann_json,
#   Threads::Threads, GTest::gtest, GTest::gtest_main (XENHSA_BUILD_TESTS). The
#   benchmarks (bench/) need nothing more: they print key=value lines of their own.
include_guard(GLOBAL)

find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

set(_xenhsa_found "Threads")

# --- Xen ----------------------------------------------------------------------------
function(xenhsa_use_gnu_dialect target)
    set_target_properties(${target} PROPERTIES C_EXTENSIONS ON CXX_EXTENSIONS ON)
endfunction()

add_library(xenhsa_xen_libs INTERFACE)
add_library(xenhsa::xen_libs ALIAS xenhsa_xen_libs)
if(XENHSA_WITH_XEN)
    # Debian's libxen-dev: libxengntshr (xengntshr_*) lives in libxengnttab;
    # the control library's module is "xencontrol" (links -lxenctrl).
    foreach(_mod IN ITEMS xengnttab xenevtchn xenstore xenforeignmemory xencontrol)
        string(TOUPPER ${_mod} _var)
        pkg_check_modules(${_var} REQUIRED IMPORTED_TARGET ${_mod})
        add_library(xenhsa::${_mod} ALIAS PkgConfig::${_var})
        target_link_libraries(xenhsa_xen_libs INTERFACE PkgConfig::${_var})
        list(APPEND _xenhsa_found "${_mod} ${${_var}_VERSION}")
    endforeach()
    target_compile_definitions(xenhsa_xen_libs INTERFACE XENHSA_HAVE_XEN=1)
else()
    target_compile_definitions(xenhsa_xen_libs INTERFACE XENHSA_HAVE_XEN=0)
endif()

# --- libhsakmt (ROCt thunk) ----------------------------------------------------------
# Include it through <xenhsa/hsa/hsakmt_include.h>: Debian ships <hsakmt.h>,
# ROCm >= 6 ships <hsakmt/hsakmt.h>.
add_library(xenhsa_hsakmt INTERFACE)
add_library(xenhsa::hsakmt ALIAS xenhsa_hsakmt)
if(XENHSA_WITH_HSAKMT)
    find_package(hsakmt 1.0 CONFIG REQUIRED)
    target_link_libraries(xenhsa_hsakmt INTERFACE hsakmt::hsakmt)
    target_compile_definitions(xenhsa_hsakmt INTERFACE XENHSA_HAVE_HSAKMT=1)
    list(APPEND _xenhsa_found "hsakmt ${hsakmt_VERSION}")
else()
    target_compile_definitions(xenhsa_hsakmt INTERFACE XENHSA_HAVE_HSAKMT=0)
endif()

# --- systemd ---------------------------------------------------------------------------
add_library(xenhsa_systemd INTERFACE)
add_library(xenhsa::systemd ALIAS xenhsa_systemd)
if(XENHSA_WITH_SYSTEMD)
    pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
    target_link_libraries(xenhsa_systemd INTERFACE PkgConfig::SYSTEMD)
    target_compile_definitions(xenhsa_systemd INTERFACE XENHSA_HAVE_SYSTEMD=1)
    list(APPEND _xenhsa_found "libsystemd ${SYSTEMD_VERSION}")
else()
    target_compile_definitions(xenhsa_systemd INTERFACE XENHSA_HAVE_SYSTEMD=0)
endif()

# --- libseccomp ------------------------------------------------------------------------
# The workers' system-call filter (backend/service/src/syscall_filter.cpp).
add_library(xenhsa_seccomp INTERFACE)
add_library(xenhsa::seccomp ALIAS xenhsa_seccomp)
if(XENHSA_WITH_SECCOMP)
    pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)
    target_link_libraries(xenhsa_seccomp INTERFACE PkgConfig::SECCOMP)
    target_compile_definitions(xenhsa_seccomp INTERFACE XENHSA_HAVE_SECCOMP=1)
    list(APPEND _xenhsa_found "libseccomp ${SECCOMP_VERSION}")
else()
    target_compile_definitions(xenhsa_seccomp INTERFACE XENHSA_HAVE_SECCOMP=0)
endif()

# --- Header-only / C++ libraries ------------------------------------------------------
find_package(Boost 1.74 REQUIRED)                 # Boost::headers (Boost.Asio)
list(APPEND _xenhsa_found "Boost ${Boost_VERSION}")
add_library(xenhsa_asio INTERFACE)
add_library(xenhsa::asio ALIAS xenhsa_asio)
target_link_libraries(xenhsa_asio INTERFACE Boost::headers Threads::Threads)
# Harmless on fixed Boost versions, so applied unconditionally.
target_compile_options(xenhsa_asio INTERFACE "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-include utility>")
find_package(CLI11 CONFIG REQUIRED)               # CLI11::CLI11
list(APPEND _xenhsa_found "CLI11 ${CLI11_VERSION}")
find_package(spdlog REQUIRED)                     # spdlog::spdlog
list(APPEND _xenhsa_found "spdlog ${spdlog_VERSION}")
find_package(nlohmann_json 3 REQUIRED)            # nlohmann_json::nlohmann_json
list(APPEND _xenhsa_found "nlohmann_json ${nlohmann_json_VERSION}")

# --- Test framework --------------------------------------------------------------------
if(XENHSA_BUILD_TESTS)
    find_package(GTest REQUIRED)                  # GTest::gtest, GTest::gtest_main
    list(APPEND _xenhsa_found "GTest ${GTest_VERSION}")
endif()

list(JOIN _xenhsa_found ", " _xenhsa_found_str)
message(STATUS "xenhsa dependencies: ${_xenhsa_found_str}")
unset(_xenhsa_found)
unset(_xenhsa_found_str)
