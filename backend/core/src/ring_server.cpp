#include <xenhsa/proto/codec.h>

#include <memory>
#include <xenhsa/backend/core/fatal.hpp>
#include <xenhsa/backend/core/ring_server.hpp>

namespace xenhsa::backend::core {

Result<std::unique_ptr<RingServer>> RingServer::attach(std::span<std::byte> ring, uint32_t order,
                                                       RequestHandler& handler,
                                                       std::function<void()> kick) {
    if (order > XENHSA_RING_MAX_ORDER || ring.size() < XENHSA_RING_BYTES(order)) {
        return errc(std::errc::invalid_argument);
    }
    return std::unique_ptr<RingServer>(new RingServer(ring, order, handler, std::move(kick)));
}

RingServer::RingServer(std::span<std::byte> ring, uint32_t order, RequestHandler& handler,
                       std::function<void()> kick) noexcept
    : ring_(ring), slots_(XENHSA_RING_SLOTS(order)), handler_(handler), kick_(std::move(kick)) {}

xenhsa_sring* RingServer::shared() const noexcept {
    return reinterpret_cast<xenhsa_sring*>(ring_.data());
}

RingServer::Pass RingServer::serve(uint32_t budget, bool arm_event) noexcept {
    if (disconnected_) {
        return Pass::disconnect;
    }
    // 1. The producer index, once.
    const uint32_t rp = xenhsa_index_load(&shared()->req_prod);
    // Past the ring, or behind what was consumed (it went backwards). The second can hide
    // within `slots` of the responses while answers are owed (pending waits), and would
    // have the loop below serve stale slots without end.
    const auto ahead = [this](uint32_t index) {
        return static_cast<uint32_t>(index - rsp_prod_pvt_);
    };
    if (xenhsa_ring_req_prod_overflow(rp, rsp_prod_pvt_, slots_) || ahead(rp) < ahead(req_cons_)) {
        disconnected_ = true;
        return Pass::disconnect;
    }
    // The frontend's liveness (2.7): a frontend that never set fe_alive (an older one) is
    // never taken for dead.
    const uint32_t alive = xenhsa_index_load(&shared()->fe_alive);
    fe_seen_alive_ = fe_seen_alive_ || alive == 1;
    if (fe_seen_alive_ && alive == 0) {
        disconnected_ = true;
        return Pass::frontend_gone;
    }
    // 2. Each request: copy once, then only the copy.
    in_batch_ = true;
    uint32_t served = 0;
    blocked_ = false;
    while (req_cons_ != rp && served < budget) {
        if (xenhsa_ring_req_cons_overflow(req_cons_, rsp_prod_pvt_, slots_)) {
            blocked_ = true;
            break;
        }
        xenhsa_req_slot copy;
        xenhsa_copy_req(&copy, ring_.data() + xenhsa_ring_slot_offset(req_cons_, slots_));
        ++req_cons_;
        handler_.handle(copy, *this);
        ++served;
    }
    in_batch_ = false;
    // 3. Publish the batch.
    publish();
    if (blocked_) {
        return Pass::blocked;
    }
    // 4. Budget used up: come back later rather than loop.
    if (req_cons_ != rp) {
        return Pass::more;
    }
    return arm_event ? arm() : Pass::drained;
}

bool RingServer::requests_waiting() const noexcept {
    return !disconnected_ && xenhsa_index_load(&shared()->req_prod) != req_cons_;
}

RingServer::Pass RingServer::arm() noexcept {
    if (disconnected_) {
        return Pass::disconnect;
    }
    if (xenhsa_ring_final_check(&shared()->req_prod, &shared()->req_event, req_cons_)) {
        return Pass::more;
    }
    return Pass::idle;
}

void RingServer::reply(const Reply& reply) noexcept {
    if (disconnected_) {
        return;
    }
    // Every response answers a consumed request, so its slot is free (io/ring.h).
    if (rsp_prod_pvt_ == req_cons_) {
        fatal("ring: a response without an outstanding request");
    }
    xenhsa_encode_rsp(ring_.data() + xenhsa_ring_slot_offset(rsp_prod_pvt_, slots_), reply.seqno,
                      reply.status, reply.payload.data(), reply.len);
    ++rsp_prod_pvt_;
    if (!in_batch_) {
        publish();
        if (blocked_) {
            blocked_ = false;
            if (unblocked_) {
                unblocked_();
            }
        }
    }
}

void RingServer::publish() noexcept {
    if (rsp_published_ == rsp_prod_pvt_) {
        return;
    }
    const uint32_t old = rsp_published_;
    rsp_published_ = rsp_prod_pvt_;
    if (xenhsa_ring_publish(&shared()->rsp_prod, &shared()->rsp_event, old, rsp_prod_pvt_) &&
        kick_) {
        kick_();
    }
}

}  // namespace xenhsa::backend::core
