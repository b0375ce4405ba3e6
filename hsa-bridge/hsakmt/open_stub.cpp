// Built instead of the adapter when libhsakmt is not available (XENHSA_WITH_HSAKMT=OFF).
#include <xenhsa/hsa/hsakmt_device.hpp>

namespace xenhsa::hsa {

Result<std::unique_ptr<KfdDevice>> open_hsakmt_device(std::string* message) {
    if (message != nullptr) {
        *message = "no /dev/kfd: xenhsa was built without libhsakmt (XENHSA_WITH_HSAKMT=OFF)";
    }
    return errc(std::errc::no_such_device);
}

}  // namespace xenhsa::hsa
