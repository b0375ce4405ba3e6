#include <array>
#include <xenhsa/backend/service/store_tx.hpp>
#include <xenhsa/backend/service/xenbus.hpp>

namespace xenhsa::backend::service {

namespace {
constexpr std::array<std::string_view, 9> kStateNames{
    "Unknown", "Initialising", "InitWait",      "Initialised", "Connected",
    "Closing", "Closed",       "Reconfiguring", "Reconfigured"};

}  // namespace

std::string_view to_string(XenbusState state) noexcept {
    const auto i = static_cast<std::size_t>(state);
    return i < kStateNames.size() ? kStateNames[i] : std::string_view{"Invalid"};
}

std::optional<XenbusState> parse_xenbus_state(std::string_view value) noexcept {
    const auto v = xen::parse_store_uint(value, kStateNames.size() - 1);
    if (!v) {
        return std::nullopt;
    }
    return static_cast<XenbusState>(v.value());
}

std::string state_value(XenbusState state) { return std::to_string(static_cast<unsigned>(state)); }

std::string to_string(const DeviceId& id) {
    return std::to_string(id.fe) + "/" + std::to_string(id.devid);
}

std::string domain_home(xen::DomId domid) { return "/local/domain/" + std::to_string(domid); }

std::string backend_root(xen::DomId be) { return domain_home(be) + "/backend/xenhsa"; }

std::string backend_dir(xen::DomId be, const DeviceId& id) {
    return backend_root(be) + "/" + std::to_string(id.fe) + "/" + std::to_string(id.devid);
}

std::string frontend_dir(const DeviceId& id) {
    return domain_home(id.fe) + "/device/xenhsa/" + std::to_string(id.devid);
}

xen::Result<std::optional<XenbusState>> read_state(xen::Store& store, std::string_view dir) {
    auto value = store.read(xen::kNoTx, std::string(dir) + "/state");
    if (!value) {
        if (value.error() == std::errc::no_such_file_or_directory) {
            return std::optional<XenbusState>{};
        }
        return value.error();
    }
    const auto state = parse_xenbus_state(value.value());
    if (!state) {
        return xen::errc(std::errc::invalid_argument);
    }
    return std::optional<XenbusState>{*state};
}

xen::Result<void> write_state(xen::Store& store, std::string_view dir, XenbusState state) {
    return store.write(xen::kNoTx, std::string(dir) + "/state", state_value(state));
}

xen::Result<bool> write_if_present(
    xen::Store& store, std::string_view dir,
    std::span<const std::pair<std::string_view, std::string>> values) {
    return in_transaction(store, [&](xen::TxId tx) -> xen::Result<bool> {
        auto probe = store.directory(tx, dir);
        if (!probe) {
            if (probe.error() == std::errc::no_such_file_or_directory) {
                return false;
            }
            return probe.error();
        }
        for (const auto& [key, value] : values) {
            auto written = store.write(tx, std::string(dir) + "/" + std::string(key), value);
            if (!written) {
                return written.error();
            }
        }
        return true;
    });
}

xen::Result<bool> write_state_if_present(xen::Store& store, std::string_view dir,
                                         XenbusState state) {
    const std::pair<std::string_view, std::string> value{"state", state_value(state)};
    return write_if_present(store, dir, std::span(&value, 1));
}

}  // namespace xenhsa::backend::service
