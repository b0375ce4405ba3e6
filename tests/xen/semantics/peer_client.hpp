// The test's side of the peer protocol: one typed call per command (peer_executor.hpp).
// An error is the peer's errno, or the transport's (ETIMEDOUT, EPIPE, EPROTO).
#ifndef XENHSA_TESTS_SEM_PEER_CLIENT_HPP
#define XENHSA_TESTS_SEM_PEER_CLIENT_HPP

#include <chrono>
#include <span>
#include <string>
#include <vector>

#include "sem_env.hpp"

namespace xenhsa::sem {

struct PeerShare {
    uint64_t id = 0;
    std::vector<xen::GrantRef> refs;
};

struct PeerMapFailure {
    std::error_code error;
    std::vector<int> status;
};

class Peer {
public:
    explicit Peer(SemEnv& env) noexcept : env_(env) {}

    xen::Result<void> reset();
    xen::Result<xen::DomId> domid();

    // `notify`: gntalloc's unmap notification on the peer's own mapping (ShareSpec).
    xen::Result<PeerShare> share(xen::DomId to, std::size_t pages, bool writable,
                                 const xen::UnmapNotify& notify = {});
    xen::Result<void> fill(uint64_t sid, std::size_t off, std::size_t len, uint8_t byte);
    xen::Result<uint8_t> peek(uint64_t sid, std::size_t off);
    xen::Result<void> end_access(uint64_t sid);
    xen::Result<void> unshare(uint64_t sid);

    xen::Result<uint64_t> map(xen::DomId from, std::span<const xen::GrantRef> refs, bool writable,
                              PeerMapFailure* failure = nullptr);
    xen::Result<uint8_t> probe_read(uint64_t mid, std::size_t off);
    xen::Result<void> probe_write(uint64_t mid, std::size_t off, uint8_t byte);
    xen::Result<void> unmap(uint64_t mid);

    xen::Result<xen::Port> bind_unbound(xen::DomId remote);
    xen::Result<xen::Port> bind(xen::DomId remote, xen::Port remote_port);
    xen::Result<void> unbind(xen::Port port);
    xen::Result<void> notify(xen::Port port);
    xen::Result<xen::Port> wait_event(std::chrono::milliseconds timeout);
    xen::Result<int> drain_events(std::chrono::milliseconds quiet);

    xen::Result<std::string> store_read(std::string_view path);
    xen::Result<void> store_write(std::string_view path, std::string_view value);
    xen::Result<void> store_fill(std::string_view path, std::size_t len, char byte);
    xen::Result<void> store_rm(std::string_view path);

private:
    // The reply's words after "ok"; an "err" reply becomes its errno (and its words in
    // `err_words` if given).
    xen::Result<std::vector<std::string>> call(const std::string& line,
                                               std::vector<std::string>* err_words = nullptr);
    template <class T>
    xen::Result<T> call_num(const std::string& line);

    SemEnv& env_;
};

}  // namespace xenhsa::sem

#endif
