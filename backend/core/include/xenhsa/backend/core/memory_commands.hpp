// MAP, UNMAP and LEND (docs/protocol.md §5.4-5.6): the backend's checks in the documented
// order (feature, address, quota), then MapRevoke executes. UNMAP asks GpuContext whether
// a live queue or a PIN still uses the memory.
#ifndef XENHSA_BACKEND_CORE_MEMORY_COMMANDS_HPP
#define XENHSA_BACKEND_CORE_MEMORY_COMMANDS_HPP

#include <xenhsa/proto/memory.h>

#include <cstdint>
#include <xenhsa/backend/core/guest_terms.hpp>
#include <xenhsa/backend/core/handle_quota.hpp>
#include <xenhsa/backend/core/map_revoke.hpp>
#include <xenhsa/backend/core/reply.hpp>
#include <xenhsa/backend/core/va_window.hpp>
#include <xenhsa/hsa/gpu_context.hpp>

namespace xenhsa::backend::core {

class MemoryCommands {
public:
    // `gpu` may be null (no GPU seam).
    MemoryCommands(const GuestTerms& terms, const HandleQuota& handles, VaWindow& window,
                   MapRevoke& map_revoke, const hsa::GpuContext* gpu) noexcept
        : terms_(terms), handles_(handles), window_(window), map_revoke_(map_revoke), gpu_(gpu) {}

    Reply map(const xenhsa_map_req& req, uint32_t seqno);
    Reply unmap(const xenhsa_handle_req& req, uint32_t seqno);
    Reply lend(const xenhsa_lend_req& req, uint32_t seqno);

private:
    const GuestTerms& terms_;
    const HandleQuota& handles_;
    VaWindow& window_;
    MapRevoke& map_revoke_;
    const hsa::GpuContext* gpu_;
};

}  // namespace xenhsa::backend::core

#endif
