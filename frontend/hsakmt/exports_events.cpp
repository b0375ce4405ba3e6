// hsaKmt* exports: events. Waits block the calling thread on the event channel with the
// library's mutex released (SerialLink).
#include <chrono>
#include <thread>

#include "rocm6.hpp"
#include "thunk.hpp"

using namespace xenhsa::frontend::hsakmt;

namespace {

// A wait that fails because the device is gone must not make ROCr's wait loops spin:
// it takes a short part of its time before it reports the error.
HSAKMT_STATUS settle(HSAKMT_STATUS status, HSAuint32 milliseconds) {
    if (status == HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR ||
        status == HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED) {
        std::this_thread::sleep_for(
            std::chrono::milliseconds(std::min<HSAuint32>(milliseconds, 50)));
    }
    return status;
}

}  // namespace

extern "C" {

HSAKMT_STATUS HSAKMTAPI hsaKmtCreateEvent(HsaEventDescriptor* EventDesc, bool ManualReset,
                                          bool IsSignaled, HsaEvent** Event) {
    return call("hsaKmtCreateEvent", [&](Session& s) {
        if (EventDesc == nullptr || Event == nullptr) {
            return HSAKMT_STATUS_INVALID_PARAMETER;
        }
        auto created = s.events().create(*EventDesc, ManualReset, IsSignaled);
        if (!created) {
            return to_status(created.error());
        }
        *Event = created.value();
        return HSAKMT_STATUS_SUCCESS;
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtDestroyEvent(HsaEvent* Event) {
    return call("hsaKmtDestroyEvent",
                [&](Session& s) { return released(s, s.events().destroy(Event)); });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtSetEvent(HsaEvent* Event) {
    return call("hsaKmtSetEvent", [&](Session& s) { return to_status(s.events().set(Event)); });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtResetEvent(HsaEvent* Event) {
    return call("hsaKmtResetEvent", [&](Session& s) { return to_status(s.events().reset(Event)); });
}

// As the thunk: a wait with no time (consumes an auto-reset event that is set).
HSAKMT_STATUS HSAKMTAPI hsaKmtQueryEventState(HsaEvent* Event) {
    return call("hsaKmtQueryEventState", [&](Session& s) {
        return to_status(s.events().wait(std::span<HsaEvent* const>(&Event, 1), true, 0));
    });
}

HSAKMT_STATUS HSAKMTAPI hsaKmtWaitOnEvent(HsaEvent* Event, HSAuint32 Milliseconds) {
    return settle(call("hsaKmtWaitOnEvent",
                       [&](Session& s) {
                           if (Event == nullptr) {
                               return HSAKMT_STATUS_INVALID_HANDLE;
                           }
                           return to_status(s.events().wait(std::span<HsaEvent* const>(&Event, 1),
                                                            true, Milliseconds));
                       }),
                  Milliseconds);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtWaitOnMultipleEvents(HsaEvent* Events[], HSAuint32 NumEvents,
                                                   bool WaitOnAll, HSAuint32 Milliseconds) {
    return settle(
        call("hsaKmtWaitOnMultipleEvents",
             [&](Session& s) {
                 if (Events == nullptr || NumEvents == 0) {
                     return HSAKMT_STATUS_INVALID_HANDLE;
                 }
                 return to_status(s.events().wait(std::span<HsaEvent* const>(Events, NumEvents),
                                                  WaitOnAll, Milliseconds));
             }),
        Milliseconds);
}

// The library implements KFD 1.11 (rocm6.hpp), so ROCr 6 passes no event age (0), and an
// age, where a caller passes one, is given back unchanged: the backend's wait has no ages,
// so these are the plain waits.
HSAKMT_STATUS HSAKMTAPI hsaKmtWaitOnEvent_Ext(HsaEvent* Event, HSAuint32 Milliseconds,
                                              uint64_t* event_age) {
    (void)event_age;
    return hsaKmtWaitOnEvent(Event, Milliseconds);
}

HSAKMT_STATUS HSAKMTAPI hsaKmtWaitOnMultipleEvents_Ext(HsaEvent* Events[], HSAuint32 NumEvents,
                                                       bool WaitOnAll, HSAuint32 Milliseconds,
                                                       uint64_t* event_age) {
    (void)event_age;
    return hsaKmtWaitOnMultipleEvents(Events, NumEvents, WaitOnAll, Milliseconds);
}

}  // extern "C"
