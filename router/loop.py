"""The event loop, written once for every scheduler (docs/schedulers.md; the hooks of fq/contract.py).

Event order at one instant ``t`` (a choice: docs/schedulers.md, 'Event order and ties'):

1. all service completions at ``t``: first every completing packet leaves its
   server (``finish`` hook; queue lengths no longer count it), then, in resource
   order, each one moves on to the next resource it visits (``arrive``), or
   leaves the router (admitting the flow's next packet when ``rtt = 0``, or
   scheduling that admission at ``t + rtt``);
2. then admissions delayed by ``rtt`` that fall due at ``t``, static flow starts
   at ``t`` (by flow id) and the flow arrivals at ``t`` (in stream order); every arrival is
   tagged (``admit``, ``arrive``) with the scheduler's state as it stands
   *before* any service starts at ``t``;
3. then every idle resource, in resource order, with waiting packets and
   ``ready``, starts the smallest head (``start``, then ``head`` of that flow's
   next packet there); an idle resource with nothing waiting calls ``idle``.

Two short cuts keep this order.  A departure that is the last completion at
``t``, with no admission queued before it, admits the flow's next packet at
once: phase 2 would take it first, and the new flows' starts there touch only
their own rows.  Phase 2 runs only when the next external event (static start,
flow arrival, delayed admission: ``ext``) falls at ``t`` or an admission was
queued (which sets ``ext = t``).  This takes the admission's store and reload
through ``now_s`` off the instant's critical path: 3 static bmf-wfq 8.8 -> 8.0
ns per service, dynamic bmf-wfq 10.2 -> 9.7, 3 static drfq 6.9 -> 6.7 (native,
interleaved; instructions per service barely move, 244 -> 243 for bmf-wfq:
the gain is latency).  Keeping the completing and idle resources as bit masks
walked with tzcnt cut instructions (244 -> 227) but ran 40 % slower: resource
indices computed from data, instead of loop counters behind predicted
branches, put every address of the instant behind the compare chain of the
service ends.

Ties between keys: smallest key, then smallest flow id.  A flow's packets reach
every resource in sequence order, so each resource keeps a FIFO per flow and a
binary min-heap of the flows' head packets (:mod:`router.heap`).

Where the scheduler sits and stage buffers (docs/middlebox.md), read at run time by the
generic variant (``P.ingress``, ``P.staged``; the lean one has neither, as constants):
under ingress placement only resource 0 orders its queue by the scheduler's keys; a
later resource keys a packet by the instant it joined its queue (kept in the packet
record's word ``LP``, after the scheduler's own), and every packet passes resource 0,
in zero time where it costs nothing there (its service ends at the instant it began:
the loop takes that instant again).  A stage buffer in front of resource j > 0 counts
(``ri[RI_STAGE_N * J + j]``) the packets waiting there that came from an earlier
resource and those in service before j that go to j next; a resource starts a head
whose next resource's count is at its cap (``RI_STAGE_CAP``) only when a place frees:
phase 3 then tries the blocked resources again, in resource order, after every pass
that started something.

One loop is compiled per (number of resources J, scheduler, variant): the
scheduler's hooks are bound as globals of that copy of the loop (no run-time
dispatch, so an unknown scheduler cannot fall through to another's rules), J is
a constant (loops over resources unroll), and the *lean* variant (rtt = 0, no
trace, the scheduler's options at their defaults) also compiles ``opt`` in as
constants.  The
*generic* variant reads rtt, the trace bound, ``opt`` and where the costs live (per flow or per
packet) at run time, and has code for TCP
senders and for CoDel only where the run has them (a first run without TCP flows compiles about a
fifth less: docs/performance.md, 'Start-up').  All come from the same source; tests
assert equal outputs.  The loop runs without
numba's runtime (no reference counting) and without negative-index wraparound
(every index here is >= 0; a NUMBA_BOUNDSCHECK test checks it).
"""

from __future__ import annotations

import hashlib
import types as _types

import numpy as np

from mrfq.fq._jit import engine_sources_hash, jit_inline, jit_no_refcount, no_wraparound
from mrfq.fq.contract import compiled_opt, has_eligibility, hook
from mrfq.router import heap
from mrfq.router.delays import SHIFT
from mrfq.router.heap import f2i
from mrfq.router.rfb import K_IDLE, RFB_MASK, RFB_SHIFT
from mrfq.router.buffers import CD_DELIVER, codel, codel_emptied, codel_marked, leave
from mrfq.router.rfb import flush as rfb_flush
from mrfq.router.flowtable import (
    DEP_FLOW_DONE, DEP_NEXT, DONE, GROW_ACKS, GROW_LOG, GROW_RING, TCP_OVERFLOW, arrivals_ready, depart, flow_done, flow_starts, packets_ready, ring_room,
)
from mrfq.router.packets import packet_exponential, packet_size
from mrfq.router import transport as tcp
from mrfq.router.state import (
    RI_STAGE_CAP, RI_STAGE_N, ST_BLOCKED, STATIC_TCP, B_ECN, ST_NONE, ST_STARTED, RI_DROPPED, B_J0, B_RED_IDLE, D_CODEL, N_REASONS,
    C_VICT_N,
    ADM_BITS, ADM_MASK, C_ACTIVE, C_ADM_HEAD, C_ADM_N, C_ARR_CUR, C_ARR_LAST, C_BATCH, C_DEP_N, C_NEXT_ARR,
    C_NEXT_PKT, C_NEXT_STATIC, C_NFREE, C_PKT_CUR, C_PKT_LAST,
    C_PK_ADM, C_PK_DEP, C_RFB_N, C_SERVICES, C_STOPPED, C_T, C_T_AREA, C_TR_N, F_COST, F_DSVC, F_WEIGHT, I_CLASS, I_FIRST,
    I_INFLIGHT, I_NEXTSEQ, I_PENDING, I_UID, N_ICOLS, QS_COUNT, QS_HEAD, QS_WIDTH, RI_ADMITTED, RI_BUSY_SEQ,
    RI_BUSY_SLOT, RI_HEAP_N, RI_SERVED, STATIC_OPEN, STATIC_WINDOWED, cost_width, keeps_times, pkt_width,
)

INF = np.inf
NO_WRAPAROUND = no_wraparound(__name__)


# ---------------------------------------------------------------------------
# the pieces of the loop that call the scheduler's hooks (sched_*: globals bound per scheduler)
@jit_inline
def _rec(ring, RV, NR, RM, s, seq):
    """The record of packet ``seq`` of row s: ``s NR + (seq & RM)``, or with rings of their own
    (``RV``, the generic loop: an open-loop flow's ring grows, router.state.grow_ring) from the
    row's ring."""
    if RV:
        return ring[2 * s] + (seq & ring[2 * s + 1])
    return s * NR + (seq & RM)


@jit_inline
def _next_seq(pkt, rec, W, LP, seq, RV):
    """The seq of the packet behind the one of record rec in its flow's queue (read only while one
    waits there): linked in the generic loop (word LP - 1, router.loop._enqueue), seq + 1 in the lean."""
    if RV:
        return int(pkt[rec * W + LP - 1])
    return seq + 1


@jit_inline
def _cost_base(PC, NFC, s, rec):
    """Where the packet of record ``rec`` of row s keeps its cost record: ``cst[cb + j]``, and
    ``cst[cb + J + j]`` with increments (router/state.py; the record is ``NFC - F_COST`` words, a
    constant)."""
    if PC:
        return rec * (NFC - F_COST)
    return s * NFC + F_COST


def _enqueue(S, opt, J, RM, W, PC, NFC, s, seq, pb, cst, cb, j, t, uid, weight, ft, ri, hp, service_end, ING, LP,
             RV):
    """Packet ``seq`` (tags at ``pkt[pb:]``, costs at ``cst[cb:]``) of the flow in row ``s`` joins
    resource j at time t; under ingress placement (``ING``) a later resource keys it by t, kept at
    ``pkt[pb + LP]``."""
    qs = ft.qs
    qb = (s * J + j) * QS_WIDTH
    cnt = qs[qb + QS_COUNT]
    qs[qb + QS_COUNT] = cnt + 1
    ri[RI_ADMITTED * J + j] += 1
    # Q_ij: its packets at j, waiting (this one included) or in service (j serves until
    # service_end[j], which is inf when j is idle and t while phase 1b has yet to reach j)
    q_ij = cnt + 1 + (1 if t < service_end[j] < INF and ri[RI_BUSY_SLOT * J + j] == s else 0)
    sched_arrive(S, ft.pkt, opt, J, s, pb, cst, cb, j, weight, q_ij, t)  # noqa: F821 - bound per scheduler
    fcfs = ING and j > 0
    if fcfs:
        ft.pkt[pb + LP] = t
    if RV:
        # the generic loop links a flow's waiting packets at j through their records (word LP - 1: the
        # next one's seq), as drops at a queue's head (router/buffers.py) leave gaps in the seqs that
        # reach a later resource; the lean loop (no drops) takes head, head + 1, ...
        if cnt > 0:
            tail = ft.qt[s * J + j]
            ft.pkt[_rec(ft.ring, RV, RM + 1, RM, s, tail) * W + LP - 1] = seq
        ft.qt[s * J + j] = seq
    if cnt == 0:
        qs[qb + QS_HEAD] = seq  # the flow's waiting packets at j: head, then (no overtaking) its successors
        key = t if fcfs else sched_head(S, ft.pkt, opt, J, s, pb, cst, cb, j, weight)  # noqa: F821
        heap.push(hp, ri, RI_HEAP_N * J + j, j, key, uid, s)


def _admit(S, opt, J, RM, W, PC, NFC, TIMES, s, t, ft, cst, sp, tf, cost_key, ri, hp, service_end, counted, ING, LP,
           RV):
    """The flow in row ``s`` admits its next packet at time t (router-level tag, first resource).
    ``counted``: the admission was pending (queued in phase 2, or delayed by rtt), so it moves
    from the flow's pending count to its in-flight count; a departure that admits at once
    leaves both as they are (one packet out, one in: the same counts).  ``TIMES``: the packet
    records keep their times (router.state.keeps_times)."""
    slot_i, slot_f, pkt = ft.slot_i, ft.slot_f, ft.pkt
    seq = slot_i[s * N_ICOLS + I_NEXTSEQ]
    slot_i[s * N_ICOLS + I_NEXTSEQ] = seq + 1
    rec = _rec(ft.ring, RV, RM + 1, RM, s, seq)
    pb = rec * W
    if TIMES:  # its arrival at the router (its delays: router/delays.py; a constant)
        pkt[pb + W - J - 1] = t
    cb = _cost_base(PC, NFC, s, rec)
    uid = slot_i[s * N_ICOLS + I_UID]
    weight = slot_f[s * NFC + F_WEIGHT]
    row = 0
    if PC:  # its Specs row: its [[flow]] table's for a static flow, its class's else
        k = slot_i[s * N_ICOLS + I_CLASS]
        row = tf.static_spec[s] if k < 0 else tf.class_spec[k]
    if PC and (sp.n_sizes[row] != 1 or sp.law[row] != 0):
        # a packet size from the counter-based hash, or (n_sizes = 0) the packet trace's, which the
        # arrival left in the cost record; costs = per packet + per byte * size, with cost_law =
        # "exponential" times an exponential of mean 1 per resource (router/packets.py)
        size = packet_size(sp, row, cost_key, uid, seq, cst[cb])
        dominant = 0.0
        for jj in range(J):
            c = sp.cost[row, jj] + sp.per_byte[row, jj] * size
            if sp.law[row] != 0 and c > 0.0:
                c *= packet_exponential(cost_key, uid, seq, jj)
            cst[cb + jj] = c
            if NFC - F_COST > J:  # the increments s_ij / w_i (Layout.increments) times the row's factor
                cst[cb + J + jj] = c / weight * sp.scale[row]
            if c > dominant:
                dominant = c
        dominant_service = dominant / weight
        j0 = 0
        while cst[cb + j0] <= 0.0:
            j0 += 1
    else:
        # constant costs: set when the flow started (max_j s_ij / w_i divided there)
        dominant_service = slot_f[s * NFC + F_DSVC]
        j0 = slot_i[s * N_ICOLS + I_FIRST]
    if counted:
        slot_i[s * N_ICOLS + I_PENDING] -= 1
        slot_i[s * N_ICOLS + I_INFLIGHT] += 1
    sched_admit(S, pkt, opt, J, s, pb, cst, cb, weight, dominant_service, t)  # noqa: F821
    if j0 == 0 or ING:  # the common first resource as a constant index (interleaved A/B: about 4 % on bmf-wfq);
        # under ingress placement every packet passes resource 0
        _enqueue(S, opt, J, RM, W, PC, NFC, s, seq, pb, cst, cb, 0, t, uid, weight, ft, ri, hp, service_end, ING, LP, RV)
    else:
        _enqueue(S, opt, J, RM, W, PC, NFC, s, seq, pb, cst, cb, j0, t, uid, weight, ft, ri, hp, service_end, ING, LP,
                 RV)


@jit_inline
def _stage_full(cst, cb, j, J, ri):
    """Whether the stage buffer of the next resource the packet of cost record cb visits after j is
    full (stage buffers, docs/middlebox.md)."""
    nj = j + 1
    while nj < J and cst[cb + nj] <= 0.0:
        nj += 1
    return nj < J and ri[RI_STAGE_N * J + nj] >= ri[RI_STAGE_CAP * J + nj]


@jit_inline
def _record(dacc, dcount, dfloor, dstat, J, hb, pkt, ps, cst, cb, a, t, bcur, ING):
    """A packet that arrived at ``a`` leaves at ``t``: its wait at each resource it visited (the
    start of its service there, ``pkt[ps + j]``, minus the instant it joined the queue: ``a`` at the
    first, the end of its previous service, start + cost, at the others: the very sums the loop
    computed) and its sojourn ``t - a`` into its row's histograms, its sojourn into the row's
    maximum and its batch's sum and count (router/delays.py: ``hb`` is the row's ``row_offset``,
    ``dstat`` where its statistics start after it; ``dcount`` is ``dacc``'s words as integers, for
    the counts; the bucket of a delay x is that of max(x, dfloor)); under ingress placement
    (``ING``) every packet waited at resource 0, whatever it cost there."""
    joined = a
    for j in range(J):
        c = cst[cb + j]
        if c > 0.0 or (ING and j == 0):
            st = pkt[ps + j]
            w = st - joined
            w = w if w > dfloor else dfloor
            dcount[hb + (f2i(w) >> SHIFT) * (J + 1) + j] += 1
            joined = st + c
    d = t - a
    x = d if d > dfloor else dfloor
    dcount[hb + (f2i(x) >> SHIFT) * (J + 1) + J] += 1
    m = hb + dstat
    if d > dacc[m]:
        dacc[m] = d
    dacc[m + 1 + 2 * bcur] += d
    dcount[m + 2 + 2 * bcur] += 1


def _drop_head(S, opt, J, RM, W, PC, NFC, s, j, t, ft, cst, ri, RV, LP):
    """The head of row s's queue at j leaves unserved (buffer management, router/buffers.py): the
    queue moves on and the scheduler's ``drop`` hook runs; the flow's heap entry is the caller's.
    Returns the packets left waiting there and the dropped packet's record."""
    qs = ft.qs
    qb = (s * J + j) * QS_WIDTH
    seq = qs[qb + QS_HEAD]
    rec = _rec(ft.ring, RV, RM + 1, RM, s, seq)
    nseq = _next_seq(ft.pkt, rec, W, LP, seq, RV)
    qs[qb + QS_HEAD] = nseq
    cnt = qs[qb + QS_COUNT] - 1
    qs[qb + QS_COUNT] = cnt
    ri[RI_DROPPED * J + j] += 1
    weight = ft.slot_f[s * NFC + F_WEIGHT]
    if cnt > 0:
        recn = _rec(ft.ring, RV, RM + 1, RM, s, nseq)
        sched_drop(S, ft.pkt, opt, J, s, rec * W, cst, _cost_base(PC, NFC, s, rec), j, weight,  # noqa: F821
                   recn * W, _cost_base(PC, NFC, s, recn), t)
    else:
        sched_drop(S, ft.pkt, opt, J, s, rec * W, cst, _cost_base(PC, NFC, s, rec), j, weight, -1, -1, t)  # noqa: F821
    return cnt, rec


def _push_out(S, opt, J, RM, W, PC, NFC, s, t, ft, cst, hp, ri, RV, bf, NBF, REC, rfb_on, rfb_log, rfb_n, LP):
    """The shared pool pushes out the oldest packet waiting at row s's first resource (its counts
    already moved: router.buffers.arrive); its flow's head there changes or leaves the heap.
    Returns the relative fairness log's length."""
    j = int(bf.fl[s * NBF + B_J0])
    cnt, rec = _drop_head(S, opt, J, RM, W, PC, NFC, s, j, t, ft, cst, ri, RV, LP)
    h = RI_HEAP_N * J + j
    pos = heap.find(hp, ri[h], j, s)
    if cnt > 0:
        seq = ft.qs[(s * J + j) * QS_WIDTH + QS_HEAD]
        recn = _rec(ft.ring, RV, RM + 1, RM, s, seq)
        key = sched_head(S, ft.pkt, opt, J, s, recn * W, cst, _cost_base(PC, NFC, s, recn), j,  # noqa: F821
                         ft.slot_f[s * NFC + F_WEIGHT])
        heap.rekey_at(hp, ri, h, j, pos, key, ft.slot_i[s * N_ICOLS + I_UID], s)
    else:
        heap.remove_at(hp, ri, h, j, pos)
    return _went_idle(bf, NBF, s, t, ft, REC, rfb_on, rfb_log, rfb_n)


@jit_inline
def _went_idle(bf, NBF, s, t, ft, REC, rfb_on, rfb_log, rfb_n):
    """After a drop: when open-loop row s holds no packet any more, RED's empty spell starts and its
    backlog ends (router/rfb.py).  Returns the relative fairness log's length."""
    if ft.slot_i[s * N_ICOLS + I_INFLIGHT] + ft.slot_i[s * N_ICOLS + I_PENDING] == 0:
        bf.fl[s * NBF + B_RED_IDLE] = t
        if REC and rfb_on and ft.rfb_dom[s] > 0:
            rfb_log[3 * rfb_n] = t
            rfb_log[3 * rfb_n + 2] = ((ft.rfb_dom[s] >> RFB_SHIFT) << 2) | K_IDLE
            rfb_n += 1
    return rfb_n


def _eligibility_of(S, opt, J, RM, W, PC, NFC, RV, j, ft, cst, hp, i):
    """The scheduler's eligibility value of the head at word offset i of j's heap."""
    s = hp[j, i + 1] & heap.SLOT_MASK
    rec = _rec(ft.ring, RV, RM + 1, RM, s, ft.qs[(s * J + j) * QS_WIDTH + QS_HEAD])
    return sched_eligibility(S, ft.pkt, opt, J, s, rec * W, cst, _cost_base(PC, NFC, s, rec), j)  # noqa: F821


def _eligible_at(S, opt, J, RM, W, PC, NFC, RV, j, t, ft, cst, hp, ri):
    """The word offset in j's heap of the smallest (key, flow id) among the heads the scheduler
    finds eligible (its ``eligibility`` at most its ``threshold``, fq/contract.py), or -1: none.
    The top is tried first against the threshold of e_min = -inf (a threshold never decreases as
    e_min grows), so a scan of every head happens only when the top is not eligible."""
    if _eligibility_of(S, opt, J, RM, W, PC, NFC, RV, j, ft, cst, hp, 0) <= sched_threshold(  # noqa: F821
            S, ft.pkt, opt, J, j, t, -INF):
        return 0
    n = ri[RI_HEAP_N * J + j]
    e_min = INF
    for i in range(n):
        e = _eligibility_of(S, opt, J, RM, W, PC, NFC, RV, j, ft, cst, hp, 2 * i)
        if e < e_min:
            e_min = e
    thr = sched_threshold(S, ft.pkt, opt, J, j, t, e_min)  # noqa: F821
    best = -1
    for i in range(n):
        if _eligibility_of(S, opt, J, RM, W, PC, NFC, RV, j, ft, cst, hp, 2 * i) <= thr:
            if best < 0 or heap.lt_at(hp, j, 2 * i, best):
                best = 2 * i
    return best


def _start_next(S, opt, J, RM, W, PC, NFC, j, t, T, warmup, ft, cst, hp, ri, service_end,
                busy_post, trace_cap, tr_n, tr, REC, rfb_on, rfb_log, rfb_n, ING, STAGED, LP, RV, CODEL, bf):
    """Idle resource j starts its smallest head (phase 3); returns the trace length, the length
    of the relative fairness log (router/rfb.py: with ``REC`` and ``rfb_on``, each service start is
    written there, and counted when j is the flow's dominant resource) and what happened:
    ST_STARTED, ST_BLOCKED (with stage buffers, ``STAGED``: the head's next resource has no place)
    or ST_NONE.  With CoDel (``CODEL``), the head of an open-loop flow's queue at its first resource
    passes router.buffers.codel first: dropped heads leave unserved, and the flow's next head is
    examined at once, as RFC 8289's dequeue does (the scheduler chose the queue; CoDel chooses which
    of its packets leaves it); a queue emptied so leaves the heap and j chooses again.  A scheduler
    with eligibility hooks (``SCHED_ELIG``) chooses among its eligible heads (:func:`_eligible_at`):
    none eligible, ST_NONE."""
    if ri[RI_HEAP_N * J + j] == 0:
        sched_idle(S, ft.pkt, opt, J, j, t)  # noqa: F821
        return tr_n, rfb_n, ST_NONE
    if not sched_ready(S, ft.pkt, opt, J, j, t):  # noqa: F821
        return tr_n, rfb_n, ST_NONE
    qs, pkt = ft.qs, ft.pkt
    NR = RM + 1
    while True:
        if ri[RI_HEAP_N * J + j] == 0:  # (CoDel emptied every queue at j)
            sched_idle(S, ft.pkt, opt, J, j, t)  # noqa: F821
            return tr_n, rfb_n, ST_NONE
        pos = 0  # the word offset in j's heap of the head chosen: the top, or an eligible one
        if SCHED_ELIG and not (ING and j > 0):  # noqa: F821
            pos = _eligible_at(S, opt, J, RM, W, PC, NFC, RV, j, t, ft, cst, hp, ri)
            if pos < 0:
                return tr_n, rfb_n, ST_NONE
        top = hp[j, pos + 1]
        s = top & heap.SLOT_MASK
        qb = (s * J + j) * QS_WIDTH
        seq = qs[qb + QS_HEAD]
        rec = _rec(ft.ring, RV, NR, RM, s, seq)
        cb = _cost_base(PC, NFC, s, rec)
        if not CODEL or ft.slot_i[s * N_ICOLS + I_CLASS] > STATIC_OPEN:
            break
        NBF = bf.fl.shape[0] // (bf.drops.shape[0] // N_REASONS)
        if j != int(bf.fl[s * NBF + B_J0]):
            break
        if STAGED and _stage_full(cst, cb, j, J, ri):
            return tr_n, rfb_n, ST_BLOCKED  # (CoDel examines a head when j could take it)
        phase = CD_DELIVER
        while True:
            phase = codel(bf, s, NBF, t, t - pkt[rec * W + W - J - 1], qs[qb + QS_COUNT] - 1, phase)
            if phase == CD_DELIVER:
                break
            if bf.fl[s * NBF + B_ECN] != 0.0:  # an ECN-capable TCP packet: marked (its word's low bit), delivered
                codel_marked(bf, s, NBF, t, phase, t >= warmup)
                if np.int64(pkt[rec * W + W - J - 3]) & 1 == 0:
                    pkt[rec * W + W - J - 3] += 1.0
                phase = CD_DELIVER
                break
            cnt, rec = _drop_head(S, opt, J, RM, W, PC, NFC, s, j, t, ft, cst, ri, RV, LP)
            ft.slot_i[s * N_ICOLS + I_INFLIGHT] -= 1
            leave(bf, s, NBF, pkt[rec * W + W - J - 2], t,
                  ft.slot_i[s * N_ICOLS + I_INFLIGHT] + ft.slot_i[s * N_ICOLS + I_PENDING])
            if t >= warmup:
                bf.drops[s * N_REASONS + D_CODEL] += 1
            rfb_n = _went_idle(bf, NBF, s, t, ft, REC, rfb_on, rfb_log, rfb_n)
            if cnt == 0:
                codel_emptied(bf, s, NBF, phase)
                if pos == 0:
                    heap.pop(hp, ri, RI_HEAP_N * J + j, j)
                else:
                    heap.remove_at(hp, ri, RI_HEAP_N * J + j, j, pos)
                break
            seq = qs[qb + QS_HEAD]
            rec = _rec(ft.ring, RV, NR, RM, s, seq)
            cb = _cost_base(PC, NFC, s, rec)
        if phase == CD_DELIVER:
            break
    if STAGED:
        # the stage buffer of its next resource nj: a place, or j stays idle (blocked)
        if _stage_full(cst, cb, j, J, ri):
            return tr_n, rfb_n, ST_BLOCKED
        nj = j + 1
        while nj < J and cst[cb + nj] <= 0.0:
            nj += 1
        if nj < J:
            ri[RI_STAGE_N * J + nj] += 1
        if j > 0:
            # it leaves j's stage buffer if it came from an earlier resource (always, under ingress)
            came = ING
            for jj in range(j):
                if cst[cb + jj] > 0.0:
                    came = True
            if came:
                ri[RI_STAGE_N * J + j] -= 1
    nseq = _next_seq(pkt, rec, W, LP, seq, RV)
    qs[qb + QS_HEAD] = nseq
    cnt = qs[qb + QS_COUNT] - 1
    qs[qb + QS_COUNT] = cnt
    pb = rec * W
    weight = ft.slot_f[s * NFC + F_WEIGHT]
    if cnt > 0:
        recn = _rec(ft.ring, RV, NR, RM, s, nseq)
        pbn = recn * W
        cbn = _cost_base(PC, NFC, s, recn)
        sched_start(S, pkt, opt, J, s, pb, cst, cb, j, weight, pbn, cbn, t)  # noqa: F821
        if ING and j > 0:
            key = pkt[pbn + LP]
        else:
            key = sched_head(S, pkt, opt, J, s, pbn, cst, cbn, j, weight)  # noqa: F821
        if pos == 0:
            heap.replace_top(hp, ri, RI_HEAP_N * J + j, j, key, top >> heap.SLOT_BITS, s)
        else:
            heap.rekey_at(hp, ri, RI_HEAP_N * J + j, j, pos, key, top >> heap.SLOT_BITS, s)
    else:
        sched_start(S, pkt, opt, J, s, pb, cst, cb, j, weight, -1, -1, t)  # noqa: F821
        if pos == 0:
            heap.pop(hp, ri, RI_HEAP_N * J + j, j)
        else:
            heap.remove_at(hp, ri, RI_HEAP_N * J + j, j, pos)
    ri[RI_BUSY_SLOT * J + j] = s
    ri[RI_BUSY_SEQ * J + j] = seq
    end = t + cst[cb + j]
    service_end[j] = end
    # busy time inside [warmup, T] (conditional expressions: numba compiles the builtin
    # min/max of floats to out-of-line calls)
    hi = end if end < T else T
    lo = t if t > warmup else warmup
    if hi > lo:
        busy_post[j] += hi - lo
    if REC:
        pkt[pb + W - J + j] = t  # the start of its service at j (its wait there: _record)
    if tr_n < trace_cap:
        tr.times[2 * tr_n] = t
        tr.times[2 * tr_n + 1] = end
        tr.ids[3 * tr_n] = j
        tr.ids[3 * tr_n + 1] = ft.slot_i[s * N_ICOLS + I_UID]
        tr.ids[3 * tr_n + 2] = seq
        tr_n += 1
    if REC and rfb_on:
        rd = ft.rfb_dom[s]
        rfb_log[3 * rfb_n] = t
        rfb_log[3 * rfb_n + 1] = end
        rfb_log[3 * rfb_n + 2] = (rd >> RFB_SHIFT) << 2
        rfb_n += 1 if (rd & RFB_MASK) == j + 1 else 0
    return tr_n, rfb_n, ST_STARTED


def _make_raw(J_CONST, W_CONST, PC_CONST, LEAN, OPT, KEY, NR_CONST, CW_CONST, REC, TIMES_CONST, LP_CONST, ING_CONST,
              STAGED_CONST, TCP_CONST=False, CODEL_CONST=False):
    """The loop's source, closed over its compile-time constants (numba keys its on-disk
    cache on them: KEY hashes the scheduler's name and the sources the loop is built from;
    NR_CONST is the packet ring size, or 0 to read it from ``P.RM`` at run time; CW_CONST the
    cost record's width, J or 2 J with the scheduler's increments; REC: the delays are recorded,
    else the loop has no code for them; TIMES_CONST: packet records keep their times,
    router.state.keeps_times; LP_CONST: the packet record's word for the key at a later resource
    under ingress placement; ING_CONST, STAGED_CONST: the lean loop's placement and stage buffers (the
    generic loop reads them at run time); TCP_CONST, CODEL_CONST: the generic loop has code for TCP
    senders and for CoDel (else none).

    Whatever is compiled in decides branches only as a closure constant read directly (``TCP =
    TCP_CONST``, never ``TCP_CONST and ...`` or ``not LEAN``): numba drops a branch before typing it
    only when its condition is such a constant, so a derived flag would have every variant type,
    lower and optimise the code it never runs (the TCP senders in every generic loop)."""
    RV_CONST = not LEAN  # (a constant of its own: see above)

    def event_loop(P, sp, tf, arr, pk, carry, ft, S, opt, rs, aq, acc, tr, bf, tc):
        """The event loop proper (see the module docstring for the event order).

        Arrays are never reassigned here, and the loop is compiled without numba's runtime,
        so no reference counting runs on the hot path.  When the arrival chunk may not hold
        every flow arrival due at the next instant it returns MORE_ARRIVALS, and when the
        flow table has fewer free rows than arrivals due it returns GROW_FLOWS, both *before*
        touching that instant; the host (router.engine) appends the next chunk or enlarges
        the arrays and calls it again.  Every admission, immediate
        (a departure with rtt = 0, a new flow's first window) or delayed by rtt, goes through
        one queue and one call site.
        """
        J = J_CONST  # a compile-time constant: loops over resources unroll
        _key = KEY  # noqa: F841 - part of the cache key
        o = OPT if LEAN else opt
        rtt = 0.0 if LEAN else P.rtt
        trace_cap = 0 if LEAN else P.trace_cap
        RM = NR_CONST - 1 if NR_CONST > 0 else P.RM  # a constant: ring offsets are shifts and masks
        W = W_CONST  # packet record width, a constant: offsets are multiplications by a constant
        PC = PC_CONST if LEAN else P.pc == 1  # costs per packet (packet sizes) or per flow: a constant when lean
        NFC = F_COST + CW_CONST
        TIMES = TIMES_CONST  # packet records keep their times (router.state.keeps_times)
        LP = LP_CONST
        ING = ING_CONST if LEAN else P.ingress == 1  # the scheduler at ingress only (docs/middlebox.md)
        STAGED = STAGED_CONST if LEAN else P.staged == 1  # stage buffers with back-pressure
        # the generic loop runs open-loop sources (never the lean one): rows' packet rings of their own
        # (router.state.grow_ring), queues linked through the packet records, drops (router/buffers.py)
        RV = RV_CONST
        CODEL = CODEL_CONST  # CoDel at the open-loop flows' queues (the host compiles it in only then)
        TCP = TCP_CONST  # TCP senders (router/transport.py; compiled in only for runs that have them)
        # and, in a loop with them, a run-time flag where a TCP flow could act: with it LLVM lays the
        # loop out shorter (Reno on the bench's TCP row: 923 instructions per service, 951 without)
        tcp_on = P.n_tcp > 0
        NBF = bf.fl.shape[0] // (bf.drops.shape[0] // N_REASONS)  # floats per static flow (router.state.buffer_width)
        ring = ft.ring
        NR = RM + 1
        T = P.T
        warmup = P.warmup
        rec_from = P.rec_from
        rfb_on = REC and P.rfb_on == 1
        rfb_lim = P.rfb_lim
        rfb_log, rfb_dom = acc.rfb_log, ft.rfb_dom
        max_services = P.max_services
        slot_i, slot_f, pkt = ft.slot_i, ft.slot_f, ft.pkt
        cst = ft.cst if PC else slot_f
        service_end, busy_post, hp = rs.service_end, rs.busy_post, rs.hp
        ri = rs.ri
        # ri: busy row (-1: idle) | busy seq (of the packet served last) | served | admitted | heap size,
        # J words each, indexed ri[RI_* * J + j] (one base pointer, not eight: fewer registers spilled)
        due_t, due_s, now_s = aq.due_t, aq.due_s, aq.now_s
        acap = due_t.shape[0]
        cf, ci = carry.cf, carry.ci
        t = cf[C_T]
        next_arr = cf[C_NEXT_ARR]
        next_static = cf[C_NEXT_STATIC]
        next_pkt = INF if LEAN else cf[C_NEXT_PKT]  # (no open-loop source in the lean loop)
        t_last_area = cf[C_T_AREA]
        services = ci[C_SERVICES]
        n_free = ci[C_NFREE]
        adm_head = ci[C_ADM_HEAD]
        adm_n = ci[C_ADM_N]
        pk_admitted = ci[C_PK_ADM]
        pk_departed = ci[C_PK_DEP]
        n_active = ci[C_ACTIVE]
        tr_n = ci[C_TR_N]
        bcur = ci[C_BATCH]
        rfb_n = ci[C_RFB_N]
        code = DONE
        # the TCP senders' next instant, kept here: only their phase and a departure's ACK move it
        next_tcp = tcp.next_event(tc) if TCP and tcp_on else INF
        while True:
            # ---- next event instant: the next external event, then the few service ends
            ext = next_static
            if next_arr < ext:
                ext = next_arr
            if next_pkt < ext:
                ext = next_pkt
            if rtt > 0.0 and adm_n > 0 and due_t[adm_head] < ext:  # (no such admissions in the lean loop)
                ext = due_t[adm_head]
            if TCP and tcp_on and next_tcp < ext:
                ext = next_tcp
            tn = ext
            for j in range(J):
                if service_end[j] < tn:
                    tn = service_end[j]
            if tn > T:  # T is finite (the host checks), so this also ends a run with nothing left to happen
                break
            if services >= max_services:  # the host always sets a limit (>= 1)
                ci[C_STOPPED] = 1
                break
            if REC and rfb_n > rfb_lim:  # the relative fairness log is full: replay it (out of line, rare)
                rfb_n = rfb_flush(rfb_log, rfb_n, acc.rfb_f, acc.rfb_g, acc.rfb_ser)
            if next_arr == tn:
                code = arrivals_ready(tn, arr.time, ci[C_ARR_CUR], ci[C_ARR_LAST], n_free)
                if code != DONE:
                    break
            if TCP and tcp_on and tc.g[tcp.G_FULL] == 1:  # an ACK ring may not hold the instant's ACKs
                code = GROW_ACKS
                break
            tcp_due = TCP and tcp_on and next_tcp == tn  # (fixed before the departures at tn push their ACKs)
            if TCP and tcp_due:  # the senders act at tn:
                if not tcp.log_room(tc, P.n_tcp):  # the window log may not hold their changes
                    code = GROW_LOG
                    break
                if not tcp.ring_room(tc, tn, J, slot_i, ring, ft.qs, ri, bf, ci):
                    code = GROW_RING  # a TCP flow's packet ring may not hold what it sends at tn
                    break
            if next_pkt == tn:
                code = packets_ready(tn, pk.time, ci[C_PKT_CUR], ci[C_PKT_LAST])
                if code != DONE:
                    break
                if RV:
                    code = ring_room(tn, pk.time, pk.flow, ci[C_PKT_CUR], slot_i, ring, ft.qs, ri, J, bf, ci)
                    if code != DONE:
                        break
            t = tn

            # ---- phase 1a: completing packets leave their servers (the finish hooks)
            for j in range(J):
                if service_end[j] == t:
                    s = ri[RI_BUSY_SLOT * J + j]
                    seq = ri[RI_BUSY_SEQ * J + j]
                    rec = _rec(ring, RV, NR, RM, s, seq)
                    sched_finish(S, pkt, o, J, s, rec * W, cst, _cost_base(PC, NFC, s, rec), j, t)  # noqa: F821

            # ---- phase 1b: move each on, or let it leave (resource order); a resource whose
            #      service ends at t is idle from here on (service_end = inf, busy row -1; its
            #      busy seq stays, unread, until its next start)
            now_n = np.int64(0)  # not the literal 0: a literal argument would compile flow_starts twice
            for j in range(J):
                if service_end[j] != t:
                    continue
                service_end[j] = INF
                ri[RI_SERVED * J + j] += 1
                services += 1
                s = ri[RI_BUSY_SLOT * J + j]
                ri[RI_BUSY_SLOT * J + j] = -1
                seq = ri[RI_BUSY_SEQ * J + j]
                rec = _rec(ring, RV, NR, RM, s, seq)
                pb = rec * W
                cb = _cost_base(PC, NFC, s, rec)
                nj = j + 1
                while nj < J and cst[cb + nj] <= 0.0:
                    nj += 1
                if nj < J:
                    _enqueue(S, o, J, RM, W, PC, NFC, s, seq, pb, cst, cb, nj, t, slot_i[s * N_ICOLS + I_UID],
                             slot_f[s * NFC + F_WEIGHT], ft, ri, hp, service_end, ING, LP, RV)
                    continue
                # departure from the router
                pk_departed += 1
                dep, bcur = depart(s, t, warmup, slot_i, acc.departed, acc.b_start, bcur, not LEAN)
                if RV and slot_i[s * N_ICOLS + I_CLASS] <= STATIC_OPEN:  # its buffer's counts (router/buffers.py)
                    leave(bf, s, NBF, pkt[pb + W - J - 2], t, slot_i[s * N_ICOLS + I_INFLIGHT] + slot_i[s * N_ICOLS + I_PENDING])
                    if TCP and tcp_on and slot_i[s * N_ICOLS + I_CLASS] == STATIC_TCP:  # the receiver's ACK, due rtt later
                        tcp.receive(tc, s, np.int64(pkt[pb + W - J - 3]), t, pkt[pb + W - J - 1], warmup, J)  # (q << 1 | ce)
                        if tc.gf[tcp.GF_NEXT_ACK] < next_tcp:  # (its ACK may be the earliest)
                            next_tcp = tc.gf[tcp.GF_NEXT_ACK]
                if REC and RV and rfb_on and slot_i[s * N_ICOLS + I_CLASS] <= STATIC_OPEN \
                        and slot_i[s * N_ICOLS + I_INFLIGHT] == 0 and slot_i[s * N_ICOLS + I_PENDING] == 0:
                    rfb_log[3 * rfb_n] = t  # an open-loop flow's last packet in the router left: its backlog ends
                    rfb_log[3 * rfb_n + 2] = ((rfb_dom[s] >> RFB_SHIFT) << 2) | K_IDLE
                    rfb_n += 1 if rfb_dom[s] > 0 else 0
                if trace_cap > 0 and ci[C_DEP_N] < trace_cap:
                    dn = ci[C_DEP_N]
                    tr.dep_times[2 * dn] = t
                    tr.dep_times[2 * dn + 1] = pkt[pb + W - J - 1]
                    tr.dep_ids[2 * dn] = slot_i[s * N_ICOLS + I_UID]
                    tr.dep_ids[2 * dn + 1] = seq
                    ci[C_DEP_N] = dn + 1
                if dep == DEP_NEXT:
                    # the window's next packet: now (rtt = 0) or rtt later; until then the
                    # departed packet's place is a pending admission (in flight - 1, pending + 1)
                    if rtt > 0.0:
                        slot_i[s * N_ICOLS + I_INFLIGHT] -= 1
                        slot_i[s * N_ICOLS + I_PENDING] += 1
                        q = adm_head + adm_n
                        if q >= acap:
                            q -= acap
                        due_t[q] = t + rtt
                        due_s[q] = s
                        adm_n += 1
                    else:
                        # the last completion at t with nothing queued before it: admitted at once
                        later = False
                        for jj in range(j + 1, J):
                            if service_end[jj] == t:
                                later = True
                        if not later and now_n == 0:
                            _admit(S, o, J, RM, W, PC, NFC, TIMES, s, t, ft, cst, sp, tf, P.cost_key, ri, hp, service_end,
                                   False, ING, LP, RV)
                            pk_admitted += 1
                        else:
                            slot_i[s * N_ICOLS + I_INFLIGHT] -= 1
                            slot_i[s * N_ICOLS + I_PENDING] += 1
                            now_s[now_n] = (s << ADM_BITS) | 1
                            now_n += 1
                            ext = t
                elif dep == DEP_FLOW_DONE:
                    # ---- flow completion (rare: out of line)
                    n_active -= 1
                    k = slot_i[s * N_ICOLS + I_CLASS]
                    if k < 0:
                        acc.static_done_t[s] = t
                        if REC and rfb_on and k == STATIC_WINDOWED and rfb_dom[s] > 0:  # its backlog ends
                            rfb_log[3 * rfb_n] = t
                            rfb_log[3 * rfb_n + 2] = ((rfb_dom[s] >> RFB_SHIFT) << 2) | K_IDLE
                            rfb_n += 1
                    else:
                        flow_done(s, k, t, P, ft, acc, t_last_area, n_free, bcur)
                        t_last_area = t
                        n_free += 1
                if REC and t > rec_from:  # its delays (depart has moved bcur to t's batch), once the next packet is
                    # admitted (off the instant's critical path); its record outlives that admission (NR > N)
                    _record(acc.dacc, acc.dcount, P.dfloor, P.dstat, J, ft.hrow[s], pkt, pb + W - J, cst, cb, pkt[pb + W - J - 1], t,
                            bcur, ING)

            # ---- phase 2: admissions in order: immediate ones from departures, those delayed by
            #      rtt that fall due now, then new flows' windows (static starts by flow id, then
            #      the flow arrivals); each is tagged with the scheduler's state as it stands now.
            #      The new flows queue their windows behind the departures' admissions first:
            #      starting a flow touches only its own (free) row, which no admission due now
            #      reads; with rtt > 0 no departure admits at once, so the delayed admissions,
            #      taken first, precede them.  Nothing to do unless ext == t (an external
            #      event due now, or an admission queued above).
            if ext == t and (next_static == t or next_arr == t or next_pkt == t):
                cf[C_NEXT_ARR] = next_arr
                cf[C_NEXT_STATIC] = next_static
                cf[C_NEXT_PKT] = next_pkt
                cf[C_T_AREA] = t_last_area
                ci[C_NFREE] = n_free
                ci[C_ACTIVE] = n_active
                ci[C_RFB_N] = rfb_n
                now_n = flow_starts(J, t, P, sp, tf, arr, pk, carry, ft, S, aq, now_n, acc, tr, trace_cap, bf)
                next_arr = cf[C_NEXT_ARR]
                next_static = cf[C_NEXT_STATIC]
                next_pkt = cf[C_NEXT_PKT]
                t_last_area = cf[C_T_AREA]
                n_free = ci[C_NFREE]
                n_active = ci[C_ACTIVE]
                rfb_n = ci[C_RFB_N]
            if TCP and tcp_due:  # the TCP senders (router/transport.py), after the open-loop arrivals
                ci[C_RFB_N] = rfb_n
                now_n = tcp.phase(J, t, P, sp, tf, ft, aq.now_s, now_n, acc, bf, ci, ri, tc)
                next_tcp = tcp.next_event(tc)
                rfb_n = ci[C_RFB_N]
                if tc.g[tcp.G_OVERFLOW] > 0:  # a TCP flow's packets would overrun its ring (the host says so)
                    code = TCP_OVERFLOW
                    break
                ext = t  # (its sends are admitted below)
            now_i = 0
            while ext == t:
                if rtt > 0.0 and adm_n > 0 and due_t[adm_head] == t:
                    s = due_s[adm_head]
                    adm_head += 1
                    if adm_head == acap:
                        adm_head = 0
                    adm_n -= 1
                elif now_i < now_n:
                    e = now_s[now_i]  # row << ADM_BITS | admissions left for it now
                    s = e >> ADM_BITS
                    if (e & ADM_MASK) > 1:
                        now_s[now_i] = e - 1
                    else:
                        now_i += 1
                else:
                    break
                _admit(S, o, J, RM, W, PC, NFC, TIMES, s, t, ft, cst, sp, tf, P.cost_key, ri, hp, service_end, True,
                       ING, LP, RV)
                pk_admitted += 1

            # ---- the shared pool's push-outs decided at the arrivals above leave their queues, after
            #      every admission at t (router/buffers.py)
            if RV and ci[C_VICT_N] > 0:
                for v in range(ci[C_VICT_N]):
                    rfb_n = _push_out(S, o, J, RM, W, PC, NFC, bf.victims[v], t, ft, cst, hp, ri, RV, bf, NBF, REC,
                                      rfb_on, rfb_log, rfb_n, LP)
                ci[C_VICT_N] = 0

            # ---- phase 3: idle resources start their smallest head; with stage buffers, the
            #      resources left blocked try again after every pass that started something (one
            #      call site: the scheduler's hooks are inlined once)
            blocked = -1  # the first pass visits every idle resource
            while blocked != 0:
                still = 0
                started = False
                for j in range(J):
                    if ri[RI_BUSY_SLOT * J + j] < 0 and (blocked >> j) & 1:
                        tr_n, rfb_n, st = _start_next(S, o, J, RM, W, PC, NFC, j, t, T, warmup, ft, cst, hp, ri,
                                                      service_end, busy_post, trace_cap, tr_n, tr, REC, rfb_on, rfb_log,
                                                      rfb_n, ING, STAGED, LP, RV, CODEL, bf)
                        if st == ST_BLOCKED:
                            still |= 1 << j
                        elif st == ST_STARTED:
                            started = True
                blocked = still if STAGED and started else 0

        cf[C_T] = t
        cf[C_NEXT_ARR] = next_arr
        cf[C_NEXT_STATIC] = next_static
        cf[C_NEXT_PKT] = next_pkt
        cf[C_T_AREA] = t_last_area
        ci[C_SERVICES] = services
        ci[C_NFREE] = n_free
        ci[C_ADM_HEAD] = adm_head
        ci[C_ADM_N] = adm_n
        ci[C_PK_ADM] = pk_admitted
        ci[C_PK_DEP] = pk_departed
        ci[C_ACTIVE] = n_active
        ci[C_TR_N] = tr_n
        ci[C_BATCH] = bcur
        ci[C_RFB_N] = rfb_n
        return code

    return event_loop


def _rebind(fn, g: dict):
    """``fn`` with ``g`` as its globals (same code, defaults and closure)."""
    return _types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


def _sources_hash() -> str:
    """A hash of every source the loop is built from (fq/ and router/): part of the loop's cache
    key, as numba would check only the loop's own file for staleness (fq._jit.engine_cache also
    keys every cached engine function on it)."""
    return engine_sources_hash()


#: per scheduler: the loop's globals with its hooks bound (``sched_*``) and the helpers that call
#: them, compiled for that scheduler (:func:`_bound`)
_BOUND: dict = {}


def _bound(info) -> dict:
    """The loop's globals for scheduler ``info``: its hooks as ``sched_*`` and a copy of each
    helper that calls them, named after the scheduler (``_enqueue__drfq``: numba's cache keeps a
    function's machine code under its name), compiled on its own (fq._jit.jit_inline) and shared
    by every loop variant of that scheduler."""
    g = _BOUND.get(info.name)
    if g is None:
        mod = info.module
        g = dict(globals())
        g.update(sched_admit=mod.admit, sched_arrive=mod.arrive, sched_head=mod.head, sched_start=mod.start,
                 sched_finish=mod.finish, sched_idle=mod.idle, sched_ready=mod.ready, sched_drop=hook(mod, "drop"),
                 sched_eligibility=hook(mod, "eligibility"), sched_threshold=hook(mod, "threshold"),
                 SCHED_ELIG=has_eligibility(mod))
        suffix = "".join(c if c.isalnum() else "_" for c in info.name)
        names = ("_enqueue", "_admit", "_start_next", "_drop_head", "_push_out")
        if has_eligibility(mod):
            names = ("_eligibility_of", "_eligible_at") + names
        for name in names:
            f = _rebind(globals()[name], g)
            f.__qualname__ = f"{name}__{suffix}"
            g[name] = jit_inline(f, python=False)
        _BOUND[info.name] = g
    return g


_LOOPS: dict = {}
#: packet ring sizes (router.state.ring_size) compiled into the lean loop as constants: that of
#: the default window (17-32 packets).  Other sizes are read at run time, so that the test suite's
#: small random windows share one lean loop per (J, scheduler) instead of one per ring size.
CONST_RINGS = (32,)


def loop_for(J: int, info, opt: tuple | None, n_opt: int = 0, pc: bool = False, nr: int = 0, rec: bool = True,
             ing: bool = False, staged: bool = False, tcp: bool = False, codel: bool = False):
    """The event loop for J resources and scheduler ``info`` (a registry entry): lean with the
    options ``opt`` compiled in, or generic (``opt=None``; options (``n_opt`` of them), rtt and
    trace read at run time); costs per packet (``pc``: the scenario has packet sizes) or per flow,
    compiled in when lean (the generic loop reads ``P.pc``: one generic loop serves both);
    the packet ring size ``nr`` compiled in when lean and in :data:`CONST_RINGS`, else read at
    run time; the delays recorded (``rec``), or no code for them (a run with
    ``record_delays=False`` runs as fast as a loop that knows nothing of delays); the lean loop's
    placement under ingress (``ing``) and stage buffers (``staged``) compiled in (the generic loop
    reads them at run time); the generic loop's code for TCP senders (``tcp``) and CoDel (``codel``)
    only where the run has them (the lean loop has neither).  Built once per process; numba caches
    the machine code on disk."""
    lean = opt is not None
    pc = bool(pc) if lean else False  # (the generic loop reads it at run time: P.pc)
    nr_const = int(nr) if lean and nr in CONST_RINGS else 0
    ing, staged = (bool(ing), bool(staged)) if lean else (False, False)
    tcp, codel = (False, False) if lean else (bool(tcp), bool(codel))
    # the options compiled in (lean), those only the host reads as 0 (fq.contract.HOST_OPT)
    const = compiled_opt(info.module, opt) if lean else (0.0,) * n_opt  # same type as the run-time opt
    key = (int(J), info.name, const if lean else None, bool(pc), nr_const, bool(rec), ing, staged, tcp, codel)
    fn = _LOOPS.get(key)
    if fn is None:
        mod = info.module
        g = _bound(info)
        tag = int(hashlib.sha256(f"{info.name}:{_sources_hash()}".encode()).hexdigest()[:15], 16)
        lay = mod.layout(J)
        times = keeps_times(rec, lean)
        raw = _make_raw(int(J), pkt_width(lay, int(J), times, lean, ing), bool(pc), lean, const, tag, nr_const,
                        cost_width(int(J), lay.increments), bool(rec), times, int(lay.pkt) + 1, ing, staged,
                        tcp, codel)
        fn = _LOOPS[key] = jit_no_refcount(_rebind(raw, g))
    return fn
