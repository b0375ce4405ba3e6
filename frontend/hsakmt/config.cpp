#include "config.hpp"

#include <xenhsa/proto/common.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

namespace xenhsa::frontend::hsakmt {

namespace {

constexpr const char* kDefaultFile = "/etc/xenhsa/guest.json";

// Decimal, no sign, no spaces, no leading zeros, within `max`.
// Decimal, or (where `hex_too`) hexadecimal after "0x".
std::optional<uint64_t> parse_number(const std::string& text, uint64_t max, bool hex_too) {
    const bool hex = hex_too && text.size() > 2 && text[0] == '0' && text[1] == 'x';
    if (text.empty() || (!hex && text.size() > 1 && text[0] == '0')) {
        return std::nullopt;
    }
    uint64_t value = 0;
    const char* first = text.data() + (hex ? 2 : 0);
    const auto [end, ec] = std::from_chars(first, text.data() + text.size(), value, hex ? 16 : 10);
    if (ec != std::errc{} || end != text.data() + text.size() || value > max) {
        return std::nullopt;
    }
    return value;
}

const char* env(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : nullptr;
}

// A JSON number that is a whole number in [0, max]; nlohmann converts others silently.
template <class T>
T json_uint(const nlohmann::json& value, uint64_t max) {
    if (!value.is_number_unsigned() || value.get<uint64_t>() > max) {
        throw nlohmann::json::type_error::create(
            302, "not a whole number up to " + std::to_string(max), &value);
    }
    return static_cast<T>(value.get<uint64_t>());
}

bool apply_file(const std::string& path, bool required, GuestConfig& config, std::string& error) {
    std::ifstream in(path);
    if (!in) {
        if (required) {
            error = "cannot read " + path;
        }
        return !required;
    }
    try {
        const auto doc = nlohmann::json::parse(in);
        if (!doc.is_object()) {
            error = path + ": not a JSON object";
            return false;
        }
        for (const auto& [key, value] : doc.items()) {
            if (key == "sim_dir") {
                config.sim_dir = value.get<std::string>();
            } else if (key == "domid") {
                config.domid = json_uint<uint32_t>(value, 0x7FEF);
            } else if (key == "xen") {
                config.xen = value.get<bool>();
            } else if (key == "devid") {
                config.devid = json_uint<uint32_t>(value, std::numeric_limits<uint32_t>::max());
            } else if (key == "lock_dir") {
                config.lock_dir = value.get<std::string>();
            } else if (key == "backend_domid") {
                config.backend_domid = json_uint<uint32_t>(value, 0x7FEF);
            } else if (key == "window_base") {
                config.window_base = json_uint<uint64_t>(value, XENHSA_VA_LIMIT - 1);
            } else if (key == "window_gib") {
                config.window_gib = json_uint<uint64_t>(value, 8192);
            } else if (key == "request_timeout_ms") {
                config.request_timeout_ms = json_uint<uint64_t>(value, 600000);
            } else if (key == "log_level") {
                config.log_level = value.get<std::string>();
            } else {
                error = path + ": unknown key \"" + key + "\"";
                return false;
            }
        }
    } catch (const nlohmann::json::exception& e) {
        error = path + ": " + e.what();
        return false;
    }
    return true;
}

bool apply_number(const char* name, uint64_t max, uint64_t& out, std::string& error,
                  bool hex_too = false) {
    const char* text = env(name);
    if (text == nullptr) {
        return true;
    }
    const auto value = parse_number(text, max, hex_too);
    if (!value) {
        error =
            std::string(name) + "=\"" + text + "\" is not a number up to " + std::to_string(max);
        return false;
    }
    out = *value;
    return true;
}

}  // namespace

ConfigResult load_config() {
    GuestConfig config;
    std::string error;
    const char* file = env("XENHSA_CONFIG");
    if (!apply_file(file != nullptr ? file : kDefaultFile, file != nullptr, config, error)) {
        return {std::nullopt, error};
    }
    if (const char* dir = env("XENHSA_SIM_DIR")) {
        config.sim_dir = dir;
    }
    if (const char* xen = env("XENHSA_XEN")) {
        config.xen = std::string(xen) == "1";
    }
    if (const char* level = env("XENHSA_LOG_LEVEL")) {
        config.log_level = level;
    }
    if (const char* dir = env("XENHSA_LOCK_DIR")) {
        config.lock_dir = dir;
    }
    constexpr uint64_t kUnset = std::numeric_limits<uint64_t>::max();
    uint64_t domid = config.domid ? uint64_t{*config.domid} : kUnset;
    uint64_t devid = config.devid ? uint64_t{*config.devid} : kUnset;
    uint64_t backend = config.backend_domid;
    if (!apply_number("XENHSA_DOMID", 0x7FEF, domid, error) ||
        !apply_number("XENHSA_DEVID", std::numeric_limits<uint32_t>::max(), devid, error) ||
        !apply_number("XENHSA_BACKEND_DOMID", 0x7FEF, backend, error) ||
        !apply_number("XENHSA_WINDOW_GIB", 8192, config.window_gib, error) ||
        !apply_number("XENHSA_REQUEST_TIMEOUT_MS", 600000, config.request_timeout_ms, error) ||
        !apply_number("XENHSA_WINDOW_BASE", XENHSA_VA_LIMIT - 1, config.window_base, error, true)) {
        return {std::nullopt, error};
    }
    if (domid != kUnset) {
        config.domid = static_cast<uint32_t>(domid);
    }
    if (devid != kUnset) {
        config.devid = static_cast<uint32_t>(devid);
    }
    config.backend_domid = static_cast<uint32_t>(backend);
    if (config.request_timeout_ms == 0) {
        return {std::nullopt, "the request timeout must be at least 1 ms"};
    }
    if (config.window_gib == 0) {
        return {std::nullopt, "the VA window must be at least 1 GiB"};
    }
    if (config.window_base != 0 &&
        !xenhsa_va_range_ok(config.window_base, config.window_gib << 30)) {
        return {std::nullopt,
                "the VA window at XENHSA_WINDOW_BASE must be page-aligned and fit "
                "below the VA limit"};
    }
    if (config.xen == !config.sim_dir.empty()) {
        return {std::nullopt, config.xen ? "both XENHSA_XEN and XENHSA_SIM_DIR are set"
                                         : "no xenhsa device configured: set XENHSA_SIM_DIR "
                                           "(with XENHSA_DOMID) or XENHSA_XEN=1, or run "
                                           "the program under xenhsa-run"};
    }
    if (!config.sim_dir.empty() && !config.domid) {
        return {std::nullopt, "XENHSA_SIM_DIR needs XENHSA_DOMID (the guest's domain)"};
    }
    return {config, {}};
}

}  // namespace xenhsa::frontend::hsakmt
