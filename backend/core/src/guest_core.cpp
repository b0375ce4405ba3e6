#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <xenhsa/backend/core/doorbell_watch.hpp>
#include <xenhsa/backend/core/guest_core.hpp>

namespace xenhsa::backend::core {
namespace {

// While notifications wait for room on a full notify page, retry this often: the guest
// does not kick the backend when it consumes them.
constexpr std::chrono::milliseconds kNotifyRetry{20};

}  // namespace

// Waits on the event channel and runs passes. Handlers hold a weak reference to `life`
// so that none touches the driver after it is gone.
struct GuestCore::Driver {
    Driver(boost::asio::io_context& io_, xen::EventChannel& events_, xen::Port local_,
           const GuestPages& pages_, Session& session_, RingServer& ring_, uint32_t budget_,
           CoreFatal on_fatal_)
        : io(io_),
          events(events_),
          local(local_),
          pages(pages_),
          session(session_),
          ring(ring_),
          budget(budget_),
          on_fatal(std::move(on_fatal_)),
          fd(io_),
          retry(io_) {}

    ~Driver() {
        boost::system::error_code ignored;
        fd.cancel(ignored);
        (void)fd.release();  // the EventChannel owns the fd
        retry.cancel();
    }

    void kick() noexcept { (void)events.notify(local); }

    void start() {
        fd.assign(events.fd());
        wait();
        schedule();
    }

    void wait() {
        std::weak_ptr<int> alive = life;
        fd.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                      [this, alive](const boost::system::error_code& error) {
                          if (alive.expired() || error == boost::asio::error::operation_aborted) {
                              return;
                          }
                          readable(error);
                      });
    }

    void readable(const boost::system::error_code& error) noexcept {
        if (dead) {
            return;
        }
        if (error) {
            fail("event channel wait failed: " + error.message());
            return;
        }
        // One pending() per port that fired; unmask what was delivered.
        for (;;) {
            auto port = events.pending();
            if (!port) {
                fail("event channel: " + port.error().message());
                return;
            }
            if (!port.value()) {
                break;
            }
            (void)events.unmask(*port.value());
        }
        pass();
        if (!dead) {
            wait();
        }
    }

    void schedule() {
        if (posted || dead) {
            return;
        }
        posted = true;
        std::weak_ptr<int> alive = life;
        boost::asio::post(io, [this, alive] {
            if (!alive.expired()) {
                posted = false;
                pass();
            }
        });
    }

    void pass() noexcept {
        if (dead) {
            return;
        }
        session.notify().flush();
        if (pages.doorbell != nullptr && session.doorbells(*pages.doorbell) != 0 && watch) {
            watch->activity();
        }
        switch (ring.serve(budget)) {
            case RingServer::Pass::idle:
            case RingServer::Pass::blocked:
                break;
            case RingServer::Pass::more:
                schedule();
                break;
            case RingServer::Pass::disconnect:
                fail("the guest's request producer index ran past the ring");
                return;
        }
        if (watch) {
            watch->update();  // the pass may have created the first queue
        }
        check_notify();
    }

    void check_notify() noexcept {
        if (session.notify().overflowed()) {
            fail("the guest does not consume its notifications (backlog full)");
            return;
        }
        if (session.notify().backlog() != 0 && !retry_armed) {
            retry_armed = true;
            std::weak_ptr<int> alive = life;
            retry.expires_after(kNotifyRetry);
            retry.async_wait([this, alive](const boost::system::error_code& error) {
                if (alive.expired() || error == boost::asio::error::operation_aborted) {
                    return;
                }
                retry_armed = false;
                session.notify().flush();
                check_notify();
            });
        }
    }

    void fail(std::string reason) noexcept {
        if (dead) {
            return;
        }
        dead = true;
        boost::system::error_code ignored;
        fd.cancel(ignored);
        retry.cancel();
        if (watch) {
            watch->stop();
        }
        if (on_fatal) {
            on_fatal(std::move(reason));
        }
    }

    boost::asio::io_context& io;
    xen::EventChannel& events;
    xen::Port local;
    GuestPages pages;
    Session& session;
    RingServer& ring;
    uint32_t budget;
    CoreFatal on_fatal;
    boost::asio::posix::stream_descriptor fd;
    boost::asio::steady_timer retry;
    std::unique_ptr<DoorbellWatch> watch;  // only for a GPU seam that does not track kicks
    std::shared_ptr<int> life = std::make_shared<int>(0);
    bool posted = false;
    bool retry_armed = false;
    bool dead = false;
};

Result<std::unique_ptr<GuestCore>> GuestCore::start(boost::asio::io_context& io,
                                                    xen::EventChannel& events, xen::Port local,
                                                    const GuestPages& pages,
                                                    const SessionSeams& seams,
                                                    const GuestOptions& options,
                                                    CoreFatal on_fatal) {
    if (pages.ring_order > XENHSA_RING_MAX_ORDER ||
        pages.ring.size() < XENHSA_RING_BYTES(pages.ring_order)) {
        return errc(std::errc::invalid_argument);
    }
    try {
        return start_checked(io, events, local, pages, seams, options, std::move(on_fatal));
    } catch (const std::bad_alloc&) {
        return errc(std::errc::not_enough_memory);
    } catch (const std::system_error& e) {
        return e.code();
    } catch (...) {
        return errc(std::errc::io_error);
    }
}

Result<std::unique_ptr<GuestCore>> GuestCore::start_checked(
    boost::asio::io_context& io, xen::EventChannel& events, xen::Port local,
    const GuestPages& pages, const SessionSeams& seams, const GuestOptions& options,
    CoreFatal on_fatal) {
    std::unique_ptr<GuestCore> core(new GuestCore());
    SessionOptions session_options;
    session_options.ring_slots = XENHSA_RING_SLOTS(pages.ring_order);
    session_options.quotas = options.quotas;
    session_options.features = options.features;
    session_options.proposal_base = options.proposal_base;
    session_options.notify_page = pages.notify;
    core->session_ = std::make_unique<Session>(io, seams, session_options);

    GuestCore* self = core.get();
    auto ring = RingServer::attach(pages.ring, pages.ring_order, *core->session_, [self] {
        if (self->driver_) {
            self->driver_->kick();
        }
    });
    if (!ring) {
        return ring.error();
    }
    core->ring_ = std::move(ring).value();
    core->session_->set_async_sink(core->ring_.get());
    core->session_->notify().set_kick([self] {
        if (self->driver_) {
            self->driver_->kick();
        }
    });

    core->driver_ =
        std::make_unique<Driver>(io, events, local, pages, *core->session_, *core->ring_,
                                 options.quotas.ring_budget, std::move(on_fatal));
    core->ring_->set_unblocked([self] {
        if (self->driver_) {
            self->driver_->schedule();
        }
    });
    // A backend now serves the ring (§2.7; the unmap notification clears it).
    xenhsa_index_store(&reinterpret_cast<xenhsa_sring*>(pages.ring.data())->be_alive, 1);
    if (pages.doorbell != nullptr) {
        // A GPU side that polls its busy queues keeps the kick word itself; otherwise every
        // doorbell store must kick, since the backend only looks at the page when woken.
        if (seams.gpu != nullptr && seams.gpu->track_kicks(&pages.doorbell->kick_requested)) {
            core->kick_tracker_ = seams.gpu;
        } else {
            __atomic_store_n(&pages.doorbell->kick_requested, 1u, __ATOMIC_RELEASE);
            __atomic_thread_fence(__ATOMIC_SEQ_CST);
            if (seams.gpu != nullptr) {
                // ... but a guest that never kicks (ROCr) is served by polling.
                core->driver_->watch = std::make_unique<DoorbellWatch>(
                    io, *pages.doorbell, *core->session_, options.doorbell_poll);
            }
        }
    }
    core->driver_->start();
    return core;
}

GuestCore::~GuestCore() {
    if (kick_tracker_ != nullptr) {
        (void)kick_tracker_->track_kicks(nullptr);  // before the doorbell page goes
    }
    driver_.reset();
    if (session_) {
        session_->set_async_sink(nullptr);
        session_->notify().set_kick({});
    }
    ring_.reset();
    session_.reset();
}

void GuestCore::revoke_all() noexcept {
    session_->revoke_all(false);
    driver_->check_notify();
}

bool GuestCore::revoke_handle(hsa::Handle handle) noexcept {
    const bool found = session_->revoke_handle(handle);
    driver_->check_notify();
    return found;
}

uint32_t GuestCore::enforce_quotas(const Quotas& quotas) noexcept {
    const uint32_t revoked = session_->enforce_quotas(quotas);
    driver_->check_notify();
    return revoked;
}

void GuestCore::wake() noexcept { driver_->pass(); }

const DoorbellWatch* GuestCore::doorbell_watch() const noexcept { return driver_->watch.get(); }

}  // namespace xenhsa::backend::core
