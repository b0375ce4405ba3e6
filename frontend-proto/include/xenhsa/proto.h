/* xenhsa wire protocol v1: everything, for C11 and C++20. docs/protocol.md describes it. */
#ifndef XENHSA_PROTO_H
#define XENHSA_PROTO_H

#include "proto/codec.h"
#include "proto/commands.h"
#include "proto/common.h"
#include "proto/doorbell.h"
#include "proto/event.h"
#include "proto/hello.h"
#include "proto/memory.h"
#include "proto/notify.h"
#include "proto/query.h"
#include "proto/queue.h"
#include "proto/ring.h"
#include "proto/status.h"
#include "proto/validate.h"
#include "proto/xenbus.h"

#endif /* XENHSA_PROTO_H */
