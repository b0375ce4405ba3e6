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
//
// hsaKmtCloseKFD may come while other threads wait: shut_down() wakes them (the poller
// through an eventfd of its own), makes their waits fail (Errc::closing) and returns
// once none is left inside wait(), so the session is never destroyed under a waiter.
#ifndef XENHSA_FRONTEND_HSAKMT_SERIAL_LINK_HPP
#define XENHSA_FRONTEND_HSAKMT_SERIAL_LINK_HPP

#include <condition_variable>
#include <mutex>
#include <xenhsa/frontend/guest_device.hpp>

namespace xenhsa::frontend::hsakmt {

class SerialLink final : public Link {
public:
    // `mutex` is held by the caller of every member function.
    SerialLink(GuestDevice& device, int event_fd, int store_fd, std::mutex& mutex) noexcept;
    ~SerialLink() override;
    SerialLink(const SerialLink&) = delete;
    SerialLink& operator=(const SerialLink&) = delete;

    FrontRing& ring() override { return device_.ring(); }
    std::span<std::byte> notify_page() override { return device_.notify_page(); }
    xenhsa_doorbell_page& doorbell_page() override { return device_.doorbell_page(); }
    [[nodiscard]] xen::DomId backend_domid() const noexcept override {
        return device_.backend_domid();
    }
    Result<void> kick() override { return device_.kick(); }
    Result<void> wait(std::chrono::milliseconds timeout) override;
    Result<void> check_backend() override { return device_.check_backend(); }
    // The device closes, and a thread blocked in wait() (an EVENT_WAIT the backend will
    // never answer) wakes to find it so.
    void mark_broken() noexcept override;

    // Every other thread out of wait(), their waits failed; under the mutex (let go while
    // they leave). Then `reopen()` lets the closing thread's own teardown wait again.
    void shut_down();
    void reopen() noexcept { closing_ = false; }

private:
    GuestDevice& device_;
    int event_fd_;
    int store_fd_;
    std::mutex& mutex_;
    std::condition_variable_any woken_;
    std::condition_variable_any left_;  // a thread left wait()
    bool polling_ = false;
    bool closing_ = false;
    uint32_t waiters_ = 0;  // threads inside wait()
    int wake_fd_ = -1;      // an eventfd that ends the poller's poll()
};

}  // namespace xenhsa::frontend::hsakmt

#endif
