#include <xenhsa/frontend/toolstack.hpp>

#include <xenhsa/proto/xenbus.h>

#include <cerrno>
#include <string>

namespace xenhsa::frontend {

Result<bool> add_device(xen::Store &store, xen::DomId be, xen::DomId fe, uint32_t devid)
{
    const std::string fe_dir = "/local/domain/" + std::to_string(fe) + "/device/" +
                               XENHSA_XS_DEVICE_TYPE + "/" + std::to_string(devid);
    const std::string be_dir = "/local/domain/" + std::to_string(be) + "/backend/" +
                               XENHSA_XS_DEVICE_TYPE + "/" + std::to_string(fe) + "/" +
                               std::to_string(devid);
    for (int attempt = 0; attempt < 16; ++attempt) {
        auto tx = store.transaction_start();
        if (!tx) {
            return tx.error();
        }
        const xen::TxId t = tx.value();
        if (store.read(t, fe_dir + "/" XENHSA_XS_STATE)) {
            (void)store.transaction_end(t, false);
            return false;
        }
        const std::vector<xen::StorePerm> fe_perms{{fe, xen::StoreAccess::none},
                                                   {be, xen::StoreAccess::read}};
        const std::vector<xen::StorePerm> be_perms{{be, xen::StoreAccess::none},
                                                   {fe, xen::StoreAccess::read}};
        Result<void> r = store.mkdir(t, fe_dir);
        if (r)
            r = store.set_perms(t, fe_dir, fe_perms);
        if (r)
            r = store.write(t, fe_dir + "/backend", be_dir);
        if (r)
            r = store.write(t, fe_dir + "/backend-id", std::to_string(be));
        if (r)
            r = store.write(t, fe_dir + "/" XENHSA_XS_STATE,
                            std::to_string(XENHSA_XB_INITIALISING));
        if (r)
            r = store.mkdir(t, be_dir);
        if (r)
            r = store.set_perms(t, be_dir, be_perms);
        if (r)
            r = store.write(t, be_dir + "/frontend", fe_dir);
        if (r)
            r = store.write(t, be_dir + "/frontend-id", std::to_string(fe));
        if (r)
            r = store.write(t, be_dir + "/online", "1");
        if (r)
            r = store.write(t, be_dir + "/" XENHSA_XS_STATE,
                            std::to_string(XENHSA_XB_INITIALISING));
        if (!r) {
            (void)store.transaction_end(t, false);
            return r.error();
        }
        auto committed = store.transaction_end(t, true);
        if (committed) {
            return true;
        }
        if (committed.error() != std::errc::resource_unavailable_try_again) {
            return committed.error();
        }
    }
    return std::error_code(EAGAIN, std::generic_category());
}

}  // namespace xenhsa::frontend
