"""Buffer management of the open-loop flows' queues (docs/buffers.md): limits, the shared pool, AQM.

An open-loop flow's queue is its packets inside the router (waiting or in service anywhere),
the count its ``buffer`` bounds; the queue a scheduler orders and an AQM drops from is the
one at the flow's *first resource* (resource 0 under ingress placement, else the first one
its packets cost time at).  Every decision here is taken at one of two moments:

* **arrival** (:func:`arrive`, called by router.flowtable.flow_starts for each open-loop
  packet arrival, in stream order): the AQM's arrival side (RED, FairDrop), then the flow's
  own limits in packets and bytes (tail drop), then the shared pool: full, it drops the
  arrival (``shared_buffer_policy = "tail"``) or pushes out the oldest packet waiting at the
  first resource of the flow holding the most (``"longest"``, longest queue drop), unless the
  arriving flow holds at least as much;
* **dequeue** (:func:`codel`, called by the event loop when a resource takes the head of an
  open-loop flow's queue at its first resource): CoDel's control law (RFC 8289).

A packet pushed out or dropped by CoDel has been tagged by the scheduler (its flow keeps what it
was charged at arrival) and leaves without service: the loop removes it from its queue and calls
the scheduler's ``drop`` hook (fq/contract.py).  Drops are counted per flow and reason from
warm-up on (router.state.REASONS).  The random draws (RED) come from a counter-based hash of the
flow and its arrival's index, keyed by the run's own child of the seed: the same draws for every
scheduler.  ``router/reference.py`` implements the same rules in plain Python.
"""

from __future__ import annotations

import math

from mrfq.fq._jit import jit_inline, jit_internal, no_wraparound
from mrfq.router.packets import hash32, M32
from mrfq.router.state import (
    AQM_FAIRDROP, AQM_RED, B_ARRIVALS, B_FD_VQ, B_FD_W, D_FAIRDROP, G_FD_T, B_BYTES, B_CD_COUNT, B_CD_DROP_NEXT, B_CD_DROPPING, B_CD_FIRST_ABOVE,
    B_CD_LASTCOUNT, B_ECN, B_MARKS, B_J0, B_LIM, B_LIM_BYTES, B_RED_AVG, B_RED_COUNT, B_RED_IDLE, B_RED_PT, D_POOL, D_PUSH_OUT, D_RED,
    D_TAIL, G_AQM, G_AQM_KEY, G_P, G_POOL_BYTES, G_POOL_BYTES_CAP, G_POOL_CAP, G_POOL_N, G_POOL_POLICY,
    I_INFLIGHT, I_PENDING, N_ICOLS, N_REASONS, POOL_TAIL, QS_COUNT, QS_HEAD, QS_WIDTH, STATIC_OPEN, I_CLASS,
)

NO_WRAPAROUND = no_wraparound(__name__)

ACCEPT = -1
#: accepted with a congestion mark (an ECN-capable TCP packet RED would have dropped)
ACCEPT_MARKED = -2
# RED's parameters in Buffers.g from G_P: min_th, max_th, max_p, w_q, gentle (the packet time of the
# idle-period decay is each flow's: B_RED_PT)
(R_MIN, R_MAX, R_MAXP, R_WQ, R_GENTLE) = range(5)
# CoDel's: target, interval, the queue (packets waiting behind the head) below which it never drops
(C_TARGET, C_INTERVAL, C_MAXPACKET) = range(3)


@jit_inline
def aqm_uniform(key, uid, n):
    """Uniform in [0, 1) for arrival n of flow uid (RED's draws): ``h(h(h(key ^ uid) + n))``
    with a salt of its own, so that no draw equals a packet size's."""
    h = hash32(hash32(hash32((key + 0x2545F491) ^ (uid & M32)) + (n & M32)) + (n >> 32))
    return h / 4294967296.0


@jit_inline
def red_drops(fl, b, g, q, t, u):
    """RED's decision for an arrival that finds ``q`` packets of its flow in the router (Floyd &
    Jacobson 1993, Fig. 2; gentle RED above max_th, Floyd 2000): the average queue
    ``avg <- (1 - w_q) avg + w_q q``, after an empty spell of m packet times ``avg <- (1 - w_q)^m avg``
    first; between min_th and max_th the drop probability ``p_b = max_p (avg - min_th) / (max_th -
    min_th)`` spread by the packets since the last drop, ``p_a = p_b / (1 - count p_b)``; above max_th
    (gentle) ``p_b = max_p + (1 - max_p) (avg - max_th) / max_th`` up to 2 max_th, else every arrival
    dropped.  ``u``: the arrival's uniform draw.  Returns True to drop."""
    p0 = G_P
    w_q = g[p0 + R_WQ]
    avg = fl[b + B_RED_AVG]
    if q == 0 and fl[b + B_RED_IDLE] >= 0.0 and fl[b + B_RED_PT] > 0.0:
        m = (t - fl[b + B_RED_IDLE]) / fl[b + B_RED_PT]
        avg = avg * math.pow(1.0 - w_q, m)
    avg = (1.0 - w_q) * avg + w_q * q
    fl[b + B_RED_AVG] = avg
    fl[b + B_RED_IDLE] = -1.0
    lo = g[p0 + R_MIN]
    hi = g[p0 + R_MAX]
    max_p = g[p0 + R_MAXP]
    if avg < lo:
        fl[b + B_RED_COUNT] = -1.0
        return False
    if avg < hi:
        p_b = max_p * (avg - lo) / (hi - lo)
    elif g[p0 + R_GENTLE] != 0.0 and avg < 2.0 * hi:
        p_b = max_p + (1.0 - max_p) * (avg - hi) / hi
    else:
        fl[b + B_RED_COUNT] = 0.0
        return True
    count = fl[b + B_RED_COUNT] + 1.0
    p_a = 1.0 if count * p_b >= 1.0 else p_b / (1.0 - count * p_b)
    if u < p_a:
        fl[b + B_RED_COUNT] = 0.0
        return True
    fl[b + B_RED_COUNT] = count
    return False


#: FairDrop's parameter in Buffers.g from G_P: theta, the shadow's service rate over the resource's
FD_THETA = 0


@jit_inline
def fairdrop_drain(fl, g, NBF, n_static, J, slot_i, t):
    """Drain FairDrop's shadow system to t (Addanki, Linguaglossa, Roberts, Rossi 2018, as the authors'
    simulators do): at each resource the flows with a virtual queue share ``theta (t - t_last)`` of
    work in proportion to their weights, a flow that empties giving its unused part to the others
    (weighted water-filling: exact fluid fair queueing while the set of flows is fixed)."""
    dt = t - g[G_FD_T]
    if dt <= 0.0:
        return
    g[G_FD_T] = t
    for r in range(J):
        credit = g[G_P + FD_THETA] * dt
        while credit > 0.0:
            wsum = 0.0
            for v in range(n_static):
                if slot_i[v * N_ICOLS + I_CLASS] <= STATIC_OPEN and fl[v * NBF + B_FD_VQ + r] > 0.0:
                    wsum += fl[v * NBF + B_FD_W]
            if wsum == 0.0:
                break
            per = credit / wsum
            credit = 0.0
            for v in range(n_static):
                q = fl[v * NBF + B_FD_VQ + r]
                if slot_i[v * N_ICOLS + I_CLASS] <= STATIC_OPEN and q > 0.0:
                    give = per * fl[v * NBF + B_FD_W]
                    if q > give:
                        fl[v * NBF + B_FD_VQ + r] = q - give
                    else:
                        credit += give - q
                        fl[v * NBF + B_FD_VQ + r] = 0.0


@jit_inline
def _size_of(pkt, PW, J, ring, v, seq):
    """The size in bytes of packet seq of row v (word ``PW - J - 2`` of its record, PW wide:
    router.state.pkt_width)."""
    return pkt[(ring[2 * v] + (seq & ring[2 * v + 1])) * PW + PW - J - 2]


@jit_internal
def arrive(s, uid, t, size, post, bf, n_static, J, slot_i, qs, ring, pkt, W, n_vict, sp, row):
    """Open-loop packet of static flow s (``size`` bytes) arrives at t: ACCEPT (the flow's and the
    pool's counts take it) or the reason it is dropped (router.state.D_*, counted when ``post``).
    With the pool's ``"longest"`` policy, rows whose oldest waiting packet is pushed out go to
    ``bf.victims`` (from ``n_vict``: the loop removes them right after); returns (verdict, n_vict).
    ``pkt`` words ``W - J - 2`` hold the sizes of the packets in the router (router.state.pkt_width).
    An ECN-capable packet (B_ECN: a TCP flow's with ``transport.ecn``) that RED would drop is marked
    instead (counted in B_MARKS when ``post``) and goes on to the limits: ACCEPT_MARKED when they take it."""
    fl, g = bf.fl, bf.g
    NBF = B_FD_VQ + 2 * J  # floats per static flow (router.state.buffer_width: no division here)
    b = s * NBF
    held = slot_i[s * N_ICOLS + I_INFLIGHT] + slot_i[s * N_ICOLS + I_PENDING]
    verdict = ACCEPT
    marked = False
    if g[G_AQM] == AQM_RED:
        n = int(fl[b + B_ARRIVALS])  # the flow's arrivals before this one: RED's random stream's counter
        fl[b + B_ARRIVALS] = n + 1
        if red_drops(fl, b, g, held, t, aqm_uniform(int(g[G_AQM_KEY]), uid, n)):
            if fl[b + B_ECN] != 0.0:
                marked = True
            else:
                verdict = D_RED
    elif g[G_AQM] == AQM_FAIRDROP:
        fairdrop_drain(fl, g, NBF, n_static, J, slot_i, t)
        for r in range(J):
            if fl[b + B_FD_VQ + r] > fl[b + B_FD_VQ + J + r]:
                verdict = D_FAIRDROP
    if verdict == ACCEPT and (held + 1 > fl[b + B_LIM] or fl[b + B_BYTES] + size > fl[b + B_LIM_BYTES]):
        verdict = D_TAIL
    while verdict == ACCEPT and (g[G_POOL_N] + 1.0 > g[G_POOL_CAP] or g[G_POOL_BYTES] + size > g[G_POOL_BYTES_CAP]):
        if g[G_POOL_POLICY] == POOL_TAIL:
            verdict = D_POOL
            break
        # longest queue drop: the flow holding the most (packets, or bytes for a pool of bytes) with a
        # packet waiting at its first resource not yet pushed out at t; the arrival's own flow wins ties
        by_bytes = g[G_POOL_BYTES_CAP] < math.inf
        own = fl[b + B_BYTES] if by_bytes else held
        best = -1
        most = own
        for v in range(n_static):
            if v == s or slot_i[v * N_ICOLS + I_CLASS] > STATIC_OPEN:
                continue
            hv = fl[v * NBF + B_BYTES] if by_bytes else slot_i[v * N_ICOLS + I_INFLIGHT] + slot_i[v * N_ICOLS + I_PENDING]
            if hv <= most:
                continue
            j0 = int(fl[v * NBF + B_J0])
            k = 0
            for i in range(n_vict):
                if bf.victims[i] == v:
                    k += 1
            if qs[(v * J + j0) * QS_WIDTH + QS_COUNT] > k:
                best = v
                most = hv
        if best < 0 or n_vict == bf.victims.shape[0]:  # (the second: more push-outs at one instant than
            verdict = D_POOL                           # router.state.make_buffers makes room for)
            break
        v = best
        j0 = int(fl[v * NBF + B_J0])
        k = 0
        for i in range(n_vict):
            if bf.victims[i] == v:
                k += 1
        seq = qs[(v * J + j0) * QS_WIDTH + QS_HEAD] + k
        sz = _size_of(pkt, W, J, ring, v, seq)
        bf.victims[n_vict] = v
        n_vict += 1
        slot_i[v * N_ICOLS + I_INFLIGHT] -= 1
        fl[v * NBF + B_BYTES] -= sz
        g[G_POOL_N] -= 1.0
        g[G_POOL_BYTES] -= sz
        if post:
            bf.drops[v * N_REASONS + D_PUSH_OUT] += 1
    if verdict != ACCEPT:
        if post:
            bf.drops[s * N_REASONS + verdict] += 1
        return verdict, n_vict
    fl[b + B_BYTES] += size
    g[G_POOL_N] += 1.0
    g[G_POOL_BYTES] += size
    if g[G_AQM] == AQM_FAIRDROP:  # an accepted packet's work at each resource joins the shadow (its mean there)
        for r in range(J):
            fl[b + B_FD_VQ + r] += sp.cost[row, r] + sp.per_byte[row, r] * size
    if marked:
        if post:
            fl[b + B_MARKS] += 1.0
        return ACCEPT_MARKED, n_vict
    return ACCEPT, n_vict


@jit_inline
def leave(bf, s, NBF, size, t, held):
    """A packet of open-loop flow s (``size`` bytes) leaves the router, served or dropped at
    dequeue; ``held``: its flow's packets in the router now.  (A packet pushed out was counted
    out at the arrival that pushed it: :func:`arrive`.)"""
    fl, g = bf.fl, bf.g
    fl[s * NBF + B_BYTES] -= size
    g[G_POOL_N] -= 1.0
    g[G_POOL_BYTES] -= size
    if held == 0:
        fl[s * NBF + B_RED_IDLE] = t


@jit_inline
def _dodequeue(fl, b, t, sojourn, behind, target, interval, maxpacket):
    """RFC 8289's dodequeue for a packet that waited ``sojourn`` with ``behind`` packets behind it:
    whether the sojourn has stayed at or above target (with more than ``maxpacket`` behind) for an
    interval (``first_above_time``: 0, none)."""
    if sojourn < target or behind <= maxpacket:
        fl[b + B_CD_FIRST_ABOVE] = 0.0
        return False
    if fl[b + B_CD_FIRST_ABOVE] == 0.0:
        fl[b + B_CD_FIRST_ABOVE] = t + interval
        return False
    return t >= fl[b + B_CD_FIRST_ABOVE]


#: codel's verdicts: deliver the head; drop it (in the dropping state); drop it (entering that state)
CD_DELIVER, CD_DROP, CD_ENTER = 0, 1, 2


@jit_inline
def codel(bf, s, NBF, t, sojourn, behind, phase):
    """CoDel at dequeue (RFC 8289 §5.5-5.6, its Linux-derived pseudocode) for the head of open-loop
    flow s's queue at its first resource, which waited ``sojourn`` and leaves ``behind`` packets
    waiting: CD_DELIVER, or CD_DROP / CD_ENTER to drop it, after which the loop examines the next
    head of the same queue at once, passing the verdict back as ``phase`` (0: the first packet
    examined when the resource took this queue), as the RFC's dequeue examines the next packet after
    each drop.

    In the dropping state a packet is dropped while ``now >= drop_next`` and ``ok_to_drop``, with
    ``drop_next = control_law(drop_next, count)`` once the packet after a drop is ok too; entering it
    (ok_to_drop outside it) drops one packet, delivers the next, and restarts ``count`` from
    ``count - lastcount`` when that is above 1 and the last ``drop_next`` lies less than 16 intervals
    back; ``control_law(t, n) = t + interval / sqrt(n)``."""
    fl, g = bf.fl, bf.g
    b = s * NBF
    interval = g[G_P + C_INTERVAL]
    ok = _dodequeue(fl, b, t, sojourn, behind, g[G_P + C_TARGET], interval, g[G_P + C_MAXPACKET])
    if phase == CD_ENTER:
        return CD_DELIVER
    if phase == CD_DROP:
        if not ok:
            fl[b + B_CD_DROPPING] = 0.0
            return CD_DELIVER
        fl[b + B_CD_DROP_NEXT] = fl[b + B_CD_DROP_NEXT] + interval / math.sqrt(fl[b + B_CD_COUNT])
    elif fl[b + B_CD_DROPPING] != 0.0:
        if not ok:
            fl[b + B_CD_DROPPING] = 0.0
            return CD_DELIVER
    elif ok:
        delta = fl[b + B_CD_COUNT] - fl[b + B_CD_LASTCOUNT]
        count = 1.0
        if delta > 1.0 and t - fl[b + B_CD_DROP_NEXT] < 16.0 * interval:
            count = delta
        fl[b + B_CD_COUNT] = count
        fl[b + B_CD_LASTCOUNT] = count
        fl[b + B_CD_DROPPING] = 1.0
        fl[b + B_CD_DROP_NEXT] = t + interval / math.sqrt(count)
        return CD_ENTER
    else:
        return CD_DELIVER
    if t >= fl[b + B_CD_DROP_NEXT]:
        fl[b + B_CD_COUNT] += 1.0
        return CD_DROP
    return CD_DELIVER


@jit_inline
def codel_marked(bf, s, NBF, t, phase, post):
    """CoDel marks the head of ECN-capable flow s's queue instead of dropping it (``phase``: the verdict,
    CD_DROP or CD_ENTER) and delivers it, as Linux's codel_dequeue does: in the dropping state
    ``drop_next`` moves on by the control law as after a drop.  Counted in B_MARKS when ``post``."""
    fl, g = bf.fl, bf.g
    b = s * NBF
    if phase == CD_DROP:
        fl[b + B_CD_DROP_NEXT] = fl[b + B_CD_DROP_NEXT] + g[G_P + C_INTERVAL] / math.sqrt(fl[b + B_CD_COUNT])
    if post:
        fl[b + B_MARKS] += 1.0


@jit_inline
def codel_emptied(bf, s, NBF, phase):
    """A drop emptied flow s's queue: the RFC's dodequeue finds no packet (first_above_time = 0;
    in the dropping state, it ends)."""
    bf.fl[s * NBF + B_CD_FIRST_ABOVE] = 0.0
    if phase == CD_DROP:
        bf.fl[s * NBF + B_CD_DROPPING] = 0.0
