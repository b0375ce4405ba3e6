// The peer: runs protocol commands (sem_protocol.hpp) against its own Platform. The
// same executor runs in the simulated guest (a forked child) and in the real domU.
//
// Commands (ids are the executor's handles; <rw> is "ro" or "rw"):
//   reset                              drop every share, mapping and port
//   domid                              -> <domid>
//   share <to> <pages> <rw>            -> <sid> <ref>...
//   fill <sid> <off> <len> <byte>      write into own shared pages
//   peek <sid> <off>                   -> <byte> (own shared pages)
//   end-access <sid>                   SharedPages::end_access (the share is gone on ok)
//   unshare <sid>                      drop the share (gntalloc rule: deferred if mapped)
//   map <domid> <rw> <ref>...          -> <mid>; on failure "err <e> <status>..."
//   probe-read <mid> <off>             -> <byte>, or err EFAULT (never a signal)
//   probe-write <mid> <off> <byte>     or err EFAULT
//   unmap <mid>
//   bind-unbound <remote>              -> <port>
//   bind <remote> <remote-port>        -> <port>
//   unbind <port>
//   notify <port>
//   wait-event <ms>                    -> <port> (then unmasked), or err ETIMEDOUT
//   drain-events <ms>                  -> <count>: consume events until quiet for <ms>
//   store-read <path>                  -> <hex value>
//   store-write <path> <hex value>
//   store-fill <path> <len> <byte>     write a value of <len> copies of <byte>
//   store-rm <path>
//   exit                               the serving loop ends after this reply
#ifndef XENHSA_TESTS_SEM_PEER_EXECUTOR_HPP
#define XENHSA_TESTS_SEM_PEER_EXECUTOR_HPP

#include <map>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::sem {

class PeerExecutor {
public:
    explicit PeerExecutor(xen::Platform& platform) noexcept : p_(platform) {}
    ~PeerExecutor() { reset(); }
    PeerExecutor(const PeerExecutor&) = delete;
    PeerExecutor& operator=(const PeerExecutor&) = delete;

    // One command line in, one reply line out. Never throws (bad_alloc aside).
    std::string execute(std::string_view line);
    [[nodiscard]] bool exit_requested() const noexcept { return exit_; }

private:
    std::string run(const std::vector<std::string>& w);
    void reset() noexcept;

    xen::Platform& p_;
    std::map<uint64_t, xen::SharedPages> shares_;
    std::map<uint64_t, xen::GrantMapping> maps_;
    std::map<xen::Port, xen::BoundPort> ports_;
    uint64_t next_id_ = 1;
    bool exit_ = false;
};

}  // namespace xenhsa::sem

#endif
