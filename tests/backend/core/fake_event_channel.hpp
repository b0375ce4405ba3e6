// An EventChannel over an eventfd: the test "guest" kicks with kick(); the backend's
// notify() calls are counted. One local port.
#ifndef XENHSA_TESTS_BACKEND_CORE_FAKE_EVENT_CHANNEL_HPP
#define XENHSA_TESTS_BACKEND_CORE_FAKE_EVENT_CHANNEL_HPP

#include <atomic>
#include <xenhsa/xen/event_channel.hpp>

namespace xenhsa::backend::core::testing {

class FakeEventChannel final : public xen::EventChannel {
public:
    static constexpr xen::Port kPort = 5;

    FakeEventChannel();
    ~FakeEventChannel() override;

    [[nodiscard]] int fd() const noexcept override { return fd_; }
    xen::Result<xen::BoundPort> bind_interdomain(xen::DomId, xen::Port) override;
    xen::Result<xen::BoundPort> bind_unbound(xen::DomId) override;
    xen::Result<void> notify(xen::Port local) override;
    xen::Result<std::optional<xen::Port>> pending() override;
    xen::Result<void> unmask(xen::Port local) override;

    // The guest's kick.
    void kick();
    [[nodiscard]] unsigned notified() const noexcept { return notified_.load(); }
    // Kicks pending() handed to the backend (each a wake-up of its loop).
    [[nodiscard]] unsigned delivered() const noexcept { return delivered_.load(); }

protected:
    void unbind(xen::Port) noexcept override {}

private:
    int fd_ = -1;
    std::atomic<unsigned> notified_{0};
    std::atomic<unsigned> delivered_{0};
};

}  // namespace xenhsa::backend::core::testing

#endif
