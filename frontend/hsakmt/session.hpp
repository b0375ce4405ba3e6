// Everything hsaKmtOpenKFD sets up and the last hsaKmtCloseKFD tears down: the connection,
// the topology snapshot, and the memory, event and queue tables. Members are destroyed in
// reverse order, so queues go first, then events, memory, and last the device.
#ifndef XENHSA_FRONTEND_HSAKMT_SESSION_HPP
#define XENHSA_FRONTEND_HSAKMT_SESSION_HPP

#include <memory>
#include <mutex>
#include <string>

#include "connection.hpp"
#include "events.hpp"
#include "memory.hpp"
#include "queues.hpp"
#include "topology.hpp"

namespace xenhsa::frontend::hsakmt {

class Session {
public:
    // Under `mutex`. Null, with `why`, when the device cannot be reached.
    static std::unique_ptr<Session> open(std::mutex& mutex, std::string& why);

    [[nodiscard]] Client& client() noexcept { return connection_->client(); }
    [[nodiscard]] const Topology& topology() const noexcept { return topology_; }
    [[nodiscard]] Memory& memory() noexcept { return *memory_; }
    [[nodiscard]] Events& events() noexcept { return *events_; }
    [[nodiscard]] Queues& queues() noexcept { return *queues_; }

    // Before the last hsaKmtCloseKFD destroys it: every other thread out of its waits
    // (SerialLink::shut_down), then the destructors' own requests may wait again.
    void quiesce() {
        connection_->link().shut_down();
        connection_->link().reopen();
    }

    // In a forked child, at the fork: the parent's device stays the parent's alone.
    void release_claim_in_child() noexcept { connection_->release_claim_in_child(); }

    // hsaKmtSetTrapHandler: kept, never used by a GPU that takes no traps.
    uint64_t trap_handler = 0;
    uint64_t trap_buffer = 0;

private:
    Session() = default;

    std::unique_ptr<Connection> connection_;
    Topology topology_;
    std::unique_ptr<Memory> memory_;
    std::unique_ptr<Events> events_;
    std::unique_ptr<Queues> queues_;
};

}  // namespace xenhsa::frontend::hsakmt

#endif
