#include "vm.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace xenhsa::xen::sim::client {

void unmap(std::byte* at, std::size_t len) noexcept {
    if (::munmap(at, len) != 0) fatal("munmap", errno);
}

Result<void> map_runs(std::byte* base, std::size_t pages, std::span<const wire::Message> replies,
                      int prot, std::size_t& failed_page) noexcept {
    std::size_t done = 0;
    failed_page = 0;
    for (const wire::Message& reply : replies) {
        if (!reply.body_is<wire::MapRep>()) return errno_code(EPROTO);
        const auto rep = reply.body_as<wire::MapRep>();
        if (reply.tail.size() != std::size_t{rep.runs} * sizeof(wire::Run)) {
            return errno_code(EPROTO);
        }
        for (uint32_t i = 0; i < rep.runs; ++i) {
            wire::Run run{};
            std::memcpy(&run, reply.tail.data() + i * sizeof run, sizeof run);
            failed_page = done;
            if (run.fd_index >= reply.fds.size() || run.pages == 0 || run.pages > pages - done ||
                run.page_offset > std::numeric_limits<off_t>::max() / kPageSize) {
                return errno_code(EPROTO);
            }
            void* p = ::mmap(base + done * kPageSize, run.pages * kPageSize, prot,
                             MAP_SHARED | MAP_FIXED, reply.fds[run.fd_index].get(),
                             static_cast<off_t>(run.page_offset * kPageSize));
            if (p == MAP_FAILED) return errno_code(errno);
            done += run.pages;
        }
    }
    if (done != pages) {
        failed_page = done;
        return errno_code(EPROTO);
    }
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::xen::sim::client
