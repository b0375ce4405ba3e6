// The JSON messages of the control socket (xenhsa-ctl ↔ supervisor) and of the
// supervisor ↔ worker channel. One object per line.
//
//   request                          answer
//   {"op":"status"}                  {"ok":true,"domains":[<device>...],
//                                     "confinement_violations":N}  (N: workers the seccomp
//                                     filter killed since the backend started)
//   {"op":"revoke","domid":N}        {"ok":true,"revoked":[<device>...]} (ok false: no such
//                                    domain)
//   {"op":"revoke","domid":N,        the same for one MAP or LEND handle (ok false when no
//    "handle":H}                     device of the domain has it); a worker answers with
//                                    "revoked_handle": true|false
//   {"op":"quotas","set":["k=v",..],  {"ok":true,"updated":[<device>...]}: new limits for
//    "domid":N (optional)}             the devices (of domain N) and their later workers;
//                                      a guest over them loses its newest MAPs/LENDs
//                                      (<device> then has "revoked": count)
//   {"op":"ceilings",                {"ok":true}: (worker only) the device's pool shares as
//    "max_map_pages":M,              bounds on its quotas (pool_shares.hpp), for this and
//    "max_lend_pages":L}             later sessions
//   {"op":"shutdown"}  (worker only) no answer: the worker ends
//   {"op":"test-forbidden-syscall","domid":N}  test builds: that domain's worker makes a
//                                    forbidden system call (no answer: seccomp kills it)
//   {"op":"test-attack","domid":N,   test builds: that domain's worker attempts A (open,
//    "attempt":A,...}                exec, socket, kill, tgkill, ioctl-tiocsti,
//                                    fcntl-setown): {"ok":true,"refused":bool,"errno":E}
//   {"op":"fault-plan","worker":P}   test builds: seam faults (fault_plan.hpp) for the next
//   {"op":"fault-plan","supervisor":P}  worker started, or for the supervisor
// Every answer to a worker request echoes the request's "id". A worker also reports each
// new backend state unasked: {"event":"state","state":"Connected"}.
//
//   <device> = {"domid":N,"devid":D,"state":"Connected","mapped_pages":..,
//               "pinned_pages":..,"lent_pages":..,"queues":..,"events":..,"handles":..,
//               "doorbells_forwarded":..,"doorbell_polls":..,
//               "error":"...","worker_pid":P,"confinement_violations":V,
//               "lend_share":S,"map_share":M,"held_pages":H}
//               (error and worker_pid only when known; the doorbell counters optional on
//                reading; confinement_violations: workers of this device the seccomp
//                filter killed, only when nonzero; the shares of the backend's page pools
//                and the lent pages the guest still held from earlier connections when
//                its current one began, from the supervisor, for devices it serves)
#ifndef XENHSA_BACKEND_SERVICE_CONTROL_MESSAGES_HPP
#define XENHSA_BACKEND_SERVICE_CONTROL_MESSAGES_HPP

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/backend/service/xenbus_device.hpp>

namespace xenhsa::backend::service {

namespace op {
inline constexpr std::string_view status = "status";
inline constexpr std::string_view revoke = "revoke";
inline constexpr std::string_view shutdown = "shutdown";
inline constexpr std::string_view quotas = "quotas";
inline constexpr std::string_view ceilings = "ceilings";
// Test builds only (XENHSA_TEST_HOOKS): the worker of "domid" makes a system call its
// seccomp filter forbids, which must kill it.
inline constexpr std::string_view test_forbidden_syscall = "test-forbidden-syscall";
// Test builds only: {"op":"test-attack","domid":N,"attempt":A,("path":P),("pid":Q)}: the
// worker of N makes attempt A as an attacker running code in it would
// (compromised_worker.hpp); its answer, or an error when the attempt killed it.
inline constexpr std::string_view test_attack = "test-attack";
// Test builds only: {"op":"fault-plan","worker":PLAN} gives the next worker started that
// fault plan (fault_plan.hpp), {"op":"fault-plan","supervisor":PLAN} arms the supervisor's
// own; {"ok":true} or an error.
inline constexpr std::string_view fault_plan = "fault-plan";
}  // namespace op

nlohmann::json to_json(const DeviceStatus& status);
// The inverse for what a worker sent; nullopt when the shape is wrong.
std::optional<DeviceStatus> device_status_from_json(const nlohmann::json& j);

// Never-throwing accessors for untrusted JSON.
std::optional<std::string_view> json_string(const nlohmann::json& j, std::string_view key);
std::optional<uint64_t> json_uint(const nlohmann::json& j, std::string_view key);
std::optional<bool> json_bool(const nlohmann::json& j, std::string_view key);

nlohmann::json error_reply(std::string_view message);

// The "set" list of a quotas request: at most 64 strings of at most 256 bytes.
std::optional<std::vector<std::string>> json_settings(const nlohmann::json& j);

}  // namespace xenhsa::backend::service

#endif
