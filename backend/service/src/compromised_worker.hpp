// Test builds only (XENHSA_TEST_HOOKS): what an attacker running code in a confined worker
// would try, made by the worker itself on the control op "test-attack" (control_messages.hpp),
// so that tests can prove each attempt refused by the filters or the kernel.
#ifndef XENHSA_BACKEND_SERVICE_SRC_COMPROMISED_WORKER_HPP
#define XENHSA_BACKEND_SERVICE_SRC_COMPROMISED_WORKER_HPP

#include <nlohmann/json.hpp>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::backend::service {

// Makes the attempt the request names ("attempt"; "path", "pid", "granter", "ref" or
// "remote" where it needs them) and answers {"ok":true,"attempt":A,"refused":bool,
// "errno":E,"error":text} (errno 0 when it succeeded). System calls: open, exec, socket,
// kill, tgkill, ioctl-tiocsti, fcntl-setown; through the worker's own hypervisor handles
// (`platform`): store-read, store-write (path), grant-map (granter, ref), evtchn-bind
// (remote). An attempt the allowlist forbids does not return: the kernel kills the worker.
nlohmann::json make_attack_attempt(const nlohmann::json& request, xen::Platform& platform);

}  // namespace xenhsa::backend::service

#endif
