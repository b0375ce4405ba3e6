// Client: the request/response transport over the ring, handles, notifications.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/errors.hpp>

#include "client_detail.hpp"

namespace xenhsa::frontend {

using detail::bytes_of;
using detail::Clock;
using detail::kPollSlice;
using detail::sys_error;

Client::Client(Link& link, xen::GrantSharer& sharer, xen::GrantMapper& mapper,
               ClientOptions options)
    : link_(link),
      sharer_(sharer),
      mapper_(mapper),
      options_(options),
      notify_(link.notify_page()) {}

Client::~Client() = default;

bool Client::changes_objects(uint32_t cmd) noexcept {
    switch (cmd) {
        case XENHSA_CMD_QUERY:
        case XENHSA_CMD_EVENT_SET:
        case XENHSA_CMD_EVENT_RESET:
        case XENHSA_CMD_EVENT_WAIT:
        case XENHSA_CMD_EVENT_WAIT_CANCEL:
            return false;  // late, they change nothing the guest keeps a record of
        default:
            return true;
    }
}

std::error_code Client::fail_broken(Errc why) noexcept {
    if (!broken_) {
        broken_ = true;
        broken_why_ = why;
        link_.mark_broken();
    }
    return broken_why_;
}

uint32_t Client::next_seqno() noexcept {
    // Unique among outstanding requests and replies not yet taken (2.5).
    do {
        ++seqno_;
    } while (seqno_ == 0 || outstanding_.count(seqno_) != 0 || ready_.count(seqno_) != 0);
    return seqno_;
}

Result<uint32_t> Client::submit(const SentRequest& sent, const xenhsa_req_slot* raw) {
    if (broken_) {
        return broken_why_;
    }
    FrontRing& ring = link_.ring();
    const auto deadline = Clock::now() + options_.timeout;
    while (ring.outstanding() >= ring.slots()) {  // no credit: wait for a response
        if (auto d = drain(); !d) {
            return d.error();
        }
        if (ring.outstanding() < ring.slots()) {
            break;
        }
        if (Clock::now() >= deadline) {
            return sys_error(ETIMEDOUT);
        }
        if (!ring.final_check()) {
            if (auto w = link_.wait(kPollSlice); !w) {
                return w.error();
            }
        }
    }
    const uint32_t seqno = next_seqno();
    Result<void> pushed = boost::outcome_v2::success();
    if (raw != nullptr) {
        xenhsa_req_slot slot = *raw;
        slot.hdr.seqno = seqno;
        pushed = ring.push_raw(slot);
    } else {
        pushed = ring.push(sent.cmd, seqno,
                           std::span<const std::byte>(sent.payload.bytes.data(), sent.payload.len));
    }
    if (!pushed) {
        return pushed.error();
    }
    outstanding_.emplace(seqno, Outstanding{sent, false});
    if (ring.publish()) {
        if (auto k = link_.kick(); !k) {
            return k.error();
        }
    }
    return seqno;
}

Result<void> Client::drain() {
    if (broken_) {
        return broken_why_;
    }
    FrontRing& ring = link_.ring();
    for (;;) {
        auto popped = ring.pop();
        if (!popped) {
            return fail_broken();
        }
        if (!popped.value()) {
            break;
        }
        const xenhsa_rsp_slot& rsp = *popped.value();
        auto it = outstanding_.find(rsp.hdr.seqno);
        if (it == outstanding_.end() || check_response(rsp, it->second.sent) != XENHSA_STATUS_OK) {
            return fail_broken();
        }
        if (!it->second.abandoned) {
            Reply reply;
            reply.status = rsp.hdr.status;
            reply.payload = Payload::of(
                std::as_bytes(std::span(rsp.payload))
                    .first(std::min<std::size_t>(rsp.hdr.len, XENHSA_SLOT_PAYLOAD_MAX)));
            ready_.emplace(rsp.hdr.seqno, reply);
        }
        outstanding_.erase(it);
    }
    auto records = notify_.poll();
    if (!records) {
        return fail_broken();
    }
    for (const xenhsa_notify& record : records.value()) {
        if (auto h = handle_notify(record); !h) {
            return h;
        }
    }
    return boost::outcome_v2::success();
}

Result<void> Client::handle_notify(const xenhsa_notify& record) {
    if (record.type == XENHSA_NOTIFY_REVOKED) {
        // A REVOKED for a LEND already unmapped crossed our UNMAP: nothing to do.
        auto it = lends_.find(record.handle);
        if (it != lends_.end()) {
            if (record.arg0 != it->second.va || record.arg1 != it->second.npages ||
                !revoked_.insert(record.handle).second) {
                return fail_broken();  // another range, or a second REVOKED (section 6)
            }
        }
    } else if (record.type == XENHSA_NOTIFY_GPU_FAULT) {
        auto it = handles_.find(record.handle);
        if (it != handles_.end() && it->second == HandleKind::queue &&
            !faulted_.insert(record.handle).second) {
            return fail_broken();
        }
    }
    notifications_.push_back(record);
    if (on_notify_) {
        on_notify_(record);
    }
    return boost::outcome_v2::success();
}

bool Client::poll_for_responses(Clock::time_point deadline) const noexcept {
    // An answer usually follows its request within microseconds, sooner than a kick and a
    // wake-up would bring it; the backend is not asked to kick meanwhile. The poll spins
    // with a CPU pause for at most reply_spin, then the caller blocks on the event channel:
    // a worker waiting for this very core (more runnable threads than cores) gets it
    // after reply_spin at the latest. Never a sched_yield: on a busy host it gives the core
    // away for a whole time slice of every other runnable thread (milliseconds).
    const FrontRing& ring = link_.ring();
    const auto start = Clock::now();
    const auto until = std::min(start + options_.reply_spin, deadline);
    for (uint32_t round = 0;; ++round) {
        if (ring.responses_waiting()) {
            return true;
        }
        if (round % 16 != 0) {
            xenhsa_cpu_relax();
            continue;
        }
        const auto now = Clock::now();
        if (now >= until) {
            return false;
        }
        xenhsa_cpu_relax();
    }
}

Result<Reply> Client::receive(uint32_t seqno) {
    return receive(seqno, Clock::now() + options_.timeout);
}

Result<Reply> Client::receive(uint32_t seqno, Clock::time_point deadline) {
    FrontRing& ring = link_.ring();
    for (;;) {
        if (auto d = drain(); !d) {
            return d.error();
        }
        if (auto it = ready_.find(seqno); it != ready_.end()) {
            Reply reply = it->second;
            ready_.erase(it);
            return reply;
        }
        auto pending = outstanding_.find(seqno);
        if (pending == outstanding_.end()) {
            return sys_error(EINVAL);  // never sent, or already taken
        }
        if (auto alive = link_.check_backend(); !alive) {
            return alive.error();
        }
        if (poll_for_responses(deadline)) {
            continue;
        }
        if (ring.final_check()) {
            continue;
        }
        const auto now = Clock::now();
        if (now >= deadline) {
            pending->second.abandoned = true;
            if (changes_objects(pending->second.sent.cmd)) {
                // A late success would leave an object the guest no longer knows of (a
                // queue reading memory the guest reuses): the session ends instead, and
                // the backend tears it down.
                (void)fail_broken(Errc::session_timed_out);
            }
            return sys_error(ETIMEDOUT);
        }
        const auto slice = std::min<Clock::duration>(deadline - now, kPollSlice);
        if (auto w = link_.wait(std::chrono::ceil<std::chrono::milliseconds>(slice)); !w) {
            return w.error();
        }
    }
}

Result<uint32_t> Client::send(uint32_t cmd, std::span<const std::byte> payload) {
    if (payload.size() > XENHSA_SLOT_PAYLOAD_MAX) {
        return sys_error(EMSGSIZE);
    }
    return submit(SentRequest{cmd, Payload::of(payload)}, nullptr);
}

Result<uint32_t> Client::send_raw(const xenhsa_req_slot& slot) {
    // The payload check needs the request as the backend will see it.
    SentRequest sent{slot.hdr.cmd, Payload::of(std::as_bytes(std::span(slot.payload))),
                     xenhsa_check_req(&slot) == XENHSA_STATUS_OK};
    return submit(sent, &slot);
}

Result<Reply> Client::call(uint32_t cmd, std::span<const std::byte> payload) {
    auto seqno = send(cmd, payload);
    if (!seqno) {
        return seqno.error();
    }
    return receive(seqno.value());
}

Result<Reply> Client::call_raw(const xenhsa_req_slot& slot) {
    auto seqno = send_raw(slot);
    if (!seqno) {
        return seqno.error();
    }
    return receive(seqno.value());
}

Result<Reply> Client::expect_ok(uint32_t cmd, std::span<const std::byte> payload) {
    auto reply = call(cmd, payload);
    if (!reply) {
        return reply.error();
    }
    if (reply.value().status != XENHSA_STATUS_OK) {
        return status_error(reply.value().status);
    }
    return reply;
}

Result<void> Client::add_handle(Handle handle, HandleKind kind) {
    // The backend never reuses a handle value within a connection (3.6).
    if (!handles_.emplace(handle, kind).second) {
        return fail_broken();
    }
    return boost::outcome_v2::success();
}

Result<void> Client::release_handle(uint32_t cmd, Handle handle) {
    const xenhsa_handle_req req{handle};
    auto reply = expect_ok(cmd, bytes_of(req));
    if (!reply) {
        return reply.error();
    }
    handles_.erase(handle);
    object_va_.erase(handle);
    faulted_.erase(handle);
    return boost::outcome_v2::success();
}

// --- notifications -------------------------------------------------------------------

std::vector<xenhsa_notify> Client::take_notifications() {
    std::vector<xenhsa_notify> out(notifications_.begin(), notifications_.end());
    notifications_.clear();
    return out;
}

Result<void> Client::pump(std::chrono::milliseconds timeout) {
    if (auto d = drain(); !d) {
        return d;
    }
    if (auto alive = link_.check_backend(); !alive) {
        return alive;
    }
    if (!link_.ring().final_check()) {
        if (auto w = link_.wait(timeout); !w) {
            return w;
        }
    }
    return drain();
}

Result<xenhsa_notify> Client::wait_notification(uint32_t type, Handle handle,
                                                std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        for (auto it = notifications_.begin(); it != notifications_.end(); ++it) {
            if (it->type == type && it->handle == handle) {
                const xenhsa_notify found = *it;
                notifications_.erase(it);
                return found;
            }
        }
        const auto now = Clock::now();
        if (now >= deadline) {
            return sys_error(ETIMEDOUT);
        }
        const auto slice = std::min<Clock::duration>(deadline - now, kPollSlice);
        if (auto p = pump(std::chrono::ceil<std::chrono::milliseconds>(slice)); !p) {
            return p.error();
        }
    }
}

}  // namespace xenhsa::frontend
