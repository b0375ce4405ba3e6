// EVENT_WAIT and EVENT_WAIT_CANCEL (docs/protocol.md §5.17-5.18). A wait is accepted, the
// ring keeps being served, and GpuContext completes it on its own thread; the completion
// is posted to the io_context and answered there through the async sink, unless the wait
// was cancelled or the guest is going meanwhile.
#ifndef XENHSA_BACKEND_CORE_EVENT_WAITS_HPP
#define XENHSA_BACKEND_CORE_EVENT_WAITS_HPP

#include <xenhsa/proto/event.h>

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <xenhsa/backend/core/gpu_handoff.hpp>
#include <xenhsa/backend/core/guest_terms.hpp>
#include <xenhsa/backend/core/reply.hpp>
#include <xenhsa/hsa/gpu_context.hpp>

namespace xenhsa::backend::core {

class EventWaits {
public:
    // `gpu` may be null (no GPU seam: gate_check refuses both commands).
    EventWaits(boost::asio::io_context& io, const GuestTerms& terms, hsa::GpuContext* gpu,
               std::shared_ptr<GpuHandoff> handoff) noexcept
        : io_(io), terms_(terms), gpu_(gpu), handoff_(std::move(handoff)) {}

    // Where completions and EVENT_WAIT_CANCEL's CANCELLED go (the ring).
    void set_sink(ReplySink* sink) noexcept { sink_ = sink; }

    // nullopt: accepted, answered when it ends.
    std::optional<Reply> wait(const xenhsa_event_wait_req& req, uint32_t seqno);
    Reply cancel(const xenhsa_event_wait_cancel_req& req, uint32_t seqno, ReplySink& sink);

    // The guest is going: pending waits end without a response; their completions find
    // nothing.
    void drop_all() noexcept { pending_.clear(); }
    [[nodiscard]] std::size_t pending() const noexcept { return pending_.size(); }

private:
    struct Pending {
        uint64_t token = 0;
        uint64_t wait_id = 0;
    };

    void done(uint64_t token, hsa::WaitEnd end, uint32_t mask) noexcept;

    boost::asio::io_context& io_;
    const GuestTerms& terms_;
    hsa::GpuContext* gpu_;
    std::shared_ptr<GpuHandoff> handoff_;
    std::map<uint32_t, Pending> pending_;  // by the wait's seqno
    uint64_t next_token_ = 0;
    ReplySink* sink_ = nullptr;
};

}  // namespace xenhsa::backend::core

#endif
