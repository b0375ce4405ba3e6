// What the ring hands each request to: a private, already copied slot. The handler
// validates it (validate.h, then its own checks) and answers through `sink` exactly
// once, now or later (EVENT_WAIT).
#ifndef XENHSA_BACKEND_CORE_REQUEST_HANDLER_HPP
#define XENHSA_BACKEND_CORE_REQUEST_HANDLER_HPP

#include <xenhsa/proto/ring.h>

#include <xenhsa/backend/core/reply.hpp>

namespace xenhsa::backend::core {

class RequestHandler {
public:
    virtual void handle(const xenhsa_req_slot& copy, ReplySink& sink) noexcept = 0;

protected:
    ~RequestHandler() = default;
};

}  // namespace xenhsa::backend::core

#endif
