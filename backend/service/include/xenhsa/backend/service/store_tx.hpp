// Xenstore transactions with retry on EAGAIN.
#ifndef XENHSA_BACKEND_SERVICE_STORE_TX_HPP
#define XENHSA_BACKEND_SERVICE_STORE_TX_HPP

#include <type_traits>
#include <utility>
#include <xenhsa/xen/store.hpp>

namespace xenhsa::backend::service {

// Runs `body(tx)` inside a transaction and commits it. `body` returns a Result<T>; an
// error from it aborts the transaction and is returned as is. A commit that fails with
// EAGAIN runs `body` again, up to `attempts` times.
template <class Body>
auto in_transaction(xen::Store& store, Body&& body, int attempts = 16)
    -> std::invoke_result_t<Body&, xen::TxId> {
    using R = std::invoke_result_t<Body&, xen::TxId>;
    for (int i = 0; i < attempts; ++i) {
        auto tx = store.transaction_start();
        if (!tx) {
            return R(tx.error());
        }
        R result = body(tx.value());
        if (!result) {
            (void)store.transaction_end(tx.value(), false);
            return result;
        }
        auto committed = store.transaction_end(tx.value(), true);
        if (committed) {
            return result;
        }
        if (committed.error() != std::errc::resource_unavailable_try_again) {
            return R(committed.error());
        }
    }
    return R(xen::errc(std::errc::resource_unavailable_try_again));
}

}  // namespace xenhsa::backend::service

#endif
