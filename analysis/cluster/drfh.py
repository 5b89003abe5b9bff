"""Fluid DRFH on heterogeneous servers ([DRFH] Wang, Liang, Li, §IV-A eq. (7), §V-A).

Units: ``capacity[l, r]`` and ``demand[i, r]`` in the scenario's units; internally
everything is a share of the pool, ``c_lr = capacity[l, r] / T_r`` and
``D_ir = demand[i, r] / T_r`` with ``T = capacity.sum(0)`` ([DRFH] §III-A
normalises the total to 1).  ``d_i* = max_r D_ir`` is user i's global dominant
demand and ``dbar_ir = D_ir / d_i*`` its normalised demand vector.

By Lemma 1 a non-wasteful allocation gives user i on server l the bundle
``g_il * dbar_i`` where ``g_il >= 0`` is its global dominant share there; user i
schedules ``G_i / d_i*`` tasks, ``G_i = sum_l g_il`` (eq. (3)).  Problem (7):

    max g   s.t.  sum_i g_il dbar_ir <= c_lr  (every l, r),   sum_l g_il = g w_i  (every i)

(weights as in §V-A: ``G_i / w_i`` equalised).  Users with a finite number of
tasks ``n_i`` add ``G_i <= n_i d_i*`` (§V-A: "increases the global dominant share
of all active users until one of them has all its tasks scheduled").

The paper's (7) stops at the equalised level.  When some users can still grow
(another user is capped, or their resources are not the saturated ones) §V-A keeps
raising the others' shares; named as option ``refine``:

``"maxmin"`` (default) weighted lexicographic max-min of ``G_i / w_i`` by
             progressive filling: an LP for the common level ``t`` of the active
             users, then one LP per active user to find those that cannot exceed
             ``t w_i`` (they are frozen), repeated until every user is frozen;
``"none"``   the solution of (7) only (every ``G_i = g w_i``).

Each LP is solved by ``scipy.optimize.linprog(method="highs")`` (deterministic).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flows.errors import MrfqError, quote

REFINE = ("maxmin", "none")
#: relative tolerance for "cannot grow beyond the level"
GROW_TOL = 1e-7


@dataclass(frozen=True, eq=False)
class DrfhAllocation:
    """tasks[U] (fractional), G[U] global dominant shares, g[U, S] per-server shares,
    bundle[U, S, R] resources given (scenario units), level: the equalised g of (7),
    dstar[U] each user's global dominant demand ``max_r D_ir`` (share of the pool per task)."""

    tasks: np.ndarray
    G: np.ndarray
    g: np.ndarray
    bundle: np.ndarray
    level: float
    dstar: np.ndarray

    def to_dict(self) -> dict:
        return {"tasks": self.tasks.tolist(), "global_dominant_share": self.G.tolist(),
                "per_server_tasks": (self.g / self.dstar[:, None]).tolist(), "level": self.level}


def _check(capacity, demand, weight, tasks_max):
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


def drfh(capacity, demand, weight=None, tasks_max=None, *, refine: str = "maxmin") -> DrfhAllocation:
    """The fluid DRFH allocation ([DRFH] eq. (7), weighted and with finite tasks per §V-A)."""
    from scipy.optimize import linprog

    if refine not in REFINE:
        raise MrfqError(f"refine = {quote(refine)}: must be one of {', '.join(REFINE)}")
    C, Dem, W, N = _check(capacity, demand, weight, tasks_max)
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
    bundle = g[:, :, None] * dbar[:, None, :] * T[None, None, :]
    return DrfhAllocation(tasks=tasks, G=G, g=g, bundle=bundle, level=float(level), dstar=dstar)
