#include <xenhsa/proto/doorbell.h>
#include <xenhsa/proto/hello.h>
#include <xenhsa/proto/ring.h>

#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <vector>
#include <xenhsa/backend/core/quotas.hpp>

namespace xenhsa::backend::core {
namespace {

struct Field {
    std::string_view key;
    uint64_t min;
    uint64_t max;
    uint64_t (*get)(const Quotas&);
    void (*set)(Quotas&, uint64_t);
};

#define XENHSA_QUOTA_FIELD(name, lo, hi)                                        \
    Field {                                                                     \
#name, (lo), (hi), [](const Quotas &q) -> uint64_t { return q.name; },        \
            [](Quotas &q, uint64_t v) { q.name = static_cast<decltype(q.name)>(v); } \
    }

const std::array<Field, 9> kFields = {
    XENHSA_QUOTA_FIELD(max_map_pages, 0, UINT32_MAX),
    XENHSA_QUOTA_FIELD(max_lend_pages, 0, UINT32_MAX),
    XENHSA_QUOTA_FIELD(max_handles, 1, 1u << 16),  // tables are sized once
    // The largest ring has 128 slots and max_in_flight stays below ring_slots.
    XENHSA_QUOTA_FIELD(max_in_flight, 1, XENHSA_RING_SLOTS(XENHSA_RING_MAX_ORDER) - 1),
    XENHSA_QUOTA_FIELD(max_pinned_pages, 0, 1ull << 36),
    XENHSA_QUOTA_FIELD(max_alloc_bytes, 0, XENHSA_VA_WINDOW_MAX),
    XENHSA_QUOTA_FIELD(max_queues, 0, XENHSA_DOORBELLS_PER_PAGE),
    XENHSA_QUOTA_FIELD(max_events, 0, 1u << 16),
    XENHSA_QUOTA_FIELD(ring_budget, 1, 4096),
};

#undef XENHSA_QUOTA_FIELD

const Field* find_field(std::string_view key) noexcept {
    for (const Field& f : kFields) {
        if (f.key == key) {
            return &f;
        }
    }
    return nullptr;
}

ConfigError error(std::string text) { return ConfigError{std::move(text)}; }

ConfigResult<void> set_checked(Quotas& q, const Field& f, uint64_t value) {
    if (value < f.min || value > f.max) {
        return error("quota " + std::string(f.key) + ": " + std::to_string(value) +
                     " is out of range [" + std::to_string(f.min) + ", " + std::to_string(f.max) +
                     "]");
    }
    f.set(q, value);
    return boost::outcome_v2::success();
}

// Digits only, no sign, no spaces, no leading zero except "0"; nullopt-like false on
// anything else or on overflow of uint64_t.
bool parse_decimal(std::string_view text, uint64_t& out) noexcept {
    if (text.empty() || (text.size() > 1 && text[0] == '0')) {
        return false;
    }
    uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') {
            return false;
        }
        const auto digit = static_cast<uint64_t>(c - '0');
        if (value > (UINT64_MAX - digit) / 10) {
            return false;
        }
        value = value * 10 + digit;
    }
    out = value;
    return true;
}

}  // namespace

ConfigResult<Quotas> quotas_from_json(const nlohmann::json& object, const Quotas& base) {
    try {
        if (!object.is_object()) {
            return error("quota config: expected a JSON object");
        }
        Quotas q = base;
        for (const auto& [key, value] : object.items()) {
            const Field* f = find_field(key);
            if (f == nullptr) {
                return error("quota config: unknown key \"" + key + "\"");
            }
            if (!value.is_number_unsigned()) {
                return error("quota " + key + ": expected a non-negative integer");
            }
            auto set = set_checked(q, *f, value.get<uint64_t>());
            if (!set) {
                return set.error();
            }
        }
        return q;
    } catch (const std::exception& e) {
        return error(std::string("quota config: ") + e.what());
    }
}

ConfigResult<Quotas> parse_quotas(std::string_view json_text, const Quotas& base) {
    try {
        // Duplicate keys would silently take the last value: refuse them.
        std::vector<std::set<std::string>> seen;
        std::string duplicate;
        auto on_event = [&](int /*depth*/, nlohmann::json::parse_event_t event,
                            nlohmann::json& parsed) {
            using E = nlohmann::json::parse_event_t;
            if (event == E::object_start) {
                seen.emplace_back();
            } else if (event == E::object_end && !seen.empty()) {
                seen.pop_back();
            } else if (event == E::key && !seen.empty()) {
                const auto& key = parsed.get_ref<const std::string&>();
                if (!seen.back().insert(key).second && duplicate.empty()) {
                    duplicate = key;
                }
            }
            return true;
        };
        nlohmann::json parsed = nlohmann::json::parse(json_text.begin(), json_text.end(), on_event,
                                                      /*allow_exceptions=*/false);
        if (parsed.is_discarded()) {
            return error("quota config: not valid JSON");
        }
        if (!duplicate.empty()) {
            return error("quota config: duplicate key \"" + duplicate + "\"");
        }
        return quotas_from_json(parsed, base);
    } catch (const std::exception& e) {
        return error(std::string("quota config: ") + e.what());
    }
}

ConfigResult<Quotas> load_quotas_file(const std::filesystem::path& path, const Quotas& base) {
    try {
        std::ifstream in(path, std::ios::binary);
        if (!in) {
            return error("quota config: cannot read " + path.string());
        }
        std::ostringstream text;
        text << in.rdbuf();
        if (in.bad()) {
            return error("quota config: cannot read " + path.string());
        }
        return parse_quotas(text.str(), base);
    } catch (const std::exception& e) {
        return error(std::string("quota config: ") + e.what());
    }
}

ConfigResult<void> apply_override(Quotas& quotas, std::string_view key_eq_value) {
    try {
        const auto eq = key_eq_value.find('=');
        if (eq == std::string_view::npos) {
            return error("quota override \"" + std::string(key_eq_value) +
                         "\": expected key=value");
        }
        const std::string_view key = key_eq_value.substr(0, eq);
        const std::string_view text = key_eq_value.substr(eq + 1);
        const Field* f = find_field(key);
        if (f == nullptr) {
            return error("quota override: unknown key \"" + std::string(key) + "\"");
        }
        uint64_t value = 0;
        if (!parse_decimal(text, value)) {
            return error("quota override " + std::string(key) + ": \"" + std::string(text) +
                         "\" is not a decimal number");
        }
        return set_checked(quotas, *f, value);
    } catch (const std::exception& e) {
        return error(std::string("quota override: ") + e.what());
    }
}

nlohmann::json quotas_to_json(const Quotas& quotas) {
    nlohmann::json out = nlohmann::json::object();
    for (const Field& f : kFields) {
        out[std::string(f.key)] = f.get(quotas);
    }
    return out;
}

}  // namespace xenhsa::backend::core
