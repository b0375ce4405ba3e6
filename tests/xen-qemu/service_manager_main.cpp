// xen_tier_service_manager NOTIFY_SOCKET PIDFILE LOG PROGRAM ARGS...: what systemd does for
// xenhsa-backend.service (Type=notify, FileDescriptorStoreMax=, Restart=on-failure) in the
// tier's busybox initramfs, which has no systemd. It starts PROGRAM with a notify socket and
// file-descriptor store (tests/support/service_manager.hpp), its stderr appended to LOG,
// and writes its pid to PIDFILE; when a signal kills it, it starts it again with the fds
// it kept, as after a crash. It exits with PROGRAM's status once PROGRAM exits by itself.
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "service_manager.hpp"

namespace {

constexpr int kMaxRestarts = 8;

bool write_pidfile(const std::filesystem::path& file, pid_t pid) {
    const std::filesystem::path tmp = file.string() + ".new";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << pid << "\n";
        if (!out) {
            return false;
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, file, ec);
    return !ec;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: %s NOTIFY_SOCKET PIDFILE LOG PROGRAM [ARGS...]\n", argv[0]);
        return 2;
    }
    const std::filesystem::path pidfile = argv[2];
    const std::filesystem::path log = argv[3];
    const std::vector<std::string> args(argv + 4, argv + argc);
    xenhsa::testing::ServiceManager manager(argv[1]);
    for (int start = 0; start <= kMaxRestarts; ++start) {
        const pid_t pid = manager.start(args, log);
        if (pid < 0 || !write_pidfile(pidfile, pid)) {
            std::fprintf(stderr, "xen_tier_service_manager: cannot start %s\n", args[0].c_str());
            return 1;
        }
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0) {
            if (errno != EINTR) {
                return 1;
            }
        }
        if (!WIFSIGNALED(status)) {
            return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        }
        std::fprintf(stderr,
                     "xen_tier_service_manager: %s (pid %d) killed by signal %d; "
                     "starting it again with %zu kept fds\n",
                     args[0].c_str(), pid, WTERMSIG(status), manager.kept().size());
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    std::fprintf(stderr, "xen_tier_service_manager: %s killed %d times: giving up\n",
                 args[0].c_str(), kMaxRestarts + 1);
    return 1;
}
