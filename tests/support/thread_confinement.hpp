// What /proc says of each thread of a process (seccomp, no_new_privs, capabilities and
// identity are per thread, and /proc/<pid>/status shows only the thread-group leader).
#ifndef XENHSA_TESTS_SUPPORT_THREAD_CONFINEMENT_HPP
#define XENHSA_TESTS_SUPPORT_THREAD_CONFINEMENT_HPP

#include <gtest/gtest.h>
#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace xenhsa::testing {

// The fields of a /proc status file, by name ("Seccomp" -> "2").
using ProcFields = std::map<std::string, std::string>;
ProcFields proc_fields(const std::filesystem::path& status_file);

// Each thread's fields (/proc/<pid>/task/<tid>/status), by tid.
std::map<pid_t, ProcFields> thread_fields(pid_t pid);

// Every thread of `pid` (at least `min_threads` of them) runs as a confined worker: a
// seccomp filter (mode 2), no_new_privs, no effective, permitted or ambient capability
// and, when this test runs as root, an empty bounding set and no uid 0. The failure names
// each thread and field that differ.
::testing::AssertionResult every_thread_confined(pid_t pid, std::size_t min_threads = 1);

// The one identity of every thread of `pid`: the uid when each thread's real, effective,
// saved and filesystem uid and all four gids are that one number; nullopt otherwise (or
// when the process is gone).
std::optional<uid_t> sole_identity(pid_t pid);

}  // namespace xenhsa::testing

#endif
