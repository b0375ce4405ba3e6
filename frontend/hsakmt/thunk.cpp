#include "thunk.hpp"

#include <pthread.h>

#include <xenhsa/frontend/errors.hpp>

namespace xenhsa::frontend::hsakmt {

namespace {

Thunk* make_thunk() {
    auto* t = new Thunk();
    // Around fork(): no call is half done in the child, whose only thread is the forking one.
    ::pthread_atfork(
        [] {
            thunk().open_close.lock();
            thunk().mutex.lock();
        },
        [] {
            thunk().mutex.unlock();
            thunk().open_close.unlock();
        },
        [] {
            if (thunk().session) {
                thunk().session->release_claim_in_child();
            }
            thunk().mutex.unlock();
            thunk().open_close.unlock();
        });
    return t;
}

}  // namespace

Thunk& thunk() noexcept {
    static Thunk* const instance = make_thunk();
    return *instance;
}

HSAKMT_STATUS to_status(const std::error_code& ec) noexcept {
    if (!ec) {
        return HSAKMT_STATUS_SUCCESS;
    }
    if (ec.category() == frontend_category()) {
        return HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR;  // the backend broke or went away
    }
    switch (status_of(ec)) {
        case XENHSA_STATUS_BAD_LENGTH:
        case XENHSA_STATUS_BAD_PAD:
        case XENHSA_STATUS_BAD_ARGUMENT:
        case XENHSA_STATUS_BAD_ADDRESS:
            return HSAKMT_STATUS_INVALID_PARAMETER;
        case XENHSA_STATUS_BAD_HANDLE:
            return HSAKMT_STATUS_INVALID_HANDLE;
        case XENHSA_STATUS_NO_MEMORY:
            return HSAKMT_STATUS_NO_MEMORY;
        case XENHSA_STATUS_QUOTA:
            return HSAKMT_STATUS_OUT_OF_RESOURCES;
        case XENHSA_STATUS_TIMEOUT:
            return HSAKMT_STATUS_WAIT_TIMEOUT;
        case XENHSA_STATUS_UNSUPPORTED:
            return HSAKMT_STATUS_NOT_SUPPORTED;
        case -1:
            break;  // not a protocol status
        default:
            return HSAKMT_STATUS_ERROR;
    }
    if (ec == std::errc::invalid_argument) {
        return HSAKMT_STATUS_INVALID_PARAMETER;
    }
    if (ec == std::errc::not_enough_memory) {
        return HSAKMT_STATUS_NO_MEMORY;
    }
    if (ec == std::errc::not_supported || ec == std::errc::operation_not_supported) {
        return HSAKMT_STATUS_NOT_SUPPORTED;
    }
    if (ec == std::errc::no_such_device) {
        return HSAKMT_STATUS_INVALID_NODE_UNIT;
    }
    return HSAKMT_STATUS_ERROR;
}

}  // namespace xenhsa::frontend::hsakmt
