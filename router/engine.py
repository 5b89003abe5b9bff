"""The numba event loop: one kernel for every scheduler.

The router model (SPEC §2): resources in series in index order, each a
non-preemptive server of capacity 1; a packet skips a resource where its
processing time is 0.  Flow i keeps ``N`` packets (the window) inside the
router: packet ``k + N`` is admitted when packet ``k`` leaves the last resource,
``rtt`` time units later.  Static flows start at a given time with a given
number of packets (0 = backlogged forever); classes bring Poisson flow
arrivals with geometric sizes; a new flow admits ``min(N, L)`` packets at once.

Event order at one instant ``t`` (SPEC §2, a (choice)):

1. all service completions at ``t``: first every completing packet leaves its
   server (so queue lengths and the in-service virtual time no longer count
   it), then, in resource order, each one moves on to the next resource it
   visits, or leaves the router (admitting the flow's next packet when
   ``rtt = 0``, or scheduling that admission at ``t + rtt``);
2. then admissions delayed by ``rtt`` that fall due at ``t``, static flow starts
   at ``t`` (by flow id) and the Poisson flow arrival at ``t``; every arrival is
   tagged with the virtual times as they stand *before* any service starts at
   ``t``;
3. then every idle resource with waiting packets starts its smallest key, in
   resource order.

Ties between keys: smallest key, then smallest flow id, then smallest packet
sequence number.  A flow's packets reach every resource in sequence order
with non-decreasing keys, so each resource keeps a FIFO per flow and a binary
min-heap of the flows' head packets (size <= number of flows).  The loop is
compiled once per number of resources, generic or lean (one scheduler, default
options: see :func:`_make_loop`), and without numba's negative-index wraparound
(see :func:`fq._jit.no_wraparound`).

State is structure-of-arrays in flow-table rows ("slots"); dynamic flows reuse
slots from a free list, and every array doubles when the table is full, so
memory depends on the number of concurrent flows, never on run length (the
optional trace is bounded by ``trace_cap``).  All randomness comes from the
``numpy.random.Generator`` passed in (flow arrivals: class, size, next
inter-arrival, in that order) and from a counter-based hash of
``(cost_key, flow id, packet sequence)`` for per-packet sizes, so every
scheduler sees the same flows and the same packets (common random numbers).
"""

from __future__ import annotations

import time

import numpy as np
from llvmlite import ir
from numba import config, types
from numba.extending import intrinsic

from flows.errors import MrfqError
from fq import dovetail, drfq, fifo, sfq
from fq._jit import jit, jit_no_refcount, no_wraparound
from fq.registry import P_BMFWFQ, P_DOVETAIL, P_DRFQ, P_FIFO, P_FQSINGLE, P_PFSFQ

INF = np.inf
M32 = 0xFFFFFFFF

# every index in this module's kernels is non-negative: compile them without numba's
# negative-index wraparound (see fq._jit.no_wraparound; checked by a NUMBA_BOUNDSCHECK test)
NO_WRAPAROUND = no_wraparound(__name__)


# ---------------------------------------------------------------------------
# scheduler dispatch: every policy has the same three hooks (see fq/drfq.py)
@jit(inline="always")
def _admit_key(policy, slot, pb, J, weight, dominant, vt, flow_F, flow_Fj, pkt):
    if policy == P_DRFQ:
        return drfq.admit(slot, pb, J, weight, dominant, vt, flow_F, flow_Fj, pkt)
    elif policy == P_DOVETAIL:
        return dovetail.admit(slot, pb, J, weight, dominant, vt, flow_F, flow_Fj, pkt)
    return 0.0


@jit(inline="always")
def _arrive_key(policy, fq_res, unit, slot, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt):
    if policy == P_DRFQ:
        return drfq.arrive(slot, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt)
    elif policy == P_DOVETAIL:
        return dovetail.arrive(slot, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt)
    elif policy == P_PFSFQ:
        return sfq.arrive_pf(slot, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt, unit)
    elif policy == P_BMFWFQ:
        return sfq.arrive_bmf(slot, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt, unit)
    elif policy == P_FQSINGLE and j == fq_res:
        return sfq.arrive_bmf(slot, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt, unit)
    return fifo.arrive(slot, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt)


@jit(inline="always")
def _on_start(policy, slot, pb, j, J, vt, pkt):
    if policy == P_DRFQ:
        drfq.start(slot, pb, j, J, vt, pkt)
    elif policy == P_DOVETAIL:
        dovetail.start(slot, pb, j, J, vt, pkt)
    else:
        sfq.start(slot, pb, j, J, vt, pkt)


# ---------------------------------------------------------------------------
# packet costs: counter-based, identical for every scheduler
@jit(inline="always")
def hash32(x):
    """A 32-bit integer mixer (xorshift-multiply); products stay below 2**63."""
    x = x & M32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & M32
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & M32
    x ^= x >> 16
    return x


@jit(inline="always")
def packet_uniform(cost_key, uid, seq):
    """Uniform in [0, 1) for packet ``seq`` of flow ``uid``: ``h(h(h(key ^ uid) + seq))``."""
    h = hash32(hash32(hash32(cost_key ^ (uid & M32)) + (seq & M32)) + (uid >> 32))
    return h / 4294967296.0


# ---------------------------------------------------------------------------
# per-resource binary min-heap of flow heads, ordered by (key, flow id).
# Row j of ``hp`` holds resource j's heap as pairs of int64 words: the key's
# IEEE-754 bits (keys are finite and >= +0.0, so their bit patterns order like
# the values) and ``uid << SLOT_BITS | slot``.  The pair is compared as two
# integers without branches; every position from the heap's size on holds a
# sentinel above every entry (the array starts full of them, a pop puts one back),
# so a node's second child is read without a bounds test (the layout of the C
# yardstick's heap).
SLOT_BITS = 24
SLOT_MASK = (1 << SLOT_BITS) - 1
UID_LIMIT = 1 << (63 - SLOT_BITS)
SENTINEL = np.iinfo(np.int64).max

if config.DISABLE_JIT:  # plain-Python twin of the bit cast
    def f2i(x):
        return int(np.float64(x).view(np.int64))
else:
    @intrinsic
    def f2i(typingctx, x):
        """The bits of a float64 as an int64 (no conversion)."""
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(64))
        return types.int64(types.float64), codegen


@jit(inline="always")
def _lt(k1, u1, k2, u2):
    return (k1 < k2) | ((k1 == k2) & (u1 < u2))


@jit(inline="always")
def _heap_push(hp, hn, j, key, uid, slot):
    """Add flow head (key, uid, slot) to resource j's heap (sift up)."""
    kb = f2i(key + 0.0)  # + 0.0 turns a -0.0 into +0.0
    u = (uid << SLOT_BITS) | slot
    i = hn[j]
    hn[j] = i + 1
    while i > 0:
        p = (i - 1) >> 1
        pk = hp[j, 2 * p]
        pu = hp[j, 2 * p + 1]
        if not _lt(kb, u, pk, pu):
            break
        hp[j, 2 * i] = pk
        hp[j, 2 * i + 1] = pu
        i = p
    hp[j, 2 * i] = kb
    hp[j, 2 * i + 1] = u


@jit(inline="always")
def _heap_fill_root(hp, n, j, kb, u):
    """The root of resource j's heap (size n >= 1) is vacant: walk the hole down to a leaf
    along the smaller children (branch-free), then sift (kb, u) up from there."""
    i = 0
    c = 1
    while c < n:
        c += _lt(hp[j, 2 * c + 2], hp[j, 2 * c + 3], hp[j, 2 * c], hp[j, 2 * c + 1])
        hp[j, 2 * i] = hp[j, 2 * c]
        hp[j, 2 * i + 1] = hp[j, 2 * c + 1]
        i = c
        c = 2 * i + 1
    while i > 0:
        p = (i - 1) >> 1
        pk = hp[j, 2 * p]
        pu = hp[j, 2 * p + 1]
        if not _lt(kb, u, pk, pu):
            break
        hp[j, 2 * i] = pk
        hp[j, 2 * i + 1] = pu
        i = p
    hp[j, 2 * i] = kb
    hp[j, 2 * i + 1] = u


@jit(inline="always")
def _heap_replace_top(hp, hn, j, key, uid, slot):
    """The top flow's next head (key, uid, slot) replaces it."""
    _heap_fill_root(hp, hn[j], j, f2i(key + 0.0), (uid << SLOT_BITS) | slot)


@jit(inline="always")
def _heap_pop(hp, hn, j):
    n = hn[j] - 1
    hn[j] = n
    kb = hp[j, 2 * n]
    u = hp[j, 2 * n + 1]
    hp[j, 2 * n] = SENTINEL
    hp[j, 2 * n + 1] = SENTINEL
    if n > 0:
        _heap_fill_root(hp, n, j, kb, u)


# ---------------------------------------------------------------------------
@jit(inline="always")
def _area(area, x, K, t0, t1, warmup, T, B):
    """Add x_k * |[t0, t1] ∩ batch b| to area[k, b] (batches split [warmup, T])."""
    if t1 <= warmup or t0 >= T or t1 <= t0:
        return
    blen = (T - warmup) / B
    lo = t0 if t0 > warmup else warmup
    b = int((lo - warmup) / blen)
    if b >= B:
        b = B - 1
    while b < B:
        b_lo = warmup + b * blen
        b_hi = T if b == B - 1 else warmup + (b + 1) * blen
        if b_lo >= t1:
            break
        a = t0 if t0 > b_lo else b_lo
        e = t1 if t1 < b_hi else b_hi
        if e > a:
            for k in range(K):
                area[k, b] += x[k] * (e - a)
        b += 1


@jit(inline="always")
def _batch(t, warmup, T, B):
    if t < warmup or t > T:
        return -1
    b = int((t - warmup) / ((T - warmup) / B))
    if b >= B:
        b = B - 1
    return b


# flow-table integer columns
I_UID, I_SPEC, I_CLASS, I_REMAIN, I_INFLIGHT, I_NEXTSEQ, I_SIZE, I_PENDING, I_DEPPOST, I_DONE, I_FIRST = range(11)
N_ICOLS = 16  # 11 used; a power of two, so row offsets are shifts
# flow-table float columns
F_F, F_ARRIVE, F_WEIGHT, F_DONE_T, F_DOM = range(5)
N_FCOLS = 8  # 5 used
# per-(flow row, resource) queue record, flat: qs[(s * J + j) * (NR + 3) + field]
QS_Q, QS_HEAD, QS_COUNT, QS_RING = range(4)


@jit(inline="always")
def _enqueue(policy, fq_res, unit, s, seq, pb, j, t, J, RM, uid, weight, vt, flow_Fj, qs, pkt,
             hp, hn, admitted_j):
    """Packet ``seq`` (record at ``pkt[pb:]``) of the flow in row ``s`` joins resource j at
    time t: tag it, queue it."""
    qb = (s * J + j) * (RM + 4)
    q_ij = qs[qb + QS_Q] + 1
    qs[qb + QS_Q] = q_ij
    admitted_j[j] += 1
    key = _arrive_key(policy, fq_res, unit, s, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt)
    cnt = qs[qb + QS_COUNT]
    qs[qb + QS_RING + ((qs[qb + QS_HEAD] + cnt) & RM)] = seq
    qs[qb + QS_COUNT] = cnt + 1
    if cnt == 0:
        _heap_push(hp, hn, j, key, uid, s)


@jit(inline="always")
def _admit(policy, fq_res, unit, s, t, J, RM, slot_i, slot_f, flow_F, flow_Fj, qs, pkt,
           hp, hn, vt, admitted_j, sp_cost, sp_pb, sp_sizes, sp_cdf, sp_nz, cost_key):
    """The flow in row ``s`` admits its next packet at time t (router-level tag, first resource)."""
    seq = slot_i[s * N_ICOLS + I_NEXTSEQ]
    slot_i[s * N_ICOLS + I_NEXTSEQ] = seq + 1
    pb = (s * (RM + 1) + (seq & RM)) * (2 * J + 2)
    sp = slot_i[s * N_ICOLS + I_SPEC]
    uid = slot_i[s * N_ICOLS + I_UID]
    if sp_nz[sp] > 1:
        # a packet size from the counter-based hash; costs = per packet + per byte * size
        u = packet_uniform(cost_key, uid, seq)
        z = 0
        while z < sp_nz[sp] - 1 and u >= sp_cdf[sp, z]:
            z += 1
        size = sp_sizes[sp, z]
        dominant = 0.0
        for jj in range(J):
            c = sp_cost[sp, jj] + sp_pb[sp, jj] * size
            pkt[pb + jj] = c
            if c > dominant:
                dominant = c
    else:
        # constant costs: written into every ring slot when the flow started
        dominant = slot_f[s * N_FCOLS + F_DOM]
    slot_i[s * N_ICOLS + I_INFLIGHT] += 1
    weight = slot_f[s * N_FCOLS + F_WEIGHT]
    _admit_key(policy, s, pb, J, weight, dominant, vt, flow_F, flow_Fj, pkt)
    j0 = slot_i[s * N_ICOLS + I_FIRST]
    if sp_nz[sp] > 1:
        j0 = 0
        while pkt[pb + j0] <= 0.0:
            j0 += 1
    _enqueue(policy, fq_res, unit, s, seq, pb, j0, t, J, RM, uid, weight, vt, flow_Fj, qs, pkt,
             hp, hn, admitted_j)


@jit(inline="always")
def _start_next(policy, idle_reset, vt_in_service, j, t, T, warmup, J, RM, hp, hn, qs, pkt, slot_i, slot_f,
                vt, maxfin_j, busy_slot, busy_seq, busy_key, fin, busy_post,
                trace_cap, tr_n, tr_f, tr_i):
    """Idle resource j starts the smallest key waiting there (phase 3); returns the trace length."""
    if hn[j] == 0:
        if idle_reset:
            vt[j] = maxfin_j[j]
        return tr_n
    NR = RM + 1
    W = 2 * J + 2
    QW = RM + 4
    top = hp[j, 1]
    s = top & SLOT_MASK
    qb = (s * J + j) * QW
    h = qs[qb + QS_HEAD]
    seq = qs[qb + QS_RING + h]
    h = (h + 1) & RM
    qs[qb + QS_HEAD] = h
    cnt = qs[qb + QS_COUNT] - 1
    qs[qb + QS_COUNT] = cnt
    if cnt > 0:
        seqn = qs[qb + QS_RING + h]
        _heap_replace_top(hp, hn, j, pkt[(s * NR + (seqn & RM)) * W + 2 * J], top >> SLOT_BITS, s)
    else:
        _heap_pop(hp, hn, j)
    pb = (s * NR + (seq & RM)) * W
    _on_start(policy, s, pb, j, J, vt, pkt)
    if vt_in_service:
        # what the in-service rule reads: keys in service, the largest finish tag begun
        busy_key[j] = pkt[pb + 2 * J]
        if policy == P_DRFQ:
            drfq.note_finish(pb, J, vt, pkt)
    if idle_reset:
        # the largest finish tag begun at j, where V_j jumps when j goes idle
        if policy == P_DOVETAIL:  # finish tag at j, not the largest over resources
            f = pkt[pb + J + j] + pkt[pb + j] / slot_f[s * N_FCOLS + F_WEIGHT]
        else:
            f = pkt[pb + 2 * J + 1]
        if f > maxfin_j[j]:
            maxfin_j[j] = f
    busy_slot[j] = s
    busy_seq[j] = seq
    end = t + pkt[pb + j]
    fin[j] = end
    # busy time inside [warmup, T] (conditional expressions: numba compiles the builtin
    # min/max of floats to out-of-line calls)
    hi = end if end < T else T
    lo = t if t > warmup else warmup
    if hi > lo:
        busy_post[j] += hi - lo
    if tr_n < trace_cap:
        tr_f[2 * tr_n] = t
        tr_f[2 * tr_n + 1] = end
        tr_i[3 * tr_n] = j
        tr_i[3 * tr_n + 1] = slot_i[s * N_ICOLS + I_UID]
        tr_i[3 * tr_n + 2] = seq
        tr_n += 1
    return tr_n


DEP_NONE, DEP_NEXT, DEP_FLOW_DONE = 0, 1, 2


def batch_starts(warmup: float, T: float, B: int) -> np.ndarray:
    """``b_start[b]`` = the first instant t with ``_batch(t) >= b`` (b = 0..B-1; ``b_start[B]``
    = inf), found by bisection over the doubles, so that moving a batch index along a
    non-decreasing clock gives exactly :func:`_batch` without its two divisions per packet."""
    out = np.full(B + 1, INF)
    out[0] = warmup
    if not (T > warmup):
        return out

    def batch(t):  # _batch for t in [warmup, T], the same floating-point operations
        return min(int((t - warmup) / ((T - warmup) / B)), B - 1)

    bits = lambda x: int(np.float64(x).view(np.int64))  # noqa: E731 - positive doubles order like their bits
    for b in range(1, B):
        lo, hi = bits(warmup), bits(T)  # batch(lo) < b <= batch(hi)
        if batch(T) < b:
            continue
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if batch(float(np.int64(mid).view(np.float64))) >= b:
                hi = mid
            else:
                lo = mid
        out[b] = float(np.int64(hi).view(np.float64))
    return out


@jit(inline="always")
def _depart(s, t, warmup, slot_i, dep_pk, b_start, bcur):
    """A packet of the flow in row s leaves the router at t: departure counts.  Returns
    (code, batch index): code DEP_NEXT when the window's next packet is due (its admission
    is then pending), DEP_FLOW_DONE when that was the flow's last packet, else DEP_NONE;
    ``bcur``, the batch of the last class departure, only moves forward (clock order)."""
    slot_i[s * N_ICOLS + I_INFLIGHT] -= 1
    k = slot_i[s * N_ICOLS + I_CLASS]
    if t > warmup:
        if k < 0:
            slot_i[s * N_ICOLS + I_DEPPOST] += 1
        else:
            while t >= b_start[bcur + 1]:  # = _batch(t): t <= T here
                bcur += 1
            dep_pk[k, bcur] += 1.0
    if slot_i[s * N_ICOLS + I_REMAIN] != 0:
        if slot_i[s * N_ICOLS + I_REMAIN] > 0:
            slot_i[s * N_ICOLS + I_REMAIN] -= 1
        slot_i[s * N_ICOLS + I_PENDING] += 1
        return DEP_NEXT, bcur
    if slot_i[s * N_ICOLS + I_INFLIGHT] == 0 and slot_i[s * N_ICOLS + I_PENDING] == 0:
        return DEP_FLOW_DONE, bcur
    return DEP_NONE, bcur


# per-resource state: rf = [vt (J + 2: see fq.drfq) | fin | busy_key | maxfin | busy_post],
# ri = [busy_slot | busy_seq | served | admitted | heap size | completions: j, slot, seq]
RF_FIELDS, RI_FIELDS = 5, 8


@jit(inline="always")
def _float_views(rf, J):
    return (rf[0:J + 2], rf[J + 2:2 * J + 2], rf[2 * J + 2:3 * J + 2], rf[3 * J + 2:4 * J + 2],
            rf[4 * J + 2:5 * J + 2])


@jit(inline="always")
def _int_views(ri, J):
    return (ri[0:J], ri[J:2 * J], ri[2 * J:3 * J], ri[3 * J:4 * J], ri[4 * J:5 * J], ri[5 * J:6 * J],
            ri[6 * J:7 * J], ri[7 * J:8 * J])


# scalar state carried between calls of the inner loop
(S_T, S_NEXT_ARR, S_NEXT_STATIC, S_T_AREA) = range(4)
N_SF = 4
(S_SERVICES, S_NFREE, S_ADM_HEAD, S_ADM_N, S_ST_PTR, S_PK_ADM, S_PK_DEP, S_NEXT_UID, S_ACTIVE,
 S_MAX_ACTIVE, S_TR_N, S_STOPPED, S_BATCH) = range(13)
N_SI = 13
DONE, GROW_FLOWS = 0, 1
#: services per call of the compiled loop (Ctrl-C is seen between calls; about a second)
CHUNK = 1 << 24
#: memory cap of the flow table, its heaps and admission queues (refused before allocation)
MAX_TABLE_BYTES = 4 * 2**30


@jit_no_refcount
def _flow_done(s, k, t, K, T, warmup, B, slot_i, slot_f, x, area, t_last_area, cls_completed,
               done_n, done_pk, done_fct, free, n_free):
    """A class-k flow (row s) left at t: flow statistics, and its row goes back to the free list."""
    _area(area, x, K, t_last_area, t, warmup, T, B)
    x[k] -= 1.0
    cls_completed[k] += 1
    t_arr = slot_f[s * N_FCOLS + F_ARRIVE]
    if t_arr >= warmup:
        b = _batch(t, warmup, T, B)
        if b >= 0:
            done_n[k, b] += 1.0
            done_pk[k, b] += slot_i[s * N_ICOLS + I_SIZE]
            done_fct[k, b] += t - t_arr
    free[n_free] = s


@jit_no_refcount
def _flow_starts(
    J, N, RM, t, T, warmup, B, sp_cost, sp_pb, sp_sizes, sp_nz, sp_w,
    n_static, st_start, st_packets, st_order, K, cls_spec, cls_cdf, lam_total, cls_p, rng,
    sf, si, slot_i, slot_f, flow_F, flow_Fj, qs, pkt, free, now_s, now_n,
    x, area, cls_arrived,
):
    """Static flow starts (by flow id) and the Poisson flow arrival at instant t: each new
    flow gets a table row and queues min(N, L) admissions in ``now_s`` (the loop admits them
    right after).  Scalars travel in sf/si; returns the new length of ``now_s``."""
    next_arr = sf[S_NEXT_ARR]
    next_static = sf[S_NEXT_STATIC]
    t_last_area = sf[S_T_AREA]
    n_free = si[S_NFREE]
    st_ptr = si[S_ST_PTR]
    next_uid = si[S_NEXT_UID]
    n_active = si[S_ACTIVE]
    max_active = si[S_MAX_ACTIVE]
    while next_static == t or next_arr == t:
        if next_static == t:
            s = st_order[st_ptr]
            st_ptr += 1
            next_static = st_start[st_order[st_ptr]] if st_ptr < n_static else INF
            size_total = st_packets[s]
        else:
            if n_free == 0:
                # a second Poisson arrival at this very instant (an inter-arrival draw of 0.0)
                # found the table full: leave it due; the loop grows the table and admits it
                break
            # class, size, next inter-arrival: in this order, for every scheduler
            u = rng.random()
            k = 0
            while k < K - 1 and u >= cls_cdf[k]:
                k += 1
            size_total = rng.geometric(cls_p[k])
            next_arr = t + rng.exponential(1.0 / lam_total)
            n_free -= 1
            s = free[n_free]
            slot_i[s * N_ICOLS + I_UID] = next_uid
            next_uid += 1
            slot_i[s * N_ICOLS + I_SPEC] = cls_spec[k]
            slot_i[s * N_ICOLS + I_CLASS] = k
            slot_f[s * N_FCOLS + F_WEIGHT] = sp_w[cls_spec[k]]
            cls_arrived[k] += 1
            _area(area, x, K, t_last_area, t, warmup, T, B)
            t_last_area = t
            x[k] += 1.0
        # ---- a flow starts: reset its row, queue min(N, L) admissions
        slot_i[s * N_ICOLS + I_SIZE] = size_total
        slot_i[s * N_ICOLS + I_REMAIN] = size_total if size_total > 0 else -1
        slot_i[s * N_ICOLS + I_INFLIGHT] = 0
        slot_i[s * N_ICOLS + I_NEXTSEQ] = 1
        slot_i[s * N_ICOLS + I_PENDING] = 0
        slot_i[s * N_ICOLS + I_DEPPOST] = 0
        slot_f[s * N_FCOLS + F_ARRIVE] = t
        sp = slot_i[s * N_ICOLS + I_SPEC]
        if sp_nz[sp] == 1:
            # constant per-packet costs: every ring slot holds them for the flow's lifetime
            dom = 0.0
            first = -1
            for jj in range(J):
                c = sp_cost[sp, jj] + sp_pb[sp, jj] * sp_sizes[sp, 0]
                for q in range(RM + 1):
                    pkt[(s * (RM + 1) + q) * (2 * J + 2) + jj] = c
                if c > dom:
                    dom = c
                if c > 0.0 and first < 0:
                    first = jj
            slot_f[s * N_FCOLS + F_DOM] = dom
            slot_i[s * N_ICOLS + I_FIRST] = first
        flow_F[s] = 0.0
        for jj in range(J):
            flow_Fj[s, jj] = 0.0
            qb = (s * J + jj) * (RM + 4)
            qs[qb + QS_Q] = 0
            qs[qb + QS_HEAD] = 0
            qs[qb + QS_COUNT] = 0
        n_active += 1
        if n_active > max_active:
            max_active = n_active
        n0 = N
        if size_total > 0 and size_total < N:
            n0 = size_total
        for _ in range(n0):
            if slot_i[s * N_ICOLS + I_REMAIN] > 0:
                slot_i[s * N_ICOLS + I_REMAIN] -= 1
            slot_i[s * N_ICOLS + I_PENDING] += 1
            now_s[now_n] = s
            now_n += 1

    sf[S_NEXT_ARR] = next_arr
    sf[S_NEXT_STATIC] = next_static
    sf[S_T_AREA] = t_last_area
    si[S_NFREE] = n_free
    si[S_ST_PTR] = st_ptr
    si[S_NEXT_UID] = next_uid
    si[S_ACTIVE] = n_active
    si[S_MAX_ACTIVE] = max_active
    return now_n


GENERIC = -1


def _make_loop(J_CONST, LEAN):
    """The event loop compiled for J_CONST resources; numba keys its cache on the closure's
    constants, so every variant gets its own machine code.

    With J a constant the loops over resources unroll.  ``LEAN`` is GENERIC (every option
    read at run time) or a policy code: the variant for the default options (virtual time
    "started", no idle reset, rtt = 0, no trace) with that scheduler's hooks inlined and the
    rest of the dispatch compiled away, about 10 % faster on few flows.  Both are the same
    source; tests assert equal outputs.
    """

    @jit_no_refcount
    def _loop(
        policy, fq_res, unit, vt_in_service, idle_reset, J_arg, N, RM, rtt, T, warmup, B, max_services, trace_cap, b_start,
        sp_cost, sp_pb, sp_sizes, sp_cdf, sp_nz, sp_w,
        n_static, st_start, st_packets, st_order, K, cls_spec, cls_cdf, lam_total, cls_p, rng, cost_key,
        sf, si, slot_i, slot_f, flow_F, flow_Fj, qs, pkt, hp, free, rf, ri, adm_t, adm_s, now_s,
        st_done_t, x, area, dep_pk, done_n, done_pk, done_fct,
        cls_arrived, cls_completed, tr_f, tr_i,
    ):
        """The event loop proper (see the module docstring for the event order).

        Arrays are never reassigned here, and the loop is compiled without numba's
        runtime, so no reference counting runs on the hot path.  When the flow
        table is full and a Poisson flow is due, it returns GROW_FLOWS *before*
        touching that instant; :func:`simulate_kernel` enlarges the arrays and
        calls it again.  Every admission, immediate (a departure with ``rtt = 0``,
        a new flow's first window) or delayed by ``rtt``, goes through one queue
        and one call site.
        """
        J = J_CONST  # a compile-time constant: loops over resources unroll
        if LEAN != GENERIC:
            policy = LEAN
            vt_in_service = False
            idle_reset = False
            rtt = 0.0
            trace_cap = 0
        # the per-resource state: views at constant offsets into two small arrays (two base
        # pointers instead of thirteen live across the loop)
        vt, fin, busy_key, maxfin_j, busy_post = _float_views(rf, J)
        busy_slot, busy_seq, served_j, admitted_j, hn, comp_j, comp_slot, comp_seq = _int_views(ri, J)
        C = slot_i.shape[0]
        acap = adm_t.shape[0]
        NR = RM + 1
        W = 2 * J + 2
        QW = RM + 4
        t = sf[S_T]
        next_arr = sf[S_NEXT_ARR]
        next_static = sf[S_NEXT_STATIC]
        t_last_area = sf[S_T_AREA]
        services = si[S_SERVICES]
        n_free = si[S_NFREE]
        adm_head = si[S_ADM_HEAD]
        adm_n = si[S_ADM_N]
        pk_admitted = si[S_PK_ADM]
        pk_departed = si[S_PK_DEP]
        n_active = si[S_ACTIVE]
        tr_n = si[S_TR_N]
        bcur = si[S_BATCH]
        code = DONE
        while True:
            # ---- next event instant: scan the few candidate times
            tn = next_static
            if next_arr < tn:
                tn = next_arr
            if adm_n > 0 and adm_t[adm_head] < tn:
                tn = adm_t[adm_head]
            for j in range(J):
                if fin[j] < tn:
                    tn = fin[j]
            if tn > T or tn == INF:
                break
            if max_services > 0 and services >= max_services:
                si[S_STOPPED] = 1
                break
            if next_arr == tn and n_free == 0:
                code = GROW_FLOWS
                break
            t = tn

            # ---- phase 1a: completing packets leave their servers
            nc = 0
            for j in range(J):
                if fin[j] == t:
                    s = busy_slot[j]
                    comp_j[nc] = j
                    comp_slot[nc] = s
                    comp_seq[nc] = busy_seq[j]
                    nc += 1
                    qs[(s * J + j) * QW + QS_Q] -= 1
                    served_j[j] += 1
                    services += 1
                    busy_slot[j] = -1
                    fin[j] = INF
            if vt_in_service and nc > 0:
                drfq.in_service_virtual_time(J, busy_slot, busy_key, vt)

            # ---- phase 1b: move each on, or let it leave (resource order)
            now_n = 0
            for c in range(nc):
                j = comp_j[c]
                s = comp_slot[c]
                seq = comp_seq[c]
                pb = (s * NR + (seq & RM)) * W
                nj = j + 1
                while nj < J and pkt[pb + nj] <= 0.0:
                    nj += 1
                if nj < J:
                    _enqueue(policy, fq_res, unit, s, seq, pb, nj, t, J, RM, slot_i[s * N_ICOLS + I_UID], slot_f[s * N_FCOLS + F_WEIGHT], vt,
                             flow_Fj, qs, pkt, hp, hn, admitted_j)
                    continue
                # departure from the router
                pk_departed += 1
                dep, bcur = _depart(s, t, warmup, slot_i, dep_pk, b_start, bcur)
                if dep == DEP_NEXT:
                    # the window's next packet: now (rtt = 0) or rtt later
                    if rtt > 0.0:
                        q = adm_head + adm_n
                        if q >= acap:
                            q -= acap
                        adm_t[q] = t + rtt
                        adm_s[q] = s
                        adm_n += 1
                    else:
                        now_s[now_n] = s
                        now_n += 1
                elif dep == DEP_FLOW_DONE:
                    # ---- flow completion (rare: out of line)
                    n_active -= 1
                    k = slot_i[s * N_ICOLS + I_CLASS]
                    if k < 0:
                        st_done_t[s] = t
                        slot_i[s * N_ICOLS + I_DONE] = 1
                    else:
                        _flow_done(s, k, t, K, T, warmup, B, slot_i, slot_f, x, area, t_last_area, cls_completed,
                                   done_n, done_pk, done_fct, free, n_free)
                        t_last_area = t
                        n_free += 1

            # ---- phase 2: admissions in order: immediate ones from departures, those delayed by
            #      rtt that fall due now, then new flows' windows (static starts by flow id, then
            #      the Poisson arrival); each is tagged with the virtual times as they stand now
            now_i = 0
            starts_done = False
            while True:
                if now_i < now_n:
                    s = now_s[now_i]
                    now_i += 1
                elif adm_n > 0 and adm_t[adm_head] == t:
                    s = adm_s[adm_head]
                    adm_head += 1
                    if adm_head == acap:
                        adm_head = 0
                    adm_n -= 1
                elif not starts_done and (next_static == t or next_arr == t):
                    starts_done = True
                    sf[S_NEXT_ARR] = next_arr
                    sf[S_NEXT_STATIC] = next_static
                    sf[S_T_AREA] = t_last_area
                    si[S_NFREE] = n_free
                    si[S_ACTIVE] = n_active
                    now_n = _flow_starts(
                        J, N, RM, t, T, warmup, B, sp_cost, sp_pb, sp_sizes, sp_nz, sp_w,
                        n_static, st_start, st_packets, st_order, K, cls_spec, cls_cdf, lam_total, cls_p, rng,
                        sf, si, slot_i, slot_f, flow_F, flow_Fj, qs, pkt, free, now_s, now_n,
                        x, area, cls_arrived)
                    next_arr = sf[S_NEXT_ARR]
                    next_static = sf[S_NEXT_STATIC]
                    t_last_area = sf[S_T_AREA]
                    n_free = si[S_NFREE]
                    n_active = si[S_ACTIVE]
                    continue
                else:
                    break
                slot_i[s * N_ICOLS + I_PENDING] -= 1
                _admit(policy, fq_res, unit, s, t, J, RM, slot_i, slot_f, flow_F, flow_Fj, qs, pkt,
                       hp, hn, vt, admitted_j, sp_cost, sp_pb, sp_sizes, sp_cdf, sp_nz, cost_key)
                pk_admitted += 1

            # ---- phase 3: idle resources start their smallest key
            for j in range(J):
                if busy_slot[j] < 0:
                    tr_n = _start_next(policy, idle_reset, vt_in_service, j, t, T, warmup, J, RM, hp, hn, qs, pkt, slot_i, slot_f,
                                       vt, maxfin_j, busy_slot, busy_seq, busy_key, fin, busy_post,
                                       trace_cap, tr_n, tr_f, tr_i)
            if vt_in_service:
                drfq.in_service_virtual_time(J, busy_slot, busy_key, vt)

        sf[S_T] = t
        sf[S_NEXT_ARR] = next_arr
        sf[S_NEXT_STATIC] = next_static
        sf[S_T_AREA] = t_last_area
        si[S_SERVICES] = services
        si[S_NFREE] = n_free
        si[S_ADM_HEAD] = adm_head
        si[S_ADM_N] = adm_n
        si[S_PK_ADM] = pk_admitted
        si[S_PK_DEP] = pk_departed
        si[S_ACTIVE] = n_active
        si[S_TR_N] = tr_n
        si[S_BATCH] = bcur
        return code

    return _loop


_LOOPS = {}


def lean_policy(policy, vt_in_service, idle_reset, rtt, trace_cap) -> int:
    """The LEAN key of the loop variant for these options: the policy code when every other
    option is at its default, else GENERIC."""
    if not vt_in_service and not idle_reset and rtt == 0.0 and trace_cap == 0:
        return int(policy)
    return GENERIC


def loop_for(J: int, lean: int = GENERIC):
    """The event loop for J resources, generic or lean (see :func:`_make_loop`); built once
    per process."""
    key = (int(J), int(lean))
    fn = _LOOPS.get(key)
    if fn is None:
        fn = _LOOPS[key] = _make_loop(*key)
    return fn


def _grow_rows(a: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros((n,) + a.shape[1:], a.dtype)
    out[: a.shape[0]] = a
    return out


def _compile_seconds(fn, args) -> float:
    """Compile (or load from numba's cache) ``fn`` for these argument types; seconds spent."""
    if not hasattr(fn, "typeof_pyval"):  # NUMBA_DISABLE_JIT=1: a plain function
        return 0.0
    sig = tuple(fn.typeof_pyval(a) for a in args)
    if sig in fn.overloads:
        return 0.0
    t0 = time.perf_counter()
    fn.compile(sig)
    return time.perf_counter() - t0


def simulate_kernel(
    policy, fq_res, unit, vt_in_service, idle_reset, J, N, rtt,
    T, warmup, B, max_services, trace_cap,
    sp_cost, sp_pb, sp_sizes, sp_cdf, sp_nz, sp_w,
    n_static, st_start, st_packets, st_order,
    K, cls_spec, cls_cdf, lam_total, cls_p,
    rng, cost_key, specialise=True,
):
    """Run the router until time T (or ``max_services`` services); see the module docstring.

    Units: time units; costs ``sp_cost[s, j]`` time units per packet,
    ``sp_pb[s, j]`` per byte; ``lam_total`` flows per time unit.
    Plain Python: allocates the state with numpy (nothing to compile), runs the
    compiled loop (doubling the flow table when it asks; the lean variant for
    default options unless ``specialise`` is false), then counts
    what is left in the system for the conservation check.  Returns
    ``(outputs, compile_seconds)``, the outputs as flat arrays (see
    :func:`router.run.simulate`).
    """
    C = n_static + 64
    # per-flow rings of NR >= N slots, NR a power of two: positions are seq & RM
    NR = 1
    while NR < N:
        NR *= 2
    RM = NR - 1
    st = {
        "slot_i": np.zeros((C, N_ICOLS), np.int64),
        "slot_f": np.zeros((C, N_FCOLS), np.float64),
        "flow_F": np.zeros(C, np.float64),
        "flow_Fj": np.zeros((C, J), np.float64),
        # per (flow row, resource): packets there (Q_ij), ring head, ring count, ring of NR seqs
        "qs": np.zeros((C, J, NR + 3), np.int64),
        "pkt": np.zeros((C, NR, 2 * J + 2), np.float64),
    }
    heaps = {"hp": np.full((J, 2 * C + 4), SENTINEL, np.int64)}
    free = np.arange(C - 1, n_static - 1, -1, dtype=np.int64)
    free = np.concatenate([free, np.zeros(n_static, np.int64)])
    sf = np.zeros(N_SF, np.float64)
    si = np.zeros(N_SI, np.int64)
    si[S_NFREE] = C - n_static

    rf = np.zeros(RF_FIELDS * J + 2, np.float64)
    ri = np.zeros(RI_FIELDS * J, np.int64)
    vt, fin, busy_key, maxfin_j, busy_post = _float_views(rf, J)
    busy_slot, busy_seq, served_j, admitted_j, hn, comp_j, comp_slot, comp_seq = _int_views(ri, J)
    busy_slot[:] = -1
    fin[:] = INF
    # pending admissions never exceed N per flow, so C * NR (+ J) bounds both queues
    adm_t = np.zeros(C * NR + J, np.float64)
    adm_s = np.zeros(C * NR + J, np.int64)
    now_s = np.zeros(C * NR + J, np.int64)

    ns1 = max(n_static, 1)
    st_done_t = np.full(ns1, np.nan)
    Kc = max(K, 1)
    x = np.zeros(Kc, np.float64)
    area = np.zeros((Kc, B), np.float64)
    dep_pk = np.zeros((Kc, B), np.float64)
    done_n = np.zeros((Kc, B), np.float64)
    done_pk = np.zeros((Kc, B), np.float64)
    done_fct = np.zeros((Kc, B), np.float64)
    cls_arrived = np.zeros(Kc, np.int64)
    cls_completed = np.zeros(Kc, np.int64)
    # trace rows: (start, end) and (resource, flow id, packet sequence)
    tr_f = np.zeros((trace_cap, 2), np.float64)
    tr_i = np.zeros((trace_cap, 3), np.int64)

    # static flows own rows 0..n_static-1 (flow id = row)
    for i in range(n_static):
        st["slot_i"][i, I_UID] = i
        st["slot_i"][i, I_SPEC] = i
        st["slot_i"][i, I_CLASS] = -1
        st["slot_f"][i, F_WEIGHT] = sp_w[i]
    si[S_NEXT_UID] = n_static
    sf[S_NEXT_STATIC] = st_start[st_order[0]] if n_static > 0 else INF
    sf[S_NEXT_ARR] = rng.exponential(1.0 / lam_total) if K > 0 and lam_total > 0.0 else INF

    b_start = batch_starts(warmup, T, B)
    compile_seconds = 0.0
    lean = lean_policy(policy, vt_in_service, idle_reset, rtt, trace_cap) if specialise else GENERIC
    loop = loop_for(J, lean)
    while True:
        # at most CHUNK services per call, so that Ctrl-C (seen only in Python) stops a long run;
        # the loop saves its state before it stops, so the calls resume bit for bit
        stop_at = si[S_SERVICES] + CHUNK
        if max_services > 0 and max_services < stop_at:
            stop_at = max_services
        args = (
            policy, fq_res, unit, vt_in_service, idle_reset, J, N, RM, rtt, T, warmup, B, stop_at, trace_cap, b_start,
            sp_cost, sp_pb, sp_sizes, sp_cdf, sp_nz, sp_w,
            n_static, st_start, st_packets, st_order, K, cls_spec, cls_cdf, lam_total, cls_p, rng, cost_key,
            sf, si, st["slot_i"].reshape(-1), st["slot_f"].reshape(-1), st["flow_F"], st["flow_Fj"], st["qs"].reshape(-1),
            st["pkt"].reshape(-1), heaps["hp"], free, rf, ri, adm_t, adm_s, now_s,
            st_done_t, x, area, dep_pk, done_n, done_pk, done_fct,
            cls_arrived, cls_completed, tr_f.reshape(-1), tr_i.reshape(-1),
        )
        compile_seconds += _compile_seconds(loop, args)
        if loop(*args) == DONE:
            if si[S_STOPPED] == 1 and stop_at != max_services:
                si[S_STOPPED] = 0  # the end of a chunk, not of the run
                continue
            break
        # GROW_FLOWS: double the flow table, the heaps and the admission queues
        C2 = 2 * C
        if C2 > SLOT_MASK + 1:
            raise MrfqError(f"more than {SLOT_MASK + 1:,} flows at once: the engine's heap entries hold "
                            f"{SLOT_BITS}-bit row numbers; lower the flow arrival rate or the flow sizes")
        row_bytes = (sum(a.nbytes for a in st.values()) + adm_t.nbytes + adm_s.nbytes + now_s.nbytes) / C
        if C2 * row_bytes > MAX_TABLE_BYTES:
            raise MrfqError(f"flow table: {C2:,} flows at once would need {C2 * row_bytes / 2**30:.3g} GiB, more "
                            f"than the {MAX_TABLE_BYTES / 2**30:g} GiB cap (at t = {sf[S_T]:.6g}); the system is "
                            "overloaded or nearly so: lower the load or shorten run.duration")
        for name in st:
            st[name] = _grow_rows(st[name], C2)
        for name in heaps:
            h = np.full((J, 2 * C2 + 4), SENTINEL, np.int64)
            h[:, : 2 * C + 4] = heaps[name]
            heaps[name] = h
        free = np.zeros(C2, np.int64)
        free[: C2 - C] = np.arange(C2 - 1, C - 1, -1)
        si[S_NFREE] = C2 - C
        n, head, cap = si[S_ADM_N], si[S_ADM_HEAD], adm_t.shape[0]
        order = (head + np.arange(n)) % cap
        new_t = np.zeros(C2 * NR + J, np.float64)
        new_s = np.zeros(C2 * NR + J, np.int64)
        new_t[:n] = adm_t[order]
        new_s[:n] = adm_s[order]
        adm_t, adm_s = new_t, new_s
        si[S_ADM_HEAD] = 0
        now_s = np.zeros(C2 * NR + J, np.int64)
        C = C2

    if si[S_NEXT_UID] > UID_LIMIT:
        raise MrfqError(f"more than {UID_LIMIT:,} flows in one run: the heap's tie-break holds "
                        f"{63 - SLOT_BITS}-bit flow ids; split the run (run.duration)")
    stopped = si[S_STOPPED] == 1
    t_end = sf[S_T] if stopped else T
    if stopped:
        # busy time was booked to the end of each service: trim what lies after t_end
        for j in range(J):
            if busy_slot[j] >= 0 and fin[j] > t_end:
                hi = fin[j] if fin[j] < T else T
                lo = t_end if t_end > warmup else warmup
                if hi > lo:
                    busy_post[j] -= hi - lo
    if K > 0:
        _area_py(area, x, K, sf[S_T_AREA], t_end, warmup, T, B)

    # ---- conservation: admitted = served + in system, per resource and overall
    slot_i = st["slot_i"]
    in_sys_j = st["qs"][:, :, QS_Q].sum(axis=0)
    inflight = slot_i[:, I_INFLIGHT]
    in_router = int(inflight[inflight > 0].sum())
    st_dep_post = slot_i[:ns1, I_DEPPOST].copy() if n_static > 0 else np.zeros(1, np.int64)
    st_admitted = (slot_i[:ns1, I_NEXTSEQ] - 1).clip(min=0) if n_static > 0 else np.zeros(1, np.int64)
    tr_n = si[S_TR_N]
    return (
        t_end, si[S_SERVICES], served_j, admitted_j, in_sys_j, si[S_PK_ADM], si[S_PK_DEP], in_router,
        busy_post, st_dep_post, st_done_t, st_admitted,
        area, dep_pk, done_n, done_pk, done_fct, cls_arrived, cls_completed, x,
        tr_f[:tr_n, 0].copy(), tr_f[:tr_n, 1].copy(), tr_i[:tr_n, 0].copy(), tr_i[:tr_n, 1].copy(), tr_i[:tr_n, 2].copy(),
        si[S_NEXT_UID], si[S_MAX_ACTIVE],
    ), compile_seconds


def _area_py(area, x, K, t0, t1, warmup, T, B):
    """Python twin of :func:`_area` for the last piece of the run (called once)."""
    if t1 <= warmup or t0 >= T or t1 <= t0:
        return
    blen = (T - warmup) / B
    for b in range(B):
        b_lo = warmup + b * blen
        b_hi = T if b == B - 1 else warmup + (b + 1) * blen
        a = max(t0, b_lo)
        e = min(t1, b_hi)
        if e > a:
            area[:K, b] += x[:K] * (e - a)
