"""TCP-like senders and receivers inside the event loop (docs/transport.md).

A static flow with ``transport = {cc = ..., rtt = ...}`` sends while its packets in flight are below
its congestion window.  Its packets pass the buffer management of router/buffers.py like an open-loop
flow's (limits, the shared pool, RED, CoDel, FairDrop); the receiver acknowledges each packet that
leaves the router with the next packet it expects (cumulative, no delayed ACKs, no SACK) and echoes
its send time (timestamps: an RTT sample on every ACK of new data); the ACK reaches the sender the
flow's ``rtt`` after the packet left.  The sender is Reno (RFC 5681) with NewReno recovery (RFC 6582)
or CUBIC (RFC 9438, with its Reno-friendly region), with RFC 6298's retransmission timer.  The plain
Python twin is router/reference_tcp.py; the SimPy reference must agree with this module packet by
packet.

Event order at an instant t (the loop's phase 2, after the open-loop packet arrivals): the TCP flows
starting at t send their initial windows (by start, then flow id), then the ACKs due at t act in the
order they were sent, then the timers expiring at t (by flow id); every packet they send is admitted
(or dropped) at t, in that order.

State: per TCP flow ``NTF`` floats and ``NTI`` ints, indexed by its TCP index ``k``
(``Tcp.tix[s]`` of its static row s); the receiver's out-of-order packets in a ring of ``R`` bytes
per flow (``R`` a power of two >= the flow's ``max_window``: a packet in flight is never ``R`` or
more past the next one expected); the ACKs in flight in one FIFO ring per distinct ``rtt`` (ACKs
leave in departure order, so each ring's due times never decrease): the next ACK is the earliest
(due time, order sent) among the rings' heads, a scan of as many rings as there are distinct
round-trip times.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mrfq.fq._jit import inline_copy, jit_inline, no_wraparound
from mrfq.router.buffers import ACCEPT, ACCEPT_MARKED
from mrfq.router.buffers import arrive as _arrive_out_of_line
from mrfq.router.flowtable import ring_holds
from mrfq.router.packets import M32, hash32, packet_size
from mrfq.router.rfb import K_BACKLOG, RFB_SHIFT
from mrfq.router.state import (
    ADM_BITS, ADM_MASK, B_FD_VQ, B_LO, C_GROW_ROW, C_RFB_N, C_VICT_N, I_INFLIGHT, I_NEXTSEQ, I_PENDING, N_ICOLS,
)

INF = np.inf
NO_WRAPAROUND = no_wraparound(__name__)

#: router.buffers.arrive inlined into the sender (it runs at every send; the open-loop arrivals call
#: the out-of-line one, once per instant's batch): a copy under a name of its own (fq._jit.inline_copy)
buffer_arrive = inline_copy(_arrive_out_of_line, python=False)

#: CUBIC's multiplicative decrease (RFC 9438 §4.6) and its Reno-friendly additive increase (§4.3)
CUBIC_BETA = 0.7
CUBIC_ALPHA = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)
#: the retransmission timeout backs off to at most this many times its floor (RFC 6298 (2.5))
RTO_BACKOFF_CAP = 64.0

# per-flow floats Tcp.f[k * NTF + T_*]
(T_CWND, T_SSTHRESH, T_SRTT, T_RTTVAR, T_RTO, T_RTO_AT, T_WMAX, T_EPOCH, T_K, T_ORIGIN, T_WEST, T_AREA, T_TAREA,
 T_RTT, T_MINRTO, T_C, T_LOSS, T_START, T_LOG_CWND, T_LOG_SSTHRESH) = range(20)
NTF = 20
# per-flow ints Tcp.i[k * NTI + K_*]
(K_UNA, K_NXT, K_MAX, K_DUP, K_INREC, K_RECOVER, K_ECNREC, K_SAMPLED, K_RCVNXT, K_SENDS, K_RETX, K_TIMEOUTS,
 K_GOODPUT, K_LOST, K_CUBIC, K_MAXWIN, K_ROW, K_ECN, K_HOLD) = range(19)
NTI = 19
# globals Tcp.g: ACKs in flight, ACKs sent so far, the next flow to open (index into Tcp.order), the
# receiver ring's size, a flow whose packets would overrun its packet ring (row + 1; 0: none), the
# window log's rows and whether it is kept (1), the ACK rings (one per distinct rtt), the ring of the
# next ACK (-1: none), 1 when a ring may not hold an instant's ACKs (the host doubles them), 1 when
# GF_NEXT_RTO may lie below the earliest timer deadline (an ACK moved that deadline later: it is found
# again only when it could be the next event, so an ACK costs no scan of the flows), 1 when drops at a
# queue's head (CoDel, the pool's push-out) can spread a flow's packets wider than its ring, or a flow
# has no packet buffer of at most its window: else a flow's packets in the router are consecutive and
# at most its buffer (K_HOLD), and its ring, twice that, always holds what it may send
(G_HN, G_ACKS, G_OPEN, G_R, G_OVERFLOW, G_LOG_N, G_LOG_ON, G_NQ, G_NEXTQ, G_FULL, G_RTO_LOW, G_RING_CHECK) = range(12)
# an ACK's slot x in the rings: Tcp.ah_f[AF * x + AH_*] and Tcp.ah_i[AI * x + AH_*] (two arrays of
# records, not five of fields: a push or pop touches two of the loop's many array pointers)
(AH_DUE, AH_TS) = range(2)
AF = 2
(AH_K, AH_A, AH_ORDER) = range(3)
AI = 3
# per ACK ring Tcp.q[r * QW + Q_*]: its first slot in the ACK arrays, its size, its head, its ACKs
(Q_BASE, Q_CAP, Q_HEAD, Q_N) = range(4)
QW = 4
#: a window log row: time, flow id, cwnd, ssthresh
LOG_WIDTH = 4
# Tcp.gf: the earliest timer deadline (or a lower bound of it: G_RTO_LOW), the next flow start, the
# due time of the next ACK (the head of ring G_NEXTQ; inf: none)
(GF_NEXT_RTO, GF_NEXT_OPEN, GF_NEXT_ACK) = range(3)


class Tcp(NamedTuple):
    """The TCP flows' state (one row of unread arrays when the scenario has none)."""

    f: np.ndarray       # [n * NTF] float64
    i: np.ndarray       # [n * NTI] int64
    held: np.ndarray    # [n * R] int8: the receiver holds packet q (beyond the next expected) at q & (R - 1)
    tix: np.ndarray     # [n_static] int64: the TCP index of each static row, -1 for other flows
    order: np.ndarray   # [n] TCP indices by (start, flow id)
    ah_f: np.ndarray    # the ACK rings' slots, AF floats each (AH_*): due time, the echoed send time
    ah_i: np.ndarray    # ... AI ints each: TCP index, the next packet the receiver expects << 1 | its
                        # congestion mark, order sent
    q: np.ndarray       # [rings * QW] int64 the ACK rings (Q_*)
    qk: np.ndarray      # [n] int64 the ACK ring of each flow
    g: np.ndarray       # int64 globals (G_*)
    gf: np.ndarray      # float64 globals (GF_*)
    log: np.ndarray     # the window log (G_LOG_ON): LOG_WIDTH floats per change of a flow's cwnd or ssthresh


def ring_for(max_window: int) -> int:
    r = 1
    while r < max_window:
        r *= 2
    return r


def allocate(flows, static_rows, starts, n_static: int, cap: int = 0, log: bool = False, holds=None) -> Tcp:
    """The state of TCP flows ``flows`` (flows.scenario.Transport and loss of each) in static rows
    ``static_rows`` starting at ``starts``; each ACK ring holds ``cap`` (at least twice the receiver
    windows of its flows); ``log``: keep every change of each flow's window (time, flow, cwnd, ssthresh);
    ``holds``: the most packets each flow can have in the router (its buffer, at most its window)."""
    n = len(flows)
    R = ring_for(max([tp.max_window for tp, _ in flows] or [1]))
    f = np.zeros(max(n, 1) * NTF)
    i = np.zeros(max(n, 1) * NTI, np.int64)
    tix = np.full(max(n_static, 1), -1, np.int64)
    for k, ((tp, loss), s) in enumerate(zip(flows, static_rows)):
        b, c = k * NTF, k * NTI
        f[b + T_CWND] = tp.initial_window
        f[b + T_SSTHRESH] = tp.max_window
        f[b + T_RTO] = max(tp.rto_floor, 3.0 * tp.rtt)
        f[b + T_RTO_AT] = INF
        f[b + T_EPOCH] = -1.0
        f[b + T_RTT] = tp.rtt
        f[b + T_MINRTO] = tp.rto_floor
        f[b + T_C] = tp.cubic_c
        f[b + T_LOSS] = loss
        f[b + T_START] = starts[k]
        f[b + T_LOG_CWND] = -1.0
        f[b + T_LOG_SSTHRESH] = -1.0
        i[c + K_RECOVER] = -1
        i[c + K_ECNREC] = -1
        i[c + K_CUBIC] = 1 if tp.cc == "cubic" else 0
        i[c + K_MAXWIN] = tp.max_window
        i[c + K_ROW] = s
        i[c + K_ECN] = 1 if tp.ecn else 0
        i[c + K_HOLD] = tp.max_window if holds is None else holds[k]
        tix[s] = k
    order = np.array(sorted(range(n), key=lambda k: (starts[k], static_rows[k])), np.int64) if n else np.zeros(1, np.int64)
    rtts = sorted({tp.rtt for tp, _ in flows})
    qk = np.array([rtts.index(tp.rtt) for tp, _ in flows] or [0], np.int64)
    caps = [max(cap, 2 * sum(tp.max_window for tp, _ in flows if tp.rtt == r) + 64) for r in rtts] or [1]
    q = np.zeros(len(caps) * QW, np.int64)
    q[Q_BASE::QW] = np.concatenate([[0], np.cumsum(caps)[:-1]])
    q[Q_CAP::QW] = caps
    total = int(sum(caps))
    g = np.zeros(12, np.int64)
    g[G_NQ] = len(rtts)
    g[G_NEXTQ] = -1
    g[G_R] = R
    g[G_LOG_ON] = 1 if log else 0
    gf = np.full(3, INF)
    if n:
        gf[GF_NEXT_OPEN] = starts[order[0]]
    return Tcp(f=f, i=i, held=np.zeros(max(n, 1) * R, np.int8), tix=tix, order=order,
               ah_f=np.zeros(AF * total), ah_i=np.zeros(AI * total, np.int64), q=q, qk=qk, g=g, gf=gf,
               log=np.zeros(LOG_WIDTH * (1 << 14) if log else 1))


@jit_inline
def log_room(tc, n_tcp):
    """Whether the window log holds the rows an instant can add (one per ACK in flight, two per flow)."""
    return tc.g[G_LOG_ON] == 0 or (tc.g[G_LOG_N] + tc.g[G_HN] + 2 * n_tcp + 1) * LOG_WIDTH <= tc.log.shape[0]


def grow_log(tc: Tcp) -> Tcp:
    out = np.zeros(2 * tc.log.shape[0])
    out[:tc.log.shape[0]] = tc.log
    return tc._replace(log=out)


def grow_acks(tc: Tcp) -> Tcp:
    """Every ACK ring twice as large, its ACKs in order from its new first slot."""
    nq = int(tc.g[G_NQ])
    caps = [2 * int(tc.q[r * QW + Q_CAP]) for r in range(nq)]
    bases = np.concatenate([[0], np.cumsum(caps)[:-1]]).astype(np.int64)
    ah_f, ah_i = tc.ah_f.reshape(-1, AF), tc.ah_i.reshape(-1, AI)
    out_f, out_i = np.zeros((int(sum(caps)), AF)), np.zeros((int(sum(caps)), AI), np.int64)
    q = tc.q.copy()
    for r in range(nq):
        base, cap, head, n = (int(x) for x in tc.q[r * QW:(r + 1) * QW])
        idx = base + (head + np.arange(n)) % cap
        out_f[bases[r]:bases[r] + n] = ah_f[idx]
        out_i[bases[r]:bases[r] + n] = ah_i[idx]
        q[r * QW + Q_BASE], q[r * QW + Q_CAP], q[r * QW + Q_HEAD] = bases[r], caps[r], 0
    g = tc.g.copy()
    g[G_FULL] = 0
    return tc._replace(ah_f=out_f.ravel(), ah_i=out_i.ravel(), q=q, g=g)


# ---------------------------------------------------------------------------------------------------
# the ACK rings
@jit_inline
def _next_ring(tc):
    """The ring whose head is the earliest (due time, order sent), or -1: none; its due time goes to
    GF_NEXT_ACK."""
    if tc.g[G_NQ] == 1:  # one round-trip time: one ring, no scan
        if tc.q[Q_N] > 0:
            tc.gf[GF_NEXT_ACK] = tc.ah_f[AF * (tc.q[Q_BASE] + tc.q[Q_HEAD]) + AH_DUE]
            return 0
        tc.gf[GF_NEXT_ACK] = INF
        return -1
    best = -1
    bt = INF
    bo = 0
    for r in range(tc.g[G_NQ]):
        if tc.q[r * QW + Q_N] > 0:
            x = tc.q[r * QW + Q_BASE] + tc.q[r * QW + Q_HEAD]
            due, o = tc.ah_f[AF * x + AH_DUE], tc.ah_i[AI * x + AH_ORDER]
            if best < 0 or due < bt or (due == bt and o < bo):
                best, bt, bo = r, due, o
    tc.gf[GF_NEXT_ACK] = bt
    return best


@jit_inline(python=False)
def _ack_push(tc, due, k, a, ts, J):
    r = tc.qk[k]
    b = r * QW
    n = tc.q[b + Q_N]
    cap = tc.q[b + Q_CAP]
    x = tc.q[b + Q_HEAD] + n
    if x >= cap:
        x -= cap
    x += tc.q[b + Q_BASE]
    tc.ah_f[AF * x + AH_DUE] = due
    tc.ah_f[AF * x + AH_TS] = ts
    tc.ah_i[AI * x + AH_K] = k
    tc.ah_i[AI * x + AH_A] = a
    tc.ah_i[AI * x + AH_ORDER] = tc.g[G_ACKS]
    tc.g[G_ACKS] += 1
    tc.g[G_HN] += 1
    tc.q[b + Q_N] = n + 1
    if n + 1 + J >= cap:  # the next instant might not fit: the host doubles the rings first
        tc.g[G_FULL] = 1
    # the next ACK changes only when this ring was empty: else its head, due no later, is at least as
    # early as this one (a ring's due times never decrease), and so is the earliest head
    if n == 0 and (tc.g[G_NEXTQ] < 0 or due < tc.gf[GF_NEXT_ACK]):
        tc.g[G_NEXTQ] = r
        tc.gf[GF_NEXT_ACK] = due


@jit_inline(python=False)
def _ack_pop(tc):
    """The next ACK leaves its ring; returns its slot (read before the next push)."""
    r = tc.g[G_NEXTQ]
    b = r * QW
    h = tc.q[b + Q_HEAD]
    x = tc.q[b + Q_BASE] + h
    h += 1
    if h == tc.q[b + Q_CAP]:
        h = 0
    tc.q[b + Q_HEAD] = h
    tc.q[b + Q_N] -= 1
    tc.g[G_HN] -= 1
    tc.g[G_NEXTQ] = _next_ring(tc)
    return x


@jit_inline
def _earliest_deadline(tc):
    """The earliest timer deadline, found again (GF_NEXT_RTO exact from here)."""
    nxt = INF
    for k in range(tc.order.shape[0]):
        if tc.f[k * NTF + T_RTO_AT] < nxt:
            nxt = tc.f[k * NTF + T_RTO_AT]
    tc.gf[GF_NEXT_RTO] = nxt
    tc.g[G_RTO_LOW] = 0
    return nxt


@jit_inline
def next_event(tc):
    """The next instant a TCP sender acts: a flow start, an ACK's arrival, a timer's expiry (the
    earliest deadline found again where the bound kept is below it and before the others)."""
    t = tc.gf[GF_NEXT_ACK]
    if tc.gf[GF_NEXT_OPEN] < t:
        t = tc.gf[GF_NEXT_OPEN]
    rto = tc.gf[GF_NEXT_RTO]
    if rto < t and tc.g[G_RTO_LOW] == 1:
        rto = _earliest_deadline(tc)
    return rto if rto < t else t


@jit_inline
def _log(tc, k, t):
    """Flow k's window after an event at t, logged when it changed (G_LOG_ON)."""
    b = k * NTF
    if tc.g[G_LOG_ON] == 1 and (tc.f[b + T_CWND] != tc.f[b + T_LOG_CWND] or
                                tc.f[b + T_SSTHRESH] != tc.f[b + T_LOG_SSTHRESH]):
        n = tc.g[G_LOG_N]
        tc.log[LOG_WIDTH * n] = t
        tc.log[LOG_WIDTH * n + 1] = tc.i[k * NTI + K_ROW]
        tc.log[LOG_WIDTH * n + 2] = tc.f[b + T_CWND]
        tc.log[LOG_WIDTH * n + 3] = tc.f[b + T_SSTHRESH]
        tc.g[G_LOG_N] = n + 1
        tc.f[b + T_LOG_CWND] = tc.f[b + T_CWND]
        tc.f[b + T_LOG_SSTHRESH] = tc.f[b + T_SSTHRESH]


@jit_inline
def _room(tc, k, J, slot_i, ring, qs, ri, bf, NBF):
    """Whether flow k's packet ring holds its packets in the router and as many more as it may
    hold (K_HOLD): seqs lo .. NEXTSEQ + PENDING + hold distinct modulo its size, lo the oldest in the
    router (B_LO a lower bound of it, found again only near the ring's end)."""
    s = tc.i[k * NTI + K_ROW]
    hi = slot_i[s * N_ICOLS + I_NEXTSEQ] + slot_i[s * N_ICOLS + I_PENDING] + tc.i[k * NTI + K_HOLD]
    return ring_holds(s, hi, J, slot_i, ring, qs, ri, bf, NBF)


@jit_inline(python=False)
def ring_room(tc, tn, J, slot_i, ring, qs, ri, bf, ci):
    """Before the loop handles instant tn with TCP events due: True when the packet ring of every flow
    that acts at tn (a start, an ACK, a timer) holds what it may send, else False with the row in
    ``ci[C_GROW_ROW]`` (the host doubles its ring: router.state.grow_ring)."""
    if tc.g[G_RING_CHECK] == 0:
        return True
    NBF = B_FD_VQ + 2 * J
    n = tc.order.shape[0]
    p = tc.g[G_OPEN] if tc.gf[GF_NEXT_OPEN] == tn else n
    while p < n and tc.f[tc.order[p] * NTF + T_START] == tn:
        if not _room(tc, tc.order[p], J, slot_i, ring, qs, ri, bf, NBF):
            ci[C_GROW_ROW] = tc.i[tc.order[p] * NTI + K_ROW]
            return False
        p += 1
    for r in range(tc.g[G_NQ] if tc.gf[GF_NEXT_ACK] == tn else 0):
        b = r * QW
        for m in range(tc.q[b + Q_N]):
            x = tc.q[b + Q_HEAD] + m
            if x >= tc.q[b + Q_CAP]:
                x -= tc.q[b + Q_CAP]
            x += tc.q[b + Q_BASE]
            if tc.ah_f[AF * x + AH_DUE] != tn:
                break
            k = tc.ah_i[AI * x + AH_K]
            if not _room(tc, k, J, slot_i, ring, qs, ri, bf, NBF):
                ci[C_GROW_ROW] = tc.i[k * NTI + K_ROW]
                return False
    if tc.gf[GF_NEXT_RTO] <= tn:
        for k in range(n):
            if tc.f[k * NTF + T_RTO_AT] == tn and not _room(tc, k, J, slot_i, ring, qs, ri, bf, NBF):
                ci[C_GROW_ROW] = tc.i[k * NTI + K_ROW]
                return False
    return True


@jit_inline
def loss_uniform(key, uid, n):
    """Uniform in [0, 1) deciding whether send n of flow uid is lost before the router (``loss``):
    the counter-based hash with a salt of its own (router.reference_tcp.loss_uniform)."""
    h = hash32(hash32(hash32((key + 0x6A09E667) ^ (uid & M32)) + (n & M32)) + (n >> 32))
    return h / 4294967296.0


# ---------------------------------------------------------------------------------------------------
# the receiver (at a departure from the router)
@jit_inline(python=False)
def receive(tc, s, word, t, ts, warmup, J):
    """Packet q of the TCP flow in static row s leaves the router at t (sent at ts; ``word = q << 1 | ce``,
    ce: an AQM marked it): the receiver's cumulative ACK, echoing the mark, due at the sender the flow's
    rtt later, joins the heap (``a << 1 | ce``)."""
    q = word >> 1
    k = tc.tix[s]
    c = k * NTI
    R = tc.g[G_R]
    base = k * R
    rn = tc.i[c + K_RCVNXT]
    if q == rn:  # the next packet expected (the common case): it is not held; those after it may be
        if t > warmup:
            tc.i[c + K_GOODPUT] += 1
        rn += 1
        while tc.held[base + (rn & (R - 1))] == 1:
            tc.held[base + (rn & (R - 1))] = 0
            rn += 1
        tc.i[c + K_RCVNXT] = rn
    elif q > rn and tc.held[base + (q & (R - 1))] == 0:  # out of order: held until the hole fills
        if t > warmup:
            tc.i[c + K_GOODPUT] += 1
        tc.held[base + (q & (R - 1))] = 1
    _ack_push(tc, t + tc.f[k * NTF + T_RTT], k, (rn << 1) | (word & 1), ts, J)


# ---------------------------------------------------------------------------------------------------
# the sender
@jit_inline
def _area(tc, b, t):
    if t > tc.f[b + T_TAREA]:
        tc.f[b + T_AREA] += tc.f[b + T_CWND] * (t - tc.f[b + T_TAREA])
        tc.f[b + T_TAREA] = t


@jit_inline(python=False)
def _transmit(tc, k, q, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri):
    """TCP flow k sends packet q at t: lost before the router (``loss``), dropped by the buffer
    management (router.buffers.arrive), or queued for admission at t (``now_s``; its sequence number
    in word ``W - J - 3`` of its packet record).  Returns the new length of ``now_s``."""
    b, c = k * NTF, k * NTI
    if q < tc.i[c + K_MAX]:
        if t >= P.warmup:
            tc.i[c + K_RETX] += 1
    else:
        tc.i[c + K_MAX] = q + 1
    if tc.f[b + T_RTO_AT] == INF:  # RFC 6298 (5.1)
        tc.f[b + T_RTO_AT] = t + tc.f[b + T_RTO]
    n = tc.i[c + K_SENDS]
    tc.i[c + K_SENDS] = n + 1
    s = tc.i[c + K_ROW]
    post = t >= P.warmup
    if tc.f[b + T_LOSS] > 0.0 and loss_uniform(P.loss_key, s, n) < tc.f[b + T_LOSS]:
        if post:
            tc.i[c + K_LOST] += 1
        return now_n
    if post:
        acc.offered[s] += 1
    slot_i = ft.slot_i
    held = slot_i[s * N_ICOLS + I_INFLIGHT] + slot_i[s * N_ICOLS + I_PENDING]
    row = tf.static_spec[s]
    seq = slot_i[s * N_ICOLS + I_NEXTSEQ] + slot_i[s * N_ICOLS + I_PENDING]
    size = packet_size(sp, row, P.cost_key, s, seq, 0.0)
    verdict, n_vict = buffer_arrive(s, s, t, size, post, bf, P.n_static, J, slot_i, ft.qs, ft.ring, ft.pkt, P.W,
                                    ci[C_VICT_N], sp, row)
    ci[C_VICT_N] = n_vict
    if verdict != ACCEPT and verdict != ACCEPT_MARKED:
        return now_n
    if held == 0 and P.rfb_on == 1 and ft.rfb_dom[s] > 0:  # backlogged from now on
        rfb_n = ci[C_RFB_N]
        acc.rfb_log[3 * rfb_n] = t
        acc.rfb_log[3 * rfb_n + 2] = ((ft.rfb_dom[s] >> RFB_SHIFT) << 2) | K_BACKLOG
        ci[C_RFB_N] = rfb_n + 1
    # (ring_room made sure before the instant that the flow's ring holds it, or G_RING_CHECK says it
    # always does; with G_RING_CHECK the check stays, cheap: B_LO, a lower bound of its oldest
    # packet's seq, is found again only when it says the ring may be short)
    NBF = B_FD_VQ + 2 * J
    if tc.g[G_RING_CHECK] == 1 and seq + 1 - bf.fl[s * NBF + B_LO] > ft.ring[2 * s + 1] + 1 and \
            not ring_holds(s, seq + 1, J, slot_i, ft.ring, ft.qs, ri, bf, NBF):
        tc.g[G_OVERFLOW] = s + 1
        return now_n
    rec = ft.ring[2 * s] + (seq & ft.ring[2 * s + 1])
    W = P.W
    ft.pkt[rec * W + W - J - 2] = size
    ft.pkt[rec * W + W - J - 3] = 2 * q + (1 if verdict == ACCEPT_MARKED else 0)  # (q << 1 | ce)
    slot_i[s * N_ICOLS + I_PENDING] += 1
    if now_n > 0 and (now_s[now_n - 1] >> ADM_BITS) == s and (now_s[now_n - 1] & ADM_MASK) < ADM_MASK:
        now_s[now_n - 1] += 1  # the flow's sends at t are consecutive: one entry, counted up
    else:
        now_s[now_n] = (s << ADM_BITS) | 1
        now_n += 1
    return now_n


@jit_inline(python=False)
def _send_more(tc, k, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri):
    """Send while the packets in flight are below the window (and the receiver's)."""
    b, c = k * NTF, k * NTI
    w = int(tc.f[b + T_CWND])
    if w > tc.i[c + K_MAXWIN]:
        w = tc.i[c + K_MAXWIN]
    while tc.i[c + K_NXT] < tc.i[c + K_UNA] + w:
        q = tc.i[c + K_NXT]
        tc.i[c + K_NXT] = q + 1
        now_n = _transmit(tc, k, q, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri)
    return now_n


@jit_inline
def _decrease(tc, b, c):
    """A congestion event: ssthresh (and CUBIC's W_max) from the window now."""
    cwnd = tc.f[b + T_CWND]
    if tc.i[c + K_CUBIC] == 1:
        tc.f[b + T_WMAX] = cwnd * (1.0 + CUBIC_BETA) / 2.0 if cwnd < tc.f[b + T_WMAX] else cwnd
        x = cwnd * CUBIC_BETA
        tc.f[b + T_SSTHRESH] = x if x > 2.0 else 2.0
        tc.f[b + T_EPOCH] = -1.0
    else:
        x = (tc.i[c + K_MAX] - tc.i[c + K_UNA]) / 2.0
        tc.f[b + T_SSTHRESH] = x if x > 2.0 else 2.0


@jit_inline
def _increase(tc, b, c, acked, t):
    f = tc.f
    if f[b + T_CWND] < f[b + T_SSTHRESH]:
        f[b + T_CWND] += 1.0  # slow start, at most one packet per ACK (RFC 5681 (2), RFC 3465 L = 1)
    elif tc.i[c + K_CUBIC] == 0:
        f[b + T_CWND] += 1.0 / f[b + T_CWND]  # congestion avoidance (RFC 5681 (3))
    else:
        cwnd = f[b + T_CWND]
        C = f[b + T_C]
        if f[b + T_EPOCH] < 0.0:
            f[b + T_EPOCH] = t
            f[b + T_WEST] = cwnd
            if cwnd < f[b + T_WMAX]:
                f[b + T_K] = ((f[b + T_WMAX] - cwnd) / C) ** (1.0 / 3.0)
                f[b + T_ORIGIN] = f[b + T_WMAX]
            else:
                f[b + T_K] = 0.0
                f[b + T_ORIGIN] = cwnd
        rtt = f[b + T_SRTT] if tc.i[c + K_SAMPLED] == 1 else f[b + T_RTT]
        d = t - f[b + T_EPOCH] - f[b + T_K]
        w_now = C * d * d * d + f[b + T_ORIGIN]
        d = d + rtt
        target = C * d * d * d + f[b + T_ORIGIN]
        if target < cwnd:
            target = cwnd
        elif target > 1.5 * cwnd:
            target = 1.5 * cwnd
        alpha = 1.0 if f[b + T_WEST] >= f[b + T_WMAX] else CUBIC_ALPHA
        f[b + T_WEST] += alpha * acked / cwnd
        if w_now < f[b + T_WEST]:
            f[b + T_CWND] = f[b + T_WEST]  # the Reno-friendly region
        else:
            f[b + T_CWND] = cwnd + (target - cwnd) / cwnd
    if f[b + T_CWND] > tc.i[c + K_MAXWIN]:
        f[b + T_CWND] = float(tc.i[c + K_MAXWIN])


@jit_inline(python=False)
def _ack(tc, k, t, a, ts, ece, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri):
    """The ACK of ``a`` (the next packet the receiver expects, echoing send time ts and, ``ece``, a
    congestion mark) reaches flow k at t."""
    b, c = k * NTF, k * NTI
    f, i = tc.f, tc.i
    _area(tc, b, t)
    if a > i[c + K_UNA]:
        acked = a - i[c + K_UNA]
        i[c + K_UNA] = a
        if i[c + K_NXT] < a:
            i[c + K_NXT] = a
        r = t - ts  # RFC 6298 (2.2), (2.3)
        if i[c + K_SAMPLED] == 0:
            i[c + K_SAMPLED] = 1
            f[b + T_SRTT] = r
            f[b + T_RTTVAR] = r / 2.0
        else:
            f[b + T_RTTVAR] = 0.75 * f[b + T_RTTVAR] + 0.25 * abs(f[b + T_SRTT] - r)
            f[b + T_SRTT] = 0.875 * f[b + T_SRTT] + 0.125 * r
        x = f[b + T_SRTT] + 4.0 * f[b + T_RTTVAR]
        f[b + T_RTO] = x if x > f[b + T_MINRTO] else f[b + T_MINRTO]
        if i[c + K_INREC] == 1:
            if a > i[c + K_RECOVER]:  # a full ACK: recovery ends (RFC 6582 (3))
                i[c + K_INREC] = 0
                i[c + K_DUP] = 0
                f[b + T_CWND] = f[b + T_SSTHRESH]
            else:  # a partial ACK: the next hole goes again, the window deflates
                now_n = _transmit(tc, k, a, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri)
                x = f[b + T_CWND] - acked + 1.0
                f[b + T_CWND] = x if x > 1.0 else 1.0
        else:
            i[c + K_DUP] = 0
            _increase(tc, b, c, acked, t)
        if ece == 1 and i[c + K_INREC] == 0 and a > i[c + K_ECNREC]:  # ECN: one reduction per window (RFC 3168 §6.1.2)
            _decrease(tc, b, c)
            f[b + T_CWND] = f[b + T_SSTHRESH]
            i[c + K_ECNREC] = i[c + K_MAX] - 1
        f[b + T_RTO_AT] = INF if i[c + K_UNA] == i[c + K_MAX] else t + f[b + T_RTO]  # (5.2), (5.3)
    elif a == i[c + K_UNA] and i[c + K_MAX] > i[c + K_UNA]:
        i[c + K_DUP] += 1
        if i[c + K_INREC] == 1:
            f[b + T_CWND] += 1.0  # each duplicate ACK: a packet has left the network
        elif i[c + K_DUP] == 3 and a > i[c + K_RECOVER]:  # fast retransmit (RFC 6582 (2))
            _decrease(tc, b, c)
            i[c + K_RECOVER] = i[c + K_MAX] - 1
            i[c + K_INREC] = 1
            now_n = _transmit(tc, k, a, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri)
            f[b + T_CWND] = f[b + T_SSTHRESH] + 3.0
            f[b + T_RTO_AT] = t + f[b + T_RTO]
    return _send_more(tc, k, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri)


@jit_inline(python=False)
def _timeout(tc, k, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri):
    """Flow k's retransmission timer expires at t (RFC 6298 (5.4)-(5.6)): back to slow start from the
    oldest packet not acknowledged (go-back-N)."""
    b, c = k * NTF, k * NTI
    f, i = tc.f, tc.i
    _area(tc, b, t)
    if t >= P.warmup:
        i[c + K_TIMEOUTS] += 1
    _decrease(tc, b, c)
    f[b + T_CWND] = 1.0
    i[c + K_INREC] = 0
    i[c + K_DUP] = 0
    i[c + K_RECOVER] = i[c + K_MAX] - 1
    i[c + K_NXT] = i[c + K_UNA]
    x = 2.0 * f[b + T_RTO]
    cap = RTO_BACKOFF_CAP * f[b + T_MINRTO]
    f[b + T_RTO] = x if x < cap else cap
    f[b + T_RTO_AT] = INF
    return _send_more(tc, k, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri)


@jit_inline(python=False)
def phase(J, t, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri, tc):
    """The TCP senders at instant t (the loop's phase 2, after the open-loop arrivals): flows starting
    at t, then the ACKs due at t (in the order sent), then the timers expiring at t (by flow id).
    Returns the new length of ``now_s``."""
    n = tc.order.shape[0]
    opened = False
    if tc.gf[GF_NEXT_OPEN] == t:
        while tc.g[G_OPEN] < n and tc.f[tc.order[tc.g[G_OPEN]] * NTF + T_START] == t:
            k = tc.order[tc.g[G_OPEN]]
            tc.g[G_OPEN] += 1
            tc.f[k * NTF + T_TAREA] = t if t > P.warmup else P.warmup
            now_n = _send_more(tc, k, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri)
            _log(tc, k, t)
            opened = True
        tc.gf[GF_NEXT_OPEN] = tc.f[tc.order[tc.g[G_OPEN]] * NTF + T_START] if tc.g[G_OPEN] < n else INF
    stale = False  # timers expired: the earliest deadline is found again below
    while tc.gf[GF_NEXT_ACK] == t:
        x = _ack_pop(tc)
        k, a, ts = tc.ah_i[AI * x + AH_K], tc.ah_i[AI * x + AH_A], tc.ah_f[AF * x + AH_TS]
        old = tc.f[k * NTF + T_RTO_AT]
        now_n = _ack(tc, k, t, a >> 1, ts, a & 1, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri)
        _log(tc, k, t)
        new = tc.f[k * NTF + T_RTO_AT]
        if new < tc.gf[GF_NEXT_RTO]:
            tc.gf[GF_NEXT_RTO] = new
        elif old == tc.gf[GF_NEXT_RTO] and new != old:
            tc.g[G_RTO_LOW] = 1  # the earliest deadline may have moved later: a lower bound now
    if tc.gf[GF_NEXT_RTO] == t and not stale:
        for s in range(tc.tix.shape[0]):  # by flow id
            k = tc.tix[s]
            if k >= 0 and tc.f[k * NTF + T_RTO_AT] == t:
                now_n = _timeout(tc, k, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri)
                _log(tc, k, t)
        stale = True
    if stale or opened:
        if _earliest_deadline(tc) == t:  # (a timer due now too, behind the bound kept)
            for s in range(tc.tix.shape[0]):
                k = tc.tix[s]
                if k >= 0 and tc.f[k * NTF + T_RTO_AT] == t:
                    now_n = _timeout(tc, k, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri)
                    _log(tc, k, t)
            _earliest_deadline(tc)
    return now_n


def finish_area(tc: Tcp, t_end: float) -> None:
    """Each flow's cwnd integral up to the run's end (plain Python, after the loop)."""
    for k in range(len(tc.order) if tc.tix.max(initial=-1) >= 0 else 0):
        b = k * NTF
        if t_end > tc.f[b + T_TAREA]:
            tc.f[b + T_AREA] += tc.f[b + T_CWND] * (t_end - tc.f[b + T_TAREA])
            tc.f[b + T_TAREA] = t_end
