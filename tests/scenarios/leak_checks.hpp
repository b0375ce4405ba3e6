// Leak and crash checks of the reliability tier (tests/faults, tests/soak): what a
// process holds, and the reports a sanitizer leaves in a log.
#ifndef XENHSA_TESTS_SCENARIOS_LEAK_CHECKS_HPP
#define XENHSA_TESTS_SCENARIOS_LEAK_CHECKS_HPP

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace xenhsa::testing::scenarios {

// What a process holds: open fds, threads, and mappings of files, memfds and devices
// (lines of /proc/PID/maps with a path). Anonymous mappings are left out: under ASan the
// heap grows for long (freed memory waits in the quarantine), and LSan finds heap leaks.
struct Resources {
    std::size_t fds = 0;
    std::size_t threads = 0;
    std::size_t mappings = 0;
};
Resources resources_of(pid_t pid);

// Whether `now` holds no more than `base`: fds and threads exactly, mappings within a few
// (a library may map a locale or cache file late; a leak per run shows as dozens). The
// message if not.
std::optional<std::string> grew(const Resources& base, const Resources& now);

// The first sanitizer report (ASan, LSan, UBSan, TSan) in a log, by its name.
std::optional<std::string> sanitizer_report(std::string_view log);

}  // namespace xenhsa::testing::scenarios

#endif
