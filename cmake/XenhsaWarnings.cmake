# xenhsa::warnings -- warning flags for every project target.
# Link it PRIVATE from each of our own targets; third-party code never gets it.
include_guard(GLOBAL)

add_library(xenhsa_warnings INTERFACE)
add_library(xenhsa::warnings ALIAS xenhsa_warnings)

target_compile_options(xenhsa_warnings INTERFACE
    # C and C++
    -Wall
    -Wextra
    -Werror
    -Wshadow
    -Wcast-align
    -Wformat=2
    -Wundef
    # C++ only
    $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
    $<$<COMPILE_LANGUAGE:CXX>:-Woverloaded-virtual>)
