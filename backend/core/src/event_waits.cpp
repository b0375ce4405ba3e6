#include <boost/asio/post.hpp>
#include <mutex>
#include <xenhsa/backend/core/event_waits.hpp>
#include <xenhsa/backend/core/seam_status.hpp>

namespace xenhsa::backend::core {

std::optional<Reply> EventWaits::wait(const xenhsa_event_wait_req& req, uint32_t seqno) {
    const auto fail = [&](uint32_t status) {
        return make_reply(XENHSA_CMD_EVENT_WAIT, seqno, status);
    };
    for (uint32_t i = 0; i < req.count; ++i) {
        if (!gpu_->event_live(req.event[i])) {
            return fail(XENHSA_STATUS_BAD_HANDLE);
        }
    }
    if (pending_.contains(seqno)) {
        return fail(XENHSA_STATUS_BAD_ARGUMENT);
    }
    if (pending_.size() >= terms_.max_in_flight()) {
        return fail(XENHSA_STATUS_QUOTA);
    }
    const uint64_t token = ++next_token_;
    auto on_end = [handoff = handoff_, executor = io_.get_executor(), self = this, token](
                      hsa::WaitEnd end, uint32_t mask) {
        std::lock_guard<std::mutex> hold(handoff->lock);
        if (!handoff->open) {
            return;
        }
        boost::asio::post(executor, [handoff, self, token, end, mask] {
            if (handoff->is_open()) {
                self->done(token, end, mask);
            }
        });
    };
    auto started =
        gpu_->start_wait(std::span<const hsa::Handle>(req.event, req.count),
                         (req.flags & XENHSA_WAIT_ALL) != 0, req.timeout_ms, std::move(on_end));
    if (!started) {
        return fail(seam_status(Seam::gpu, started.error()));
    }
    pending_.emplace(seqno, Pending{token, started.value()});
    return std::nullopt;  // answered by done()
}

void EventWaits::done(uint64_t token, hsa::WaitEnd end, uint32_t mask) noexcept {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
        if (it->second.token != token) {
            continue;
        }
        const uint32_t seqno = it->first;
        pending_.erase(it);
        if (sink_ == nullptr) {
            return;
        }
        switch (end) {
            case hsa::WaitEnd::fired: {
                xenhsa_event_wait_rsp rsp{};
                rsp.signaled_mask = mask;
                sink_->reply(make_reply(XENHSA_CMD_EVENT_WAIT, seqno, XENHSA_STATUS_OK, rsp));
                return;
            }
            case hsa::WaitEnd::timeout:
                sink_->reply(make_reply(XENHSA_CMD_EVENT_WAIT, seqno, XENHSA_STATUS_TIMEOUT));
                return;
            case hsa::WaitEnd::cancelled:
                sink_->reply(make_reply(XENHSA_CMD_EVENT_WAIT, seqno, XENHSA_STATUS_CANCELLED));
                return;
            case hsa::WaitEnd::failed:
                sink_->reply(make_reply(XENHSA_CMD_EVENT_WAIT, seqno, XENHSA_STATUS_DEVICE));
                return;
        }
        return;
    }
    // No pending wait with that token: it was cancelled or the guest is going.
}

Reply EventWaits::cancel(const xenhsa_event_wait_cancel_req& req, uint32_t seqno, ReplySink& sink) {
    auto it = pending_.find(req.wait_seqno);
    if (it == pending_.end() || !gpu_->cancel_wait(it->second.wait_id)) {
        // No such wait, or it completed already and its answer is on the way.
        return make_reply(XENHSA_CMD_EVENT_WAIT_CANCEL, seqno, XENHSA_STATUS_BAD_ARGUMENT);
    }
    // Answer the wait now; its own `cancelled` completion then finds nothing pending.
    pending_.erase(it);
    sink.reply(make_reply(XENHSA_CMD_EVENT_WAIT, req.wait_seqno, XENHSA_STATUS_CANCELLED));
    return make_reply(XENHSA_CMD_EVENT_WAIT_CANCEL, seqno, XENHSA_STATUS_OK);
}

}  // namespace xenhsa::backend::core
