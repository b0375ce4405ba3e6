// Session's hand-off from GpuSession threads to the io_context (private to the session).
// Callbacks post to the loop only while the gate is open; the session closes it (under
// the lock) before it goes, so no callback touches a dead session or posts to a dead loop.
#ifndef XENHSA_BACKEND_CORE_SESSION_GATE_HPP
#define XENHSA_BACKEND_CORE_SESSION_GATE_HPP

#include <mutex>
#include <utility>
#include <vector>
#include <xenhsa/backend/core/session.hpp>

namespace xenhsa::backend::core {

struct Session::Gate {
    std::mutex lock;
    bool open = true;
    // Queues GpuSession reported lost (fault, or destroyed by revoke_range), allocated
    // once: a revoke on the loop thread pushes here without allocating.
    std::vector<std::pair<hsa::Handle, hsa::Va>> lost;
    std::vector<std::pair<hsa::Handle, hsa::Va>> draining;
};

}  // namespace xenhsa::backend::core

#endif
