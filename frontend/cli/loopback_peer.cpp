#include "loopback_peer.hpp"

#include <array>

namespace xenhsa::frontend::cli {

uint32_t LoopbackPeer::serve(uint32_t budget) noexcept {
    if (disconnected_) {
        return 0;
    }
    const uint32_t prod = xenhsa_index_load(&shared()->req_prod);
    if (xenhsa_ring_req_prod_overflow(prod, rsp_prod_pvt_, slots_)) {
        disconnected_ = true;
        return 0;
    }
    const uint32_t old_rsp = rsp_prod_pvt_;
    uint32_t served = 0;
    while (req_cons_ != prod && served < budget &&
           !xenhsa_ring_req_cons_overflow(req_cons_, rsp_prod_pvt_, slots_)) {
        xenhsa_req_slot copy{};
        xenhsa_copy_req(&copy, pages_.data() + xenhsa_ring_slot_offset(req_cons_, slots_));
        ++req_cons_;
        const uint32_t status = xenhsa_check_req(&copy);
        // Only a known command passes the checks, so the length is always defined here.
        const bool with_payload = status == XENHSA_STATUS_OK || copy.hdr.cmd == XENHSA_CMD_HELLO;
        const uint32_t len = with_payload ? xenhsa_rsp_len(copy.hdr.cmd) : 0;
        static constexpr std::array<std::byte, XENHSA_SLOT_PAYLOAD_MAX> kZeros{};
        xenhsa_encode_rsp(pages_.data() + xenhsa_ring_slot_offset(rsp_prod_pvt_, slots_),
                          copy.hdr.seqno, status, kZeros.data(), len);
        ++rsp_prod_pvt_;
        ++served;
    }
    xenhsa_ring_publish(&shared()->rsp_prod, &shared()->rsp_event, old_rsp, rsp_prod_pvt_);
    return served;
}

}  // namespace xenhsa::frontend::cli
