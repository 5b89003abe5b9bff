"""The relative fairness bound reached by a run (RFB), measured exactly from a log of services.

The definition of [DRFQ] (Ghodsi et al., SIGCOMM 2012, §4 "fairness") and of MR3: for two
flows ``i, j`` of weights ``w`` both backlogged on an interval ``[u, v]``,
``|S_i(u, v)/w_i - S_j(u, v)/w_j|``, ``S`` the service a flow receives at its *dominant
resource* (processing time there; piecewise linear, slope 1 while its packet is in service
there).  A run reports the largest value over every pair of static flows and every interval
on which both are backlogged, after warm-up: docs/relative-fairness.md, and
:func:`analysis.theory_bounds.relative_fairness`'s measure ``"dominant"`` (its plain-Python
oracle for always-backlogged flows).

Exact, O(n) per service.  With ``X_i(t) = S_i(0, t) / w_i`` and ``D_ij = X_i - X_j``, the
largest value on a joint backlog period ``P`` is ``max_P D_ij - min_P D_ij``.  ``D_ij`` is
linear between the *knots* of flow i and flow j (the starts and ends of their services at
their dominant resources), so its extremes lie at those knots or at the period's ends; more
precisely ``X_i - X_j`` can peak only where its slope drops, at an end of i's service or a start
of j's.  One ``n x n`` matrix holds ``M[i, j] = max_P (X_i - X_j)`` (so ``min_P D_ij = -M[j, i]``
and the period's value is ``M[i, j] + M[j, i]``): a start of flow i updates ``M[j, i]`` and an
end ``M[i, j]`` for every j, ``X_j(t)`` interpolated in O(1): n branch-free updates per knot,
two knots per service.  A period starts when the second of the two flows becomes backlogged (or
at warm-up): ``M[i, j] = D_ij``, ``M[j, i] = -D_ij``; its value is compared with the best when
it ends (a flow's backlog ends, or the run does: a knot of every flow).

Backlogged: a windowed static flow from its start to its last departure (its window keeps
packets in the router all along); an open-loop static flow while it has packets in the router
(from an arrival that finds none to the departure that leaves none).  Class flows are not
covered (the run reports why); their services still shape the static flows'.

The dominant resource of a flow is fixed (as in the oracle): the resource of its largest
packet's largest cost (the first on ties, :func:`dominant_resources`).  The value is reported in
units of ``L = max_i`` (largest packet's dominant cost ``/ w_i``).

The event loop (router/loop.py) writes one record per service start (start, end, row) into a
fixed buffer of :data:`BUF` records, counting it only when the resource is the flow's dominant
one (``FlowTable.rfb_dom[row] == j + 1``; 0 for class rows): branch-free, no per-flow work.
Backlog starts and ends (flow starts, completions, open-loop transitions) add records of their
own kinds.  When the buffer holds more than :data:`BUF` records at the top of an instant the loop
calls :func:`flush` (compiled out of line), which replays them in time order, merging in the
ends of the services in progress (at most one per flow).  Only runs with ``2 <=`` static flows
``<=`` :data:`RFB_MAX` log anything; :class:`RfbPy` is the plain-Python twin the SimPy reference
feeds (the same float operations in the same order: equal results, bit for bit).
"""

from __future__ import annotations

import math

import numpy as np

from mrfq.fq._jit import jit_inline, jit_no_refcount, no_wraparound

# indices here are never negative (see fq._jit.no_wraparound)
NO_WRAPAROUND = no_wraparound(__name__)

#: the largest number of static flows whose RFB is computed (every pair: two n x n matrices, n
#: updates per knot); above it the run reports it as not computed
RFB_MAX = 64
#: above RFB_MAX static flows, the bound over this many of them (:func:`covered`)
RFB_SUBSET = 16
#: the flow table's column for the bound (``FlowTable.rfb_dom``): ``k << RFB_SHIFT | (1 + dominant
#: resource)`` for the k-th covered flow, 0 for every other flow
RFB_SHIFT = 16
RFB_MASK = (1 << RFB_SHIFT) - 1
#: records the loop's buffer holds before it is flushed (plus room for one instant's records)
BUF = 4096
#: record kinds (the low two bits of a record's code, row << 2 | kind)
K_SERVICE, K_BACKLOG, K_IDLE = 0, 1, 2
#: words per record of the log: start, end, code (row << 2 | kind, as a float)
REC_W = 3
#: a resource's pending end when none is pending (finite: ``BIG * 0 == 0``)
BIG = 1e300

# the integer state: scalars, then the row whose service at resource r is pending, its end knot not
# yet taken (J words; n: none), then each flow's dominant resource (n words)
(G_N, G_J, G_WARM, G_BI, G_BJ, G_NS, G_SCAP) = range(7)
N_G = 7
# the float state: scalars; then per flow, n + 1 words each (the last a dummy row for "none"):
# A, SL and E of X_i(t) = A_i + min(t, E_i) SL_i (SL_i = 1 / w_i from the start of its latest
# service at its dominant resource, E_i that service's end: a service's end needs no update of
# the state, and X is right at every t from that start until its next one), backlogged (1.0 /
# 0.0), 1 / w; the pending end at each resource (J words, BIG: none); then P ((n + 1) x n, the
# dummy row last) and Q (n x n): P[i, j] the largest X_i - X_j at an end of i's services, Q[i, j]
# the largest X_j - X_i at a start of i's, in the pair's period
(H_BEST, H_WARMUP, H_L, H_NEXTB, H_DB) = range(5)
N_H = 5
(V_A, V_SL, V_E, V_BL, V_IW) = range(5)
N_V = 5


def slack(J: int, n_static: int) -> int:
    """Records one instant may add: a service start per resource, and per static flow the starts and
    ends of its backlog (an open-loop flow's can end at a departure and at a drop, and start again
    at an arrival, in one instant)."""
    return J + 4 * n_static + 1


def _offsets(n: int, J: int):
    """Offsets in the float state: (pending ends, P, Q)."""
    pe = N_H + N_V * (n + 1)
    return pe, pe + J, pe + J + (n + 1) * (n + 1)


def allocate(n: int, J: int, weights, warmup: float, dominant=None, window: float = 0.0,
             windows: int = 0):
    """The log buffer (:data:`REC_W` words per record) and the flush state (floats, ints, the share
    series) for n flows whose dominant resources are ``dominant``; with ``window > 0``, room for
    ``windows + 1`` samples of every flow's X at the multiples of ``window``."""
    cap = BUF + slack(J, n)
    m = n + 1
    pe, p0, q0 = _offsets(n, J)
    f = np.zeros(q0 + m * m)
    f[N_H + V_IW * m: N_H + V_IW * m + n] = 1.0 / np.asarray(weights, dtype=np.float64)
    f[pe: pe + J] = BIG
    f[H_WARMUP] = warmup
    f[H_BEST] = -np.inf  # any period that ends gives a value (0 for two flows served in lockstep)
    f[H_NEXTB] = 0.0 if window > 0.0 else np.inf
    f[H_DB] = window
    g = np.zeros(N_G + J + n, np.int64)
    g[G_N] = n
    g[G_J] = J
    g[G_BI] = g[G_BJ] = -1
    g[N_G: N_G + J] = n
    g[N_G + J:] = np.zeros(n, np.int64) if dominant is None else np.asarray(dominant, dtype=np.int64)
    g[G_SCAP] = windows + 1 if window > 0.0 else 0
    ser = np.zeros(max(g[G_SCAP], 1) * n)
    return np.zeros(REC_W * cap), f, g, ser


@jit_inline
def _x(f, m, j, t):
    """X_j(t) (branch-free: the smaller of t and E_j by a select)."""
    e = f[N_H + V_E * m + j]
    return f[N_H + j] + (t if t < e else e) * f[N_H + m + j]


@jit_inline
def _row_knot(f, n, r, xi, t, ahead):
    """The row at ``r``: the largest of itself and ``xi - X_j(t)`` (``ahead``) or ``X_j(t) - xi``
    for every j (branch-free)."""
    m = n + 1
    for j in range(n):
        x = _x(f, m, j, t)
        d = xi - x if ahead else x - xi
        a = f[r + j]
        f[r + j] = d if d > a else a


@jit_inline
def _end_knots(f, g, n, J, t):
    """The end knots of the pending services that ended by t: at the end of j's service, X_j - X_i
    may peak only where i is in service (at another resource; elsewhere X_i is constant and the
    peak is a plateau that lasts until i's next start, a knot of its own).  Each resource's
    computed and kept only if its end is at or before t: branch-free; then those ends leave."""
    m = n + 1
    PE = N_H + N_V * m
    P = PE + J
    for q in range(J):
        e = f[PE + q]
        j = g[N_G + q]
        ok = np.float64(e <= t)  # 1.0 or 0.0, no branch: the end is or is not reached yet
        xj = f[N_H + j] + e * f[N_H + m + j]
        for q2 in range(J):
            if q2 == q:
                continue
            i = g[N_G + q2]
            d = (xj - _x(f, m, i, e)) + (ok - 1.0) * BIG  # far below every value when not ended
            a = f[P + j * m + i]
            f[P + j * m + i] = d if d > a else a
    for q in range(J):
        e = f[PE + q]
        ok = np.int64(e <= t)
        f[PE + q] = e + ok * (BIG - e)
        g[N_G + q] += ok * (n - g[N_G + q])


@jit_inline
def _open(f, n, J, i, t):
    """Flow i's joint periods with every flow start at t (those not backlogged start again when they are)."""
    m = n + 1
    P = N_H + N_V * m + J
    Q = P + m * m
    xi = _x(f, m, i, t)
    for j in range(n):
        d = xi - _x(f, m, j, t)
        f[P + i * m + j] = d
        f[Q + j * m + i] = d
        f[P + j * m + i] = -d
        f[Q + i * m + j] = -d


@jit_inline
def _close(f, g, n, J, i, t):
    """Flow i's joint periods with the backlogged flows end at t (a knot of both kinds for i): their
    values against the best."""
    m = n + 1
    P = N_H + N_V * m + J
    Q = P + m * m
    xi = _x(f, m, i, t)
    _row_knot(f, n, P + i * m, xi, t, True)
    _row_knot(f, n, Q + i * m, xi, t, False)
    best = f[H_BEST]
    for j in range(n):
        if f[N_H + V_BL * m + j] == 1.0 and j != i:
            a = f[P + i * m + j]
            b = f[Q + j * m + i]
            c = f[P + j * m + i]
            d = f[Q + i * m + j]
            r = (a if a > b else b) + (c if c > d else d)
            if r > best:
                best = r
                g[G_BI] = i if i < j else j
                g[G_BJ] = j if i < j else i
    f[H_BEST] = best


@jit_inline
def _samples(f, g, ser, n, t):
    """X of every flow at each multiple of the window up to t (the share series)."""
    m = n + 1
    while f[H_NEXTB] <= t:
        b = f[H_NEXTB]
        k = g[G_NS]
        if k < g[G_SCAP]:
            for j in range(n):
                ser[k * n + j] = _x(f, m, j, b)
        g[G_NS] = k + 1
        f[H_NEXTB] = (k + 1) * f[H_DB] if k + 1 < g[G_SCAP] else np.inf


@jit_inline
def _warm(f, g, n, J, t):
    """At warm-up (the first record after it, or the run's end): every joint period starts."""
    if g[G_WARM] == 1 or t <= f[H_WARMUP]:
        return
    w = f[H_WARMUP]
    _end_knots(f, g, n, J, w)
    g[G_WARM] = 1
    for i in range(n):
        _open(f, n, J, i, w)


@jit_no_refcount
def flush(log, cnt, f, g, ser):
    """Replay ``cnt`` records of the log (:data:`REC_W` words each: start, end, row << 2 | kind) into
    the state ``f``, ``g`` (:func:`allocate`); returns 0, the log's new length.  Cost per service:
    n branch-free updates of one row of Q at its start and J n masked ones of P (the end knots of
    the services that ended since the last record; a start can only be a peak of X_j - X_i, an end
    of X_i - X_j: where the slope of the difference drops); the values are compared only when
    periods end.  Knots before warm-up land in P and Q too; warm-up overwrites them."""
    n = g[G_N]
    J = g[G_J]
    m = n + 1
    PE = N_H + N_V * m
    Q = PE + J + m * m
    for k in range(cnt):
        t = log[REC_W * k]
        code = np.int64(log[REC_W * k + 2])
        i = code >> 2
        kind = code & 3
        if t >= f[H_NEXTB]:
            _samples(f, g, ser, n, t)
        if g[G_WARM] == 0:
            _warm(f, g, n, J, t)
        _end_knots(f, g, n, J, t)
        if kind == K_SERVICE:
            xi = _x(f, m, i, t)
            _row_knot(f, n, Q + i * m, xi, t, False)
            e = log[REC_W * k + 1]
            iw = f[N_H + V_IW * m + i]
            f[N_H + i] = xi - t * iw
            f[N_H + m + i] = iw
            f[N_H + V_E * m + i] = e
            r = g[N_G + J + i]
            f[PE + r] = e
            g[N_G + r] = i
            c = (e - t) * iw
            if c > f[H_L]:
                f[H_L] = c
        elif kind == K_BACKLOG:
            f[N_H + V_BL * m + i] = 1.0
            if g[G_WARM] == 1:
                _open(f, n, J, i, t)
        else:
            if g[G_WARM] == 1:
                _close(f, g, n, J, i, t)
            f[N_H + V_BL * m + i] = 0.0
    return 0


@jit_no_refcount
def finish(f, g, ser, t):
    """The run's end at t: the share series up to t, and every joint period ends."""
    n = g[G_N]
    J = g[G_J]
    _samples(f, g, ser, n, t)
    _warm(f, g, n, J, t)
    _end_knots(f, g, n, J, t)
    if g[G_WARM] == 1:
        for i in range(n):
            if f[N_H + V_BL * (n + 1) + i] == 1.0:
                _close(f, g, n, J, i, t)


class RfbPy:
    """The plain-Python twin of :func:`flush` and :func:`finish` (the SimPy reference's):
    the same state arrays, the same float operations in the same order."""

    def __init__(self, n: int, J: int, weights, warmup: float, dominant=None, window: float = 0.0,
                 windows: int = 0):
        _, self.f, self.g, self.ser = allocate(n, J, weights, warmup, dominant, window, windows)
        self.n, self.J, self.m = n, J, n + 1
        self.PE, self.P, self.Q = _offsets(n, J)

    def _x(self, j, t):
        f, m = self.f, self.m
        e = float(f[N_H + V_E * m + j])
        return float(f[N_H + j]) + (t if t < e else e) * float(f[N_H + m + j])

    def _row_knot(self, r, xi, t, ahead):
        f = self.f
        for j in range(self.n):
            x = self._x(j, t)
            d = xi - x if ahead else x - xi
            a = float(f[r + j])
            f[r + j] = d if d > a else a

    def _end_knots(self, t):
        f, g, m = self.f, self.g, self.m
        for q in range(self.J):
            e = float(f[self.PE + q])
            j = int(g[N_G + q])
            ok = float(e <= t)
            xj = float(f[N_H + j]) + e * float(f[N_H + m + j])
            for q2 in range(self.J):
                if q2 == q:
                    continue
                i = int(g[N_G + q2])
                d = (xj - self._x(i, e)) + (ok - 1.0) * BIG
                a = float(f[self.P + j * m + i])
                f[self.P + j * m + i] = d if d > a else a
        for q in range(self.J):
            e = float(f[self.PE + q])
            ok = int(e <= t)
            f[self.PE + q] = e + ok * (BIG - e)
            g[N_G + q] += ok * (self.n - int(g[N_G + q]))

    def _open(self, i, t):
        f, n, m = self.f, self.n, self.m
        xi = self._x(i, t)
        for j in range(n):
            d = xi - self._x(j, t)
            f[self.P + i * m + j] = d
            f[self.Q + j * m + i] = d
            f[self.P + j * m + i] = -d
            f[self.Q + i * m + j] = -d

    def _close(self, i, t):
        f, g, n, m, P, Q = self.f, self.g, self.n, self.m, self.P, self.Q
        xi = self._x(i, t)
        self._row_knot(P + i * m, xi, t, True)
        self._row_knot(Q + i * m, xi, t, False)
        best = float(f[H_BEST])
        for j in range(n):
            if f[N_H + V_BL * m + j] == 1.0 and j != i:
                r = max(float(f[P + i * m + j]), float(f[Q + j * m + i])) + \
                    max(float(f[P + j * m + i]), float(f[Q + i * m + j]))
                if r > best:
                    best = r
                    g[G_BI], g[G_BJ] = min(i, j), max(i, j)
        f[H_BEST] = best

    def _samples(self, t):
        f, g, n = self.f, self.g, self.n
        while f[H_NEXTB] <= t:
            b = float(f[H_NEXTB])
            k = int(g[G_NS])
            if k < g[G_SCAP]:
                for j in range(n):
                    self.ser[k * n + j] = self._x(j, b)
            g[G_NS] = k + 1
            f[H_NEXTB] = (k + 1) * float(f[H_DB]) if k + 1 < g[G_SCAP] else math.inf

    def _warm(self, t):
        f, g = self.f, self.g
        if g[G_WARM] == 1 or t <= f[H_WARMUP]:
            return
        w = float(f[H_WARMUP])
        self._end_knots(w)
        g[G_WARM] = 1
        for i in range(self.n):
            self._open(i, w)

    def record(self, t: float, end: float, row: int, kind: int) -> None:
        """One record of the loop's log, replayed at once."""
        f, g, m, J = self.f, self.g, self.m, self.J
        if t >= f[H_NEXTB]:
            self._samples(t)
        if g[G_WARM] == 0:
            self._warm(t)
        self._end_knots(t)
        if kind == K_SERVICE:
            xi = self._x(row, t)
            self._row_knot(self.Q + row * m, xi, t, False)
            iw = float(f[N_H + V_IW * m + row])
            f[N_H + row] = xi - t * iw
            f[N_H + m + row] = iw
            f[N_H + V_E * m + row] = end
            r = int(g[N_G + J + row])
            f[self.PE + r] = end
            g[N_G + r] = row
            c = (end - t) * iw
            if c > f[H_L]:
                f[H_L] = c
        elif kind == K_BACKLOG:
            f[N_H + V_BL * m + row] = 1.0
            if g[G_WARM] == 1:
                self._open(row, t)
        else:
            if g[G_WARM] == 1:
                self._close(row, t)
            f[N_H + V_BL * m + row] = 0.0

    def finish(self, t: float) -> None:
        f = self.f
        self._samples(t)
        self._warm(t)
        self._end_knots(t)
        if self.g[G_WARM] == 1:
            for i in range(self.n):
                if f[N_H + V_BL * self.m + i] == 1.0:
                    self._close(i, t)


def covered(static_spec: np.ndarray) -> np.ndarray:
    """The static flows whose pairs the bound covers, by flow id: every one up to :data:`RFB_MAX`;
    above, :data:`RFB_SUBSET` of them taken in turn from each ``[[flow]]`` table (the first flow of
    every table, then the second, ...), so that every table is represented when there are at most
    :data:`RFB_SUBSET` tables.  ``static_spec``: each static flow's table."""
    n = len(static_spec)
    if n <= RFB_MAX:
        return np.arange(n, dtype=np.int64)
    order = np.argsort(static_spec, kind="stable")          # ids grouped by table, in id order
    tables, first = np.unique(static_spec[order], return_index=True)
    rank = np.arange(n) - np.repeat(first, np.diff(np.append(first, n)))  # position inside its table
    pick = order[np.lexsort((static_spec[order], rank))][:RFB_SUBSET]     # by (rank, table)
    return np.sort(pick).astype(np.int64)


def dominant_resources(cost: np.ndarray, per_byte: np.ndarray, max_size: np.ndarray) -> np.ndarray:
    """Each flow's dominant resource: where its largest packet (``max_size`` bytes) costs most
    (the first on ties); ``cost``, ``per_byte`` ``[flows, J]``."""
    return np.argmax(cost + per_byte * max_size[:, None], axis=1)


def dominant(specs, rows: np.ndarray) -> tuple[np.ndarray, float, bool]:
    """The dominant resource of each static flow (its row of ``specs``, a router.state.Specs, in
    ``rows``), the largest dominant cost over weight of their largest known packets, and whether
    every flow's packets are known ahead: the resource where its largest packet costs most; with
    sizes from a packet trace (not known ahead) the resource of the largest per-byte cost, and its
    packets' costs seen as they are served (:func:`result`'s last value)."""
    n_sizes = np.asarray(specs.n_sizes)[rows]
    sizes = np.asarray(specs.sizes)[rows]
    z = np.arange(sizes.shape[1])[None, :] < n_sizes[:, None]
    max_size = np.where(z, sizes, 0.0).max(axis=1)
    cost = np.asarray(specs.cost)[rows] + np.asarray(specs.per_byte)[rows] * max_size[:, None]
    dom = np.where(n_sizes > 0, dominant_resources(np.asarray(specs.cost)[rows],
                                                    np.asarray(specs.per_byte)[rows], max_size),
                   np.argmax(np.asarray(specs.per_byte)[rows], axis=1))
    known = n_sizes > 0
    lmax = float((cost.max(axis=1) / np.asarray(specs.weight)[rows])[known].max()) if known.any() else 0.0
    return dom.astype(np.int64), lmax, bool(known.all())


#: the most samples of the share series (windows x static flows) a run may ask for
SERIES_MAX = 10_000_000


def windows(T: float, window: float) -> int:
    """The windows of width ``window`` that cover ``[0, T]`` (0 without a window)."""
    return int(math.ceil(T / window)) if window > 0.0 else 0


def samples(g: np.ndarray, ser: np.ndarray) -> np.ndarray:
    """The share series' samples taken, ``[samples, n]``: every flow's X at 0, window, 2 window, ..."""
    n = int(g[G_N])
    k = min(int(g[G_NS]), int(g[G_SCAP]))
    return ser[:k * n].reshape(k, n).copy()


def result(f: np.ndarray, g: np.ndarray) -> tuple[float, int, int, float]:
    """``(largest value reached (time units over weight; at least 0, which rounding could take just
    below), pair i, pair j, largest service logged at a flow's dominant resource over its weight)``;
    the pair -1, -1 with no joint period after warm-up."""
    return max(float(f[H_BEST]), 0.0), int(g[G_BI]), int(g[G_BJ]), float(f[H_L])
