// What every platform-backed scenario starts with: the seam, a connected device and a
// Client that said HELLO, each step reported as a check.
#ifndef XENHSA_FRONTEND_CLI_HARNESS_HPP
#define XENHSA_FRONTEND_CLI_HARNESS_HPP

#include <chrono>
#include <memory>
#include <optional>
#include <xenhsa/frontend/client.hpp>
#include <xenhsa/frontend/guest_device.hpp>

#include "options.hpp"
#include "platform_open.hpp"
#include "report.hpp"

namespace xenhsa::frontend::cli {

class Harness {
public:
    Harness(const GlobalOptions& options, Report& report) : options_(options), report_(report) {}
    ~Harness();

    // Opens the platform, connects the device and says HELLO (checks: platform,
    // xenbus-connect, hello). false when any failed.
    bool open(uint64_t features = XENHSA_FEATURES_V1);
    // Drops the Client, reconnects the device (new pages, new port) and says HELLO again
    // (checks: reconnect, hello).
    bool reconnect();

    [[nodiscard]] GuestPlatform& guest() { return *guest_; }
    [[nodiscard]] GuestDevice& device() { return *device_; }
    [[nodiscard]] Client& client() { return *client_; }
    [[nodiscard]] std::chrono::milliseconds timeout() const {
        return std::chrono::milliseconds(options_.timeout_ms);
    }
    [[nodiscard]] const GlobalOptions& options() const { return options_; }
    // A feature HELLO granted; reports a failed check `needs-<name>` when it did not.
    bool require(uint64_t feature, std::string_view name);

private:
    bool hello();

    const GlobalOptions& options_;
    uint64_t features_ = XENHSA_FEATURES_V1;
    Report& report_;
    std::optional<GuestPlatform> guest_;
    std::unique_ptr<GuestDevice> device_;
    std::unique_ptr<Client> client_;
};

}  // namespace xenhsa::frontend::cli

#endif
