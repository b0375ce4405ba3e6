// The toolstack's part of plugging a xenhsa device (protocol 1.3 step 1), as xl does for
// a PV device: both xenstore directories with their permissions and initial keys. Only
// a privileged domain may do it; xenhsa-guest does it for the simulator in a short-lived
// child attached to dom0, so the guest process itself never holds dom0 rights.
#ifndef XENHSA_FRONTEND_TOOLSTACK_HPP
#define XENHSA_FRONTEND_TOOLSTACK_HPP

#include <cstdint>
#include <xenhsa/frontend/result.hpp>
#include <xenhsa/xen/store.hpp>

namespace xenhsa::frontend {

// Creates /local/domain/<fe>/device/xenhsa/<devid> (owned by fe, readable by be) and
// /local/domain/<be>/backend/xenhsa/<fe>/<devid> (owned by be, readable by fe) with
// backend/backend-id/state and frontend/frontend-id/state, in one transaction. A device
// that already has a frontend state is left alone (true: created, false: existed).
Result<bool> add_device(xen::Store& store, xen::DomId be, xen::DomId fe, uint32_t devid);

}  // namespace xenhsa::frontend

#endif
