// The guest's end of the notify page (protocol section 6): REVOKED and GPU_FAULT records
// the backend produces. The page is hostile: `prod` is read once per poll, each record is
// copied once and checked, and the consumer index is kept privately.
#ifndef XENHSA_FRONTEND_NOTIFY_CONSUMER_HPP
#define XENHSA_FRONTEND_NOTIFY_CONSUMER_HPP

#include <xenhsa/proto.h>

#include <cstddef>
#include <span>
#include <vector>
#include <xenhsa/frontend/result.hpp>

namespace xenhsa::frontend {

class NotifyConsumer {
public:
    // `page` is the granted notify page (4096 bytes), zeroed before it was granted.
    explicit NotifyConsumer(std::span<std::byte> page) noexcept : page_(page) {}

    // Every record published since the last poll, in order, copied once and checked;
    // then `cons` is advanced past them (release order). Fails with
    // Errc::backend_broken, from then on for good, when the producer runs more than 64
    // records ahead, or any record has an unknown type or a nonzero pad: then none of
    // that poll's records is returned or acknowledged.
    Result<std::vector<xenhsa_notify>> poll();

    [[nodiscard]] uint32_t consumed() const noexcept { return cons_; }
    [[nodiscard]] bool broken() const noexcept { return broken_; }

private:
    xenhsa_notify_page* shared() const noexcept {
        return reinterpret_cast<xenhsa_notify_page*>(page_.data());
    }

    std::span<std::byte> page_;
    uint32_t cons_ = 0;
    bool broken_ = false;
};

}  // namespace xenhsa::frontend

#endif
