// The thunk's topology structs -> xenhsa's own wire structs, field by field (query.h).
// No thunk struct crosses the wire: their layouts differ between thunk versions (and are
// pack(4)). Pure functions, tested without a GPU.
#ifndef XENHSA_HSA_HSAKMT_CONVERT_HPP
#define XENHSA_HSA_HSAKMT_CONVERT_HPP

#include <xenhsa/hsa/hsakmt_include.h>
#include <xenhsa/proto/query.h>

#include <cstddef>
#include <cstdint>

namespace xenhsa::hsa::kmt {

xenhsa_version_info convert_version(const HsaVersionInfo& v);
xenhsa_system_props convert_system(const HsaSystemProperties& s);  // XNACK off, no kernels
xenhsa_node_props convert_node(const HsaNodeProperties& p);
xenhsa_mem_bank convert_mem_bank(const HsaMemoryProperties& m);
xenhsa_cache convert_cache(const HsaCacheProperties& c);
xenhsa_io_link convert_io_link(const HsaIoLinkProperties& l);
xenhsa_clock_counters convert_clock(const HsaClockCounters& c);

// UTF-16 code units (up to a NUL or `n`) -> UTF-8 in out[0 .. out_size), always
// NUL-terminated, cut only at character boundaries. Unpaired surrogates become U+FFFD.
void utf16_to_utf8(const uint16_t* in, size_t n, uint8_t* out, size_t out_size);
// ASCII bytes (up to a NUL or `n`) -> out, NUL-terminated; other bytes become '?'.
void copy_ascii(const uint8_t* in, size_t n, uint8_t* out, size_t out_size);

}  // namespace xenhsa::hsa::kmt

#endif
