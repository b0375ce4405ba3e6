// The frontend's connection keys (docs/protocol.md §1.3), read and checked as hostile
// input: every value goes through xen::parse_store_uint, a missing key is an error.
#ifndef XENHSA_BACKEND_SERVICE_FRONTEND_KEYS_HPP
#define XENHSA_BACKEND_SERVICE_FRONTEND_KEYS_HPP

#include <boost/outcome/result.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>
#include <xenhsa/xen/store.hpp>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::backend::service {

struct FrontendKeys {
    uint32_t ring_page_order = 0;
    std::vector<xen::GrantRef> ring_refs;  // 1 << ring_page_order refs, in page order
    xen::GrantRef notify_ref = 0;
    xen::GrantRef doorbell_ref = 0;
    xen::Port event_channel = 0;
};

// Which key was wrong and how: ENOENT missing, EINVAL malformed, ERANGE out of range,
// EEXIST a grant reference an earlier key names too (every page is its own grant),
// anything else a store failure.
struct KeyProblem {
    std::string key;
    std::error_code error;
    // "<errno> <key>: <reason>", the xenbus error-node convention. Never echoes the value.
    [[nodiscard]] std::string text() const;
};

using KeysResult =
    boost::outcome_v2::result<FrontendKeys, KeyProblem, boost::outcome_v2::policy::terminate>;

// Reads the keys under `frontend_dir`. `max_ring_page_order` is what the backend
// advertised (at most XENHSA_RING_MAX_ORDER).
KeysResult read_frontend_keys(xen::Store& store, std::string_view frontend_dir,
                              uint32_t max_ring_page_order);

}  // namespace xenhsa::backend::service

#endif
