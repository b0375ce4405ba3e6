/*
 * xenhsa's Map/Revoke, queue and teardown protocol as Spin checks it (ctest -L model,
 * tests/model/run-spin.sh; docs/architecture.md, "The protocol, model-checked").
 *
 * Five processes:
 *   Guest      hostile: sends any request at any time (MAP, UNMAP, PIN, UNPIN,
 *              MAP_TO_GPU, UNMAP_FROM_GPU, QUEUE_CREATE, QUEUE_DESTROY, LEND, UNMAP of the
 *              LEND), maps and unmaps the lent page, closes the connection, dies at any
 *              moment (mid-request included).
 *   Worker     one worker's loop (GuestRequests and the command classes, MapRevoke,
 *              GpuContext), single-threaded as the worker's io_context is; every call into
 *              the device or the hypervisor is a step of its own, so the GPU can run
 *              between any two of them.
 *   Gpu        the device: one queue thread that reads the ring and the read/write
 *              pointers through what it holds, dispatches that reach GPU-mapped memory, and
 *              the halt-and-join of KfdDevice::destroy_queue.
 *   Hypervisor the grant table (bemap[], the lent page), a dying domain (its mappings
 *              of the lent page go, its memory stays until the backend's last grant unmap)
 *              and the @releaseDomain that reaches the worker through the supervisor.
 *   Operator   one `xenhsa-ctl revoke` (everything, one MAP or the LEND) at any moment.
 *
 * Bounded: guest pages 0 and 1, one MAP and at most one PIN each; one queue, its ring in
 * page 0 and its read/write pointers in page 0 or 1; one LEND slot and a pool of one page;
 * rendezvous channels. See "what the model leaves out" at the end of this file.
 *
 * Properties (each an assertion, or for P4 an LTL formula; run-spin.sh --property pN
 * selects one with -DCHECK_PN):
 *   P1  the GPU touches a page only while it is GPU-mapped, registered and grant-mapped:
 *       never after its revoke, UNMAP or teardown took it away.
 *   P2  a grant is never unmapped while pinned or GPU-mapped (and the VA range goes back
 *       only after the grant).
 *   P3  a queue's ring and read/write-pointer memory are released only after the queue is
 *       destroyed in the device.
 *   P4  teardown terminates: after guest death or a close, and after an operator revoke,
 *       the all-released state is reached (LTL, weak fairness).
 *   P5  a lent page goes back to the pool only once the guest no longer maps it.
 * Every safety run also checks end states: a run that stops has every process at its end.
 *
 * Broken variants (-DBROKEN_...), each caught by one property: see the #ifdefs and
 * tests/model/CMakeLists.txt.
 */

/* MapRevoke::maps_ entry of a page */
#define M_NONE      0
#define M_LIVE      1   /* the guest's MAP handle is live */
#define M_DEFERRED  2   /* UNMAPped while a queue holds it: handle gone, mapping stays */
/* GpuContext's PIN of a page, and the device registration behind it */
#define R_NONE      0
#define R_LIVE      1
#define R_DEFERRED  2   /* UNPINned while a queue holds it: handle gone (mem.handle == 0) */
/* the device's queue */
#define DQ_NONE     0
#define DQ_RUN      1
#define DQ_STOPPING 2   /* halted, its thread not yet joined: may finish one access */
/* MapRevoke::lends_ entry */
#define L_NONE      0
#define L_LIVE      1
#define L_REVOKED   2   /* REVOKED posted, the handle waits for the guest's UNMAP */
/* the lent page, as the hypervisor (gntalloc) holds it */
#define LP_FREE     0   /* in the pool */
#define LP_SHARED   1   /* granted to the guest */
#define LP_HELD     2   /* taken back while the guest still maps it: scrubbed, out of use */

mtype = { MAP, UNMAP, PIN, UNPIN, MAP_TO_GPU, UNMAP_FROM_GPU, QUEUE_CREATE, QUEUE_DESTROY,
          LEND, UNMAP_LEND, REVOKE_ALL, REVOKE_MAP, REVOKE_LEND };

/* The request ring: command, page. A rendezvous: the worker takes one request at a time,
 * and a request waiting in the ring is no different from one the guest sends later. */
chan ring = [0] of { mtype, bit };
/* What the worker learns outside the ring, rendezvous too: the guest's Closing
 * (xenstore), its death (@releaseDomain, through the supervisor), xenhsa-ctl revoke. */
chan close_ch = [0] of { bit };
chan death_ch = [0] of { bit };
chan op_ch = [0] of { mtype, bit };

/* hypervisor: the grant table */
bool bemap[2];           /* the backend maps the guest's page (GrantMapping): the entry is
                          * pinned, and the guest's end_access is refused meanwhile, so the
                          * page is the guest's to reuse exactly when this is false */
bool glmap;              /* the guest maps the lent page */
byte lpage;              /* LP_* */
bool g_alive = true;
bool dom_gone;           /* the dead domain's memory is released */
/* worker: MapRevoke and VaWindow */
byte mp[2];              /* M_* */
bool va[2];              /* the page's VA range is claimed in the window */
byte ls;                 /* L_* */
/* worker: GpuContext (its books and the device agree after each device call) */
byte reg[2];             /* R_* */
bool gmap[2];            /* GPU-mapped (MemObj::node_mask != 0) */
bool umdef[2];           /* MemObj::unmap_deferred */
bool qh;                 /* the queue's handle is in GpuContext::queues */
bool qref;               /* the queue's references on its memory (MemObj::queue_refs) */
bit qptr;                /* the page of the read/write pointers; the ring is in page 0 */
/* the device */
byte dq;                 /* DQ_* */
/* ghosts for P4 */
bool closing;            /* the worker took the guest's Closing */
bool op_revoking;        /* the worker runs an operator's revoke */
bool worker_done;

#define QUSES(p)      ((p) == 0 || (p) == qptr)
#define QREFS(p)      (qref && QUSES(p))
#define QUEUE_FREE(p) (dq == DQ_NONE || !QUSES(p))

#define BACKEND_HOLDS_NOTHING \
    (!qh && !qref && dq == DQ_NONE && reg[0] == R_NONE && reg[1] == R_NONE && \
     !gmap[0] && !gmap[1] && mp[0] == M_NONE && mp[1] == M_NONE && \
     !bemap[0] && !bemap[1] && !va[0] && !va[1])
#define RELEASED (worker_done && BACKEND_HOLDS_NOTHING && ls == L_NONE && \
                  dom_gone && lpage == LP_FREE)

#ifdef CHECK_P1
#define P1(c) assert(c)
#else
#define P1(c) skip
#endif
#ifdef CHECK_P2
#define P2(c) assert(c)
#else
#define P2(c) skip
#endif
#ifdef CHECK_P3
#define P3(c) assert(c)
#else
#define P3(c) skip
#endif
#ifdef CHECK_P4
#define P4(c) assert(c)
#else
#define P4(c) skip
#endif
#ifdef CHECK_P5
#define P5(c) assert(c)
#else
#define P5(c) skip
#endif

/*
 * P1: a GPU access to page p. The rule is kept by the revoke order in
 * hsa-bridge/gpu_context/context_release.cpp: GpuContext::revoke_range (stop the queues
 * using the range, then unmap from the GPU, then deregister) and GpuContext::teardown, by
 * backend/core/src/map_revoke.cpp: MapRevoke::revoke_map_entry (the GPU half before the
 * grant unmap), and by the join in hsa-bridge/soft/agent.cpp: SoftAgent::destroy_queue
 * (AqlQueue::stop: nothing of the queue touches memory after it). Dispatches reach memory
 * through AddressSpace::View (hsa-bridge/soft/address_space.hpp), checked under the lock
 * that unmap_from_gpu takes exclusively.
 */
inline touch(p) {
    P1(gmap[p] && reg[p] != R_NONE && bemap[p])
}

/*
 * The device and hypervisor calls that release memory. P3 at each: the queue whose ring
 * or pointers lie in the page is gone from the device. Kept by GpuContext's queue
 * references (hsa-bridge/gpu_context/context_memory.cpp: Impl::release_memory and
 * GpuContext::unmap_from_gpu defer; context_queues.cpp: GpuContext::destroy_queue runs the
 * deferred releases after Impl::stop_queue; context_release.cpp: Impl::settle_unmap,
 * Impl::settle_release) and by backend/core/src/memory_commands.cpp: MemoryCommands::unmap
 * (GpuContext::range_held: defer_unmap) with MapRevoke::release_deferred after
 * QUEUE_DESTROY (backend/core/src/gpu_commands.cpp: GpuCommands::queue_destroy).
 * The device is modelled permissive (it does what it is told): the software agent and
 * KFD since about Linux 6.12 also refuse to unmap queue memory (EBUSY, and the worker
 * aborts), a second line the model leaves out so that the backend's order alone is
 * checked.
 */
inline dev_unmap(p) {            /* KfdDevice::unmap_from_gpu (Impl::unmap_now) */
    P3(QUEUE_FREE(p));
    gmap[p] = false;
    umdef[p] = false
}
inline dev_deregister(p) {       /* KfdDevice::deregister_user (Impl::release_now) */
    P3(QUEUE_FREE(p));
    reg[p] = R_NONE
}
/*
 * P2 at the grant unmap: nothing of the GPU seam holds the page. Kept by
 * backend/core/src/map_revoke.cpp: MapRevoke::revoke_map_entry (GpuContext::revoke_range
 * before GrantMapping::reset), by MemoryCommands::unmap (BAD_STATE while a PIN is live,
 * deferred while a queue holds the range), and at session end by
 * backend/core/src/guest_requests.cpp: GuestRequests::revoke_all (GpuContext::teardown
 * before MapRevoke::revoke_all). Then the VA range, after the grant (step 5, VaWindow::
 * release re-reserves it PROT_NONE).
 */
inline grant_unmap(p) {          /* GrantMapping::reset, maps_.erase */
    P2(reg[p] == R_NONE && !gmap[p]);
    P3(QUEUE_FREE(p));
    bemap[p] = false;
    mp[p] = M_NONE
}
inline va_release(p) {
    P2(!bemap[p]);
    va[p] = false
}

/* P5: the pool takes a lent page back (and may lend it again) only when the guest no
 * longer maps it. Kept by backend/core/src/map_revoke.cpp: MapRevoke::unlend (end_access
 * fails while the guest maps a page: revoke instead) and MapRevoke::revoke_lend_entry
 * (SharedPages::revoke), with the seam's rule (xen/include/xenhsa/xen/grant_share.hpp:
 * pages that could not end access stay with the hypervisor until the guest unmaps). */
inline lp_free() {
    P5(!glmap);
    lpage = LP_FREE
}
/* SharedPages::revoke on Xen 4.17 (cooperative): scrubbed, and out of use until the guest
 * unmaps. On xenhsa-sim the revoke also drops the guest's mapping: a special case. */
inline lend_take_back() {
    if
    :: glmap -> lpage = LP_HELD
    :: else -> lp_free()
    fi
}

/* --- GpuContext (hsa-bridge/gpu_context) --------------------------------------------- */

/* Impl::stop_queue + Impl::drop_refs: erase the handle, halt the queue, join its thread,
 * then drop its references. */
inline stop_queue() {
    d_step { qh = false; dq = DQ_STOPPING };
#ifdef BROKEN_STOP_WITHOUT_JOIN
    /* Broken: halts the queue thread but does not join it. */
    qref = false
#else
    d_step { dq == DQ_NONE -> qref = false }
#endif
}

/* Impl::release_now: unmap if still GPU-mapped, then deregister. */
inline release_now(p) {
    if
    :: gmap[p] -> d_step { dev_unmap(p) }
    :: else -> skip
    fi;
    d_step { dev_deregister(p) }
}

/* Impl::settle_unmap: a deferred GPU unmap, once no queue holds the memory. */
inline settle_unmap(p) {
    if
    :: reg[p] != R_NONE && !QREFS(p) && gmap[p] && (umdef[p] || reg[p] == R_DEFERRED) ->
        d_step { dev_unmap(p) }
    :: else -> skip
    fi
}

/* Impl::settle_release: a deferred UNPIN, once no queue holds the memory. */
inline settle_release(p) {
    if
    :: reg[p] == R_DEFERRED && !QREFS(p) -> release_now(p)
    :: else -> skip
    fi
}

/* GpuContext::revoke_range for page p (the PIN of p is the one object it marks). */
inline revoke_range(p) {
    if
    :: reg[p] == R_NONE -> skip  /* nothing marked: a second revoke finds nothing */
    :: else ->
#ifdef BROKEN_UNPIN_BEFORE_QUIESCE
        /* Broken: unmaps from the GPU and deregisters before stopping the queues. */
        release_now(p);
#endif
        /* 1. the queues using the range */
        if
        :: qh && QUSES(p) -> stop_queue()
        :: else -> skip
        fi;
        /* (2. events: not modelled) 3. GPU mappings: the range's, then deferred ones the
         * stopped queue held elsewhere */
#ifndef BROKEN_UNPIN_BEFORE_QUIESCE
        if
        :: gmap[p] -> d_step { dev_unmap(p) }
        :: else -> skip
        fi;
#endif
        settle_unmap(1 - p);
        /* 4. the memory itself; its handle goes stale */
#ifndef BROKEN_UNPIN_BEFORE_QUIESCE
        d_step { dev_deregister(p) };
#endif
        settle_release(1 - p)
    fi
}

/* GpuContext::teardown: 1. queues, (2. events), 3. GPU mappings, 4. queue memory (page 0
 * holds the ring, so it comes first), 5. the rest. */
inline gpu_teardown() {
    if
    :: qh -> stop_queue()
    :: else -> skip
    fi;
    if
    :: gmap[0] -> d_step { dev_unmap(0) }
    :: else -> skip
    fi;
    if
    :: gmap[1] -> d_step { dev_unmap(1) }
    :: else -> skip
    fi;
    if
    :: reg[0] != R_NONE -> d_step { dev_deregister(0) }
    :: else -> skip
    fi;
    if
    :: reg[1] != R_NONE -> d_step { dev_deregister(1) }
    :: else -> skip
    fi
}

/* --- MapRevoke (backend/core/src/map_revoke.cpp) -------------------------------------- */

/* MapRevoke::revoke_map_entry: 1-3 the GPU half, 4 the grant, 5 the VA range. */
inline revoke_map_entry(p) {
#ifdef BROKEN_GRANT_UNMAP_BEFORE_QUIESCE
    /* Broken: unmaps the grant before the GPU half. */
    d_step { grant_unmap(p) };
    revoke_range(p);
#else
    revoke_range(p);
    d_step { grant_unmap(p) };
#endif
    d_step { va_release(p) }
}

/* MapRevoke::revoke_all: every MAP; every LEND revoked, and dropped at session end (no
 * REVOKED) or kept until the guest's UNMAP (an operator's revoke). */
inline map_revoke_all(session_end) {
    if
    :: mp[0] != M_NONE -> revoke_map_entry(0)
    :: else -> skip
    fi;
    if
    :: mp[1] != M_NONE -> revoke_map_entry(1)
    :: else -> skip
    fi;
    d_step {
        if
        :: ls == L_LIVE -> lend_take_back(); ls = L_REVOKED
        :: else -> skip
        fi;
        if
        :: session_end -> ls = L_NONE  /* drop_lend */
        :: else -> skip
        fi
    }
}

/* --- the guest's requests (GuestRequests::dispatch) ----------------------------------- */

/* MemoryCommands::map, MapRevoke::map: placement, then the grant map (all or nothing). */
inline do_map(p) {
    d_step {
        if
        :: va[p] -> skip                            /* BAD_ADDRESS */
        :: else -> va[p] = true; bemap[p] = true; mp[p] = M_LIVE
        fi
    }
}

/* MemoryCommands::unmap of a MAP handle. */
inline do_unmap(p) {
    if
    :: mp[p] != M_LIVE -> skip                                  /* BAD_HANDLE */
    :: mp[p] == M_LIVE && qh && QUSES(p) -> mp[p] = M_DEFERRED  /* range_held: OK, later */
    :: mp[p] == M_LIVE && !(qh && QUSES(p)) && reg[p] == R_LIVE -> skip  /* pinned */
    :: mp[p] == M_LIVE && !(qh && QUSES(p)) && reg[p] != R_LIVE -> revoke_map_entry(p)
    fi
}

/* GpuCommands::pin (coverage by a live MAP), GpuContext::pin (a PIN at the same start
 * collides), KfdDevice::register_user. */
inline do_pin(p) {
    d_step {
        if
        :: mp[p] == M_LIVE && reg[p] == R_NONE -> reg[p] = R_LIVE
        :: else -> skip
        fi
    }
}

/* GpuContext::unpin (Impl::release_memory). */
inline do_unpin(p) {
    d_step {
        if
        :: reg[p] != R_LIVE -> skip                          /* BAD_HANDLE */
        :: reg[p] == R_LIVE && QREFS(p) -> reg[p] = R_DEFERRED
        :: reg[p] == R_LIVE && !QREFS(p) && gmap[p] -> skip  /* EBUSY: BAD_STATE */
        :: reg[p] == R_LIVE && !QREFS(p) && !gmap[p] -> dev_deregister(p)
        fi
    }
}

/* GpuContext::map_to_gpu: taking a deferred unmap back, or KfdDevice::map_to_gpu. */
inline do_map_to_gpu(p) {
    d_step {
        if
        :: reg[p] != R_LIVE -> skip
        :: reg[p] == R_LIVE && umdef[p] -> umdef[p] = false
        :: reg[p] == R_LIVE && !umdef[p] && gmap[p] -> skip  /* EBUSY */
        :: reg[p] == R_LIVE && !umdef[p] && !gmap[p] -> gmap[p] = true
        fi
    }
}

/* GpuCommands::unmap_from_gpu, GpuContext::unmap_from_gpu. */
inline do_unmap_from_gpu(p) {
    d_step {
        if
        :: reg[p] != R_LIVE -> skip
        :: reg[p] == R_LIVE && (!gmap[p] || umdef[p]) -> skip  /* BAD_STATE */
        :: reg[p] == R_LIVE && gmap[p] && !umdef[p] && QREFS(p) -> umdef[p] = true
        :: reg[p] == R_LIVE && gmap[p] && !umdef[p] && !QREFS(p) -> dev_unmap(p)
        fi
    }
}

/* GpuCommands::queue_create (queue_range_free), GpuContext::create_queue
 * (Impl::queue_memory: a live PIN, GPU-mapped, no deferred unmap; max_queues 1),
 * KfdDevice::create_queue, then the queue's references. */
inline do_queue_create(w) {
    if
    :: !qh && reg[0] == R_LIVE && gmap[0] && !umdef[0] &&
       reg[w] == R_LIVE && gmap[w] && !umdef[w] ->
        d_step { dq == DQ_NONE -> qh = true; qref = true; qptr = w; dq = DQ_RUN }
    :: else -> skip  /* EDQUOT, BAD_ADDRESS */
    fi
}

/* GpuCommands::queue_destroy: GpuContext::destroy_queue (stop, then this queue's deferred
 * releases: GPU unmaps, then memory), then MapRevoke::release_deferred. */
inline do_queue_destroy() {
    if
    :: !qh -> skip  /* BAD_HANDLE */
    :: else ->
#ifdef BROKEN_RING_BEFORE_QUEUE
        /* Broken: drops the queue's references and runs its deferred releases before the
         * device has destroyed the queue. */
        qref = false;
        settle_unmap(0);
        settle_unmap(1);
        settle_release(0);
        settle_release(1);
        stop_queue();
#else
        stop_queue();
        settle_unmap(0);
        settle_unmap(1);
        settle_release(0);
        settle_release(1);
#endif
        if
        :: mp[0] == M_DEFERRED -> revoke_map_entry(0)
        :: else -> skip
        fi;
        if
        :: mp[1] == M_DEFERRED -> revoke_map_entry(1)
        :: else -> skip
        fi
    fi
}

/* MemoryCommands::lend, MapRevoke::lend: the pool has one page. */
inline do_lend() {
    d_step {
        if
        :: ls == L_NONE && lpage == LP_FREE -> ls = L_LIVE; lpage = LP_SHARED
        :: else -> skip  /* BAD_ADDRESS, NO_MEMORY */
        fi
    }
}

/* MapRevoke::unlend: the guest says it unmapped the lent page (after a REVOKED, its
 * acknowledgement). */
inline do_unlend() {
    d_step {
        if
        :: ls == L_NONE -> skip  /* BAD_HANDLE */
        :: ls == L_LIVE ->
#ifdef BROKEN_UNLEND_TRUSTS_GUEST
            /* Broken: takes the guest's word and gives the page back to the pool. */
            lp_free();
#else
            lend_take_back();  /* scrub; end_access, or revoke while the guest maps it */
#endif
            ls = L_NONE
        :: ls == L_REVOKED -> ls = L_NONE
        fi
    }
}

inline serve_request() {
    if
    :: ring?MAP, 0 -> do_map(0)
    :: ring?MAP, 1 -> do_map(1)
    :: ring?UNMAP, 0 -> do_unmap(0)
    :: ring?UNMAP, 1 -> do_unmap(1)
    :: ring?PIN, 0 -> do_pin(0)
    :: ring?PIN, 1 -> do_pin(1)
    :: ring?UNPIN, 0 -> do_unpin(0)
    :: ring?UNPIN, 1 -> do_unpin(1)
    :: ring?MAP_TO_GPU, 0 -> do_map_to_gpu(0)
    :: ring?MAP_TO_GPU, 1 -> do_map_to_gpu(1)
    :: ring?UNMAP_FROM_GPU, 0 -> do_unmap_from_gpu(0)
    :: ring?UNMAP_FROM_GPU, 1 -> do_unmap_from_gpu(1)
    :: ring?QUEUE_CREATE, 0 -> do_queue_create(0)
    :: ring?QUEUE_CREATE, 1 -> do_queue_create(1)
    :: ring?QUEUE_DESTROY, _ -> do_queue_destroy()
    :: ring?LEND, _ -> do_lend()
    :: ring?UNMAP_LEND, _ -> do_unlend()
    fi
}

/* The operator's revoke is done (GuestRequests::revoke_handle, ::revoke_all(false)). */
inline op_done() {
    op_revoking = false
}

active proctype Worker() {
    do
    :: serve_request()
    :: close_ch?_ -> closing = true; break
    :: death_ch?_ -> break
    :: op_ch?REVOKE_MAP, 0 -> op_revoking = true;
        if
        :: mp[0] == M_LIVE -> revoke_map_entry(0)  /* a deferred MAP has no handle */
        :: else -> skip
        fi;
        op_done()
    :: op_ch?REVOKE_MAP, 1 -> op_revoking = true;
        if
        :: mp[1] == M_LIVE -> revoke_map_entry(1)
        :: else -> skip
        fi;
        op_done()
    :: op_ch?REVOKE_LEND, _ -> op_revoking = true;
        d_step {  /* MapRevoke::revoke_lend_entry, REVOKED posted */
            if
            :: ls == L_LIVE -> lend_take_back(); ls = L_REVOKED
            :: else -> skip
            fi
        };
        op_done()
    :: op_ch?REVOKE_ALL, _ -> op_revoking = true;
        /* GuestRequests::revoke_all(false): the connection stays up */
        gpu_teardown();
        map_revoke_all(false);
        P4(BACKEND_HOLDS_NOTHING && ls != L_LIVE);
        op_done()
    od;
    /* Session end: XenbusDevice::close or the worker's shutdown destroys the guest's
     * objects, GuestRequests::~GuestRequests runs revoke_all(true). */
    gpu_teardown();
#ifdef BROKEN_TEARDOWN_WAITS_FOR_GUEST
    /* Broken: revokes the LEND as an operator does and serves the ring until the guest
     * acknowledges the REVOKED with UNMAP. */
    map_revoke_all(false);
    do
    :: ls == L_NONE -> break
    :: ls != L_NONE -> serve_request()
    od;
    skip;  /* a break may not jump into the d_step below */
#else
    map_revoke_all(true);
#endif
    d_step {
        P4(BACKEND_HOLDS_NOTHING && ls == L_NONE);
        worker_done = true
    }
}

/* The device (software agent, or KFD): the queue's thread. */
active proctype Gpu() {
end:
    do
    :: d_step { dq == DQ_RUN -> touch(0) }     /* fetches a packet from the ring */
    :: d_step { dq == DQ_RUN -> touch(qptr) }  /* writes the read, reads the write index */
    :: d_step { dq == DQ_RUN && gmap[0] -> touch(0) }  /* a dispatch, through a View */
    :: d_step { dq == DQ_RUN && gmap[1] -> touch(1) }
    /* the halt: the access in flight ends, the thread exits and is joined (on KFD: the
     * queue is preempted and unmapped from the hardware) */
    :: d_step { dq == DQ_STOPPING -> touch(0); dq = DQ_NONE; qptr = 0 }
    :: d_step { dq == DQ_STOPPING -> touch(qptr); dq = DQ_NONE; qptr = 0 }
    :: d_step { dq == DQ_STOPPING && gmap[0] -> touch(0); dq = DQ_NONE; qptr = 0 }
    :: d_step { dq == DQ_STOPPING && gmap[1] -> touch(1); dq = DQ_NONE; qptr = 0 }
    :: d_step { dq == DQ_STOPPING -> dq = DQ_NONE; qptr = 0 }
    od
}

active proctype Guest() {
    bool closed;  /* after its Closing the worker reads nothing more of the ring */
    do
    :: !closed -> ring!MAP, 0
    :: !closed -> ring!MAP, 1
    :: !closed -> ring!UNMAP, 0
    :: !closed -> ring!UNMAP, 1
    :: !closed -> ring!PIN, 0
    :: !closed -> ring!PIN, 1
    :: !closed -> ring!UNPIN, 0
    :: !closed -> ring!UNPIN, 1
    :: !closed -> ring!MAP_TO_GPU, 0
    :: !closed -> ring!MAP_TO_GPU, 1
    :: !closed -> ring!UNMAP_FROM_GPU, 0
    :: !closed -> ring!UNMAP_FROM_GPU, 1
    :: !closed -> ring!QUEUE_CREATE, 0
    :: !closed -> ring!QUEUE_CREATE, 1
    :: !closed -> ring!QUEUE_DESTROY, 0
    :: !closed -> ring!LEND, 0
    :: !closed -> ring!UNMAP_LEND, 0
    /* maps the lent page while the grant stands; unmaps it */
    :: d_step { lpage == LP_SHARED && !glmap -> glmap = true }
    :: d_step {
           glmap -> glmap = false;
           if
           :: lpage == LP_HELD -> lp_free()
           :: else -> skip
           fi
       }
    /* Closing, or a ring violation that makes the worker disconnect it */
    :: !closed -> close_ch!0; closed = true
    :: break
    od;
    g_alive = false
}

active proctype Hypervisor() {
    (!g_alive);
    /* The dying domain's own mappings go: the lent page is no longer mapped by it. */
    d_step {
        if
        :: glmap ->
            glmap = false;
            if
            :: lpage == LP_HELD -> lp_free()
            :: else -> skip
            fi
        :: else -> skip
        fi
    };
    if
    :: death_ch!0               /* @releaseDomain, through the supervisor */
    :: worker_done -> skip      /* the device was closed already: no worker to tell */
    fi;
    (!bemap[0] && !bemap[1]);   /* its memory stays until the backend's last grant unmap */
    dom_gone = true
}

/* One revoke at any moment, or none. An operator revoking without end would starve the
 * worker's other inputs in the model, which takes them in no fixed order (the io_context
 * runs them in the order they come). */
active proctype Operator() {
end:
    if
    :: op_ch!REVOKE_ALL, 0
    :: op_ch!REVOKE_MAP, 0
    :: op_ch!REVOKE_MAP, 1
    :: op_ch!REVOKE_LEND, 0
    fi
}

/*
 * P4: teardown terminates. An LTL property checked with weak fairness (pan -a -f), not an
 * end-state check: an end-state check only finds runs that stop, and misses a teardown
 * that loops or waits forever on a process that keeps running (a guest that never
 * acknowledges, a GPU that never stops). With weak fairness every process that stays
 * enabled eventually moves; the guest need not cooperate (it may close or die at any
 * moment, and a dead one does nothing). The safety runs check end states besides.
 *   - after the guest's death: everything is released, the worker has finished, the
 *     domain's memory is gone (no grant mapping left) and the lent page is back in the
 *     pool;
 *   - after a close: the worker has finished and holds nothing (a lent page the live
 *     guest still maps stays held, as on Xen);
 *   - an operator revoke the worker took completes (the assertion at its end checks that
 *     nothing but a revoked LEND awaiting its UNMAP is left).
 * Implemented by GuestRequests::revoke_all (backend/core/src/guest_requests.cpp),
 * GpuContext::teardown (hsa-bridge/gpu_context/context_release.cpp), MapRevoke::revoke_all
 * (backend/core/src/map_revoke.cpp: at session end LENDs are dropped without waiting for
 * the guest), and for death the supervisor's @releaseDomain watch
 * (backend/service/src/supervisor_discovery.cpp: Supervisor::domains_released, retire).
 */
#ifdef CHECK_P4
ltl p4 {
    [] (!g_alive -> <> RELEASED) &&
    [] (closing -> <> (worker_done && BACKEND_HOLDS_NOTHING && ls == L_NONE)) &&
    [] (op_revoking -> <> !op_revoking)
}
#endif

/*
 * What the model leaves out, and why:
 *   - a LEND on the GPU: PIN needs live MAPs (MapRevoke::coverage_status) and an ALLOC may
 *     not overlap a LEND, so lent pages never reach the GPU; the LEND is there for
 *     REVOKED, its acknowledgement, P4 and P5.
 *   - events (EVENT_*, the queue's error event, EVENT_WAIT): they hold no guest memory
 *     (a mailbox is the worker's), so they bear on no property here; their release order
 *     is tested in tests/hsa/gpu_context/context_teardown_test.cpp.
 *   - ALLOC and FREE: device memory the backend places, no grant behind it; a queue in an
 *     ALLOC is held by the same queue references as one in a PIN.
 *   - PINs spanning several MAPs, MAPs of several pages, INDIRECT: revoke_range marks
 *     every object overlapping the range, so one page per object shows the same orders.
 *   - quotas, handles' values, VA window placement beyond "claimed or not", the ring's
 *     indices and the notify page: their checks happen before any state changes.
 *   - GPU faults (a queue that stopped itself): it touches nothing more, and is destroyed
 *     as any queue.
 *   - the LEND revoke of xenhsa-sim (enforced: the guest's mapping goes too): it only
 *     removes behaviours from Xen's cooperative revoke, which is modelled.
 *   - a worker killed after its grace period: the kernel then releases gntdev mappings
 *     and the KFD process (docs/threat-model.md, What a crash costs).
 *   - the device's own refusals (EBUSY on queue memory): see dev_unmap above.
 */
