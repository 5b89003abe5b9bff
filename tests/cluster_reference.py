"""Reference implementations of the fluid cluster allocations, kept as oracles for the tests.

``drfh_reference``: [DRFH] eq. (7) on a dense per-server LP (``U S + 1`` columns, one LP per active
user per level of the progressive filling).  ``static_hdrf_reference``: static H-DRF by nested
bisection.  Both are direct transcriptions of the definitions, slow at scale;
``analysis.cluster.drfh`` and ``analysis.cluster.hdrf`` must agree with them (tests/test_cluster_scale.py).
"""

from __future__ import annotations

import numpy as np

from mrfq.analysis.cluster.hdrf import StaticHdrf
from mrfq.flows.errors import MrfqError
from mrfq.fq.cluster.state import Tree

REFINE = ("maxmin", "none")
GROW_TOL = 1e-7
SAT_TOL = 1e-9
_ITER = 200


def _drfh_check(capacity, demand, weight, tasks_max):
    C = np.array(capacity, dtype=np.float64, ndmin=2)
    D = np.array(demand, dtype=np.float64, ndmin=2)
    if C.shape[1] != D.shape[1]:
        raise MrfqError(f"demand: has {D.shape[1]} resources, capacity {C.shape[1]}; they must match")
    if np.any(~np.isfinite(C)) or np.any(C < 0):
        raise MrfqError("capacity: every entry must be finite and >= 0")
    if np.any(~np.isfinite(D)) or np.any(D < 0):
        raise MrfqError("demand: every entry must be finite and >= 0")
    T = C.sum(axis=0)
    bad = np.flatnonzero((D > 0).any(axis=0) & (T <= 0))
    if bad.size:
        raise MrfqError(f"capacity[:, {bad[0]}]: total is 0 but some user demands resource {bad[0]}")
    zero = np.flatnonzero(D.max(axis=1) <= 0)
    if zero.size:
        raise MrfqError(f"demand[{zero[0]}]: all zero; every user must demand some resource")
    U = D.shape[0]
    W = np.ones(U) if weight is None else np.array(weight, dtype=np.float64).reshape(U)
    if np.any(~(W > 0)) or np.any(~np.isfinite(W)):
        raise MrfqError(f"weight = {W.tolist()}: every weight must be finite and > 0")
    N = np.full(U, np.inf) if tasks_max is None else np.array(tasks_max, dtype=np.float64).reshape(U)
    if np.any(N < 0) or np.any(np.isnan(N)):
        raise MrfqError(f"tasks_max = {N.tolist()}: must be >= 0 (inf for a backlogged user)")
    return C, D, W, N


def drfh_reference(capacity, demand, weight=None, tasks_max=None, *, refine: str = "maxmin"):
    """Fluid DRFH ([DRFH] eq. (7), §V-A) on the dense per-server LP: (tasks[U], G[U], g[U, S], level).

    Progressive filling with one LP per active user per level to find who cannot grow."""
    from scipy.optimize import linprog

    if refine not in REFINE:
        raise MrfqError(f"refine = {refine!r}: must be one of {', '.join(REFINE)}")
    C, Dem, W, N = _drfh_check(capacity, demand, weight, tasks_max)
    S, R = C.shape
    U = Dem.shape[0]
    T = C.sum(axis=0)
    Tsafe = np.where(T > 0, T, 1.0)
    c = C / Tsafe
    D = Dem / Tsafe
    dstar = D.max(axis=1)
    dbar = D / dstar[:, None]
    cap = N * dstar                                  # G_i <= n_i d_i*
    nv = U * S + 1                                   # g (row-major i, l) then t

    # capacity rows: sum_i g_il dbar_ir <= c_lr
    A_cap = np.zeros((S * R, nv))
    for srv in range(S):
        for r in range(R):
            A_cap[srv * R + r, np.arange(U) * S + srv] = dbar[:, r]
    b_cap = c.reshape(-1)
    Gsum = np.zeros((U, nv))
    for i in range(U):
        Gsum[i, i * S:(i + 1) * S] = 1.0
    bounds = [(0, None)] * (U * S) + [(0, None)]

    def solve(cost, A, b):
        res = linprog(cost, A_ub=A, b_ub=b, bounds=bounds, method="highs")
        if res.status != 0:
            raise RuntimeError(f"DRFH LP failed: {res.message}")
        return res.x

    def rows(active, frozen_at, t_fixed=None):
        A = [A_cap]
        b = [b_cap]
        fin = np.isfinite(cap)
        if fin.any():                                # G_i <= cap_i
            A.append(Gsum[fin])
            b.append(cap[fin])
        for i in range(U):
            if active[i]:                            # G_i >= w_i t
                row = -Gsum[i].copy()
                if t_fixed is None:
                    row[-1] = W[i]
                    A.append(row[None])
                    b.append([0.0])
                else:
                    A.append(row[None])
                    b.append([-W[i] * t_fixed])
            else:                                    # G_i >= frozen value
                A.append(-Gsum[i][None])
                b.append([-frozen_at[i] * (1 - 1e-10)])
        return np.vstack(A), np.concatenate([np.ravel(x) for x in b])

    active = np.ones(U, dtype=bool)
    frozen_at = np.zeros(U)
    level = None
    x = None
    while active.any():
        cost = np.zeros(nv)
        cost[-1] = -1.0
        A, b = rows(active, frozen_at)
        x = solve(cost, A, b)
        t = x[-1]
        if level is None:
            level = float(t)
        if refine == "none":
            if not np.isfinite(cap).any():
                frozen_at[active] = W[active] * t
                break
            # (7) with caps: freeze at the equalised level, then stop
            frozen_at[active] = np.minimum(W[active] * t, cap[active])
            break
        grew = np.zeros(U, dtype=bool)
        for i in np.flatnonzero(active):
            others = active.copy()
            others[i] = False
            cost = -Gsum[i]
            A, b = rows(others, np.where(active, W * t, frozen_at), t_fixed=t)
            # the rows() call above treats active-but-not-i users as ">= w t" and
            # inactive ones (including i, given frozen value w_i t) as ">= frozen"
            xi = solve(cost, A, b)
            grew[i] = Gsum[i] @ xi > W[i] * t * (1 + GROW_TOL) + 1e-12
        stuck = active & ~grew
        if not stuck.any():                          # numerical safety: freeze the least-growing
            stuck = active.copy()
        frozen_at[stuck] = W[stuck] * t
        active &= ~stuck
    # final placement: the cheapest g meeting the frozen shares (minus a 1e-10 slack), then
    # rescaled so that G_i equals the frozen share exactly (a capacity overshoot <= 1e-10 relative)
    A, b = rows(np.zeros(U, dtype=bool), frozen_at)
    x = solve(Gsum.sum(axis=0), A, b)
    g = x[:-1].reshape(U, S)
    G = g.sum(axis=1)
    g = g * np.divide(frozen_at, G, out=np.zeros(U), where=G > 0)[:, None]
    G = g.sum(axis=1)
    tasks = G / dstar
    return tasks, G, g, float(level)


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


def _hdrf_check(capacity, demand, tree: Tree, tasks_max):
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


def static_hdrf_reference(capacity, demand, tree: Tree, tasks_max=None) -> StaticHdrf:
    """Static H-DRF ([H-DRF] §3.1, Algorithm 1 with ``eps -> 0``) by nested bisection: every internal node
    inverts its dominant share by bisecting on its children's level, each evaluation recursing into the
    children (cost exponential in the depth).

    ``capacity[S, R]`` (pooled), ``demand[U, R]`` per task, ``tree`` with ``leaf[u]`` the node of
    user u and node weights; ``tasks_max[U]`` caps a user's tasks (default: backlogged, no cap).
    """
    T, D, cap = _hdrf_check(capacity, demand, tree, tasks_max)
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
