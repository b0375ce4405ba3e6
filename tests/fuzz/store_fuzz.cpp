// Fuzz target "store": guest-written xenstore values against the backend's strict
// parsing (xen::parse_store_uint, parse_xenbus_state, read_frontend_keys) and the
// worker's xenbus state machine (XenbusDevice), in process over the simulated xenstore
// tree (xen/sim StoreTree, as tests/backend/service does) with a session factory that
// checks what it is given.
//
// Input: a value string and a limit choice (the differential parse), then operations
// of the guest on its own device directory: write a key (one of the protocol's keys, or
// any name) with a value (any bytes, or a number spelled badly on purpose), remove a
// key, write its state, remove its whole directory, let the backend settle.
//
// Invariants:
//   * parse_store_uint accepts exactly the documented spelling (digits only, no sign,
//     no spaces, no leading zero except "0") and range, and gives EINVAL or ERANGE as
//     documented; parse_xenbus_state accepts exactly the states' numbers;
//   * the backend connects a session only when every key is well formed, and the keys it
//     hands the session are exactly those the strict reading of the store gives;
//   * a refused key closes the device with an error node "<errno> <key>: <reason>" that
//     names the first bad key in reading order, with its errno, and never echoes the value;
//   * the backend's state node always holds a xenbus state; a session exists exactly
//     while the backend is Connected, and never two at once;
//   * the state machine settles after every guest change; store writes never fail;
//   * destroying the device destroys its session.
#include <spdlog/logger.h>
#include <spdlog/sinks/null_sink.h>
#include <xenhsa/proto/ring.h>
#include <xenhsa/proto/xenbus.h>

#include <algorithm>
#include <array>
#include <boost/asio/io_context.hpp>
#include <cerrno>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <xenhsa/backend/service/frontend_keys.hpp>
#include <xenhsa/backend/service/xenbus.hpp>
#include <xenhsa/backend/service/xenbus_device.hpp>

#include "fuzz_check.hpp"
#include "fuzz_input.hpp"
#include "tree_store.hpp"

namespace xenhsa::fuzz {
namespace {

namespace svc = backend::service;
using test::FixedDomains;
using test::TreeStore;

constexpr xen::DomId kFe = 5;
constexpr svc::DeviceId kDev{kFe, 0};
constexpr int kMaxOps = 64;
constexpr int kSettleRounds = 100;

// --- the reference: docs/protocol.md 1.3 and xen/store.hpp, restated

struct Parsed {
    uint64_t value = 0;
    int error = 0;  // 0, EINVAL or ERANGE
};

Parsed reference_parse(const std::string& s, uint64_t max) {
    if (s.empty() || (s.size() > 1 && s[0] == '0')) {
        return {0, EINVAL};
    }
    for (const char c : s) {
        if (c < '0' || c > '9') {
            return {0, EINVAL};
        }
    }
    // Digits only: compare as decimal strings, longest first, to find the range.
    const std::string limit = std::to_string(max);
    if (sabotage() ? s.size() > limit.size() + 1 : s.size() > limit.size()) {
        return {0, ERANGE};
    }
    if (s.size() == limit.size() && s > limit) {
        return {0, ERANGE};
    }
    uint64_t v = 0;
    for (const char c : s) {
        v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    return {v, 0};
}

int error_of(const std::error_code& ec) {
    return ec == std::errc::invalid_argument            ? EINVAL
           : ec == std::errc::result_out_of_range       ? ERANGE
           : ec == std::errc::no_such_file_or_directory ? ENOENT
                                                        : -1;
}

void differential_parse(FuzzInput& in) {
    const std::string value = in.str(40);
    const std::array<uint64_t, 12> limits{0,
                                          1,
                                          3,
                                          6,
                                          8,
                                          9,
                                          10,
                                          255,
                                          65535,
                                          0xFFFFFFFFu,
                                          99999999999ull,
                                          std::numeric_limits<uint64_t>::max()};
    const uint8_t pick = in.u8();
    const uint64_t max = pick < limits.size() ? limits[pick] : in.u64();
    const auto got = xen::parse_store_uint(value, max);
    const Parsed want = reference_parse(value, max);
    if (want.error == 0) {
        XENHSA_FUZZ_CHECK(got.has_value() && got.value() == want.value,
                          "parse_store_uint refuses or misreads a well-formed value");
        XENHSA_FUZZ_CHECK(got.value() <= max, "parse_store_uint returned a value past max");
    } else {
        XENHSA_FUZZ_CHECK(!got.has_value(), "parse_store_uint accepts a malformed value");
        XENHSA_FUZZ_CHECK(error_of(got.error()) == want.error,
                          "parse_store_uint gives the wrong error");
    }
    const auto state = svc::parse_xenbus_state(value);
    const Parsed want_state = reference_parse(value, 8);
    XENHSA_FUZZ_CHECK(state.has_value() == (want_state.error == 0),
                      "parse_xenbus_state accepts a malformed state or refuses a state");
    if (state) {
        XENHSA_FUZZ_CHECK(static_cast<uint64_t>(*state) == want_state.value,
                          "parse_xenbus_state misreads a state");
    }
}

// The keys as the strict reading of the store gives them, or the first bad key.
struct ReferenceKeys {
    std::optional<svc::FrontendKeys> keys;
    std::string bad_key;
    int bad_errno = 0;
};

ReferenceKeys reference_keys(xen::Store& store, const std::string& dir, uint32_t max_order) {
    ReferenceKeys out;
    const auto read = [&](const std::string& key, uint64_t max,
                          std::optional<uint64_t> fallback) -> std::optional<uint64_t> {
        auto v = store.read(xen::kNoTx, dir + "/" + key);
        if (!v) {
            if (fallback && v.error() == std::errc::no_such_file_or_directory) {
                return fallback;
            }
            out.bad_key = key;
            out.bad_errno = error_of(v.error());
            return std::nullopt;
        }
        const Parsed p = reference_parse(v.value(), max);
        if (p.error != 0) {
            out.bad_key = key;
            out.bad_errno = p.error;
            return std::nullopt;
        }
        return p.value;
    };
    // Every grant key names a page no earlier grant key names (EEXIST otherwise).
    std::vector<uint64_t> grants;
    const auto distinct = [&](const std::string& key, uint64_t ref) {
        if (std::find(grants.begin(), grants.end(), ref) != grants.end()) {
            out.bad_key = key;
            out.bad_errno = EEXIST;
            return false;
        }
        grants.push_back(ref);
        return true;
    };
    svc::FrontendKeys k;
    const auto order = read(XENHSA_XS_RING_PAGE_ORDER, std::min(max_order, 3u), 0);
    if (!order) {
        return out;
    }
    k.ring_page_order = static_cast<uint32_t>(*order);
    for (uint32_t i = 0; i < (1u << k.ring_page_order); ++i) {
        const std::string key =
            std::string(XENHSA_XS_RING_REF) + (k.ring_page_order == 0 ? "" : std::to_string(i));
        const auto ref = read(key, 0xFFFFFFFFu, std::nullopt);
        if (!ref || !distinct(key, *ref)) {
            return out;
        }
        k.ring_refs.push_back(static_cast<xen::GrantRef>(*ref));
    }
    const auto notify = read(XENHSA_XS_NOTIFY_REF, 0xFFFFFFFFu, std::nullopt);
    if (!notify || !distinct(XENHSA_XS_NOTIFY_REF, *notify)) {
        return out;
    }
    const auto doorbell = read(XENHSA_XS_DOORBELL_REF, 0xFFFFFFFFu, std::nullopt);
    if (!doorbell || !distinct(XENHSA_XS_DOORBELL_REF, *doorbell)) {
        return out;
    }
    const auto port =
        read(XENHSA_XS_EVENT_CHANNEL, std::numeric_limits<xen::Port>::max(), std::nullopt);
    if (!port) {
        return out;
    }
    k.notify_ref = static_cast<xen::GrantRef>(*notify);
    k.doorbell_ref = static_cast<xen::GrantRef>(*doorbell);
    k.event_channel = static_cast<xen::Port>(*port);
    out.keys = k;
    return out;
}

// --- the device under test

struct CheckedSession final : svc::ConnectedGuest {
    explicit CheckedSession(int& live_count) : live(live_count) { ++live; }
    ~CheckedSession() override { --live; }
    [[nodiscard]] svc::DeviceStats stats() const noexcept override { return {}; }
    void revoke_all() noexcept override {}
    int& live;
};

struct CheckingFactory final : svc::GuestConnector {
    [[nodiscard]] uint32_t max_ring_page_order() const noexcept override { return max_order; }
    xen::Result<std::unique_ptr<svc::ConnectedGuest>> connect(
        const svc::ConnectArgs& start) override {
        XENHSA_FUZZ_CHECK(live == 0, "a second session while one is live");
        // What the store holds right now, read strictly, is what the session must get.
        const ReferenceKeys want =
            reference_keys(*start.platform.store, svc::frontend_dir(kDev), max_order);
        XENHSA_FUZZ_CHECK(want.keys.has_value(), "a session connected with a malformed key");
        const auto& got = start.keys;
        XENHSA_FUZZ_CHECK(got.ring_page_order == want.keys->ring_page_order &&
                              got.ring_refs == want.keys->ring_refs &&
                              got.notify_ref == want.keys->notify_ref &&
                              got.doorbell_ref == want.keys->doorbell_ref &&
                              got.event_channel == want.keys->event_channel,
                          "the session got other keys than the store holds");
        XENHSA_FUZZ_CHECK(
            got.ring_page_order <= max_order && got.ring_refs.size() == (1u << got.ring_page_order),
            "a ring order past the advertised maximum");
        ++connects;
        if (fail_next) {
            fail_next = false;
            return xen::errc(std::errc::not_enough_memory);
        }
        return std::unique_ptr<svc::ConnectedGuest>(std::make_unique<CheckedSession>(live));
    }
    uint32_t max_order = 3;
    int live = 0;
    int connects = 0;
    bool fail_next = false;
};

const std::array<const char*, 14> kKeys{XENHSA_XS_RING_PAGE_ORDER,
                                        "ring-ref",
                                        "ring-ref0",
                                        "ring-ref1",
                                        "ring-ref2",
                                        "ring-ref3",
                                        "ring-ref7",
                                        XENHSA_XS_NOTIFY_REF,
                                        XENHSA_XS_DOORBELL_REF,
                                        XENHSA_XS_EVENT_CHANNEL,
                                        XENHSA_XS_STATE,
                                        "backend",
                                        "ring-ref00",
                                        "error"};

// A value: raw bytes, or a number with a chosen defect (leading zero, sign, space,
// one past a type's range, ...), which the mutator rarely finds by itself.
std::string value(FuzzInput& in) {
    const uint8_t kind = in.u8();
    if (kind < 128) {
        return in.str(24);
    }
    const uint64_t n = kind % 2 == 0 ? in.u8() % 12 : in.u32();
    switch (kind % 8) {
        case 0:
            return std::to_string(n);
        case 1:
            return "0" + std::to_string(n);
        case 2:
            return "+" + std::to_string(n);
        case 3:
            return " " + std::to_string(n);
        case 4:
            return std::to_string(n) + "\n";
        case 5:
            return std::to_string(uint64_t{0xFFFFFFFFu} + 1 + n % 2);
        case 6:
            return std::to_string(n) + std::string(1, '\0') + "1";
        default:
            return "-" + std::to_string(n);
    }
}

class Rig {
public:
    explicit Rig(FuzzInput& in) {
        const uint8_t config = in.u8();
        factory_.max_order = config % 5;  // 4: more than the protocol allows (clamped to 3)
        XENHSA_FUZZ_CHECK(tree_.introduce_domain(kFe).has_value(), "introduce the guest");
        platform_.store = std::make_unique<TreeStore>(tree_, 0);
        platform_.domains = std::make_unique<FixedDomains>(0);
        must(toolstack_.write(0, be_ + "/frontend", fe_));
        must(toolstack_.write(0, be_ + "/frontend-id", std::to_string(kFe)));
        must(toolstack_.write(0, be_ + "/state", "1"));
        must(toolstack_.set_perms(0, be_,
                                  {{0, xen::StoreAccess::none}, {kFe, xen::StoreAccess::read}}));
        must(toolstack_.write(0, fe_ + "/backend", be_));
        must(toolstack_.write(0, fe_ + "/backend-id", "0"));
        must(toolstack_.write(0, fe_ + "/state", "1"));
        must(toolstack_.set_perms(0, fe_,
                                  {{kFe, xen::StoreAccess::none}, {0, xen::StoreAccess::read}}));
        device_ = std::make_unique<svc::XenbusDevice>(io_, platform_, factory_, kDev, log_);
        device_->on_store_failure = [](std::error_code) {
            XENHSA_FUZZ_CHECK(false, "a backend store write failed");
        };
        XENHSA_FUZZ_CHECK(device_->start().has_value(), "XenbusDevice::start");
        settle();
    }

    void run(FuzzInput& in) {
        for (int i = 0; i < kMaxOps && !in.empty(); ++i) {
            step(in);
        }
        settle();
        device_.reset();
        XENHSA_FUZZ_CHECK(factory_.live == 0, "a session outlived its device");
    }

private:
    template <class R>
    static void must(const R& r) {
        XENHSA_FUZZ_CHECK(r.has_value(), "toolstack setup");
    }

    void step(FuzzInput& in) {
        const uint8_t op = in.u8();
        switch (op % 8) {
            case 0:
            case 1:
            case 2: {  // write a key
                const uint8_t k = in.u8();
                const std::string key = k < kKeys.size() ? kKeys[k] : in.str(16);
                (void)guest_.write(0, fe_ + "/" + key, value(in));
                break;
            }
            case 3: {  // remove a key
                const uint8_t k = in.u8();
                (void)guest_.rm(0, fe_ + "/" + kKeys[k % kKeys.size()]);
                break;
            }
            case 4:
            case 5:  // a state: usually a proper one
                (void)guest_.write(0, fe_ + "/state",
                                   op % 8 == 4 ? std::to_string(in.u8() % 10) : value(in));
                settle();
                break;
            case 6:
                if ((in.u8() & 7u) == 0) {
                    (void)guest_.rm(0, fe_);  // the whole directory (a dying guest)
                } else {
                    factory_.fail_next = true;
                }
                break;
            default:
                settle();
                break;
        }
    }

    // Delivers watch events and posted handlers until nothing moves, then checks.
    void settle() {
        bool quiet = false;
        for (int round = 0; round < kSettleRounds && !quiet; ++round) {
            bool any = false;
            for (;;) {
                auto ev = platform_.store->next_event();
                XENHSA_FUZZ_CHECK(ev.has_value(), "the backend's watch queue failed");
                if (!ev.value()) {
                    break;
                }
                any = true;
                device_->on_watch(*ev.value());
            }
            io_.restart();
            any = io_.poll() != 0 || any;
            quiet = !any;
        }
        XENHSA_FUZZ_CHECK(quiet, "the xenbus state machine does not settle");
        check();
    }

    void check() {
        auto be_state = toolstack_.read(0, be_ + "/state");
        XENHSA_FUZZ_CHECK(be_state.has_value(), "the backend state node is gone");
        const auto state = svc::parse_xenbus_state(be_state.value());
        XENHSA_FUZZ_CHECK(state.has_value() && *state == device_->state(),
                          "the backend state node does not hold the device's state");
        XENHSA_FUZZ_CHECK(factory_.live == (*state == svc::XenbusState::connected ? 1 : 0),
                          "a session exists exactly while Connected");
        auto error = toolstack_.read(0, be_ + "/error");
        if (error && error.value() != last_error_) {
            last_error_ = error.value();
            check_error(last_error_);
        } else if (!error) {
            last_error_.clear();
        }
    }

    // "<errno> <key>: <reason>" for a refused key; other closes have their own texts.
    void check_error(const std::string& text) {
        const auto space = text.find(' ');
        const auto colon = text.find(": ");
        XENHSA_FUZZ_CHECK(space != std::string::npos && colon != std::string::npos && space < colon,
                          "an error node not in the xenbus convention");
        const std::string number = text.substr(0, space);
        const std::string key = text.substr(space + 1, colon - space - 1);
        const std::string reason = text.substr(colon + 2);
        XENHSA_FUZZ_CHECK(reference_parse(number, 1000).error == 0,
                          "an error node without an errno");
        if (key == "state" || key == "connect") {
            return;  // a malformed frontend state; a factory failure
        }
        XENHSA_FUZZ_CHECK(reason == "missing" || reason == "not a decimal store value" ||
                              reason == "out of range" ||
                              reason == "names a grant another key names",
                          "a key error with an unknown reason (an echoed value?)");
        const ReferenceKeys want = reference_keys(toolstack_, fe_, factory_.max_order);
        XENHSA_FUZZ_CHECK(!want.keys.has_value(), "a well-formed set of keys was refused");
        XENHSA_FUZZ_CHECK(key == want.bad_key && number == std::to_string(want.bad_errno),
                          "the error node names another key or errno than the first bad one");
    }

    xen::sim::StoreTree tree_;
    TreeStore toolstack_{tree_, 0};
    TreeStore guest_{tree_, kFe};
    xen::Platform platform_;
    boost::asio::io_context io_;
    CheckingFactory factory_;
    std::shared_ptr<spdlog::logger> log_ =
        std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_mt>());
    std::string be_ = svc::backend_dir(0, kDev);
    std::string fe_ = svc::frontend_dir(kDev);
    std::unique_ptr<svc::XenbusDevice> device_;
    std::string last_error_;
};

}  // namespace
}  // namespace xenhsa::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    xenhsa::fuzz::FuzzInput in(data, size);
    xenhsa::fuzz::differential_parse(in);
    xenhsa::fuzz::Rig rig(in);
    rig.run(in);
    return 0;
}
