#include <xenhsa/frontend/response_check.hpp>

namespace xenhsa::frontend {

namespace {

template <class Wire>
Wire rsp_as(const xenhsa_rsp_slot& rsp) noexcept {
    return proto::payload_as<Wire>(rsp);
}

uint32_t check_hello(const xenhsa_rsp_slot& rsp, const SentRequest& sent) noexcept {
    const auto req = sent.payload.as<xenhsa_hello_req>();
    const auto hello = rsp_as<xenhsa_hello_rsp>(rsp);
    if (rsp.hdr.status == XENHSA_STATUS_OK) {
        if (const uint32_t s = xenhsa_check_hello_rsp(&hello, &req); s != XENHSA_STATUS_OK) {
            return s;
        }
        if (hello.version < req.version_min || hello.version > req.version_max) {
            return XENHSA_STATUS_BAD_ARGUMENT;
        }
        return XENHSA_STATUS_OK;
    }
    // BAD_ADDRESS carries a proposal, or none at all (va_base = va_size = 0: the asked
    // window is refused outright, hello.h).
    const bool no_proposal = hello.va_base == 0 && hello.va_size == 0;
    if (rsp.hdr.status == XENHSA_STATUS_BAD_ADDRESS && !no_proposal &&
        (!xenhsa_va_range_ok(hello.va_base, hello.va_size) ||
         hello.va_base < XENHSA_VA_WINDOW_FLOOR || hello.va_size != req.va_size)) {
        return XENHSA_STATUS_BAD_ADDRESS;
    }
    return XENHSA_STATUS_OK;
}

uint32_t check_handle(uint64_t handle) noexcept {
    return handle == XENHSA_HANDLE_NONE ? XENHSA_STATUS_BAD_HANDLE : XENHSA_STATUS_OK;
}

uint32_t check_ok_payload(const xenhsa_rsp_slot& rsp, const SentRequest& sent) noexcept {
    switch (sent.cmd) {
        case XENHSA_CMD_QUERY: {
            const auto q = rsp_as<xenhsa_query_rsp>(rsp);
            const auto req = sent.payload.as<xenhsa_query_req>();
            return xenhsa_check_query_rsp(&q, &req);
        }
        case XENHSA_CMD_MAP:
        case XENHSA_CMD_PIN:
            return check_handle(rsp_as<xenhsa_handle_rsp>(rsp).handle);
        case XENHSA_CMD_LEND: {
            const auto l = rsp_as<xenhsa_lend_rsp>(rsp);
            const auto req = sent.payload.as<xenhsa_lend_req>();
            return xenhsa_check_lend_rsp(&l, &req);
        }
        case XENHSA_CMD_MAP_TO_GPU: {
            const uint64_t gpu_va = rsp_as<xenhsa_map_to_gpu_rsp>(rsp).gpu_va;
            return xenhsa_page_aligned(gpu_va) && gpu_va < XENHSA_VA_LIMIT
                       ? XENHSA_STATUS_OK
                       : XENHSA_STATUS_BAD_ADDRESS;
        }
        case XENHSA_CMD_ALLOC: {
            const auto a = rsp_as<xenhsa_alloc_rsp>(rsp);
            const auto req = sent.payload.as<xenhsa_alloc_req>();
            if (a.handle == XENHSA_HANDLE_NONE) {
                return XENHSA_STATUS_BAD_HANDLE;
            }
            if (!xenhsa_va_range_ok(a.va, req.size) || (req.va != 0 && a.va != req.va)) {
                return XENHSA_STATUS_BAD_ADDRESS;
            }
            return XENHSA_STATUS_OK;
        }
        case XENHSA_CMD_QUEUE_CREATE: {
            const auto q = rsp_as<xenhsa_queue_create_rsp>(rsp);
            return xenhsa_check_queue_create_rsp(&q);
        }
        case XENHSA_CMD_EVENT_CREATE: {
            const auto e = rsp_as<xenhsa_event_create_rsp>(rsp);
            if (e.pad != 0) {
                return XENHSA_STATUS_BAD_PAD;
            }
            if (e.handle == XENHSA_HANDLE_NONE) {
                return XENHSA_STATUS_BAD_HANDLE;
            }
            return e.mailbox_va == 0 || xenhsa_pointer_ok(e.mailbox_va) ? XENHSA_STATUS_OK
                                                                        : XENHSA_STATUS_BAD_ADDRESS;
        }
        case XENHSA_CMD_EVENT_WAIT: {
            const auto w = rsp_as<xenhsa_event_wait_rsp>(rsp);
            const auto req = sent.payload.as<xenhsa_event_wait_req>();
            if (w.pad != 0) {
                return XENHSA_STATUS_BAD_PAD;
            }
            // The request passed its own checks, so 1 <= count <= 16.
            const uint32_t all = req.count >= 32 ? ~0u : (1u << req.count) - 1u;
            if (w.signaled_mask == 0 || (w.signaled_mask & ~all) != 0 ||
                ((req.flags & XENHSA_WAIT_ALL) != 0 && w.signaled_mask != all)) {
                return XENHSA_STATUS_BAD_ARGUMENT;
            }
            return XENHSA_STATUS_OK;
        }
        default:
            return XENHSA_STATUS_OK;  // no payload, or none to check
    }
}

}  // namespace

uint32_t check_response(const xenhsa_rsp_slot& rsp, const SentRequest& sent) noexcept {
    if (xenhsa_rsp_len(sent.cmd) == XENHSA_LEN_UNKNOWN) {
        // Only a hostile guest sends an unknown command; it must get an error, no payload.
        if (rsp.hdr.status == XENHSA_STATUS_OK || rsp.hdr.len != 0) {
            return XENHSA_STATUS_BAD_LENGTH;
        }
        if (rsp.hdr.status >= XENHSA_STATUS_COUNT_) {
            return XENHSA_STATUS_BAD_ARGUMENT;
        }
        return rsp.hdr.pad != 0 ? XENHSA_STATUS_BAD_PAD : XENHSA_STATUS_OK;
    }
    if (const uint32_t s = xenhsa_check_rsp_hdr(&rsp.hdr, sent.cmd); s != XENHSA_STATUS_OK) {
        return s;
    }
    if (sent.cmd == XENHSA_CMD_HELLO) {
        return check_hello(rsp, sent);
    }
    if (rsp.hdr.status != XENHSA_STATUS_OK) {
        return XENHSA_STATUS_OK;
    }
    if (!sent.valid) {
        return XENHSA_STATUS_BAD_ARGUMENT;
    }
    return check_ok_payload(rsp, sent);
}

}  // namespace xenhsa::frontend
