// The backend's end of the shared request/response ring (docs/protocol.md §2.6):
//  1. read req_prod once; a producer more than `slots` ahead of the responses means the
//     guest ran past the ring: the pass reports `disconnect` and the ring is dead;
//  2. for each new request, within the budget and never past the response slots: copy
//     the slot once, advance req_cons, hand the copy to the handler (which validates it);
//     the slot is never read again;
//  3. write each response as a whole zero-filled slot, publish rsp_prod once per batch
//     and kick only when the guest asked (notification suppression);
//  4. if the budget ran out, report `more` (the caller posts another pass instead of
//     looping); otherwise run the final check before reporting `idle`, or, for a caller
//     that polls before it sleeps, report `drained` with req_event left as it was (the
//     guest does not kick while the backend polls) and let it arm() when it stops.
// Late answers (EVENT_WAIT) come through reply() and are published at once.
#ifndef XENHSA_BACKEND_CORE_RING_SERVER_HPP
#define XENHSA_BACKEND_CORE_RING_SERVER_HPP

#include <cstddef>
#include <functional>
#include <span>
#include <xenhsa/backend/core/reply.hpp>
#include <xenhsa/backend/core/request_handler.hpp>
#include <xenhsa/backend/core/result.hpp>

namespace xenhsa::backend::core {

class RingServer final : public ReplySink {
public:
    enum class Pass : uint8_t {
        idle,           // caught up, req_event armed: sleep until the next kick
        drained,        // caught up, req_event not armed (serve(budget, false)): poll or arm()
        more,           // the budget ran out or requests arrived during the final check
        blocked,        // every response slot is owed (pending waits): wait for an answer
        disconnect,     // the guest's producer index ran past the ring: disconnect it
        frontend_gone,  // fe_alive went from 1 to 0: the frontend's process is gone
    };

    // `ring` is the whole mapped ring (XENHSA_RING_BYTES(order) bytes). `kick` notifies
    // the guest's event channel. EINVAL for an order above 3 or too few bytes.
    static Result<std::unique_ptr<RingServer>> attach(std::span<std::byte> ring, uint32_t order,
                                                      RequestHandler& handler,
                                                      std::function<void()> kick);

    // One wake-up's work: at most `budget` requests. `arm` false: a caught-up pass ends
    // `drained` instead of running the final check.
    Pass serve(uint32_t budget, bool arm = true) noexcept;

    // Whether the guest has published requests not yet consumed (one load, for polling).
    [[nodiscard]] bool requests_waiting() const noexcept;

    // The final check after polling: `idle` (req_event armed) or `more`.
    Pass arm() noexcept;

    // An answer outside serve() (or an extra one inside it): written now, published now
    // when outside a batch.
    void reply(const Reply& reply) noexcept override;

    // Called after reply() published an answer while the ring was blocked.
    void set_unblocked(std::function<void()> unblocked) { unblocked_ = std::move(unblocked); }

    [[nodiscard]] uint32_t slots() const noexcept { return slots_; }
    [[nodiscard]] bool disconnected() const noexcept { return disconnected_; }
    [[nodiscard]] uint32_t req_cons() const noexcept { return req_cons_; }
    [[nodiscard]] uint32_t rsp_prod() const noexcept { return rsp_prod_pvt_; }

private:
    RingServer(std::span<std::byte> ring, uint32_t order, RequestHandler& handler,
               std::function<void()> kick) noexcept;
    xenhsa_sring* shared() const noexcept;
    void publish() noexcept;

    std::span<std::byte> ring_;
    uint32_t slots_;
    RequestHandler& handler_;
    std::function<void()> kick_;
    std::function<void()> unblocked_;
    uint32_t req_cons_ = 0;
    uint32_t rsp_prod_pvt_ = 0;
    uint32_t rsp_published_ = 0;
    bool in_batch_ = false;
    bool blocked_ = false;
    bool disconnected_ = false;
    bool fe_seen_alive_ = false;  // fe_alive read 1 once: its 0 now means a death
};

}  // namespace xenhsa::backend::core

#endif
