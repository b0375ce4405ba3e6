// EVENT_WAIT and EVENT_WAIT_CANCEL (docs/protocol.md §5.17-5.18). A wait is accepted,
// the ring keeps being served, and GpuSession completes it on its own thread; the
// completion is posted to the io_context and answered there, unless the wait was
// cancelled or the session ended meanwhile.
#include <boost/asio/post.hpp>
#include <mutex>
#include <xenhsa/backend/core/seam_status.hpp>
#include <xenhsa/backend/core/session.hpp>

#include "session_gate.hpp"

namespace xenhsa::backend::core {

Session::Reply_ Session::event_wait(const xenhsa_event_wait_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_EVENT_WAIT, seqno, status);
    };
    for (uint32_t i = 0; i < req.count; ++i) {
        if (!seams_.gpu->event_live(req.event[i])) {
            return fail(XENHSA_STATUS_BAD_HANDLE);
        }
    }
    if (waits_.count(seqno) != 0) {
        return fail(XENHSA_STATUS_BAD_ARGUMENT);
    }
    if (waits_.size() >= max_in_flight()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    const uint64_t token = ++next_token_;
    auto gate = gate_;
    auto executor = io_.get_executor();
    Session* self = this;
    auto done = [gate, executor, self, token](hsa::WaitEnd end, uint32_t mask) {
        std::lock_guard<std::mutex> hold(gate->lock);
        if (!gate->open) {
            return;
        }
        boost::asio::post(executor, [gate, self, token, end, mask] {
            {
                std::lock_guard<std::mutex> check(gate->lock);
                if (!gate->open) {
                    return;
                }
            }
            self->wait_done(token, end, mask);
        });
    };
    auto started =
        seams_.gpu->start_wait(std::span<const hsa::Handle>(req.event, req.count),
                               (req.flags & XENHSA_WAIT_ALL) != 0, req.timeout_ms, std::move(done));
    if (!started) {
        return fail(seam_status(Seam::gpu, started.error()));
    }
    waits_.emplace(seqno, PendingWait{token, started.value()});
    return std::nullopt;  // answered by wait_done
}

void Session::wait_done(uint64_t token, hsa::WaitEnd end, uint32_t mask) noexcept {
    for (auto it = waits_.begin(); it != waits_.end(); ++it) {
        if (it->second.token != token) {
            continue;
        }
        const uint32_t seqno = it->first;
        waits_.erase(it);
        if (async_sink_ == nullptr) {
            return;
        }
        switch (end) {
            case hsa::WaitEnd::fired: {
                xenhsa_event_wait_rsp rsp{};
                rsp.signaled_mask = mask;
                async_sink_->reply(make_reply(XENHSA_CMD_EVENT_WAIT, seqno, XENHSA_STATUS_OK, rsp));
                return;
            }
            case hsa::WaitEnd::timeout:
                async_sink_->reply(make_reply(XENHSA_CMD_EVENT_WAIT, seqno, XENHSA_STATUS_TIMEOUT));
                return;
            case hsa::WaitEnd::cancelled:
                async_sink_->reply(
                    make_reply(XENHSA_CMD_EVENT_WAIT, seqno, XENHSA_STATUS_CANCELLED));
                return;
            case hsa::WaitEnd::failed:
                async_sink_->reply(make_reply(XENHSA_CMD_EVENT_WAIT, seqno, XENHSA_STATUS_DEVICE));
                return;
        }
        return;
    }
    // No pending wait with that token: it was cancelled or the session ended.
}

Reply Session::event_wait_cancel(const xenhsa_event_wait_cancel_req& req, uint32_t seqno,
                                 ReplySink& sink) {
    auto it = waits_.find(req.wait_seqno);
    if (it == waits_.end() || !seams_.gpu->cancel_wait(it->second.wait_id)) {
        // No such wait, or it completed already and its answer is on the way.
        return make_reply(XENHSA_CMD_EVENT_WAIT_CANCEL, seqno, XENHSA_STATUS_BAD_ARGUMENT);
    }
    // Answer the wait now; its own `cancelled` completion then finds nothing pending.
    waits_.erase(it);
    sink.reply(make_reply(XENHSA_CMD_EVENT_WAIT, req.wait_seqno, XENHSA_STATUS_CANCELLED));
    return make_reply(XENHSA_CMD_EVENT_WAIT_CANCEL, seqno, XENHSA_STATUS_OK);
}

}  // namespace xenhsa::backend::core
