#include <xenhsa/proto/status.h>

#include <string>
#include <xenhsa/frontend/errors.hpp>

namespace xenhsa::frontend {

namespace {

class FrontendCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "xenhsa-frontend"; }
    std::string message(int value) const override {
        switch (static_cast<Errc>(value)) {
            case Errc::backend_broken:
                return "the backend broke the protocol";
            case Errc::backend_gone:
                return "the backend is gone";
            case Errc::revoked_access:
                return "access to revoked memory (SIGBUS)";
            case Errc::access_fault:
                return "access fault (SIGSEGV)";
            case Errc::not_connected:
                return "not connected";
            case Errc::closing:
                return "the session is closing";
            case Errc::session_timed_out:
                return "a request that changes the backend's objects went unanswered within "
                       "XENHSA_REQUEST_TIMEOUT_MS: the session ended, and the backend tears it "
                       "down";
        }
        return "unknown xenhsa-frontend error";
    }
};

class StatusCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "xenhsa-status"; }
    std::string message(int value) const override {
        return xenhsa_status_name(static_cast<uint32_t>(value));
    }
};

}  // namespace

const std::error_category& frontend_category() noexcept {
    static const FrontendCategory category;
    return category;
}

const std::error_category& status_category() noexcept {
    static const StatusCategory category;
    return category;
}

}  // namespace xenhsa::frontend
