// HSA events as libhsakmt hands them to ROCr: HsaEvent objects this library owns, each an
// EVENT of the backend. EventId is the backend's event id (what ROCr stores in
// amd_signal_t.event_id and what the GPU raises); HWData2 is the event's mailbox
// (amd_signal_t.event_mailbox_ptr): the backend's when it gives one, else a slot of this
// library's events page, GPU-mapped guest memory, as the thunk's events page is. ROCr
// emits the "write mailbox, raise interrupt" SDMA packets only for a signal with a mailbox.
//
// Waits are EVENT_WAITs: the calling thread blocks on the event channel (SerialLink), so
// a thread in hsaKmtWaitOnEvent costs no CPU. More than XENHSA_WAIT_MAX_EVENTS events are
// waited for as several EVENT_WAITs at once, the rest cancelled when one is answered.
//
// A GPU memory fault sets the backend's memory events (as KFD does); a wait that sees
// one fire fills its MemoryAccessFault from the GPU_FAULT notification, the way the
// thunk fills it from KFD's event data, so ROCr's VM-fault handler reports the address.
//
// A wait that finds the link to the backend broken (the backend broke the protocol, went
// away, or the device went down) reports it as what a GPU reset is to a process: every
// memory event of this library gets KFD's hang data (ErrorType 3, imprecise, fatal), which
// ROCr's wait loops check before anything else, so its VM-fault handler says "Generic
// hang recovery" and aborts the program instead of waking it 20 times a second forever.
#ifndef XENHSA_FRONTEND_HSAKMT_EVENTS_HPP
#define XENHSA_FRONTEND_HSAKMT_EVENTS_HPP

#include <hsakmt.h>

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>
#include <xenhsa/frontend/client.hpp>

#include "memory.hpp"
#include "topology.hpp"

namespace xenhsa::frontend::hsakmt {

class Events {
public:
    Events(Client& client, Memory& memory, const Topology& topology) noexcept
        : client_(client), memory_(memory), topology_(topology) {}
    ~Events();  // destroys what ROCr left, best effort
    Events(const Events&) = delete;
    Events& operator=(const Events&) = delete;

    Result<HsaEvent*> create(const HsaEventDescriptor& desc, bool manual_reset, bool signaled);
    Result<void> destroy(HsaEvent* event);
    Result<void> set(HsaEvent* event);
    Result<void> reset(HsaEvent* event);
    // status_error(TIMEOUT) when the time passed. `all`: every event must fire.
    Result<void> wait(std::span<HsaEvent* const> events, bool all, uint32_t timeout_ms);
    // The backend handle of one of our events, or 0.
    [[nodiscard]] Handle handle_of(const HsaEvent* event) const noexcept;
    // The link broke: every memory event gets a hang's data (once; logged).
    void report_link_lost(const std::error_code& why);
    [[nodiscard]] bool link_lost() const noexcept { return link_lost_; }

private:
    struct Entry {
        std::unique_ptr<HsaEvent> event;
        uint32_t type = 0;  // enum xenhsa_event_type
        Handle handle = 0;
        int32_t slot = -1;  // events-page slot, or -1
    };

    Result<uint64_t> mailbox_slot(int32_t& slot);
    Result<std::vector<Handle>> handles_of(std::span<HsaEvent* const> events) const;
    Result<void> wait_events(std::span<HsaEvent* const> events, bool all, uint32_t timeout_ms);
    Result<void> wait_any(std::span<const Handle> handles, uint32_t timeout_ms);
    // After a wait: memory events among `events` get the last GPU fault's data.
    void fill_memory_faults(std::span<HsaEvent* const> events);
    Client& client_;
    Memory& memory_;
    const Topology& topology_;
    std::map<const HsaEvent*, Entry> events_;
    uint64_t page_ = 0;                   // the events page (allocated on first use)
    std::optional<uint64_t> last_fault_;  // address of the last GPU_FAULT notification
    bool last_fault_hang_ = false;        // ... which reported a hung queue
    bool link_lost_ = false;
    std::vector<bool> slots_;
};

}  // namespace xenhsa::frontend::hsakmt

#endif
