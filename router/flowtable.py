"""The flow life cycle on the flow table: starts, departures, completions.

Flows start (static flows at their start time, Poisson flows at their arrival)
by taking a table row and queueing ``min(N, L)`` admissions; each departure
from the router either makes the window's next admission due or, for the last
packet, completes the flow, whose row goes back to the free list.  Starts and
completions are rare next to services: they are compiled out of line
(:func:`flow_starts`, :func:`flow_done`); :func:`depart` is inlined in the loop.

The kernels draw no random numbers: flow arrivals (time, class, size) come in
chunks of arrays from :class:`flows.traffic.ArrivalStream`, the one
implementation shared with the SimPy reference and the fluid path (common
random numbers); the loop asks the host for the next chunk (MORE_ARRIVALS)
before an instant whose arrivals the chunk might not hold entirely.
"""

from __future__ import annotations

import numpy as np

from mrfq.fq._jit import jit_inline, jit_internal, no_wraparound
from mrfq.router.batches import add_area
from mrfq.router.buffers import ACCEPT
from mrfq.router.buffers import arrive as buffer_arrive
from mrfq.router.packets import packet_size
from mrfq.router.delays import row_offset
from mrfq.router.rfb import K_BACKLOG, RFB_SHIFT
from mrfq.router.state import (
    ADM_BITS, C_ACTIVE, C_ARR_CUR, C_ARR_LOG_N, C_MAX_ACTIVE, C_NEXT_ARR, C_NEXT_PKT, C_NEXT_STATIC, C_NEXT_UID,
    C_NFREE, C_PKT_CUR, C_RFB_N, C_ST_PTR, C_T_AREA, C_VICT_N, C_GROW_ROW, B_LO, N_REASONS, RI_BUSY_SEQ, RI_BUSY_SLOT, STATIC_OPEN, F_ARRIVE, F_COST, F_DSVC, F_WEIGHT, I_CLASS, I_DEPPOST, I_FIRST, I_INFLIGHT, I_NEXTSEQ, I_PENDING, I_REMAIN,
    F_SIZE, I_UID, N_ICOLS, QS_COUNT, QS_HEAD, QS_WIDTH,
)

INF = np.inf
NO_WRAPAROUND = no_wraparound(__name__)

DEP_NONE, DEP_NEXT, DEP_FLOW_DONE = 0, 1, 2
# codes the loop returns: DONE (time T or max_services reached), GROW_FLOWS (more flow arrivals due
# at the next instant than free table rows), MORE_ARRIVALS (the chunk might not hold every arrival
# due at the next instant: the host appends the next chunk)
DONE, GROW_FLOWS, MORE_ARRIVALS, MORE_PACKETS, GROW_RING, GROW_ACKS, TCP_OVERFLOW, GROW_LOG = 0, 1, 2, 3, 4, 5, 6, 7


@jit_inline
def arrivals_ready(tn, arr_t, arr_cur, arr_last, n_free):
    """Before the loop handles instant ``tn`` with flow arrivals due: DONE when the chunk holds
    every arrival at ``tn`` (a later one, or the stream's end, is in sight) and the flow table
    has a free row for each; else the code asking the host for what is missing."""
    i = arr_cur
    n = arr_t.shape[0]
    while i < n and arr_t[i] == tn:
        i += 1
    if i == n and arr_last == 0:
        return MORE_ARRIVALS
    if i - arr_cur > n_free:
        return GROW_FLOWS
    return DONE


@jit_inline
def packets_ready(tn, pk_t, pk_cur, pk_last):
    """Before the loop handles instant ``tn`` with open-loop packet arrivals due: DONE when the
    chunk holds every packet arrival at ``tn``, else MORE_PACKETS (the host appends the next chunk)."""
    i = pk_cur
    n = pk_t.shape[0]
    while i < n and pk_t[i] == tn:
        i += 1
    if i == n and pk_last == 0:
        return MORE_PACKETS
    return DONE


@jit_inline
def ring_holds(s, hi, J, slot_i, ring, qs, ri, bf, NBF):
    """Whether row s's packet ring holds seqs lo .. hi, lo the oldest of its packets in the router
    (waiting at a resource or in service): ``bf.fl``'s B_LO keeps a lower bound of lo (it only grows),
    and the exact one is looked for (and kept) only when the bound says the ring may be short."""
    size = ring[2 * s + 1] + 1
    if hi - bf.fl[s * NBF + B_LO] <= size:
        return True
    lo = slot_i[s * N_ICOLS + I_NEXTSEQ]
    for j in range(J):
        if qs[(s * J + j) * QS_WIDTH + QS_COUNT] > 0 and qs[(s * J + j) * QS_WIDTH + QS_HEAD] < lo:
            lo = qs[(s * J + j) * QS_WIDTH + QS_HEAD]
        if ri[RI_BUSY_SLOT * J + j] == s and ri[RI_BUSY_SEQ * J + j] < lo:
            lo = ri[RI_BUSY_SEQ * J + j]
    bf.fl[s * NBF + B_LO] = lo
    return hi - lo <= size


@jit_internal
def ring_room(tn, pk_t, pk_f, pk_cur, slot_i, ring, qs, ri, J, bf, ci):
    """Before the loop handles instant ``tn`` with open-loop packet arrivals due: DONE when each
    arriving flow's packet ring can hold its packets in the router and all of those arriving now
    (their seqs ``lo .. NEXTSEQ + arrivals - 1`` distinct modulo the ring's size: ``lo`` the oldest
    still in the router, which drops at a queue's head make older than the count says), else
    GROW_RING with the row in ``ci[C_GROW_ROW]`` (the host doubles its ring: router.state.grow_ring).
    ``bf.fl``'s B_LO keeps a lower bound of ``lo`` (it only grows), so the exact one is looked for
    only near the ring's end."""
    n = pk_t.shape[0]
    NBF = bf.fl.shape[0] // max(bf.drops.shape[0] // N_REASONS, 1)
    i = pk_cur
    while i < n and pk_t[i] == tn:
        s = pk_f[i]
        m = 0
        while i < n and pk_t[i] == tn and pk_f[i] == s:
            m += 1
            i += 1
        hi = slot_i[s * N_ICOLS + I_NEXTSEQ] + slot_i[s * N_ICOLS + I_PENDING] + m
        if not ring_holds(s, hi, J, slot_i, ring, qs, ri, bf, NBF):
            ci[C_GROW_ROW] = s
            return GROW_RING
    return DONE


@jit_inline
def depart(s, t, warmup, slot_i, departed, b_start, bcur, open_loop):
    """A packet of the flow in row s leaves the router at t: departure counts.  Returns
    (code, batch index): DEP_NEXT when the window's next packet is due (the caller then
    moves the packet's place from in flight to a pending admission, or admits it at once and
    the counts stay as they are), DEP_FLOW_DONE when that was the flow's last packet, else
    DEP_NONE; ``bcur``, the batch of the last departure after warm-up, only moves forward (clock
    order).  An open-loop flow (``I_CLASS = STATIC_OPEN``) admits nothing when a packet leaves: its
    packets arrive by their own law (``I_REMAIN``: those still to arrive, -1 forever)."""
    k = slot_i[s * N_ICOLS + I_CLASS]
    if t > warmup:
        while t >= b_start[bcur + 1]:  # = batch_index(t): t <= T here
            bcur += 1
        if k < 0:
            slot_i[s * N_ICOLS + I_DEPPOST] += 1
        else:
            departed[k, bcur] += 1.0
    if open_loop and k <= STATIC_OPEN:  # (open_loop: a constant, False in the lean loop; a TCP flow too)
        slot_i[s * N_ICOLS + I_INFLIGHT] -= 1
        if slot_i[s * N_ICOLS + I_REMAIN] == 0 and slot_i[s * N_ICOLS + I_INFLIGHT] == 0 \
                and slot_i[s * N_ICOLS + I_PENDING] == 0:
            return DEP_FLOW_DONE, bcur
        return DEP_NONE, bcur
    if slot_i[s * N_ICOLS + I_REMAIN] != 0:
        if slot_i[s * N_ICOLS + I_REMAIN] > 0:
            slot_i[s * N_ICOLS + I_REMAIN] -= 1
        return DEP_NEXT, bcur
    slot_i[s * N_ICOLS + I_INFLIGHT] -= 1
    if slot_i[s * N_ICOLS + I_INFLIGHT] == 0 and slot_i[s * N_ICOLS + I_PENDING] == 0:
        return DEP_FLOW_DONE, bcur
    return DEP_NONE, bcur


@jit_internal
def flow_done(s, k, t, P, ft, acc, t_last_area, n_free, bcur):
    """A class-k flow (row s) left at t: flow statistics; its row goes back to the free list.

    ``bcur`` is the batch of t when t > warmup (:func:`depart` has just moved it to its
    last packet's departure at t), and 0 at t = warmup: :func:`batch_index` of t (t <= T in
    the loop) without its division, which the compiler would otherwise hoist out of this
    rare branch and compute at every instant."""
    add_area(acc.area, acc.x, P.K, t_last_area, t, P.warmup, P.T, P.B)
    acc.x[k] -= 1.0
    acc.class_completed[k] += 1
    t_arr = ft.slot_f[s * P.NFC + F_ARRIVE]
    if t_arr >= P.warmup:
        acc.done_n[k, bcur] += 1.0
        acc.done_packets[k, bcur] += ft.slot_f[s * P.NFC + F_SIZE]
        acc.done_time[k, bcur] += t - t_arr
    ft.free[n_free] = s


@jit_internal
def flow_starts(J, t, P, sp, tf, arr, pk, carry, ft, S, aq, now_n, acc, tr, trace_cap, bf):
    """Static flow starts (by flow id), then the flow arrivals at instant t (in stream order), then
    the open-loop packet arrivals at t (in stream order: by flow id), each admitted (queued in
    ``aq.now_s`` like a window's admission) unless its buffer management drops it
    (router.buffers.arrive; counted from warm-up on; rows whose waiting packet the shared pool pushes
    out go to ``bf.victims``, their number to ``carry.ci[C_VICT_N]``, for the loop to remove).  Flow starts and arrivals:
    each new flow gets a table row (the scheduler's rows zeroed) and queues min(N, L)
    admissions in ``aq.now_s`` (one entry ``row << ADM_BITS | min(N, L)``; the loop admits
    them right after).  Arrivals are read from
    the chunk ``arr`` at the cursor ``carry.ci[C_ARR_CUR]``; :func:`arrivals_ready` has made
    sure the chunk holds all of them and the table has a row for each.  With a trace, each
    arrival is logged.  Scalars travel in ``carry``; returns the new length of ``now_s``."""
    cf, ci = carry.cf, carry.ci
    slot_i, slot_f, cst = ft.slot_i, ft.slot_f, ft.cst
    N, NFC = P.N, P.NFC
    next_arr = cf[C_NEXT_ARR]
    next_static = cf[C_NEXT_STATIC]
    t_last_area = cf[C_T_AREA]
    n_free = ci[C_NFREE]
    st_ptr = ci[C_ST_PTR]
    next_uid = ci[C_NEXT_UID]
    n_active = ci[C_ACTIVE]
    max_active = ci[C_MAX_ACTIVE]
    arr_cur = ci[C_ARR_CUR]
    log_n = ci[C_ARR_LOG_N]
    rfb_n = ci[C_RFB_N]
    while next_static == t or next_arr == t:
        is_open = False
        if next_static == t:
            s = tf.static_order[st_ptr]
            st_ptr += 1
            next_static = tf.table_start[tf.static_spec[tf.static_order[st_ptr]]] if st_ptr < P.n_static else INF
            sp_row = tf.static_spec[s]
            size_total = tf.table_packets[sp_row]
            is_open = tf.table_buffer[sp_row] > 0
            if P.rfb_on == 1 and not is_open and ft.rfb_dom[s] > 0:  # a windowed flow: backlogged from now on
                acc.rfb_log[3 * rfb_n] = t
                acc.rfb_log[3 * rfb_n + 2] = ((ft.rfb_dom[s] >> RFB_SHIFT) << 2) | K_BACKLOG
                rfb_n += 1
        else:
            # the next arrival of the stream: class, size; then the time of the one after
            k = arr.klass[arr_cur]
            size_total = arr.packets[arr_cur]
            arr_cur += 1
            next_arr = arr.time[arr_cur] if arr_cur < arr.time.shape[0] else INF
            if log_n < trace_cap:
                tr.arr_times[log_n] = t
                tr.arr_ids[3 * log_n] = next_uid
                tr.arr_ids[3 * log_n + 1] = k
                tr.arr_ids[3 * log_n + 2] = size_total
                log_n += 1
            n_free -= 1
            s = ft.free[n_free]
            slot_i[s * N_ICOLS + I_UID] = next_uid
            next_uid += 1
            sp_row = tf.class_spec[k]
            slot_i[s * N_ICOLS + I_CLASS] = k
            ft.hrow[s] = row_offset(P.HS + k, J, P.NB, P.B, P.hbase)
            slot_f[s * NFC + F_WEIGHT] = sp.weight[tf.class_spec[k]]
            acc.class_arrived[k] += 1
            add_area(acc.area, acc.x, P.K, t_last_area, t, P.warmup, P.T, P.B)
            t_last_area = t
            acc.x[k] += 1.0
        # ---- a flow starts: reset its row, queue min(N, L) admissions
        slot_f[s * NFC + F_SIZE] = size_total
        slot_i[s * N_ICOLS + I_REMAIN] = size_total if size_total > 0 else -1
        slot_i[s * N_ICOLS + I_INFLIGHT] = 0
        slot_i[s * N_ICOLS + I_NEXTSEQ] = 1
        slot_i[s * N_ICOLS + I_PENDING] = 0
        slot_i[s * N_ICOLS + I_DEPPOST] = 0
        slot_f[s * NFC + F_ARRIVE] = t
        if sp.n_sizes[sp_row] == 1:
            # constant per-packet costs: in the flow row (pc = 0), or in every ring slot of the
            # per-packet costs for the flow's lifetime (pc = 1: other flows have packet sizes);
            # a cost record is CW = NFC - F_COST words: the costs, then (CW = 2 J) the increments
            # s_ij / w_i (Layout.increments)
            CW = NFC - F_COST
            w = slot_f[s * NFC + F_WEIGHT]
            k = sp.scale[sp_row]  # the increments' factor (1, or a reserved rate's: fq.contract.increment_scale)
            dom = 0.0
            first = -1
            for jj in range(J):
                c = sp.cost[sp_row, jj] + sp.per_byte[sp_row, jj] * sp.sizes[sp_row, 0]
                if P.pc:
                    base = ft.ring[2 * s]
                    for q in range(ft.ring[2 * s + 1] + 1):
                        cst[(base + q) * CW + jj] = c
                        if CW > J:
                            cst[(base + q) * CW + J + jj] = c / w * k
                else:
                    slot_f[s * NFC + F_COST + jj] = c
                    if CW > J:
                        slot_f[s * NFC + F_COST + J + jj] = c / w * k
                if c > dom:
                    dom = c
                if c > 0.0 and first < 0:
                    first = jj
            slot_f[s * NFC + F_DSVC] = dom / w  # max_j s_ij / w_i: the dominant service
            slot_i[s * N_ICOLS + I_FIRST] = first
        for m in range(P.NF):
            S.flow[s * P.NF + m] = 0.0
        for m in range(J * P.NFR):
            S.flow_res[s * J * P.NFR + m] = 0.0
        for jj in range(J):
            qb = (s * J + jj) * QS_WIDTH
            ft.qs[qb + QS_HEAD] = 0
            ft.qs[qb + QS_COUNT] = 0
        n_active += 1
        if n_active > max_active:
            max_active = n_active
        n0 = N
        if size_total > 0 and size_total < N:
            n0 = size_total
        if is_open:  # an open-loop source: its packets arrive by their own law
            n0 = 0
        if slot_i[s * N_ICOLS + I_REMAIN] > 0:
            slot_i[s * N_ICOLS + I_REMAIN] -= n0
        if n0 > 0:
            slot_i[s * N_ICOLS + I_PENDING] += n0
            aq.now_s[now_n] = (s << ADM_BITS) | n0
            now_n += 1

    # ---- open-loop packet arrivals at t, by flow id (packets_ready: the chunk holds all of them)
    next_pkt = cf[C_NEXT_PKT]
    if next_pkt == t:
        n_vict = np.int64(0)  # not the literal 0: a literal argument would compile router.buffers.arrive twice
        cur = ci[C_PKT_CUR]
        n = pk.time.shape[0]
        last = -1
        while cur < n and pk.time[cur] == t:
            s = pk.flow[cur]
            cur += 1
            post = t >= P.warmup  # counted from warm-up on, as flow arrivals are (flow_done)
            if post:
                acc.offered[s] += 1
            if slot_i[s * N_ICOLS + I_REMAIN] > 0:
                slot_i[s * N_ICOLS + I_REMAIN] -= 1
            held = slot_i[s * N_ICOLS + I_INFLIGHT] + slot_i[s * N_ICOLS + I_PENDING]
            row = tf.static_spec[s]
            seq = slot_i[s * N_ICOLS + I_NEXTSEQ] + slot_i[s * N_ICOLS + I_PENDING]  # the one it would be
            size = packet_size(sp, row, P.cost_key, s, seq, pk.size[cur - 1])
            verdict, n_vict = buffer_arrive(s, s, t, size, post, bf, P.n_static, J, slot_i, ft.qs, ft.ring, ft.pkt,
                                            P.W, n_vict, sp, row)
            if verdict == ACCEPT:
                if held == 0 and P.rfb_on == 1 and ft.rfb_dom[s] > 0:  # backlogged from now on
                    acc.rfb_log[3 * rfb_n] = t
                    acc.rfb_log[3 * rfb_n + 2] = ((ft.rfb_dom[s] >> RFB_SHIFT) << 2) | K_BACKLOG
                    rfb_n += 1
                rec = ft.ring[2 * s] + (seq & ft.ring[2 * s + 1])
                ft.pkt[rec * P.W + P.W - J - 2] = size  # its size, for the byte counts (router/buffers.py)
                if sp.n_sizes[row] == 0:
                    # its size from the packet trace, left in the first word of its cost record
                    # (ring slot of sequence NEXTSEQ + PENDING) for the admission to read
                    cst[rec * (NFC - F_COST)] = pk.size[cur - 1]
                slot_i[s * N_ICOLS + I_PENDING] += 1
                if s == last:  # the flow's arrivals at t are consecutive: one entry, counted up
                    aq.now_s[now_n - 1] += 1
                else:
                    aq.now_s[now_n] = (s << ADM_BITS) | 1
                    now_n += 1
                    last = s
        cf[C_NEXT_PKT] = pk.time[cur] if cur < n else INF
        ci[C_VICT_N] = n_vict
        ci[C_PKT_CUR] = cur

    cf[C_NEXT_ARR] = next_arr
    cf[C_NEXT_STATIC] = next_static
    cf[C_T_AREA] = t_last_area
    ci[C_NFREE] = n_free
    ci[C_ST_PTR] = st_ptr
    ci[C_NEXT_UID] = next_uid
    ci[C_ACTIVE] = n_active
    ci[C_MAX_ACTIVE] = max_active
    ci[C_ARR_CUR] = arr_cur
    ci[C_ARR_LOG_N] = log_n
    ci[C_RFB_N] = rfb_n
    return now_n
