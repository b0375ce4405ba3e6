// A real-Xen worker's xenstore (docs/threat-model.md, "A compromised worker"): dom0's
// xenstore connections are privileged (any path, any domain's), so a worker gets none.
// Its libxenstore connects instead to a proxy, a process it forks before it opens
// anything, which opens a connection to xenstored for each of the worker's and relays
// whole messages both ways, refusing (an XS_ERROR "EACCES" reply, nothing sent on) every
// request but those on the worker's guest's two directories: the frontend's
// /local/domain/<fe>/device/xenhsa and this domain's backend
// /local/domain/<self>/backend/xenhsa/<fe>, plus reading this domain's "domid",
// transactions, and watches on those and on @releaseDomain and @introduceDomain.
//
// Set-up: the proxy listens on a socket in a fresh root-only directory; the worker
// connects its stores there (XENSTORED_PATH, which libxenstore reads), then seals the
// proxy, which removes the socket, stops accepting and confines itself as the grant
// broker does (root without a capability, no-new-privs, non-dumpable, its own filter:
// read, write, poll, exit). It ends when the worker's connections close.
#ifndef XENHSA_BACKEND_SERVICE_SRC_STORE_PROXY_HPP
#define XENHSA_BACKEND_SERVICE_SRC_STORE_PROXY_HPP

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::backend::service {

// What the proxy lets through.
class StoreRules {
public:
    StoreRules(xen::DomId self, xen::DomId guest);
    // nullopt: pass it on; else the errno of the refusal. `payload`: the message's, as
    // read (its length checked against XENSTORE_PAYLOAD_MAX by the caller).
    [[nodiscard]] std::optional<int> refusal(uint32_t type, std::string_view payload) const;

private:
    [[nodiscard]] bool path_allowed(std::string_view path, bool watch) const;

    std::string home_;  // /local/domain/<self>
    std::string frontend_;
    std::string backend_;
};

class StoreProxy {
public:
    // Forks the proxy for `guest`'s worker (it reads this domain's id from xenstored).
    static xen::Result<StoreProxy> start(xen::DomId guest);
    StoreProxy(StoreProxy&& other) noexcept;
    StoreProxy& operator=(StoreProxy&&) = delete;
    StoreProxy(const StoreProxy&) = delete;
    ~StoreProxy();

    // Where to connect until seal() (XENSTORED_PATH).
    [[nodiscard]] const std::string& path() const noexcept { return path_; }
    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    // Every connection of the worker's is made: the proxy stops accepting.
    void seal() noexcept;

private:
    StoreProxy(std::string path, int seal_fd, pid_t pid) noexcept
        : path_(std::move(path)), seal_fd_(seal_fd), pid_(pid) {}

    std::string path_;
    int seal_fd_ = -1;
    pid_t pid_ = 0;
};

}  // namespace xenhsa::backend::service

#endif
