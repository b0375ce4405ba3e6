// The one way a release path reacts to a device failure: log and abort the worker.
// Revoke and teardown cannot fail (docs/protocol.md §5.3): a device that refuses to
// destroy a queue or release memory the context ordered correctly is a bug, and going on
// could leave guest pages reachable by the GPU.
#ifndef XENHSA_HSA_GPU_CONTEXT_FATAL_HPP
#define XENHSA_HSA_GPU_CONTEXT_FATAL_HPP

#include <cstdint>
#include <system_error>

namespace xenhsa::hsa::detail {

[[noreturn]] void fatal(const char* what, uint64_t object, const std::error_code& error) noexcept;

}  // namespace xenhsa::hsa::detail

#endif
