"""The static H-DRF allocation, fluid ([H-DRF] Bhattacharya et al., SoCC 2013, §3.1, Algorithm 1).

Algorithm 1 hands out slivers ``eps`` of a leaf's demand vector: from the root it walks to the
child with the lowest (weighted) dominant share among the children with something left to
schedule, until a leaf, gives that leaf a sliver, and updates the consumption ``U`` and dominant
share ``s = max_j U_j / R_j`` of every node on the path (plain sums over the subtree).  As
``eps -> 0`` this is a water-filling ([H-DRF] §4): siblings that can still grow keep equal
weighted dominant shares, a leaf stops when a resource it needs saturates (or when it reaches
``tasks_max`` tasks), and the allocation is unique.  This module computes that limit exactly
(up to float bisection of the root's level), phase by phase:

* the root's growing children have dominant share ``w_c * lam``; an internal node ``n`` asked
  for dominant share ``sigma`` gives its growing children ``w_c * mu`` with ``mu`` the lowest
  solution of ``h_n(mu) = max_{j in Y} (B_j + sum_c U_cj(w_c mu)) = sigma`` (``B`` = what its
  stopped children hold, ``Y`` = the unsaturated resources, ``U_c(tau)`` child c's usage when
  asked for ``tau``);
* ``lam`` rises (bisection) until a resource saturates or a leaf reaches its cap; those leaves
  stop; repeat until no leaf can grow.  A node already above the level keeps what it has
  (``max(target, current share)``), so the usage is continuous in ``lam`` except where a free
  growth stretch is jumped;
* a *free growth stretch*: when a node's dominant resource (over ``Y``) is used by none of its
  growing descendants, its share stays put while they grow, so ``mu`` is not unique there; the
  lowest is taken (the node's usage jumps to the stretch's end once its target passes its share).
  When the root's level stalls at such a stretch (the jump would overfill a resource), the phase
  walks it at that level, a fraction ``theta`` of every such stretch together, until a resource
  fills or a leaf reaches its cap.

**Water-filling in polynomial time.**  Within a phase every ``U_n`` is piecewise linear in the
node's target (with jumps at free growth stretches): a leaf's is ``max(tau, s_u) a_u``; an
internal node's ``F_n(mu) = B + sum_c U_c(w_c mu)`` is the sum of its children's (their
breakpoints merged, slopes and jumps accumulated in one sorted sweep), ``h_n`` is the upper
envelope of ``F_n``'s components over ``Y`` (each segment is split where the top component
changes: at most ``R - 1`` crossings per segment), and ``U_n(tau) = F_n(mu_n(tau))`` has a
breakpoint at each value ``h_n`` takes at a breakpoint of ``F_n``.  So each node's function is
built once per phase, children first, in time linear in the breakpoints below it (at most the
tree's leaves times its depth times ``R``), and evaluating the whole tree at a root level
``lam`` is one pass from the root: at every node one binary search in ``h_n`` gives ``mu``.  The
phases are at most ``U + R + 1`` (each stops a leaf; without caps each saturates a resource, so
at most ``R + 1``).  Between two breakpoints every leaf grows linearly in ``lam`` at the rate the
tree gives it: an event-driven water-filling whose events are the breakpoints.

Choice (the paper is ambiguous here): the dominant share of a node is taken over the
*unsaturated* resources ``Y`` only, as the dynamic algorithm does ([H-DRF] §3.4 "we ignore
saturated resources when computing the dominant share of any internal node", Algorithm 3), and
each phase starts from every node's current share over the new ``Y``: a node whose largest
share was on the resource that just saturated looks lower than its siblings and catches up
first (its children grow, the others wait), exactly as Algorithm 1's slivers would go to it.
Algorithm 1 as printed takes ``max`` over all resources; that reading is implemented by the
discrete mechanism (``fq.cluster.hdrf.pick_naive`` from an empty cluster is Algorithm 1 with
task-sized slivers).  The two agree on every example of the paper and on two resources
(tested); with three or more resources they can differ (a node then bursts only once its
unsaturated resources pass its frozen share).  Theorem 1 (static = dynamic) holds for this
module's reading: dynamic H-DRF churning on one pooled server converges to it (tests).
Weights: a node's children equalise ``s_c / w_c`` ([H-DRF] §3 "can be generalised to multiple
weights in a straightforward fashion", as weighted DRF [DRF] §4.3).

All resources are pooled (``R = capacity.sum(axis=0)``): the paper's cluster is one pool.
Tasks are divisible here; ``fq.cluster.hdrf`` is the discrete mechanism.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mrfq.flows.errors import MrfqError
from mrfq.fq.cluster.state import Tree

#: a resource is saturated when its usage is >= 1 - SAT_TOL (fractions of the pool)
SAT_TOL = 1e-9
_ITER = 200


@dataclass(frozen=True, eq=False)
class StaticHdrf:
    """share[U] dominant share of each user (global, all resources); tasks[U] (fractional);
    usage[U, R] fractions of the pool; node_usage[N, R] plain subtree sums; node_share[N] their
    dominant shares; saturated: resources saturated at the end, in order of saturation."""

    share: np.ndarray
    tasks: np.ndarray
    usage: np.ndarray
    node_usage: np.ndarray
    node_share: np.ndarray
    saturated: tuple[int, ...]


def _bisect(ok, lo: float, hi: float) -> float:
    """The largest x in [lo, hi) with ok(x) (ok monotone: true, then false), to float precision."""
    for _ in range(_ITER):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _check(capacity, demand, tree: Tree, tasks_max):
    C = np.array(capacity, dtype=np.float64, ndmin=2)
    D = np.array(demand, dtype=np.float64, ndmin=2)
    if C.shape[1] != D.shape[1]:
        raise MrfqError(f"demand has {D.shape[1]} resources: must have {C.shape[1]}, like capacity")
    T = C.sum(axis=0)
    if np.any(T <= 0):
        j = int(np.flatnonzero(T <= 0)[0])
        raise MrfqError(f"capacity[:, {j}]: the pool has none of resource {j}; every resource needs capacity")
    if np.any(D < 0) or np.any(D.max(axis=1) <= 0):
        u = int(np.flatnonzero((D < 0).any(axis=1) | (D.max(axis=1) <= 0))[0])
        raise MrfqError(f"demand[{u}] = {D[u].tolist()}: must be >= 0 with some positive entry")
    if tree.leaf.shape[0] != D.shape[0]:
        raise MrfqError(f"tree has {tree.leaf.shape[0]} leaves: must have one per user ({D.shape[0]})")
    cap = np.full(D.shape[0], np.inf) if tasks_max is None else np.array(tasks_max, dtype=np.float64)
    return T, D, cap


class _Pl:
    """A node's usage as a function of its target ``tau``: piecewise linear, non-decreasing, left-continuous.

    Breakpoints ``x[P]`` (``x[0]`` = the node's share at the start of the phase: below it the usage is
    constant), ``vl[P, R]`` the value at ``x[k]``, ``vr[P, R]`` its right limit (a jump where they differ),
    linear in between, slope ``end[R]`` after ``x[-1]``."""

    __slots__ = ("x", "vl", "vr", "end")

    def __init__(self, x, vl, vr, end):
        self.x, self.vl, self.vr, self.end = x, vl, vr, end


class _Node:
    """A growing internal node's functions in the children's level ``mu``: breakpoints ``M[P]``, ``Fl``/``Fr``
    ``[P, R]`` the usage at / right after them, ``SF[R]`` the slope after ``M[-1]``; ``hl``/``hr`` the dominant
    share over ``Y`` at / right after them and ``hs`` its slope after ``M[-1]``; ``brk[c][k]``: the index of
    internal child c's own breakpoint at ``M[k]`` (or -1), so that a child asked for exactly its breakpoint
    gets that breakpoint's (left) value."""

    __slots__ = ("M", "Fl", "Fr", "SF", "hl", "hr", "hs", "brk")


def _lower(nd: _Node, sig: float) -> tuple[float, int]:
    """``max(M[0], sup{mu: h(mu) < sig})`` and the breakpoint index it sits on (-1: inside a segment)."""
    M, hl, hr = nd.M, nd.hl, nd.hr
    P = M.shape[0]
    k0 = int(np.searchsorted(hl, sig, side="left"))      # first k with hl[k] >= sig
    if k0 == 0:
        return float(M[0]), 0
    j = k0 - 1
    if hr[j] >= sig:
        return float(M[j]), j
    slope = nd.hs if k0 == P else (hl[k0] - hr[j]) / (M[k0] - M[j])
    mu = M[j] + (sig - hr[j]) / slope
    if k0 < P and mu >= M[k0]:
        return float(M[k0]), k0
    return float(mu), -1


def _upper(nd: _Node, sig: float) -> float:
    """``sup{mu: h(mu) <= sig}`` (the end of a free growth stretch at ``sig``)."""
    M, hl, hr = nd.M, nd.hl, nd.hr
    P = M.shape[0]
    k1 = int(np.searchsorted(hl, sig, side="right"))     # first k with hl[k] > sig
    if k1 == 0:
        return float(M[0])
    j = k1 - 1
    if hr[j] > sig:
        return float(M[j])
    slope = nd.hs if k1 == P else (hl[k1] - hr[j]) / (M[k1] - M[j])
    return float(min(M[j] + (sig - hr[j]) / slope, M[k1])) if k1 < P else float(M[j] + (sig - hr[j]) / slope)


def _seg_value(nd: _Node, j: int, mu: float) -> np.ndarray:
    """F at ``mu`` inside segment j (right of ``M[j]``)."""
    P = nd.M.shape[0]
    if j == P - 1:
        return nd.Fr[j] + (mu - nd.M[j]) * nd.SF
    return nd.Fr[j] + (mu - nd.M[j]) * (nd.Fl[j + 1] - nd.Fr[j]) / (nd.M[j + 1] - nd.M[j])


def _value_at(nd: _Node, sig: float, right: bool) -> np.ndarray:
    """``F(mu(sig))`` (``right``: its limit from above, ``sig+``)."""
    M, hl, hr = nd.M, nd.hl, nd.hr
    P = M.shape[0]
    k = int(np.searchsorted(hl, sig, side="right" if right else "left"))
    if k == 0:
        return nd.Fl[0]
    j = k - 1
    if (hr[j] > sig) if right else (hr[j] >= sig):
        return nd.Fl[j]
    slope = nd.hs if k == P else (hl[k] - hr[j]) / (M[k] - M[j])
    mu = M[j] + (sig - hr[j]) / slope
    if k < P and mu >= M[k]:
        return nd.Fl[k]
    return _seg_value(nd, j, mu)


def _envelope_cuts(m0: float, m1: float, f0: np.ndarray, slope: np.ndarray) -> list[float]:
    """Points in (m0, m1) where the top of the lines ``f0 + (m - m0) slope`` changes (m1 may be inf)."""
    cuts = []
    m = m0
    v = f0.copy()
    top = int(np.lexsort((slope, v))[-1])                 # highest, then steepest
    while True:
        over = slope > slope[top]
        if not over.any():
            return cuts
        d = (v[top] - v[over]) / (slope[over] - slope[top])   # when each steeper line catches up
        k = int(np.argmin(d))
        dm = float(d[k])
        cand = np.flatnonzero(over)
        if dm <= 0.0:                                     # a steeper line ties here: it is the top from now
            best = cand[d <= 0.0]
            top = int(best[np.argmax(slope[best])])
            continue
        if not m + dm < m1:
            return cuts
        m += dm
        v = v + dm * slope
        cuts.append(m)
        best = cand[np.isclose(d, dm, rtol=0.0, atol=0.0)]
        top = int(best[np.argmax(slope[best])])


def _build(kids: list[tuple[_Pl, float]], B: np.ndarray, Y: np.ndarray) -> _Node:
    """The node's F, h in ``mu`` from its growing children's ``(U_c, w_c)`` (one sorted sweep)."""
    R = B.shape[0]
    xs, jumps, dslope, v0 = [], [], [], B.copy()
    for f, w in kids:
        x = f.x / w
        P = x.shape[0]
        sl = np.empty((P, R))                               # slope right of each breakpoint, in mu
        if P > 1:
            sl[:-1] = (f.vl[1:] - f.vr[:-1]) / (x[1:] - x[:-1])[:, None]
        sl[-1] = f.end * w
        prev = np.vstack([np.zeros((1, R)), sl[:-1]])
        xs.append(x)
        jumps.append(f.vr - f.vl)
        dslope.append(sl - prev)
        v0 = v0 + f.vl[0]
    x = np.concatenate(xs)
    J = np.concatenate(jumps)
    dS = np.concatenate(dslope)
    order = np.argsort(x, kind="stable")
    x, J, dS = x[order], J[order], dS[order]
    M, first = np.unique(x, return_index=True)
    # sums over events with x_e < m (left values) and x_e <= m (right values)
    cJ = np.vstack([np.zeros((1, R)), np.cumsum(J, axis=0)])
    cS = np.vstack([np.zeros((1, R)), np.cumsum(dS, axis=0)])
    cSx = np.vstack([np.zeros((1, R)), np.cumsum(dS * x[:, None], axis=0)])
    last = np.concatenate([first[1:], [x.shape[0]]])       # events at M[k] are first[k]:last[k]
    Fl = v0 + cJ[first] - cSx[first] + M[:, None] * cS[first]
    Fr = v0 + cJ[last] - cSx[last] + M[:, None] * cS[last]
    SF = cS[-1]
    # split segments where the top component over Y changes
    Yi = np.flatnonzero(Y)
    P = M.shape[0]
    cuts: list[tuple[int, float]] = []
    if P > 1:
        a, b = Fr[:-1][:, Yi], Fl[1:][:, Yi]
        ta = np.argmax(a + 0.0, axis=1)
        tb = np.argmax(b, axis=1)
        rows = np.arange(P - 1)
        need = (ta != tb) & (b[rows, ta] < b[rows, tb])
        for j in np.flatnonzero(need):
            slope = (b[j] - a[j]) / (M[j + 1] - M[j])
            cuts += [(j, m) for m in _envelope_cuts(float(M[j]), float(M[j + 1]), a[j], slope)]
    cuts += [(P - 1, m) for m in _envelope_cuts(float(M[-1]), np.inf, Fr[-1][Yi], SF[Yi])]
    nd = _Node()
    if cuts:
        js = np.array([c[0] for c in cuts])
        ms = np.array([c[1] for c in cuts])
        nxt = np.minimum(js + 1, P - 1)
        seg_slope = np.where((js < P - 1)[:, None], (Fl[nxt] - Fr[js]) / np.where(js < P - 1, M[nxt] - M[js], 1.0)[:, None],
                             SF[None, :])
        vals = Fr[js] + (ms - M[js])[:, None] * seg_slope
        Mn = np.concatenate([M, ms])
        o = np.argsort(Mn, kind="stable")
        M = Mn[o]
        Fl = np.vstack([Fl, vals])[o]
        Fr = np.vstack([Fr, vals])[o]
    nd.M, nd.Fl, nd.Fr, nd.SF = M, Fl, Fr, SF
    nd.hl = Fl[:, Yi].max(axis=1)
    nd.hr = Fr[:, Yi].max(axis=1)
    nd.hl = np.maximum.accumulate(nd.hl)                   # rounding: keep h non-decreasing
    nd.hr = np.maximum(nd.hr, nd.hl)
    lastv = Fr[-1][Yi]
    top = np.lexsort((SF[Yi], lastv))[-1]
    nd.hs = float(SF[Yi][top])
    return nd


def _usage_fn(nd: _Node, cs: float) -> _Pl:
    """The node's usage as a function of its target, ``F(mu(max(tau, cs)))``."""
    pts = np.unique(np.concatenate([nd.hl, nd.hr, [cs]]))
    pts = pts[pts >= cs]
    vl = np.array([_value_at(nd, float(t), False) for t in pts])
    vr = np.array([_value_at(nd, float(t), True) for t in pts])
    return _Pl(pts, vl, vr, nd.SF / nd.hs)


def static_hdrf(capacity, demand, tree: Tree, tasks_max=None) -> StaticHdrf:
    """The static H-DRF allocation ([H-DRF] §3.1, Algorithm 1 with ``eps -> 0``).

    ``capacity[S, R]`` (pooled), ``demand[U, R]`` per task, ``tree`` with ``leaf[u]`` the node of
    user u and node weights; ``tasks_max[U]`` caps a user's tasks (default: backlogged, no cap).
    """
    T, D, cap = _check(capacity, demand, tree, tasks_max)
    U, R = D.shape
    N = tree.parent.shape[0]
    dn = D / T
    dom = dn.max(axis=1)
    a = dn / dom[:, None]  # pool fractions per unit of dominant share
    cap_share = cap * dom
    parent = np.asarray(tree.parent, dtype=np.int64)
    w = np.asarray(tree.weight, dtype=np.float64)
    leaf = np.asarray(tree.leaf, dtype=np.int64)
    kids: list[list[int]] = [[] for _ in range(N)]
    for n in range(1, N):
        kids[int(parent[n])].append(n)
    user_of = np.full(N, -1, dtype=np.int64)
    user_of[leaf] = np.arange(U)
    internal = [n for n in range(N) if user_of[n] < 0]    # parents before children (Tree's order)
    frozen = np.zeros(U, dtype=bool)
    frozen_share = np.zeros(U)
    Y = np.ones(R, dtype=bool)
    saturated: list[int] = []
    cur = np.zeros((N, R))
    cs = np.zeros(N)
    grow = np.zeros(N, dtype=bool)
    nodes: dict[int, _Node] = {}

    def evaluate(lam: float, theta: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Usage over the pool and every leaf's share at root level lam (one pass from the root)."""
        tau = np.zeros(N)
        for c in kids[0]:
            tau[c] = w[c] * lam
        for n in internal[1:] if internal and internal[0] == 0 else internal:
            if not grow[n]:
                continue
            nd = nodes[n]
            sig = max(tau[n], cs[n])
            mu, k = _lower(nd, sig)
            if theta > 0.0:
                up = _upper(nd, sig)
                if up > mu:
                    mu, k = mu + theta * (up - mu), -1
            for c in kids[n]:
                b = nd.brk.get(c) if k >= 0 else None
                tau[c] = fns[c].x[b[k]] if b is not None and b[k] >= 0 else w[c] * mu
        x = np.where(frozen, frozen_share, np.maximum(tau[leaf], cs[leaf]))
        return x @ a, x

    def feasible(lam: float, theta: float = 0.0) -> bool:
        # Only the unsaturated resources Y: a saturated one is used by frozen leaves alone, whose
        # summed usage can read 1 + 1 ulp when the order of summation changes between phases.
        v, sh = evaluate(lam, theta)
        return bool(np.all(v[Y] <= 1.0) and np.all(sh <= cap_share))

    fns: dict[int, _Pl] = {}
    for _ in range(U + R + 1):
        grow[:] = False
        grow[leaf] = ~frozen
        for n in range(N - 1, 0, -1):
            if grow[n]:
                grow[parent[n]] = True
        if not grow[0]:
            break
        cur[:] = 0.0
        cur[leaf] = frozen_share[:, None] * a
        for n in range(N - 1, 0, -1):
            cur[parent[n]] += cur[n]
        cs[:] = cur[:, Y].max(axis=1) if Y.any() else 0.0
        # every growing node's function, children first
        nodes.clear()
        fns.clear()
        for u in np.flatnonzero(~frozen):
            n = int(leaf[u])
            fns[n] = _Pl(np.array([cs[n]]), (cs[n] * a[u])[None, :], (cs[n] * a[u])[None, :], a[u].copy())
        for n in reversed(internal):
            if n == 0 or not grow[n]:
                continue
            act = [c for c in kids[n] if grow[c]]
            B = cur[n] - sum((cur[c] for c in act), np.zeros(R))
            nd = _build([(fns[c], w[c]) for c in act], B, Y)
            nd.brk = {}
            for c in act:
                if user_of[c] < 0:
                    xm = fns[c].x / w[c]
                    idx = np.searchsorted(xm, nd.M)
                    hit = (idx < xm.shape[0]) & (xm[np.minimum(idx, xm.shape[0] - 1)] == nd.M)
                    nd.brk[c] = np.where(hit, idx, -1)
            nodes[n] = nd
            fns[n] = _usage_fn(nd, float(cs[n]))
        roots = [c for c in kids[0] if grow[c]]
        lam0 = min(cs[c] / w[c] for c in roots)
        hi = max(2.0 * lam0, 1.0 / min(w[c] for c in roots))
        while feasible(hi):
            hi *= 2.0
        lam = _bisect(feasible, lam0, hi)
        v, sh = evaluate(lam)
        full = (v >= 1.0 - SAT_TOL) & Y
        if not full.any() and not np.any(~frozen & (sh >= cap_share * (1 - SAT_TOL))):
            # The level stalled at a free growth stretch: walk it, at this level, until a
            # resource fills or a leaf reaches its cap.
            theta = 1.0 if feasible(lam, 1.0) else _bisect(lambda t: feasible(lam, t), 0.0, 1.0)
            v, sh = evaluate(lam, theta)
        new_sat = [j for j in range(R) if Y[j] and v[j] >= 1.0 - SAT_TOL]
        for j in new_sat:
            Y[j] = False
            saturated.append(j)
        stop = ~frozen & ((a[:, ~Y] > 0).any(axis=1) | (sh >= cap_share * (1 - SAT_TOL)))
        if not stop.any():
            raise RuntimeError("static H-DRF: a phase ended with no leaf stopping")  # cannot happen
        grown = ~frozen
        frozen_share[grown] = sh[grown]  # growing leaves keep their level as the next phase's start
        frozen[stop] = True
    share = frozen_share.copy()
    usage = share[:, None] * a
    node_usage = np.zeros((N, R))
    node_usage[leaf] = usage
    for n in range(N - 1, 0, -1):
        node_usage[parent[n]] += node_usage[n]
    return StaticHdrf(share=share, tasks=share / dom, usage=usage, node_usage=node_usage,
                      node_share=node_usage.max(axis=1), saturated=tuple(saturated))


def guarantees(tree: Tree, demanding=None) -> np.ndarray:
    """[H-DRF] §2 hierarchical share guarantee of every node: the product over its path of
    ``w_n / sum of the weights of its demanding siblings (n included)`` (Fig. 2: 240, 48, 96, 96 of 480)."""
    N = tree.parent.shape[0]
    live = np.zeros(N, dtype=bool)
    live[tree.leaf] = True if demanding is None else np.asarray(demanding, dtype=bool)
    for n in range(N - 1, 0, -1):
        if live[n]:
            live[tree.parent[n]] = True
    g = np.zeros(N)
    g[0] = 1.0
    for n in range(1, N):
        p = tree.parent[n]
        if live[n]:
            sib = (tree.parent == p) & live
            g[n] = g[p] * tree.weight[n] / tree.weight[sib].sum()
    return g


def static_hdrf_of(capacity, demand, weight=None, *, tree: Tree | None = None, tasks_max=None) -> StaticHdrf:
    """:func:`static_hdrf` with the ``CLUSTER_OBJECTIVES`` calling convention: ``weight`` is used only
    when there is no tree (the flat tree of ``weight``: weighted DRF); with a tree its weights rule."""
    D = np.array(demand, dtype=np.float64, ndmin=2)
    U = D.shape[0]
    if tree is None:
        wu = np.ones(U) if weight is None else np.array(weight, dtype=np.float64)
        tree = Tree(parent=np.concatenate(([-1], np.zeros(U, dtype=np.int64))),
                    weight=np.concatenate(([1.0], wu)), leaf=np.arange(1, U + 1, dtype=np.int64))
    return static_hdrf(capacity, D, tree, tasks_max)
