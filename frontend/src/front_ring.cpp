#include <cstring>
#include <stdexcept>
#include <xenhsa/frontend/front_ring.hpp>

namespace xenhsa::frontend {

FrontRing::FrontRing(std::span<std::byte> pages, uint32_t order)
    : pages_(pages), slots_(XENHSA_RING_SLOTS(order)) {
    if (order > XENHSA_RING_MAX_ORDER || pages.size() < XENHSA_RING_BYTES(order)) {
        throw std::invalid_argument("ring pages do not match the ring order");
    }
    xenhsa_sring_init(shared());
}

xenhsa_sring* FrontRing::shared() const noexcept {
    return reinterpret_cast<xenhsa_sring*>(pages_.data());
}

std::byte* FrontRing::slot(uint32_t index) const noexcept {
    return pages_.data() + xenhsa_ring_slot_offset(index, slots_);
}

Result<void> FrontRing::push(uint32_t cmd, uint32_t seqno, std::span<const std::byte> payload) {
    if (payload.size() > XENHSA_SLOT_PAYLOAD_MAX) {
        return errc(std::errc::message_size);
    }
    if (outstanding() >= slots_) {
        return errc(std::errc::no_buffer_space);
    }
    xenhsa_encode_req(slot(req_prod_pvt_), cmd, seqno, payload.data(),
                      static_cast<uint32_t>(payload.size()));
    ++req_prod_pvt_;
    return boost::outcome_v2::success();
}

Result<void> FrontRing::push_raw(const xenhsa_req_slot& raw) {
    if (outstanding() >= slots_) {
        return errc(std::errc::no_buffer_space);
    }
    std::memcpy(slot(req_prod_pvt_), &raw, sizeof raw);
    ++req_prod_pvt_;
    return boost::outcome_v2::success();
}

bool FrontRing::publish() noexcept {
    const uint32_t old = req_published_;
    req_published_ = req_prod_pvt_;
    return xenhsa_ring_publish(&shared()->req_prod, &shared()->req_event, old, req_prod_pvt_) != 0;
}

Result<std::optional<xenhsa_rsp_slot>> FrontRing::pop() {
    if (peer_broken_) {
        return errc(std::errc::protocol_error);
    }
    const uint32_t rsp_prod = xenhsa_index_load(&shared()->rsp_prod);
    if (xenhsa_ring_rsp_prod_overflow(rsp_prod, req_published_, rsp_cons_)) {
        peer_broken_ = true;
        return errc(std::errc::protocol_error);
    }
    if (rsp_prod == rsp_cons_) {
        return std::optional<xenhsa_rsp_slot>{};
    }
    xenhsa_rsp_slot copy{};
    xenhsa_copy_rsp(&copy, slot(rsp_cons_));
    ++rsp_cons_;
    return std::optional<xenhsa_rsp_slot>{copy};
}

bool FrontRing::responses_waiting() const noexcept {
    return xenhsa_index_load(&shared()->rsp_prod) != rsp_cons_;
}

bool FrontRing::final_check() noexcept {
    return xenhsa_ring_final_check(&shared()->rsp_prod, &shared()->rsp_event, rsp_cons_) != 0;
}

void FrontRing::force_req_prod(uint32_t value) noexcept {
    xenhsa_index_store(&shared()->req_prod, value);
}

}  // namespace xenhsa::frontend
