#include <xenhsa/proto/ring.h>
#include <xenhsa/proto/xenbus.h>

#include <algorithm>
#include <limits>
#include <xenhsa/backend/service/frontend_keys.hpp>

namespace xenhsa::backend::service {

namespace {

constexpr uint64_t kMaxGrantRef = std::numeric_limits<xen::GrantRef>::max();
constexpr uint64_t kMaxPort = std::numeric_limits<xen::Port>::max();

struct Reader {
    xen::Store& store;
    std::string dir;

    // The parsed value; `missing_ok` turns ENOENT into nullopt-like `fallback`.
    boost::outcome_v2::result<uint64_t, KeyProblem, boost::outcome_v2::policy::terminate> uint(
        const std::string& key, uint64_t max, const uint64_t* fallback = nullptr) const {
        auto value = store.read(xen::kNoTx, dir + "/" + key);
        if (!value) {
            if (fallback != nullptr && value.error() == std::errc::no_such_file_or_directory) {
                return *fallback;
            }
            return KeyProblem{key, value.error()};
        }
        auto parsed = xen::parse_store_uint(value.value(), max);
        if (!parsed) {
            return KeyProblem{key, parsed.error()};
        }
        return parsed.value();
    }
};

}  // namespace

std::string KeyProblem::text() const {
    std::string reason;
    if (error == std::errc::no_such_file_or_directory) {
        reason = "missing";
    } else if (error == std::errc::invalid_argument) {
        reason = "not a decimal store value";
    } else if (error == std::errc::result_out_of_range) {
        reason = "out of range";
    } else if (error == std::errc::file_exists) {
        reason = "names a grant another key names";
    } else {
        reason = "cannot be read: " + error.message();
    }
    return std::to_string(error.value()) + " " + key + ": " + reason;
}

KeysResult read_frontend_keys(xen::Store& store, std::string_view frontend_dir,
                              uint32_t max_ring_page_order) {
    const Reader r{store, std::string(frontend_dir)};
    FrontendKeys keys;

    const uint64_t order_zero = 0;
    const uint64_t max_order = std::min<uint64_t>(max_ring_page_order, XENHSA_RING_MAX_ORDER);
    auto order = r.uint(XENHSA_XS_RING_PAGE_ORDER, max_order, &order_zero);
    if (!order) {
        return order.error();
    }
    keys.ring_page_order = static_cast<uint32_t>(order.value());

    // Every page is its own grant: one named twice would overlay, say, the notify producer
    // index on the ring's request producer. EEXIST names the later key.
    std::vector<xen::GrantRef> named;
    const auto named_before = [&](xen::GrantRef ref) {
        if (std::find(named.begin(), named.end(), ref) != named.end()) {
            return true;
        }
        named.push_back(ref);
        return false;
    };

    // Order 0 reads "ring-ref" only; order n reads "ring-ref0".."ring-ref<2^n - 1>" only.
    const uint32_t pages = 1u << keys.ring_page_order;
    keys.ring_refs.reserve(pages);
    for (uint32_t i = 0; i < pages; ++i) {
        std::string key = XENHSA_XS_RING_REF;
        if (keys.ring_page_order != 0) {
            key += std::to_string(i);
        }
        auto ref = r.uint(key, kMaxGrantRef);
        if (!ref) {
            return ref.error();
        }
        if (named_before(static_cast<xen::GrantRef>(ref.value()))) {
            return KeyProblem{key, std::make_error_code(std::errc::file_exists)};
        }
        keys.ring_refs.push_back(static_cast<xen::GrantRef>(ref.value()));
    }

    auto notify = r.uint(XENHSA_XS_NOTIFY_REF, kMaxGrantRef);
    if (!notify) {
        return notify.error();
    }
    if (named_before(static_cast<xen::GrantRef>(notify.value()))) {
        return KeyProblem{XENHSA_XS_NOTIFY_REF, std::make_error_code(std::errc::file_exists)};
    }
    keys.notify_ref = static_cast<xen::GrantRef>(notify.value());

    auto doorbell = r.uint(XENHSA_XS_DOORBELL_REF, kMaxGrantRef);
    if (!doorbell) {
        return doorbell.error();
    }
    if (named_before(static_cast<xen::GrantRef>(doorbell.value()))) {
        return KeyProblem{XENHSA_XS_DOORBELL_REF, std::make_error_code(std::errc::file_exists)};
    }
    keys.doorbell_ref = static_cast<xen::GrantRef>(doorbell.value());

    auto port = r.uint(XENHSA_XS_EVENT_CHANNEL, kMaxPort);
    if (!port) {
        return port.error();
    }
    keys.event_channel = static_cast<xen::Port>(port.value());
    return keys;
}

}  // namespace xenhsa::backend::service
