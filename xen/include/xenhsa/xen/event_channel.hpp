// Event channels (libxenevtchn on Xen). One instance is one handle, used by one thread.
#ifndef XENHSA_XEN_EVENT_CHANNEL_HPP
#define XENHSA_XEN_EVENT_CHANNEL_HPP

#include <optional>
#include <xenhsa/xen/types.hpp>

namespace xenhsa::xen {

class EventChannel;

// A bound local port; unbinds itself when destroyed.
class BoundPort {
public:
    BoundPort() noexcept = default;
    BoundPort(EventChannel* owner, Port port) noexcept : owner_(owner), port_(port) {}
    BoundPort(BoundPort&& o) noexcept : owner_(o.owner_), port_(o.port_) { o.owner_ = nullptr; }
    BoundPort& operator=(BoundPort&& o) noexcept {
        BoundPort(std::move(o)).swap(*this);
        return *this;
    }
    BoundPort(const BoundPort&) = delete;
    BoundPort& operator=(const BoundPort&) = delete;
    ~BoundPort() { reset(); }

    [[nodiscard]] Port port() const noexcept { return port_; }
    explicit operator bool() const noexcept { return owner_ != nullptr; }
    void reset() noexcept;

private:
    void swap(BoundPort& o) noexcept {
        std::swap(owner_, o.owner_);
        std::swap(port_, o.port_);
    }
    EventChannel* owner_ = nullptr;
    Port port_ = 0;
};

class EventChannel {
public:
    virtual ~EventChannel() = default;

    // Readable when a bound port fired: wait on it (Boost.Asio), then call pending()
    // once per readiness. A delivered port stays masked until unmask().
    [[nodiscard]] virtual int fd() const noexcept = 0;

    virtual Result<BoundPort> bind_interdomain(DomId remote, Port remote_port) = 0;
    // A fresh port that `remote` may bind to (what a frontend publishes in xenstore).
    virtual Result<BoundPort> bind_unbound(DomId remote) = 0;
    virtual Result<void> notify(Port local) = 0;
    // The next fired port, or nullopt when none is pending.
    virtual Result<std::optional<Port>> pending() = 0;
    virtual Result<void> unmask(Port local) = 0;

protected:
    friend class BoundPort;
    virtual void unbind(Port local) noexcept = 0;
};

inline void BoundPort::reset() noexcept {
    if (owner_ != nullptr) {
        owner_->unbind(port_);
    }
    owner_ = nullptr;
}

}  // namespace xenhsa::xen

#endif
