# Debian packages (CPack's DEB generator), one per component; script/package builds them.
#   xenhsa-backend  xenhsa-backend, xenhsa-ctl, xenhsa-doctor, the systemd unit, an
#                   example quota file; creates the system user "xenhsa" on install
#   xenhsa-guest    the guest side: xenhsa-guest, xenhsa-run and the guest libhsakmt;
#                   creates the group "xenhsa-gpu" whose members run ROCm programs (udev
#                   rules for Xen's devices, a tmpfiles entry for the claims' directory)
#   xenhsa-sim      the embedded hypervisor and the demo (xenhsa-demo, xenhsa-rocr-check)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME xenhsa)
set(CPACK_PACKAGE_VENDOR xenhsa)
set(CPACK_PACKAGE_CONTACT "xenhsa maintainers <xenhsa@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL backend guest sim)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
# CPack asks dpkg for the architecture, which is the build machine's: a cross build
# names the target's (script/cross arm64 --report).
if(CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
endif()

set(CPACK_DEBIAN_BACKEND_PACKAGE_NAME xenhsa-backend)
set(CPACK_DEBIAN_BACKEND_PACKAGE_DEPENDS adduser)
set(CPACK_DEBIAN_BACKEND_PACKAGE_CONTROL_EXTRA
    "${PROJECT_SOURCE_DIR}/backend/service/packaging/postinst;${PROJECT_SOURCE_DIR}/backend/service/packaging/postrm")
set(CPACK_COMPONENT_BACKEND_DESCRIPTION
    "xenhsa backend service: ROCm compute for Xen guests, from dom0 or a driver domain")

set(CPACK_DEBIAN_GUEST_PACKAGE_NAME xenhsa-guest)
set(CPACK_DEBIAN_GUEST_PACKAGE_DEPENDS adduser)
set(CPACK_DEBIAN_GUEST_PACKAGE_CONTROL_EXTRA
    "${PROJECT_SOURCE_DIR}/frontend/run/packaging/postinst;${PROJECT_SOURCE_DIR}/frontend/run/packaging/postrm")
set(CPACK_COMPONENT_GUEST_DESCRIPTION
    "xenhsa guest side: the drop-in libhsakmt for unmodified ROCm, xenhsa-run, xenhsa-guest")

set(CPACK_DEBIAN_SIM_PACKAGE_NAME xenhsa-sim)
set(CPACK_DEBIAN_SIM_PACKAGE_DEPENDS "xenhsa-backend, xenhsa-guest, rocminfo")
set(CPACK_COMPONENT_SIM_DESCRIPTION
    "xenhsa embedded hypervisor (xenhsa-sim) and the demo, for machines without Xen")

include(CPack)
