// Client: AQL queues and HSA events, including asynchronous EVENT_WAIT.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/errors.hpp>

#include "client_detail.hpp"

namespace xenhsa::frontend {

using detail::bytes_of;
using detail::Clock;
using detail::sys_error;

// --- queues and events ---------------------------------------------------------------

Result<xenhsa_queue_create_rsp> Client::queue_create(const xenhsa_queue_create_req& req) {
    auto reply = expect_ok(XENHSA_CMD_QUEUE_CREATE, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    const auto rsp = reply.value().payload.as<xenhsa_queue_create_rsp>();
    if (auto added = add_handle(rsp.handle, HandleKind::queue); !added) {
        return added.error();
    }
    return rsp;
}

Result<void> Client::queue_destroy(Handle handle) {
    return release_handle(XENHSA_CMD_QUEUE_DESTROY, handle);
}

Result<xenhsa_event_create_rsp> Client::event_create(uint32_t type, uint32_t node, uint32_t flags) {
    const xenhsa_event_create_req req{type, node, flags, 0};
    auto reply = expect_ok(XENHSA_CMD_EVENT_CREATE, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    const auto rsp = reply.value().payload.as<xenhsa_event_create_rsp>();
    if (auto added = add_handle(rsp.handle, HandleKind::event); !added) {
        return added.error();
    }
    return rsp;
}

Result<void> Client::event_destroy(Handle handle) {
    return release_handle(XENHSA_CMD_EVENT_DESTROY, handle);
}

Result<void> Client::event_set(Handle handle) {
    const xenhsa_handle_req req{handle};
    auto reply = expect_ok(XENHSA_CMD_EVENT_SET, bytes_of(req));
    return reply ? Result<void>(boost::outcome_v2::success()) : Result<void>(reply.error());
}

Result<void> Client::event_reset(Handle handle) {
    const xenhsa_handle_req req{handle};
    auto reply = expect_ok(XENHSA_CMD_EVENT_RESET, bytes_of(req));
    return reply ? Result<void>(boost::outcome_v2::success()) : Result<void>(reply.error());
}

Result<uint32_t> Client::event_wait_async(std::span<const Handle> events, bool all,
                                          uint32_t timeout_ms) {
    if (events.empty() || events.size() > XENHSA_WAIT_MAX_EVENTS) {
        return sys_error(EINVAL);
    }
    xenhsa_event_wait_req req{};
    req.count = static_cast<uint32_t>(events.size());
    req.flags = all ? XENHSA_WAIT_ALL : 0u;
    req.timeout_ms = timeout_ms;
    std::copy(events.begin(), events.end(), req.event);
    return send(XENHSA_CMD_EVENT_WAIT, bytes_of(req));
}

Result<uint32_t> Client::finish_wait(uint32_t seqno) {
    auto it = outstanding_.find(seqno);
    if (it == outstanding_.end() && ready_.count(seqno) == 0) {
        return sys_error(EINVAL);
    }
    auto deadline = Clock::time_point::max();
    if (it != outstanding_.end()) {
        const uint32_t timeout_ms = it->second.sent.payload.as<xenhsa_event_wait_req>().timeout_ms;
        if (timeout_ms != XENHSA_WAIT_INFINITE) {
            deadline = Clock::now() + std::chrono::milliseconds(timeout_ms) + options_.timeout;
        }
    }
    auto reply = receive(seqno, deadline);
    if (!reply) {
        return reply.error();
    }
    if (reply.value().status != XENHSA_STATUS_OK) {
        return status_error(reply.value().status);
    }
    return reply.value().payload.as<xenhsa_event_wait_rsp>().signaled_mask;
}

Result<uint32_t> Client::event_wait(std::span<const Handle> events, bool all, uint32_t timeout_ms) {
    auto seqno = event_wait_async(events, all, timeout_ms);
    if (!seqno) {
        return seqno.error();
    }
    return finish_wait(seqno.value());
}

Result<void> Client::event_wait_cancel(uint32_t wait_seqno) {
    const xenhsa_event_wait_cancel_req req{wait_seqno, 0};
    auto reply = call(XENHSA_CMD_EVENT_WAIT_CANCEL, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    const uint32_t status = reply.value().status;
    if (status != XENHSA_STATUS_OK && status != XENHSA_STATUS_BAD_ARGUMENT) {
        return status_error(status);
    }
    return boost::outcome_v2::success();
}

}  // namespace xenhsa::frontend
