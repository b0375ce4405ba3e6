// One connection of the client library to the xenhsa-sim daemon: synchronous requests,
// and the messages the daemon sends on its own (seq 0), handed to an async handler.
#ifndef XENHSA_XEN_SIM_CLIENT_CHANNEL_HPP
#define XENHSA_XEN_SIM_CLIENT_CHANNEL_HPP

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>
#include <xenhsa/xen/sim/wire_io.hpp>

namespace xenhsa::xen::sim::client {

class Channel {
public:
    using AsyncHandler = std::function<void(wire::Message&&)>;

    // Connects to DIR/xenhsa-sim.sock and says hello (ESRCH: no such domain to attach).
    // `acting_for` (attached to dom0 only): the guest this connection may act for, 0 none.
    static Result<Channel> open(const std::filesystem::path& dir, wire::Role role, DomId domid,
                                DomId acting_for = 0);

    Channel(Channel&&) noexcept = default;
    Channel& operator=(Channel&&) noexcept = default;
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;
    ~Channel() = default;

    [[nodiscard]] int fd() const noexcept { return sock_.get(); }
    [[nodiscard]] DomId domid() const noexcept { return domid_; }
    [[nodiscard]] bool privileged() const noexcept { return privileged_; }
    // Async messages (received while waiting for a reply, or by poll_async()).
    void on_async(AsyncHandler handler) { async_ = std::move(handler); }

    // Sends a request and returns its reply; the reply's error stays in its header (see
    // check()). Transport failures are errors: EPIPE once the daemon is gone or dropped us.
    Result<wire::Message> call(wire::Op op, std::span<const std::byte> body,
                               std::span<const std::byte> tail = {},
                               std::vector<UniqueFd> fds = {});
    // The same for requests answered by several messages (kFlagMore on all but the last).
    Result<std::vector<wire::Message>> call_multi(wire::Op op, std::span<const std::byte> body,
                                                  std::span<const std::byte> tail);
    // A body-only request whose reply is body-only; returns the reply's error. Allocates
    // only if the daemon sends something unexpected (teardown paths use this).
    Result<void> call_small(wire::Op op, std::span<const std::byte> body) noexcept;
    // Handles the async messages already queued, without blocking.
    Result<void> poll_async();

private:
    Channel() = default;
    uint32_t take_seq() noexcept {
        const uint32_t seq = next_seq_++;
        if (next_seq_ == 0) next_seq_ = 1;
        return seq;
    }
    Result<void> send_request(uint32_t seq, wire::Op op, std::span<const std::byte> body,
                              std::span<const std::byte> tail, std::vector<UniqueFd> fds);
    // Receives the reply to `seq`, handing async messages over on the way.
    Result<void> receive_reply(wire::Op op, uint32_t seq, wire::Message& out);

    UniqueFd sock_;
    std::unique_ptr<std::byte[]> buf_;
    uint32_t next_seq_ = 1;
    DomId domid_ = kDomIdInvalid;
    bool privileged_ = false;
    AsyncHandler async_;
};

// A reply's error as a Result.
Result<void> check(const wire::Message& reply);

// The errno of a failure inside the daemon connection that a teardown path may ignore:
// the daemon is gone, or dropped this connection (its domain was destroyed).
bool is_disconnect(const std::error_code& ec) noexcept;

}  // namespace xenhsa::xen::sim::client

#endif
