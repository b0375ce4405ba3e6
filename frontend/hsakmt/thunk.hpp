// The process-wide state behind the exported hsaKmt* functions: one mutex, the open count
// and the Session. Every export goes through call(), which takes the mutex, refuses calls
// before hsaKmtOpenKFD, and turns errors and exceptions into HSAKMT_STATUS values (no
// exception leaves the library).
#ifndef XENHSA_FRONTEND_HSAKMT_THUNK_HPP
#define XENHSA_FRONTEND_HSAKMT_THUNK_HPP

#include <hsakmt.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>

#include "log.hpp"
#include "session.hpp"

namespace xenhsa::frontend::hsakmt {

struct Thunk {
    std::mutex open_close;  // serialises open and close, which let `mutex` go while waiting
    std::mutex mutex;
    uint32_t opens = 0;
    std::unique_ptr<Session> session;
    pid_t owner = 0;  // the process that opened the session

    // A child forked after the open holds copies of its parent's ring, grants and event
    // channel: as the real thunk (CHECK_KFD_OPEN), it gets
    // HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED and nothing of the parent's is touched,
    // until its own hsaKmtOpenKFD claims a device of its own.
    [[nodiscard]] bool forked_child() const noexcept { return session && owner != ::getpid(); }
    // In a forked child: forgets the parent's session without a request (its destructor
    // would drive the parent's ring and close the parent's device).
    void abandon_parents() noexcept {
        (void)session.release();  // NOLINT(bugprone-unused-return-value): the child's copy
        opens = 0;
    }
};

// Never destroyed: ROCr may call in from atexit handlers and other threads at exit. Its
// mutexes are held across fork() (pthread_atfork), so that a child never inherits them
// locked by a thread it does not have.
Thunk& thunk() noexcept;

HSAKMT_STATUS to_status(const std::error_code& ec) noexcept;

inline HSAKMT_STATUS to_status(const Result<void>& r) noexcept {
    return r ? HSAKMT_STATUS_SUCCESS : to_status(r.error());
}

// A release (free, unmap, deregister, destroy) once the session has ended: it succeeds,
// as on a KFD after a GPU reset, since the backend tears the whole session down; what
// the guest held stays out of use until the close.
inline HSAKMT_STATUS released(Session& s, const Result<void>& r) noexcept {
    const bool ended = !r && s.client().broken() && r.error().category() == frontend_category();
    return ended ? HSAKMT_STATUS_SUCCESS : to_status(r);
}

// A call that ended the session because a request went unanswered (Errc::session_timed_out)
// ends as a GPU reset does: the memory events get a hang's data, and the caller waits, the
// library's lock released, for ROCr's event thread (woken as the session ended) to see it,
// which aborts the program with ROCr's message. Without such a thread the call fails after
// kHangGrace.
inline constexpr std::chrono::milliseconds kHangGrace{1000};

template <class F>
HSAKMT_STATUS call(const char* name, F&& body) noexcept {
    Thunk& t = thunk();
    try {
        std::unique_lock lock(t.mutex);
        if (!t.session || t.forked_child()) {
            return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
        }
        Session* const session = t.session.get();
        const HSAKMT_STATUS status = body(*session);
        if (status != HSAKMT_STATUS_SUCCESS && status != HSAKMT_STATUS_WAIT_TIMEOUT) {
            log().debug("{} -> {}", name, static_cast<int>(status));
            // A wait lets the lock go: the session may have been closed meanwhile.
            Session* const s = t.session.get() == session ? session : nullptr;
            if (s != nullptr &&
                s->client().broken_reason() == std::error_code(Errc::session_timed_out) &&
                !s->events().link_lost()) {
                s->events().report_link_lost(s->client().broken_reason());
                lock.unlock();
                std::this_thread::sleep_for(kHangGrace);
            }
        }
        return status;
    } catch (const std::bad_alloc&) {
        return HSAKMT_STATUS_NO_MEMORY;
    } catch (const std::exception& e) {
        log().error("{}: {}", name, e.what());
        return HSAKMT_STATUS_ERROR;
    } catch (...) {
        return HSAKMT_STATUS_ERROR;
    }
}

// Why the debugger's calls are refused (ROCr asks at every start).
inline constexpr const char* kNoDebugger = "the GPU debugger interface is not forwarded";

// A refused call: logged once, HSAKMT_STATUS_NOT_SUPPORTED.
inline HSAKMT_STATUS refuse(const char* name, const char* why,
                            spdlog::level::level_enum level = spdlog::level::warn) noexcept {
    refused_once(name, why, level);
    return HSAKMT_STATUS_NOT_SUPPORTED;
}

}  // namespace xenhsa::frontend::hsakmt

// The body of an export that refuses: `return call(...)` of refuse(name, why).
#define XENHSA_REFUSE(name, why) return call(name, [&](Session&) { return refuse(name, why); })

#endif
