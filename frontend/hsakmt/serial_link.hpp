// The Link the library's one Client runs over, shared by every application thread.
//
// All Client calls are made under the library's mutex. A call that has to wait for the
// backend (a reply, ring credit, an EVENT_WAIT that blocks for seconds) must not hold it:
// ROCr's async-handler thread sits in hsaKmtWaitOnMultipleEvents while other threads
// allocate, create queues or set the very event it waits for. So wait() lets the mutex go:
// one waiting thread (the poller) blocks in poll() on the event channel and xenstore fds;
// the others sleep on a condition variable. Whoever returns from wait() re-takes the
// mutex and drains the ring for everyone, so a reply meant for another thread lands in the
// Client's ready set and that thread is woken to find it. No thread ever spins.
#ifndef XENHSA_FRONTEND_HSAKMT_SERIAL_LINK_HPP
#define XENHSA_FRONTEND_HSAKMT_SERIAL_LINK_HPP

#include <condition_variable>
#include <mutex>
#include <xenhsa/frontend/guest_device.hpp>

namespace xenhsa::frontend::hsakmt {

class SerialLink final : public Link {
public:
    // `mutex` is held by the caller of every member function.
    SerialLink(GuestDevice& device, int event_fd, int store_fd, std::mutex& mutex) noexcept
        : device_(device), event_fd_(event_fd), store_fd_(store_fd), mutex_(mutex) {}

    FrontRing& ring() override { return device_.ring(); }
    std::span<std::byte> notify_page() override { return device_.notify_page(); }
    xenhsa_doorbell_page& doorbell_page() override { return device_.doorbell_page(); }
    [[nodiscard]] xen::DomId backend_domid() const noexcept override {
        return device_.backend_domid();
    }
    Result<void> kick() override { return device_.kick(); }
    Result<void> wait(std::chrono::milliseconds timeout) override;
    Result<void> check_backend() override { return device_.check_backend(); }
    void mark_broken() noexcept override { device_.mark_broken(); }

private:
    GuestDevice& device_;
    int event_fd_;
    int store_fd_;
    std::mutex& mutex_;
    std::condition_variable_any woken_;
    bool polling_ = false;
};

}  // namespace xenhsa::frontend::hsakmt

#endif
