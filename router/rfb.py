"""The relative fairness bound reached by a run (RFB), measured exactly from a log of services.

The definition of [DRFQ] (Ghodsi et al., SIGCOMM 2012, §4 "fairness") and of MR3: for two
flows ``i, j`` of weights ``w`` both backlogged on an interval ``[u, v]``,
``|S_i(u, v)/w_i - S_j(u, v)/w_j|``, ``S`` the service a flow receives at its *dominant
resource* (processing time there; piecewise linear, slope 1 while its packet is in service
there).  A run reports the largest value over every pair of static flows and every interval
on which both are backlogged, after warm-up: SPEC §5b, and
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

from fq._jit import jit, jit_no_refcount

#: the largest number of static flows whose RFB is computed (every pair: an n x n matrix, n - 1
#: pair updates per service); above it the run reports it as not computed
RFB_MAX = 64
#: records the loop's buffer holds before it is flushed (plus room for one instant's records)
BUF = 4096
#: record kinds (the low two bits of a record's code, row << 2 | kind)
K_SERVICE, K_BACKLOG, K_IDLE = 0, 1, 2

# scalars of the integer state, then the rows whose service at their dominant resource is in progress
(G_N, G_WARM, G_BI, G_BJ, G_NA) = range(5)
N_G = 5
# scalars of the float state, then per flow (n words each): X at its last booking, the start of its
# service in progress at its dominant resource, that service's end (inf: none), 1 / w, the slope of X
# (1 / w in service, else 0), backlogged (1.0 / 0.0); then the n x n matrix M
(H_BEST, H_WARMUP, H_L) = range(3)
N_H = 3
(V_X, V_S0, V_END, V_IW, V_SL, V_BL) = range(6)
N_V = 6


def slack(J: int, n_static: int) -> int:
    """Records one instant may add: a service start per resource, a start and an end per static flow."""
    return J + 2 * n_static + 1


def allocate(n: int, J: int, weights, warmup: float):
    """The log buffer (times [2 cap], codes [cap]) and the flush state (floats, ints) for n flows."""
    cap = BUF + slack(J, n)
    f = np.zeros(N_H + N_V * n + n * n)
    f[N_H + V_END * n: N_H + (V_END + 1) * n] = np.inf
    f[N_H + V_IW * n: N_H + (V_IW + 1) * n] = 1.0 / np.asarray(weights, dtype=np.float64)
    f[H_WARMUP] = warmup
    g = np.zeros(N_G + n, np.int64)
    g[G_N] = n
    g[G_BI] = g[G_BJ] = -1
    return np.zeros(2 * cap), np.zeros(cap, np.int64), f, g


@jit(inline="always")
def _xt(f, n, j, t):
    """X_j(t): flow j's service at its dominant resource until t, over its weight."""
    return f[N_H + V_X * n + j] + (t - f[N_H + V_S0 * n + j]) * f[N_H + V_SL * n + j]


@jit(inline="always")
def _at_start(f, n, i, t):
    """Flow i starts a service at t: X_j - X_i may peak there, for every j (branch-free)."""
    M = N_H + N_V * n
    xi = _xt(f, n, i, t)
    for j in range(n):
        d = _xt(f, n, j, t) - xi
        a = f[M + j * n + i]
        f[M + j * n + i] = d if d > a else a


@jit(inline="always")
def _at_end(f, n, i, t):
    """Flow i ends a service at t: X_i - X_j may peak there, for every j (branch-free)."""
    M = N_H + N_V * n
    xi = _xt(f, n, i, t)
    for j in range(n):
        d = xi - _xt(f, n, j, t)
        a = f[M + i * n + j]
        f[M + i * n + j] = d if d > a else a


@jit(inline="always")
def _close(f, g, n, i):
    """Flow i's joint periods with the backlogged flows end: their values against the best."""
    M = N_H + N_V * n
    best = f[H_BEST]
    for j in range(n):
        r = (f[M + i * n + j] + f[M + j * n + i]) * f[N_H + V_BL * n + j]
        if r > best:
            best = r
            g[G_BI] = i if i < j else j
            g[G_BJ] = j if i < j else i
    f[H_BEST] = best


@jit(inline="always")
def _open(f, n, i, t):
    """Flow i's joint periods with every flow start at t (those not backlogged start again when they are)."""
    M = N_H + N_V * n
    xi = _xt(f, n, i, t)
    for j in range(n):
        d = xi - _xt(f, n, j, t)
        f[M + i * n + j] = d
        f[M + j * n + i] = -d


@jit(inline="always")
def _advance(f, g, n, t):
    """Every service in progress that ends at or before t, in time order (ties: smallest row):
    a knot of its flow (after warm-up), then its service is booked."""
    E = N_H + V_END * n
    while g[G_NA] > 0:
        na = g[G_NA]
        e = f[E + g[N_G]]
        q = 0
        for p in range(1, na):
            ep = f[E + g[N_G + p]]
            if ep < e or (ep == e and g[N_G + p] < g[N_G + q]):
                e = ep
                q = p
        if e > t:
            return
        i = g[N_G + q]
        if g[G_WARM] == 1:
            _at_end(f, n, i, e)
        f[N_H + V_X * n + i] = _xt(f, n, i, e)
        f[N_H + V_SL * n + i] = 0.0
        f[E + i] = np.inf
        g[N_G + q] = g[N_G + na - 1]
        g[G_NA] = na - 1


@jit(inline="always")
def _warm(f, g, n, t):
    """At warm-up (the first record after it, or the run's end): every joint period starts."""
    if g[G_WARM] == 1 or t <= f[H_WARMUP]:
        return
    w = f[H_WARMUP]
    _advance(f, g, n, w)
    g[G_WARM] = 1
    for i in range(n):
        _open(f, n, i, w)


@jit_no_refcount
def flush(rt, rc, cnt, f, g):
    """Replay ``cnt`` records of the log (``rt``: start, end per record; ``rc``: row << 2 | kind)
    into the state ``f``, ``g`` (:func:`allocate`); returns 0, the log's new length.  Cost: n
    branch-free updates of M per knot, two knots per service (a start can only be a peak of
    X_j - X_i, an end of X_i - X_j: where the slope of the difference drops); the values are
    compared only when periods end."""
    n = g[G_N]
    for k in range(cnt):
        t = rt[2 * k]
        code = rc[k]
        i = code >> 2
        kind = code & 3
        _warm(f, g, n, t)
        _advance(f, g, n, t)
        if kind == K_SERVICE:
            if g[G_WARM] == 1:
                _at_start(f, n, i, t)
            e = rt[2 * k + 1]
            iw = f[N_H + V_IW * n + i]
            f[N_H + V_S0 * n + i] = t
            f[N_H + V_END * n + i] = e
            f[N_H + V_SL * n + i] = iw
            g[N_G + g[G_NA]] = i
            g[G_NA] += 1
            c = (e - t) * iw
            if c > f[H_L]:
                f[H_L] = c
        elif kind == K_BACKLOG:
            f[N_H + V_BL * n + i] = 1.0
            if g[G_WARM] == 1:
                _open(f, n, i, t)
        else:
            if g[G_WARM] == 1:
                _at_start(f, n, i, t)
                _at_end(f, n, i, t)
                _close(f, g, n, i)
            f[N_H + V_BL * n + i] = 0.0
    return 0


@jit_no_refcount
def finish(f, g, t):
    """The run's end at t: every joint period ends."""
    n = g[G_N]
    _warm(f, g, n, t)
    _advance(f, g, n, t)
    if g[G_WARM] == 1:
        for i in range(n):
            if f[N_H + V_BL * n + i] == 1.0:
                _at_start(f, n, i, t)
                _at_end(f, n, i, t)
        for i in range(n):
            if f[N_H + V_BL * n + i] == 1.0:
                _close(f, g, n, i)


class RfbPy:
    """The plain-Python twin of :func:`flush` and :func:`finish` (the SimPy reference's):
    the same state arrays, the same float operations in the same order."""

    def __init__(self, n: int, J: int, weights, warmup: float):
        _, _, self.f, self.g = allocate(n, J, weights, warmup)
        self.n = n

    def _xt(self, j, t):
        f, n = self.f, self.n
        return float(f[N_H + V_X * n + j]) + (t - float(f[N_H + V_S0 * n + j])) * float(f[N_H + V_SL * n + j])

    def _at_start(self, i, t):
        f, n = self.f, self.n
        M = N_H + N_V * n
        xi = self._xt(i, t)
        for j in range(n):
            d = self._xt(j, t) - xi
            a = float(f[M + j * n + i])
            f[M + j * n + i] = d if d > a else a

    def _at_end(self, i, t):
        f, n = self.f, self.n
        M = N_H + N_V * n
        xi = self._xt(i, t)
        for j in range(n):
            d = xi - self._xt(j, t)
            a = float(f[M + i * n + j])
            f[M + i * n + j] = d if d > a else a

    def _close(self, i):
        f, g, n = self.f, self.g, self.n
        M = N_H + N_V * n
        best = float(f[H_BEST])
        for j in range(n):
            r = (float(f[M + i * n + j]) + float(f[M + j * n + i])) * float(f[N_H + V_BL * n + j])
            if r > best:
                best = r
                g[G_BI], g[G_BJ] = min(i, j), max(i, j)
        f[H_BEST] = best

    def _open(self, i, t):
        f, n = self.f, self.n
        M = N_H + N_V * n
        xi = self._xt(i, t)
        for j in range(n):
            d = xi - self._xt(j, t)
            f[M + i * n + j] = d
            f[M + j * n + i] = -d

    def _advance(self, t):
        f, g, n = self.f, self.g, self.n
        E = N_H + V_END * n
        while g[G_NA] > 0:
            na = int(g[G_NA])
            rows = [int(r) for r in g[N_G: N_G + na]]
            q = min(range(na), key=lambda p: (float(f[E + rows[p]]), rows[p]))
            i = rows[q]
            e = float(f[E + i])
            if e > t:
                return
            if g[G_WARM] == 1:
                self._at_end(i, e)
            f[N_H + V_X * n + i] = self._xt(i, e)
            f[N_H + V_SL * n + i] = 0.0
            f[E + i] = math.inf
            g[N_G + q] = g[N_G + na - 1]
            g[G_NA] = na - 1

    def _warm(self, t):
        f, g = self.f, self.g
        if g[G_WARM] == 1 or t <= f[H_WARMUP]:
            return
        w = float(f[H_WARMUP])
        self._advance(w)
        g[G_WARM] = 1
        for i in range(self.n):
            self._open(i, w)

    def record(self, t: float, end: float, row: int, kind: int) -> None:
        """One record of the loop's log, replayed at once."""
        f, g, n = self.f, self.g, self.n
        self._warm(t)
        self._advance(t)
        if kind == K_SERVICE:
            if g[G_WARM] == 1:
                self._at_start(row, t)
            iw = float(f[N_H + V_IW * n + row])
            f[N_H + V_S0 * n + row] = t
            f[N_H + V_END * n + row] = end
            f[N_H + V_SL * n + row] = iw
            g[N_G + g[G_NA]] = row
            g[G_NA] += 1
            c = (end - t) * iw
            if c > f[H_L]:
                f[H_L] = c
        elif kind == K_BACKLOG:
            f[N_H + V_BL * n + row] = 1.0
            if g[G_WARM] == 1:
                self._open(row, t)
        else:
            if g[G_WARM] == 1:
                self._at_start(row, t)
                self._at_end(row, t)
                self._close(row)
            f[N_H + V_BL * n + row] = 0.0

    def finish(self, t: float) -> None:
        f, n = self.f, self.n
        self._warm(t)
        self._advance(t)
        if self.g[G_WARM] == 1:
            live = [i for i in range(n) if f[N_H + V_BL * n + i] == 1.0]
            for i in live:
                self._at_start(i, t)
                self._at_end(i, t)
            for i in live:
                self._close(i)


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


def result(f: np.ndarray, g: np.ndarray) -> tuple[float, int, int, float]:
    """``(largest value reached (time units over weight), pair i, pair j, largest service logged at a
    flow's dominant resource over its weight)``; the pair -1, -1 with no joint period after warm-up."""
    return float(f[H_BEST]), int(g[G_BI]), int(g[G_BJ]), float(f[H_L])
