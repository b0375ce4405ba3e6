/*
 * xenhsa wire protocol v1: xenstore layout, as for Xen PV devices.
 *
 *   /local/domain/<be>/backend/xenhsa/<fe-domid>/<devid>/
 *       frontend, frontend-id, state        (toolstack, then backend)
 *       versions = "1"                       (backend: protocol versions it speaks)
 *       max-ring-page-order = "<n>"          (backend)
 *   /local/domain/<fe>/device/xenhsa/<devid>/
 *       backend, backend-id, state          (toolstack, then frontend)
 *       ring-page-order = "<n>"              (frontend; absent means 0)
 *       ring-ref (order 0) or ring-ref0..ring-ref<2^n - 1>
 *       notify-ref, doorbell-ref, event-channel
 *
 * The frontend writes its keys, then state Initialised; the backend maps, binds, answers
 * with Connected. Values are decimal integers without sign, spaces or leading zeros; the
 * backend rejects anything else, and grant references that name one grant twice (every
 * ring page, the notify page and the doorbell page are distinct grants).
 */
#ifndef XENHSA_PROTO_XENBUS_H
#define XENHSA_PROTO_XENBUS_H

#define XENHSA_XS_DEVICE_TYPE "xenhsa"
#define XENHSA_XS_VERSIONS "versions"
#define XENHSA_XS_MAX_RING_PAGE_ORDER "max-ring-page-order"
#define XENHSA_XS_RING_PAGE_ORDER "ring-page-order"
#define XENHSA_XS_RING_REF "ring-ref"
#define XENHSA_XS_NOTIFY_REF "notify-ref"
#define XENHSA_XS_DOORBELL_REF "doorbell-ref"
#define XENHSA_XS_EVENT_CHANNEL "event-channel"
#define XENHSA_XS_STATE "state"

/* xenbus states, as in <xen/io/xenbus.h> */
enum xenhsa_xenbus_state {
    XENHSA_XB_UNKNOWN = 0,
    XENHSA_XB_INITIALISING = 1,
    XENHSA_XB_INIT_WAIT = 2,
    XENHSA_XB_INITIALISED = 3,
    XENHSA_XB_CONNECTED = 4,
    XENHSA_XB_CLOSING = 5,
    XENHSA_XB_CLOSED = 6
};

#endif /* XENHSA_PROTO_XENBUS_H */
