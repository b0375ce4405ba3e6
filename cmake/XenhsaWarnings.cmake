# xenhsa::warnings -- warning flags for every project target.
# Link it PRIVATE from each of our own targets; third-party code never gets it.
#
# Warnings are errors only with XENHSA_WERROR: on in the presets developers and CI build
# (dev, asan-ubsan, tsan, arm64-tests) and in CI's release and package builds, off for a
# user's or a packager's build, which a new warning of a newer compiler must not break.
include_guard(GLOBAL)

# -Werror when XENHSA_WERROR is on, for the few targets with flags of their own.
set(XENHSA_WERROR_FLAG "$<$<BOOL:${XENHSA_WERROR}>:-Werror>")

add_library(xenhsa_warnings INTERFACE)
add_library(xenhsa::warnings ALIAS xenhsa_warnings)

target_compile_options(xenhsa_warnings INTERFACE
    # C and C++
    -Wall
    -Wextra
    ${XENHSA_WERROR_FLAG}
    -Wshadow
    -Wcast-align
    -Wformat=2
    -Wundef
    # C++ only
    $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
    $<$<COMPILE_LANGUAGE:CXX>:-Woverloaded-virtual>
    # g++ warns of a class with a member of an anonymous-namespace type unless the class
    # is defined in the main file; a unity build makes every .cpp an included file, and
    # each pimpl's Impl would be reported.
    $<$<AND:$<COMPILE_LANG_AND_ID:CXX,GNU>,$<BOOL:$<TARGET_PROPERTY:UNITY_BUILD>>>:-Wno-subobject-linkage>
    # g++ 12 at -O3 reports std::string's own memcpy in `"-" + std::to_string(n)` as
    # overlapping (GCC PR 105651, fixed in 13); which call sites it sees depends on inlining.
    $<$<AND:$<COMPILE_LANG_AND_ID:CXX,GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>)
