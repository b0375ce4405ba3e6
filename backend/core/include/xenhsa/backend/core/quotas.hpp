// One guest's limits: a struct of defaults, loaded from a JSON object and overridden by
// "key=value" strings (the service layer's CLI). Parsing is strict: unknown or duplicate
// keys, non-integers, signs, spaces, leading zeros and out-of-range values are errors.
// Errors are values; no exception escapes.
#ifndef XENHSA_BACKEND_CORE_QUOTAS_HPP
#define XENHSA_BACKEND_CORE_QUOTAS_HPP

#include <boost/outcome/policy/terminate.hpp>
#include <boost/outcome/result.hpp>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace xenhsa::backend::core {

struct Quotas {
    uint32_t max_map_pages = 262144;        // MAPped pages at once (1 GiB); HELLO reports it
    uint32_t max_lend_pages = 65536;        // pages lent at once (256 MiB); HELLO reports it
    uint32_t max_handles = 4096;            // live handles of every kind; HELLO reports it
    uint32_t max_in_flight = 127;           // requests held (pending waits); < ring_slots
    uint64_t max_pinned_pages = 1u << 20;   // GpuContext: pages registered
    uint64_t max_alloc_bytes = 1ull << 32;  // GpuContext: ALLOC bytes
    uint32_t max_queues = 64;               // GpuContext: live queues
    uint32_t max_events = 1024;             // GpuContext: live events
    uint32_t ring_budget = 64;              // requests served per wake-up (not a wire value)
};

struct ConfigError {
    std::string message;
};

// Misuse (reading the value of an error) terminates instead of throwing.
template <class T>
using ConfigResult =
    boost::outcome_v2::result<T, ConfigError, boost::outcome_v2::policy::terminate>;

// `object` must be a JSON object whose keys are Quotas field names; fields it does not
// name keep their value from `base`.
ConfigResult<Quotas> quotas_from_json(const nlohmann::json& object, const Quotas& base = {});
// The same from JSON text (duplicate keys are refused).
ConfigResult<Quotas> parse_quotas(std::string_view json_text, const Quotas& base = {});
ConfigResult<Quotas> load_quotas_file(const std::filesystem::path& path, const Quotas& base = {});
// "max_handles=128": a known key, '=', a decimal number without sign, spaces or leading
// zeros (only "0" starts with 0), within the key's range.
ConfigResult<void> apply_override(Quotas& quotas, std::string_view key_eq_value);

nlohmann::json quotas_to_json(const Quotas& quotas);

}  // namespace xenhsa::backend::core

#endif
