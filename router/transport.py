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
more past the next one expected); the ACKs in flight in a binary heap keyed by (due time, order
sent).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mrfq.fq._jit import jit_inline, jit_internal, no_wraparound
from mrfq.router.buffers import ACCEPT, ACCEPT_MARKED
from mrfq.router.buffers import arrive as buffer_arrive
from mrfq.router.packets import M32, hash32, packet_size
from mrfq.router.rfb import K_BACKLOG, RFB_SHIFT
from mrfq.router.state import (
    ADM_BITS, ADM_MASK, B_LO, C_RFB_N, C_VICT_N, I_INFLIGHT, I_NEXTSEQ, I_PENDING, N_ICOLS, QS_COUNT, QS_HEAD,
    QS_WIDTH, RI_BUSY_SEQ, RI_BUSY_SLOT,
)

INF = np.inf
NO_WRAPAROUND = no_wraparound(__name__)

#: CUBIC's multiplicative decrease (RFC 9438 §4.6) and its Reno-friendly additive increase (§4.3)
CUBIC_BETA = 0.7
CUBIC_ALPHA = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)
#: the retransmission timeout backs off to at most this many times its floor (RFC 6298 (2.5))
RTO_BACKOFF_CAP = 64.0

# per-flow floats Tcp.f[k * NTF + T_*]
(T_CWND, T_SSTHRESH, T_SRTT, T_RTTVAR, T_RTO, T_RTO_AT, T_WMAX, T_EPOCH, T_K, T_ORIGIN, T_WEST, T_AREA, T_TAREA,
 T_RTT, T_MINRTO, T_C, T_LOSS, T_START) = range(18)
NTF = 18
# per-flow ints Tcp.i[k * NTI + K_*]
(K_UNA, K_NXT, K_MAX, K_DUP, K_INREC, K_RECOVER, K_ECNREC, K_SAMPLED, K_RCVNXT, K_SENDS, K_RETX, K_TIMEOUTS,
 K_GOODPUT, K_LOST, K_CUBIC, K_MAXWIN, K_ROW, K_ECN) = range(18)
NTI = 18
# globals Tcp.g: ACKs in the heap, ACKs sent so far, the next flow to open (index into Tcp.order), the
# receiver ring's size, a flow whose packets would overrun its packet ring (row + 1; 0: none)
(G_HN, G_ACKS, G_OPEN, G_R, G_OVERFLOW) = range(5)
# Tcp.gf: the earliest timer deadline, the next flow start
(GF_NEXT_RTO, GF_NEXT_OPEN) = range(2)


class Tcp(NamedTuple):
    """The TCP flows' state (one row of unread arrays when the scenario has none)."""

    f: np.ndarray       # [n * NTF] float64
    i: np.ndarray       # [n * NTI] int64
    held: np.ndarray    # [n * R] int8: the receiver holds packet q (beyond the next expected) at q & (R - 1)
    tix: np.ndarray     # [n_static] int64: the TCP index of each static row, -1 for other flows
    order: np.ndarray   # [n] TCP indices by (start, flow id)
    ah_t: np.ndarray    # the ACK heap: due time
    ah_o: np.ndarray    # ... order sent
    ah_k: np.ndarray    # ... TCP index
    ah_a: np.ndarray    # ... the next packet the receiver expects
    ah_ts: np.ndarray   # ... the echoed send time
    g: np.ndarray       # int64 globals (G_*)
    gf: np.ndarray      # float64 globals (GF_*)


def ring_for(max_window: int) -> int:
    r = 1
    while r < max_window:
        r *= 2
    return r


def allocate(flows, static_rows, starts, n_static: int, cap: int = 0) -> Tcp:
    """The state of TCP flows ``flows`` (flows.scenario.Transport and loss of each) in static rows
    ``static_rows`` starting at ``starts``; the ACK heap holds ``cap`` (default: twice every flow's
    receiver window)."""
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
        i[c + K_RECOVER] = -1
        i[c + K_ECNREC] = -1
        i[c + K_CUBIC] = 1 if tp.cc == "cubic" else 0
        i[c + K_MAXWIN] = tp.max_window
        i[c + K_ROW] = s
        i[c + K_ECN] = 1 if tp.ecn else 0
        tix[s] = k
    order = np.array(sorted(range(n), key=lambda k: (starts[k], static_rows[k])), np.int64) if n else np.zeros(1, np.int64)
    cap = max(cap, 2 * sum(tp.max_window for tp, _ in flows) + 64)
    g = np.zeros(5, np.int64)
    g[G_R] = R
    gf = np.full(2, INF)
    if n:
        gf[GF_NEXT_OPEN] = starts[order[0]]
    return Tcp(f=f, i=i, held=np.zeros(max(n, 1) * R, np.int8), tix=tix, order=order,
               ah_t=np.zeros(cap), ah_o=np.zeros(cap, np.int64), ah_k=np.zeros(cap, np.int64),
               ah_a=np.zeros(cap, np.int64), ah_ts=np.zeros(cap), g=g, gf=gf)


def grow_acks(tc: Tcp) -> Tcp:
    """The ACK heap, twice as large (its entries stay where they are)."""
    def more(a):
        out = np.zeros(2 * a.shape[0], a.dtype)
        out[:a.shape[0]] = a
        return out
    return tc._replace(ah_t=more(tc.ah_t), ah_o=more(tc.ah_o), ah_k=more(tc.ah_k), ah_a=more(tc.ah_a),
                       ah_ts=more(tc.ah_ts))


# ---------------------------------------------------------------------------------------------------
# the ACK heap
@jit_inline
def _before(tc, x, y):
    return tc.ah_t[x] < tc.ah_t[y] or (tc.ah_t[x] == tc.ah_t[y] and tc.ah_o[x] < tc.ah_o[y])


@jit_inline
def _swap(tc, x, y):
    tc.ah_t[x], tc.ah_t[y] = tc.ah_t[y], tc.ah_t[x]
    tc.ah_o[x], tc.ah_o[y] = tc.ah_o[y], tc.ah_o[x]
    tc.ah_k[x], tc.ah_k[y] = tc.ah_k[y], tc.ah_k[x]
    tc.ah_a[x], tc.ah_a[y] = tc.ah_a[y], tc.ah_a[x]
    tc.ah_ts[x], tc.ah_ts[y] = tc.ah_ts[y], tc.ah_ts[x]


@jit_internal
def _ack_push(tc, due, k, a, ts):
    n = tc.g[G_HN]
    tc.ah_t[n] = due
    tc.ah_o[n] = tc.g[G_ACKS]
    tc.ah_k[n] = k
    tc.ah_a[n] = a
    tc.ah_ts[n] = ts
    tc.g[G_ACKS] += 1
    tc.g[G_HN] = n + 1
    x = n
    while x > 0:
        p = (x - 1) >> 1
        if not _before(tc, x, p):
            break
        _swap(tc, x, p)
        x = p


@jit_internal
def _ack_pop(tc):
    n = tc.g[G_HN] - 1
    tc.g[G_HN] = n
    if n == 0:
        return
    _swap(tc, 0, n)
    x = 0
    while True:
        c = 2 * x + 1
        if c >= n:
            break
        if c + 1 < n and _before(tc, c + 1, c):
            c += 1
        if not _before(tc, c, x):
            break
        _swap(tc, x, c)
        x = c


@jit_inline
def next_event(tc):
    """The next instant a TCP sender acts: a flow start, an ACK's arrival, a timer's expiry."""
    t = tc.gf[GF_NEXT_RTO]
    if tc.gf[GF_NEXT_OPEN] < t:
        t = tc.gf[GF_NEXT_OPEN]
    if tc.g[G_HN] > 0 and tc.ah_t[0] < t:
        t = tc.ah_t[0]
    return t


@jit_inline
def loss_uniform(key, uid, n):
    """Uniform in [0, 1) deciding whether send n of flow uid is lost before the router (``loss``):
    the counter-based hash with a salt of its own (router.reference_tcp.loss_uniform)."""
    h = hash32(hash32(hash32((key + 0x6A09E667) ^ (uid & M32)) + (n & M32)) + (n >> 32))
    return h / 4294967296.0


# ---------------------------------------------------------------------------------------------------
# the receiver (at a departure from the router)
@jit_internal
def receive(tc, s, word, t, ts, warmup):
    """Packet q of the TCP flow in static row s leaves the router at t (sent at ts; ``word = q << 1 | ce``,
    ce: an AQM marked it): the receiver's cumulative ACK, echoing the mark, due at the sender the flow's
    rtt later, joins the heap (``a << 1 | ce``)."""
    q = word >> 1
    k = tc.tix[s]
    c = k * NTI
    R = tc.g[G_R]
    base = k * R
    rn = tc.i[c + K_RCVNXT]
    if q >= rn and tc.held[base + (q & (R - 1))] == 0:
        if t > warmup:
            tc.i[c + K_GOODPUT] += 1
        tc.held[base + (q & (R - 1))] = 1
        while tc.held[base + (rn & (R - 1))] == 1:
            tc.held[base + (rn & (R - 1))] = 0
            rn += 1
        tc.i[c + K_RCVNXT] = rn
    _ack_push(tc, t + tc.f[k * NTF + T_RTT], k, (rn << 1) | (word & 1), ts)


# ---------------------------------------------------------------------------------------------------
# the sender
@jit_inline
def _area(tc, b, t):
    if t > tc.f[b + T_TAREA]:
        tc.f[b + T_AREA] += tc.f[b + T_CWND] * (t - tc.f[b + T_TAREA])
        tc.f[b + T_TAREA] = t


@jit_internal
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
    # the ring holds the flow's packets in the router: seqs lo .. seq distinct modulo its size (lo, the
    # oldest in the router, found only near the ring's end; router.flowtable.ring_room)
    NBF = bf.fl.shape[0] // max(P.n_static, 1)
    if seq + 1 - bf.fl[s * NBF + B_LO] > ft.ring[2 * s + 1] + 1:
        lo = slot_i[s * N_ICOLS + I_NEXTSEQ]
        for j in range(J):
            if ft.qs[(s * J + j) * QS_WIDTH + QS_COUNT] > 0 and ft.qs[(s * J + j) * QS_WIDTH + QS_HEAD] < lo:
                lo = ft.qs[(s * J + j) * QS_WIDTH + QS_HEAD]
            if ri[RI_BUSY_SLOT * J + j] == s and ri[RI_BUSY_SEQ * J + j] < lo:
                lo = ri[RI_BUSY_SEQ * J + j]
        bf.fl[s * NBF + B_LO] = lo
        if seq + 1 - lo > ft.ring[2 * s + 1] + 1:
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


@jit_internal
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


@jit_internal
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


@jit_internal
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


@jit_internal
def phase(J, t, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri, tc):
    """The TCP senders at instant t (the loop's phase 2, after the open-loop arrivals): flows starting
    at t, then the ACKs due at t (in the order sent), then the timers expiring at t (by flow id).
    Returns the new length of ``now_s``."""
    n = tc.order.shape[0]
    while tc.g[G_OPEN] < n and tc.f[tc.order[tc.g[G_OPEN]] * NTF + T_START] == t:
        k = tc.order[tc.g[G_OPEN]]
        tc.g[G_OPEN] += 1
        tc.f[k * NTF + T_TAREA] = t if t > P.warmup else P.warmup
        now_n = _send_more(tc, k, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri)
    tc.gf[GF_NEXT_OPEN] = tc.f[tc.order[tc.g[G_OPEN]] * NTF + T_START] if tc.g[G_OPEN] < n else INF
    while tc.g[G_HN] > 0 and tc.ah_t[0] == t:
        k, a, ts = tc.ah_k[0], tc.ah_a[0], tc.ah_ts[0]
        _ack_pop(tc)
        now_n = _ack(tc, k, t, a >> 1, ts, a & 1, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri)
    if tc.gf[GF_NEXT_RTO] == t:
        for s in range(tc.tix.shape[0]):  # by flow id
            k = tc.tix[s]
            if k >= 0 and tc.f[k * NTF + T_RTO_AT] == t:
                now_n = _timeout(tc, k, t, J, P, sp, tf, ft, now_s, now_n, acc, bf, ci, ri)
    nxt = INF
    for k in range(n):
        if tc.f[k * NTF + T_RTO_AT] < nxt:
            nxt = tc.f[k * NTF + T_RTO_AT]
    tc.gf[GF_NEXT_RTO] = nxt
    return now_n


def finish_area(tc: Tcp, t_end: float) -> None:
    """Each flow's cwnd integral up to the run's end (plain Python, after the loop)."""
    for k in range(len(tc.order) if tc.tix.max(initial=-1) >= 0 else 0):
        b = k * NTF
        if t_end > tc.f[b + T_TAREA]:
            tc.f[b + T_AREA] += tc.f[b + T_CWND] * (t_end - tc.f[b + T_TAREA])
            tc.f[b + T_TAREA] = t_end
