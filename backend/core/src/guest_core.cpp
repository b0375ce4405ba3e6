#include <xenhsa/proto/ring.h>

#include <algorithm>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <thread>
#include <vector>
#include <xenhsa/backend/core/doorbell_watch.hpp>
#include <xenhsa/backend/core/guest_core.hpp>

namespace xenhsa::backend::core {
namespace {

// While notifications wait for room on a full notify page, retry this often: the guest
// does not kick the backend when it consumes them.
constexpr std::chrono::milliseconds kNotifyRetry{20};
// Ports one wake-up keeps masked: the core binds one; more would be the platform's bug.
constexpr std::size_t kMaxFiredPorts = 8;
constexpr std::size_t kMaxPendingReads = 2 * kMaxFiredPorts;
// While the ring is polled, the loop gets control back this often (answers, timers).
constexpr std::chrono::microseconds kPollBurst{5};

using Clock = std::chrono::steady_clock;

}  // namespace

// Waits on the event channel and runs passes. Handlers hold a weak reference to `life`
// so that none touches the driver after it is gone.
struct GuestCore::Driver {
    Driver(boost::asio::io_context& io_, xen::EventChannel& events_, xen::Port local_,
           const GuestPages& pages_, GuestRequests& requests_, RingServer& ring_, uint32_t budget_,
           const SpuriousEventPolicy& spurious_, std::chrono::microseconds ring_spin_,
           CoreFatal on_fatal_)
        : io(io_),
          events(events_),
          local(local_),
          pages(pages_),
          requests(requests_),
          ring(ring_),
          budget(budget_),
          ring_spin(ring_spin_),
          on_fatal(std::move(on_fatal_)),
          fd(io_),
          retry(io_),
          late_eoi(io_),
          spurious(spurious_) {
        fired.reserve(kMaxFiredPorts);
    }

    ~Driver() {
        boost::system::error_code ignored;
        fd.cancel(ignored);
        (void)fd.release();  // the EventChannel owns the fd
        retry.cancel();
        late_eoi.cancel();
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
        // One pending() per port that fired; what was delivered stays masked until the
        // pass has shown whether the guest kicked for something (late EOI). Bounded: what
        // is left is readable again at once.
        for (std::size_t reads = 0; reads < kMaxPendingReads; ++reads) {
            auto port = events.pending();
            if (!port) {
                fail("event channel: " + port.error().message());
                return;
            }
            if (!port.value()) {
                break;
            }
            if (fired.size() < kMaxFiredPorts) {
                fired.push_back(*port.value());
            } else {
                (void)events.unmask(*port.value());
            }
        }
        pass();
        if (dead) {
            return;
        }
        const auto delay = spurious.wakeup(took_work());
        if (delay.count() == 0) {
            rearm();
            return;
        }
        // Spurious kicks in a row: the channel stays masked for a while, and its fd leaves
        // the loop's epoll set too (a platform whose fd still stirs for a masked port
        // would wake the loop for nothing). Passes from elsewhere (budget, answers, the
        // doorbell watch) go on meanwhile.
        (void)fd.release();
        std::weak_ptr<int> alive = life;
        late_eoi.expires_after(delay);
        late_eoi.async_wait([this, alive](const boost::system::error_code& timer_error) {
            if (alive.expired() || timer_error == boost::asio::error::operation_aborted || dead) {
                return;
            }
            boost::system::error_code assign_error;
            fd.assign(events.fd(), assign_error);
            if (assign_error) {
                fail("event channel: " + assign_error.message());
                return;
            }
            rearm();
            pass();  // what was latched while masked is delivered again after the unmask
        });
    }

    // Whether a request was consumed or the GPU took packets from the guest's queues
    // since the last wake-up by the event channel. A doorbell that moved with no packet
    // behind it is no work: a guest that bumps one before each kick is throttled too.
    // The GPU takes a kick's packets after the pass, so a wake-up is credited with what
    // the previous one brought: one in a row may look spurious, which is free.
    bool took_work() noexcept {
        const uint32_t cons = ring.req_cons();
        const uint64_t progress = requests.gpu_progress();
        const bool work = cons != last_req_cons || progress != last_gpu_progress;
        last_req_cons = cons;
        last_gpu_progress = progress;
        return work;
    }

    void rearm() noexcept {
        for (const xen::Port port : fired) {
            (void)events.unmask(port);
        }
        fired.clear();
        wait();
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
        requests.notify().flush();
        if (pages.doorbell != nullptr && requests.doorbells(*pages.doorbell) != 0 && watch) {
            watch->activity();
        }
        const uint32_t consumed_before = ring.req_cons();
        auto result = ring.serve(budget, ring_spin.count() == 0);
        if (result == RingServer::Pass::drained && ring.req_cons() == consumed_before) {
            // Only a guest that just sent something is polled for (a timer's or the
            // doorbell watch's pass must not start a spin); a poll under way goes on.
            result = polling ? RingServer::Pass::idle : ring.arm();
        }
        if (!after(result)) {
            return;
        }
        if (watch) {
            watch->update();  // the pass may have created the first queue
        }
        check_notify();
    }

    // What a pass or an arm() leaves to do; false when the guest is gone.
    bool after(RingServer::Pass result) noexcept {
        switch (result) {
            case RingServer::Pass::idle:
            case RingServer::Pass::blocked:
                break;
            case RingServer::Pass::drained:
                poll();
                break;
            case RingServer::Pass::more:
                schedule();
                break;
            case RingServer::Pass::disconnect:
                fail("the guest's request producer index ran past the ring");
                return false;
            case RingServer::Pass::frontend_gone:
                fail("the frontend's process is gone (its ring's fe_alive was cleared)");
                return false;
        }
        return true;
    }

    // Spin-then-block: the guest's next request usually follows its last answer within
    // microseconds, sooner than a kick and a wake-up would bring it. The window restarts
    // with every pass that caught up.
    void poll() noexcept {
        poll_until = Clock::now() + ring_spin;
        if (!polling) {
            polling = true;
            post_poll();
        }
    }

    void post_poll() noexcept {
        std::weak_ptr<int> alive = life;
        boost::asio::post(io, [this, alive] {
            if (!alive.expired()) {
                poll_step();
            }
        });
    }

    void poll_step() noexcept {
        if (dead) {
            polling = false;
            return;
        }
        auto now = Clock::now();
        const auto burst_end = std::min(now + kPollBurst, poll_until);
        for (;;) {
            if (ring.requests_waiting()) {
                polling = false;
                pass();
                return;
            }
            now = Clock::now();
            if (now >= burst_end) {
                break;
            }
            xenhsa_cpu_relax();
        }
        if (now < poll_until) {
            // The guest may be waiting for this core (more runnable threads than cores).
            std::this_thread::yield();
            post_poll();
            return;
        }
        polling = false;
        (void)after(ring.arm());
    }

    void check_notify() noexcept {
        if (requests.notify().overflowed()) {
            fail("the guest does not consume its notifications (backlog full)");
            return;
        }
        if (requests.notify().backlog() != 0 && !retry_armed) {
            retry_armed = true;
            std::weak_ptr<int> alive = life;
            retry.expires_after(kNotifyRetry);
            retry.async_wait([this, alive](const boost::system::error_code& error) {
                if (alive.expired() || error == boost::asio::error::operation_aborted) {
                    return;
                }
                retry_armed = false;
                requests.notify().flush();
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
        late_eoi.cancel();
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
    GuestRequests& requests;
    RingServer& ring;
    uint32_t budget;
    std::chrono::microseconds ring_spin;
    CoreFatal on_fatal;
    boost::asio::posix::stream_descriptor fd;
    boost::asio::steady_timer retry;
    boost::asio::steady_timer late_eoi;  // unmasks the channel after a spurious streak
    SpuriousEventThrottle spurious;
    std::vector<xen::Port> fired;  // delivered, still masked
    uint32_t last_req_cons = 0;
    uint64_t last_gpu_progress = 0;
    std::unique_ptr<DoorbellWatch> watch;  // only for a GPU seam that does not track kicks
    std::shared_ptr<int> life = std::make_shared<int>(0);
    Clock::time_point poll_until;
    bool polling = false;
    bool posted = false;
    bool retry_armed = false;
    bool dead = false;
};

Result<std::unique_ptr<GuestCore>> GuestCore::start(boost::asio::io_context& io,
                                                    xen::EventChannel& events, xen::Port local,
                                                    const GuestPages& pages,
                                                    const RequestSeams& seams,
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
    const GuestPages& pages, const RequestSeams& seams, const GuestOptions& options,
    CoreFatal on_fatal) {
    std::unique_ptr<GuestCore> core(new GuestCore());
    RequestOptions request_options;
    request_options.ring_slots = XENHSA_RING_SLOTS(pages.ring_order);
    request_options.quotas = options.quotas;
    request_options.features = options.features;
    request_options.proposal_base = options.proposal_base;
    request_options.notify_page = pages.notify;
    request_options.doorbell_page = pages.doorbell;
    core->requests_ = std::make_unique<GuestRequests>(io, seams, request_options);

    GuestCore* self = core.get();
    auto ring = RingServer::attach(pages.ring, pages.ring_order, *core->requests_, [self] {
        if (self->driver_) {
            self->driver_->kick();
        }
    });
    if (!ring) {
        return ring.error();
    }
    core->ring_ = std::move(ring).value();
    core->requests_->set_async_sink(core->ring_.get());
    core->requests_->notify().set_kick([self] {
        if (self->driver_) {
            self->driver_->kick();
        }
    });

    core->driver_ = std::make_unique<Driver>(
        io, events, local, pages, *core->requests_, *core->ring_, options.quotas.ring_budget,
        options.spurious_events, options.ring_spin, std::move(on_fatal));
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
                    io, *pages.doorbell, *core->requests_, options.doorbell_poll);
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
    if (requests_) {
        requests_->set_async_sink(nullptr);
        requests_->notify().set_kick({});
    }
    ring_.reset();
    requests_.reset();
}

void GuestCore::revoke_all() noexcept {
    requests_->revoke_all(false);
    driver_->check_notify();
}

bool GuestCore::revoke_handle(hsa::Handle handle) noexcept {
    const bool found = requests_->revoke_handle(handle);
    driver_->check_notify();
    return found;
}

uint32_t GuestCore::enforce_quotas(const Quotas& quotas) noexcept {
    const uint32_t revoked = requests_->enforce_quotas(quotas);
    driver_->check_notify();
    return revoked;
}

void GuestCore::wake() noexcept { driver_->pass(); }

const DoorbellWatch* GuestCore::doorbell_watch() const noexcept { return driver_->watch.get(); }

const SpuriousEventThrottle& GuestCore::spurious_events() const noexcept {
    return driver_->spurious;
}

}  // namespace xenhsa::backend::core
