"""The static H-DRF allocation, fluid ([H-DRF] Bhattacharya et al., SoCC 2013, §3.1, Algorithm 1).

Algorithm 1 hands out slivers ``eps`` of a leaf's demand vector: from the root it walks to the
child with the lowest (weighted) dominant share among the children with something left to
schedule, until a leaf, gives that leaf a sliver, and updates the consumption ``U`` and dominant
share ``s = max_j U_j / R_j`` of every node on the path (plain sums over the subtree).  As
``eps -> 0`` this is a water-filling ([H-DRF] §4): siblings that can still grow keep equal
weighted dominant shares, a leaf stops when a resource it needs saturates (or when it reaches
``tasks_max`` tasks), and the allocation is unique.  This module computes that limit exactly
(up to float bisection), phase by phase:

* the root's growing children have dominant share ``w_c * lam``; an internal node ``n`` asked
  for dominant share ``sigma`` gives its growing children ``w_c * mu`` with ``mu`` solving
  ``max_{j in Y} (B_j + sum_c U_cj(w_c mu)) = sigma`` (``B`` = what its stopped children hold,
  ``Y`` = the unsaturated resources); when all its growing children are leaves,
  ``U_c(x) = x * a_c`` is linear and ``mu = min_{j in Y, V_j > 0} (sigma - B_j) / V_j`` with
  ``V = sum_c w_c a_c``; otherwise ``mu`` is found by bisection (the left side is increasing);
* ``lam`` rises (bisection) until a resource saturates or a leaf reaches its cap; those leaves
  stop; repeat until no leaf can grow.  A node already above the level keeps what it has
  (``max(target, current share)``), so the usage is continuous in ``lam``; with leaf children
  only, ``mu`` is the exact inverse of a piecewise-linear function.

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

from flows.errors import MrfqError
from fq.cluster.state import Tree

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
    children = [np.flatnonzero(tree.parent == n) for n in range(N)]
    user_of = {int(v): u for u, v in enumerate(tree.leaf)}
    w = tree.weight
    frozen = np.zeros(U, dtype=bool)
    frozen_share = np.zeros(U)
    Y = np.ones(R, dtype=bool)
    saturated: list[int] = []

    def growing(n: int) -> bool:
        if n in user_of:
            return not frozen[user_of[n]]
        return any(growing(int(c)) for c in children[n])

    cur = np.zeros((N, R))  # consumption of every subtree at the start of the phase
    cs = np.zeros(N)  # its dominant share over the unsaturated resources Y

    def at(n: int, sigma: float, out: np.ndarray, theta: float = 0.0) -> np.ndarray:
        """Usage of subtree n when n is asked for dominant share max(sigma, cs[n]) (a node already above
        the level keeps what it has); writes the leaf shares to out.

        theta in [0, 1] places a node on its *free growth* stretch: when n's dominant resource is
        used by none of its growing descendants, n's dominant share stays at cs[n] while they grow,
        so the children's level mu is not unique; it spans [mu_lo, mu_hi] where h(mu) <= sigma.
        Progressive filling walks that whole stretch at one value of the root's level (n stays the
        lowest child of its parent); theta = 0 takes its start (the lower inverse, the default),
        theta = 1 its end.  Only a phase that stalls on such a stretch uses theta > 0."""
        if n in user_of:
            u = user_of[n]
            x = frozen_share[u] if frozen[u] else max(sigma, cs[n])
            out[u] = x
            return x * a[u]
        if not growing(n):
            for c in children[n]:
                at(int(c), 0.0, out)
            return cur[n].copy()
        sigma = max(sigma, cs[n])
        B = np.zeros(R)
        act = []
        for c in children[n]:
            c = int(c)
            if growing(c):
                act.append(c)
            else:
                B += at(c, 0.0, out)
        if all(c in user_of for c in act):
            mu, h = _mu_leaves(B, act, sigma)
        else:
            def h(m: float) -> float:
                v = B + sum(at(c, w[c] * m, out.copy(), theta) for c in act)
                return float(v[Y].max())
            lo = min(cs[c] / w[c] for c in act)
            hi = max(lo, sigma / min(w[c] for c in act)) + 1e-300
            while h(hi) < sigma:
                hi *= 2.0
            mu = _bisect(lambda m: h(m) < sigma, lo, hi)
        if theta > 0.0:
            hi = 2.0 * mu + 1e-300
            while h(hi) <= sigma:
                hi *= 2.0
            mu += theta * (_bisect(lambda m: h(m) <= sigma, mu, hi) - mu)
        return B + sum(at(c, w[c] * mu, out, theta) for c in act)

    def _mu_leaves(B: np.ndarray, act: list[int], sigma: float):
        """Exact (lower) inverse of the piecewise-linear h(mu) = max_{j in Y} (B_j + sum_c max(cs_c, w_c mu) a_cj),
        and h."""
        lv = np.array([cs[c] / w[c] for c in act])
        A = np.array([a[user_of[c]] for c in act])
        W = np.array([w[c] for c in act])
        cs_act = np.array([cs[c] for c in act])

        def h(m: float) -> float:
            return float((B + (np.maximum(cs_act, W * m)[:, None] * A).sum(axis=0))[Y].max())

        pts = np.unique(lv)
        if h(pts[0]) >= sigma:
            return float(pts[0]), h
        k = int(np.searchsorted([h(m) for m in pts], sigma, side="left"))  # h(pts[k-1]) < sigma <= h(pts[k])
        m0 = float(pts[k - 1])
        grow = lv <= m0  # children growing on this segment: usage B' + m (W A)
        base = B + (np.where(grow, 0.0, cs_act)[:, None] * A).sum(axis=0)
        V = (np.where(grow, W, 0.0)[:, None] * A).sum(axis=0)
        pos = Y & (V > 0)
        return float(max(m0, np.min((sigma - base[pos]) / V[pos]))), h

    def evaluate(lam: float, theta: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        out = np.zeros(U)
        v = np.zeros(R)
        for c in children[0]:
            c = int(c)
            v = v + at(c, w[c] * lam, out, theta)
        return v, out

    def feasible(lam: float, theta: float = 0.0) -> bool:
        # Only the unsaturated resources Y: a saturated one is used by frozen leaves alone, whose
        # summed usage can read 1 + 1 ulp when the order of summation changes between phases.
        v, sh = evaluate(lam, theta)
        return bool(np.all(v[Y] <= 1.0) and np.all(sh <= cap_share))

    for _ in range(U + R + 1):
        if not growing(0):
            break
        cur[:] = 0.0
        cur[tree.leaf] = frozen_share[:, None] * a
        for n in range(N - 1, 0, -1):
            cur[tree.parent[n]] += cur[n]
        cs[:] = cur[:, Y].max(axis=1) if Y.any() else 0.0
        roots = [int(c) for c in children[0] if growing(int(c))]
        lam0 = min(cs[c] / w[c] for c in roots)
        hi = max(2.0 * lam0, 1.0 / min(w[c] for c in roots))
        while feasible(hi):
            hi *= 2.0
        lam = _bisect(feasible, lam0, hi)
        v, sh = evaluate(lam)
        full = (v >= 1.0 - SAT_TOL) & Y
        if not full.any() and not np.any(~frozen & (sh >= cap_share * (1 - SAT_TOL))):
            # The level stalled at a free growth stretch (see ``at``): walk it, at this level, until a
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
    node_usage[tree.leaf] = usage
    for n in range(N - 1, 0, -1):
        node_usage[tree.parent[n]] += node_usage[n]
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
