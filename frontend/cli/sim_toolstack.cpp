#include "sim_toolstack.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <xenhsa/frontend/toolstack.hpp>
#include <xenhsa/xen/sim/client.hpp>

namespace xenhsa::frontend::cli {

Result<void> plug_sim_device(const std::string& sim_dir, xen::DomId backend, xen::DomId frontend,
                             uint32_t devid) {
    const pid_t child = fork();
    if (child < 0) {
        return std::error_code(errno, std::generic_category());
    }
    if (child == 0) {
        int code = 1;
        if (auto dom0 = xen::sim::attach(sim_dir, 0); !dom0) {
            std::fprintf(stderr, "toolstack: attach to dom0: %s\n", dom0.error().message().c_str());
        } else {
            auto added = add_device(*dom0.value().store, backend, frontend, devid);
            if (!added) {
                std::fprintf(stderr, "toolstack: add device: %s\n",
                             added.error().message().c_str());
            }
            code = added ? 0 : 2;
        }
        std::fflush(stderr);
        _exit(code);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) {
            return std::error_code(errno, std::generic_category());
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        return std::error_code(EIO, std::generic_category());
    }
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::frontend::cli
