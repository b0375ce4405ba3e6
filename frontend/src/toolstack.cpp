#include <xenhsa/proto/xenbus.h>

#include <xenhsa/frontend/toolstack.hpp>
#include <xenhsa/xen/device_plug.hpp>

namespace xenhsa::frontend {

Result<bool> add_device(xen::Store& store, xen::DomId be, xen::DomId fe, uint32_t devid) {
    return xen::plug_device(store, xen::PvDevice{be, fe, XENHSA_XS_DEVICE_TYPE, devid});
}

}  // namespace xenhsa::frontend
