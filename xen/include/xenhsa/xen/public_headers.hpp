// Xen's public headers for C++: Debian's copies have no extern "C" of their own.
#ifndef XENHSA_XEN_PUBLIC_HEADERS_HPP
#define XENHSA_XEN_PUBLIC_HEADERS_HPP

#include <cstdint>

extern "C" {
#include <xen/grant_table.h>
}

#endif
