// What systemd does for a Type=notify service with a file-descriptor store, as far as
// xenhsa-backend uses it: a NOTIFY_SOCKET whose FDSTORE=1 messages keep the fds they carry
// under their FDNAME (FDSTOREREMOVE=1 drops one), and a start that hands the kept fds back
// as systemd does after Restart=on-failure (from fd 3 on, with LISTEN_FDS, LISTEN_FDNAMES
// and LISTEN_PID). A thread reads the socket as messages come, as systemd does, so the
// service never blocks on it.
#ifndef XENHSA_TESTS_SUPPORT_SERVICE_MANAGER_HPP
#define XENHSA_TESTS_SUPPORT_SERVICE_MANAGER_HPP

#include <sys/types.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <xenhsa/xen/sim/unique_fd.hpp>

namespace xenhsa::testing {

class ServiceManager {
public:
    // The notify socket is created at `socket_path`.
    explicit ServiceManager(std::filesystem::path socket_path);
    ~ServiceManager();
    ServiceManager(const ServiceManager&) = delete;
    ServiceManager& operator=(const ServiceManager&) = delete;

    // Starts args[0] (a path) with the kept fds, its stderr appended to `log`; the child
    // dies with the test (PR_SET_PDEATHSIG). Its pid, or -1.
    pid_t start(const std::vector<std::string>& args, const std::filesystem::path& log);
    // The names of the fds kept now.
    [[nodiscard]] std::vector<std::string> kept() const;
    // Keeps `fd` under `name`, as an FDSTORE=1 message would.
    void keep(const std::string& name, xen::sim::UniqueFd fd);

private:
    void read_messages();

    std::filesystem::path path_;
    xen::sim::UniqueFd socket_;
    std::atomic<bool> stopping_{false};
    mutable std::mutex mutex_;
    std::map<std::string, xen::sim::UniqueFd> kept_;
    std::thread reader_;
};

}  // namespace xenhsa::testing

#endif
