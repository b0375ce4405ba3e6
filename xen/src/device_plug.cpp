#include <cerrno>
#include <functional>
#include <thread>
#include <vector>
#include <xenhsa/xen/device_plug.hpp>

namespace xenhsa::xen {
namespace {

constexpr const char* kInitialising = "1";
constexpr const char* kClosing = "5";
constexpr const char* kClosed = "6";
constexpr int kAttempts = 16;

// Runs `body` in a transaction, again while the store says another one got in between.
Result<bool> in_transaction(Store& store, const std::function<Result<bool>(TxId)>& body) {
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
        auto tx = store.transaction_start();
        if (!tx) {
            return tx.error();
        }
        auto done = body(tx.value());
        if (!done || !done.value()) {
            (void)store.transaction_end(tx.value(), false);
            return done;
        }
        auto committed = store.transaction_end(tx.value(), true);
        if (committed) {
            return true;
        }
        if (committed.error() != std::errc::resource_unavailable_try_again) {
            return committed.error();
        }
    }
    return errc(std::errc::resource_unavailable_try_again);
}

}  // namespace

std::string PvDevice::backend_dir() const {
    return "/local/domain/" + std::to_string(backend) + "/backend/" + type + "/" +
           std::to_string(frontend) + "/" + std::to_string(devid);
}

std::string PvDevice::frontend_dir() const {
    return "/local/domain/" + std::to_string(frontend) + "/device/" + type + "/" +
           std::to_string(devid);
}

Result<bool> plug_device(Store& store, const PvDevice& device) {
    const std::string fe_dir = device.frontend_dir();
    const std::string be_dir = device.backend_dir();
    const std::vector<StorePerm> fe_perms{{device.frontend, StoreAccess::none},
                                          {device.backend, StoreAccess::read}};
    const std::vector<StorePerm> be_perms{{device.backend, StoreAccess::none},
                                          {device.frontend, StoreAccess::read}};
    bool exists = false;
    auto done = in_transaction(store, [&](TxId t) -> Result<bool> {
        exists = static_cast<bool>(store.read(t, fe_dir + "/state"));
        if (exists) {
            return false;
        }
        Result<void> r = store.mkdir(t, fe_dir);
        if (r) r = store.set_perms(t, fe_dir, fe_perms);
        if (r) r = store.write(t, fe_dir + "/backend", be_dir);
        if (r) r = store.write(t, fe_dir + "/backend-id", std::to_string(device.backend));
        if (r) r = store.write(t, fe_dir + "/state", kInitialising);
        if (r) r = store.mkdir(t, be_dir);
        if (r) r = store.set_perms(t, be_dir, be_perms);
        if (r) r = store.write(t, be_dir + "/frontend", fe_dir);
        if (r) r = store.write(t, be_dir + "/frontend-id", std::to_string(device.frontend));
        if (r) r = store.write(t, be_dir + "/online", "1");
        if (r) r = store.write(t, be_dir + "/state", kInitialising);
        if (!r) {
            return r.error();
        }
        return true;
    });
    if (!done) {
        return done.error();
    }
    return !exists;
}

Result<bool> unplug_device(Store& store, const PvDevice& device,
                           std::chrono::milliseconds timeout) {
    const std::string be_dir = device.backend_dir();
    const std::string fe_dir = device.frontend_dir();
    auto offline = in_transaction(store, [&](TxId t) -> Result<bool> {
        if (!store.read(t, be_dir + "/state")) {
            return errc(std::errc::no_such_file_or_directory);
        }
        Result<void> r = store.write(t, be_dir + "/online", "0");
        if (r) r = store.write(t, be_dir + "/state", kClosing);
        if (!r) {
            return r.error();
        }
        return true;
    });
    if (!offline) {
        return offline.error();
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    bool closed = false;
    for (;;) {
        auto state = store.read(kNoTx, be_dir + "/state");
        closed = state && state.value() == kClosed;
        if (closed || !state || std::chrono::steady_clock::now() >= deadline) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    auto removed = in_transaction(store, [&](TxId t) -> Result<bool> {
        for (const std::string& dir : {be_dir, fe_dir}) {
            if (auto r = store.rm(t, dir);
                !r && r.error() != std::errc::no_such_file_or_directory) {
                return r.error();
            }
        }
        return true;
    });
    if (!removed) {
        return removed.error();
    }
    return closed;
}

}  // namespace xenhsa::xen
