#include <limits>
#include <string>
#include <xenhsa/backend/service/control_messages.hpp>

namespace xenhsa::backend::service {

nlohmann::json to_json(const DeviceStatus& s) {
    nlohmann::json j = {
        {"domid", s.id.fe},
        {"devid", s.id.devid},
        {"state", std::string(to_string(s.state))},
        {"mapped_pages", s.stats.mapped_pages},
        {"pinned_pages", s.stats.pinned_pages},
        {"lent_pages", s.stats.lent_pages},
        {"queues", s.stats.queues},
        {"events", s.stats.events},
        {"handles", s.stats.handles},
        {"doorbells_forwarded", s.stats.doorbells_forwarded},
        {"doorbell_polls", s.stats.doorbell_polls},
    };
    if (!s.error.empty()) {
        j["error"] = s.error;
    }
    return j;
}

std::optional<std::string_view> json_string(const nlohmann::json& j, std::string_view key) {
    if (!j.is_object()) {
        return std::nullopt;
    }
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string()) {
        return std::nullopt;
    }
    return std::string_view(it->get_ref<const std::string&>());
}

std::optional<uint64_t> json_uint(const nlohmann::json& j, std::string_view key) {
    if (!j.is_object()) {
        return std::nullopt;
    }
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned()) {
        return std::nullopt;
    }
    return it->get<uint64_t>();
}

std::optional<bool> json_bool(const nlohmann::json& j, std::string_view key) {
    if (!j.is_object()) {
        return std::nullopt;
    }
    const auto it = j.find(key);
    if (it == j.end() || !it->is_boolean()) {
        return std::nullopt;
    }
    return it->get<bool>();
}

std::optional<DeviceStatus> device_status_from_json(const nlohmann::json& j) {
    DeviceStatus s;
    const auto domid = json_uint(j, "domid");
    const auto devid = json_uint(j, "devid");
    const auto state = json_string(j, "state");
    if (!domid || !devid || !state || *domid > std::numeric_limits<xen::DomId>::max() ||
        *devid > std::numeric_limits<uint32_t>::max()) {
        return std::nullopt;
    }
    s.id = {static_cast<xen::DomId>(*domid), static_cast<uint32_t>(*devid)};
    s.state = XenbusState::unknown;
    for (unsigned i = 0; i <= static_cast<unsigned>(XenbusState::reconfigured); ++i) {
        if (to_string(static_cast<XenbusState>(i)) == *state) {
            s.state = static_cast<XenbusState>(i);
        }
    }
    const std::pair<const char*, uint64_t*> counters[] = {
        {"mapped_pages", &s.stats.mapped_pages},
        {"pinned_pages", &s.stats.pinned_pages},
        {"lent_pages", &s.stats.lent_pages},
        {"queues", &s.stats.queues},
        {"events", &s.stats.events},
        {"handles", &s.stats.handles},
    };
    for (const auto& [key, field] : counters) {
        const auto v = json_uint(j, key);
        if (!v) {
            return std::nullopt;
        }
        *field = *v;
    }
    // Newer counters: optional, so that a status from an older worker still parses.
    const std::pair<const char*, uint64_t*> optional_counters[] = {
        {"doorbells_forwarded", &s.stats.doorbells_forwarded},
        {"doorbell_polls", &s.stats.doorbell_polls},
    };
    for (const auto& [key, field] : optional_counters) {
        if (j.is_object() && j.contains(key) && !json_uint(j, key)) {
            return std::nullopt;  // there, but not a count
        }
        *field = json_uint(j, key).value_or(0);
    }
    if (const auto error = json_string(j, "error")) {
        s.error = std::string(*error);
    }
    return s;
}

std::optional<std::vector<std::string>> json_settings(const nlohmann::json& j) {
    if (!j.is_object()) {
        return std::nullopt;
    }
    const auto it = j.find("set");
    if (it == j.end() || !it->is_array() || it->size() > 64) {
        return std::nullopt;
    }
    std::vector<std::string> settings;
    for (const auto& item : *it) {
        if (!item.is_string() || item.get_ref<const std::string&>().size() > 256) {
            return std::nullopt;
        }
        settings.push_back(item.get<std::string>());
    }
    return settings;
}

nlohmann::json error_reply(std::string_view message) {
    return {{"ok", false}, {"error", std::string(message)}};
}

}  // namespace xenhsa::backend::service
