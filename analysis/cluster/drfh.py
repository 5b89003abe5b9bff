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
             users; the users that cannot exceed ``t w_i`` are frozen there; repeat
             until every user is frozen;
``"none"``   the solution of (7) only (every ``G_i = g w_i``).

**Identical servers are one block.**  Servers with the same capacity vector form a *type*
``k`` with ``n_k`` copies; the LP has one variable ``g_ik`` per user and type and one
capacity row per type and resource, ``sum_i g_ik dbar_ir <= n_k c_kr``.  This LP has the same
optimum as the per-server one at every step of the filling, hence the same ``G``: a per-server
solution summed over a type's servers (``g_ik = sum_{l in k} g_il``) satisfies the type's row
(the sum of the servers' rows), so the aggregated optimum is at least the per-server one;
conversely an aggregated solution split evenly (``g_il = g_ik / n_k`` on each server of type k)
satisfies every server's row (the type's row divided by ``n_k``) with the same ``G_i``, so it is
at most the per-server one.  The same two maps carry the frozen users' rows, so the set of users
that can still grow is the same too.  The even split is one per-server allocation with the
optimal ``G``; it is computed only when asked (``per_server=True``), the aggregated ``g`` is
``U x K`` instead of ``U x S``.  (A vertex of the per-server LP may place a user differently
on two identical servers; ``G``, the tasks and the per-type sums are what is unique.)

**Who is frozen.**  The level LP is ``max t`` s.t. the capacity rows, ``w_i t - G_i <= 0``
for the active users, ``G_i >= f_i`` for the frozen ones and ``G_i <= n_i d_i*``.  Its dual
has ``sum_i y_i w_i = 1`` over the active users' rows (the column of ``t``), so some active
``y_i > 0``; by complementary slackness such a row is tight in *every* optimal solution, i.e.
user i cannot exceed ``t w_i`` while the others keep their levels: it is frozen, exactly, without
a per-user LP.  An active user with ``y_i = 0`` stays active; if it cannot grow either, the next
level LP returns the same ``t`` and its dual freezes it.  Each LP freezes at least one user, so
there are at most ``U`` LPs and usually a handful (one per distinct level).

The constraint matrices are ``scipy.sparse`` (CSR, ``U K R + U K + U`` non-zeros);
every LP is solved by ``scipy.optimize.linprog(method=method)`` (deterministic).

Small LPs go to HiGHS's dual simplex (``method="highs"``); above ``IPM_COLUMNS`` columns (many
distinct servers: 2,000 x 100 users is 200,000) to its interior point method with crossover
(``"highs-ipm"``), which is several times faster on these highly degenerate LPs and still returns a
basic solution and its duals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mrfq.flows.errors import MrfqError, quote

REFINE = ("maxmin", "none")
#: a level row whose dual ``y_i w_i`` (the duals of the active rows sum to 1) exceeds this is frozen
DUAL_TOL = 1e-9
#: frozen users keep ``G_i >= f_i (1 - FROZEN_SLACK)`` (keeps the next LP feasible despite rounding)
FROZEN_SLACK = 1e-10
#: above this many (user, type) columns the LPs go to HiGHS's interior point method
IPM_COLUMNS = 20_000
#: at most this many (user, type) columns: 2,000 distinct servers x 100 users (200,000) take about half a
#: minute on two cores, and the interior point method's time grows faster than the columns
MAX_COLUMNS = 250_000


@dataclass(frozen=True, eq=False)
class DrfhAllocation:
    """tasks[U] (fractional), G[U] global dominant shares, level: the equalised g of (7),
    dstar[U] each user's global dominant demand ``max_r D_ir`` (share of the pool per task).

    Server types: ``type_capacity[K, R]`` (one server of the type, scenario units), ``type_count[K]``,
    ``server_type[S]`` the type of every server given; ``g_type[U, K]`` each user's global dominant
    share on each type (summed over its servers).  Per server (``per_server=True``, else None):
    ``g[U, S]`` and ``bundle[U, S, R]`` (resources given, scenario units), the type's share split
    evenly over its servers."""

    tasks: np.ndarray
    G: np.ndarray
    g: np.ndarray | None
    bundle: np.ndarray | None
    level: float
    dstar: np.ndarray
    g_type: np.ndarray
    type_capacity: np.ndarray
    type_count: np.ndarray
    server_type: np.ndarray

    def to_dict(self) -> dict:
        d = {"tasks": self.tasks.tolist(), "global_dominant_share": self.G.tolist(),
             "server_types": [{"capacity": c.tolist(), "count": int(n)}
                              for c, n in zip(self.type_capacity, self.type_count)],
             "per_type_tasks": (self.g_type / self.dstar[:, None]).tolist(), "level": self.level}
        if self.g is not None:
            d["per_server_tasks"] = (self.g / self.dstar[:, None]).tolist()
        return d


def _check(capacity, demand, weight, tasks_max, count=None):
    C = np.array(capacity, dtype=np.float64, ndmin=2)
    D = np.array(demand, dtype=np.float64, ndmin=2)
    if C.shape[1] != D.shape[1]:
        raise MrfqError(f"demand: has {D.shape[1]} resources, capacity {C.shape[1]}; they must match")
    if np.any(~np.isfinite(C)) or np.any(C < 0):
        raise MrfqError("capacity: every entry must be finite and >= 0")
    if np.any(~np.isfinite(D)) or np.any(D < 0):
        raise MrfqError("demand: every entry must be finite and >= 0")
    if count is None:
        N = np.ones(C.shape[0], dtype=np.int64)
    else:
        N = np.array(count, dtype=np.int64).reshape(-1)
        if N.shape[0] != C.shape[0] or np.any(N < 1):
            raise MrfqError(f"count: must have one whole number >= 1 per capacity row ({C.shape[0]})")
    T = (C * N[:, None]).sum(axis=0)
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
    M = np.full(U, np.inf) if tasks_max is None else np.array(tasks_max, dtype=np.float64).reshape(U)
    if np.any(M < 0) or np.any(np.isnan(M)):
        raise MrfqError(f"tasks_max = {M.tolist()}: must be >= 0 (inf for a backlogged user)")
    return C, N, D, W, M


def server_types(capacity, count=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Identical capacity rows merged: ``(type_capacity[K, R], type_count[K], server_type[S])``, types in
    order of first appearance; ``count[i]`` copies of row i (default 1 each); ``server_type`` maps every
    server (rows expanded by their counts, in order) to its type."""
    C = np.array(capacity, dtype=np.float64, ndmin=2)
    N = np.ones(C.shape[0], dtype=np.int64) if count is None else np.asarray(count, dtype=np.int64).reshape(-1)
    _, first, inv = np.unique(C, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    order = np.argsort(first, kind="stable")          # unique-row index -> type index by first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    row_type = rank[inv]
    K = order.shape[0]
    tcount = np.zeros(K, dtype=np.int64)
    np.add.at(tcount, row_type, N)
    return C[first[order]], tcount, np.repeat(row_type, N)


def drfh(capacity, demand, weight=None, tasks_max=None, *, refine: str = "maxmin", count=None,
         per_server: bool = True) -> DrfhAllocation:
    """The fluid DRFH allocation ([DRFH] eq. (7), weighted and with finite tasks per §V-A).

    ``capacity[S, R]``: one row per server, or per group of ``count[S]`` identical servers; identical
    rows are merged into one type either way (see the module docstring).  ``per_server``: also
    return the per-server split ``g`` and ``bundle`` (U x servers; off for large clusters)."""
    from scipy import sparse
    from scipy.optimize import linprog

    if refine not in REFINE:
        raise MrfqError(f"refine = {quote(refine)}: must be one of {', '.join(REFINE)}")
    C0, N0, Dem, W, M = _check(capacity, demand, weight, tasks_max, count)
    C, n, server_type = server_types(C0, N0)
    K, R = C.shape
    U = Dem.shape[0]
    T = (C * n[:, None]).sum(axis=0)
    Tsafe = np.where(T > 0, T, 1.0)
    c = C * n[:, None] / Tsafe                        # type capacity, share of the pool
    D = Dem / Tsafe
    dstar = D.max(axis=1)
    dbar = D / dstar[:, None]
    cap = M * dstar                                   # G_i <= n_i d_i*
    # a user cannot use a type lacking a resource it needs: no column for (i, k)
    if U * K > MAX_COLUMNS:
        raise MrfqError(f"capacity: {K:,} distinct server types x {U:,} users = {U * K:,} DRFH columns; at most "
                        f"{MAX_COLUMNS:,}; give identical servers the same capacity (one [[server]] table with count) "
                        "or allocate fewer users at once")
    usable = ~((dbar[:, None, :] > 0) & (c[None, :, :] <= 0)).any(axis=2)      # [U, K]
    fin = np.isfinite(cap)
    ncap = int(fin.sum())
    cap_row = np.cumsum(fin) - 1                      # user i's cap row, when fin[i]
    cols = usable
    method = "highs-ipm" if int(usable.sum()) > IPM_COLUMNS else "highs"

    def level_lp(active: np.ndarray, frozen_at: np.ndarray):
        """max t on the usable columns: capacity rows, cap rows, user rows (active: w_i t - G_i <= 0,
        frozen: -G_i <= -f_i (1 - slack)).  Returns (g[U, K], t, pi[K, R], y[U], nu[U])."""
        ui, ki = np.nonzero(cols)
        m = ui.shape[0]
        nv = m + 1
        # capacity rows k*R + r: sum_i g_ik dbar_ir <= c_kr
        jj, rr = np.nonzero(dbar[ui] > 0)
        rows = [ki[jj] * R + rr]
        cidx = [jj]
        vals = [dbar[ui[jj], rr]]
        nrow = K * R
        # cap rows: G_i <= cap_i
        cj = np.flatnonzero(fin[ui])
        rows.append(nrow + cap_row[ui[cj]])
        cidx.append(cj)
        vals.append(np.ones(cj.shape[0]))
        nrow += ncap
        # user rows: w_i t - G_i <= 0 (active) or -G_i <= -f_i (frozen)
        rows += [nrow + ui, nrow + np.arange(U)]
        cidx += [np.arange(m), np.full(U, m)]
        vals += [-np.ones(m), W * active]
        A = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cidx))),
                              shape=(nrow + U, nv))
        b = np.concatenate([c.reshape(-1), cap[fin], np.where(active, 0.0, -frozen_at * (1 - FROZEN_SLACK))])
        cost = np.zeros(nv)
        cost[-1] = -1.0
        res = linprog(cost, A_ub=A, b_ub=b, bounds=(0, None), method=method)
        if res.status != 0:
            raise RuntimeError(f"DRFH LP failed: {res.message}")
        dual = -np.asarray(res.ineqlin.marginals)     # >= 0
        pi = dual[:K * R].reshape(K, R)
        nu = np.zeros(U)
        nu[fin] = dual[K * R:K * R + ncap]
        y = dual[K * R + ncap:]
        g = np.zeros((U, K))
        g[ui, ki] = res.x[:-1]
        return g, float(res.x[-1]), pi, y, nu

    active = np.ones(U, dtype=bool)
    frozen_at = np.zeros(U)
    level = None
    g_type = None
    while active.any():
        g_type, t, _, y, _ = level_lp(active, frozen_at)
        if level is None:
            level = t
        if refine == "none":                          # (7): every user at the equalised level (caps kept)
            frozen_at[active] = np.minimum(W[active] * t, cap[active])
            break
        stuck = active & (y * W > DUAL_TOL)
        if not stuck.any():                           # numerical safety: freeze the largest dual
            stuck = np.zeros(U, dtype=bool)
            stuck[np.flatnonzero(active)[int(np.argmax((y * W)[active]))]] = True
        frozen_at[stuck] = W[stuck] * t
        active &= ~stuck
    # the last LP's placement meets every frozen share (minus the slack); rescaled so that G_i equals
    # the frozen share exactly (a capacity overshoot <= FROZEN_SLACK relative)
    G = g_type.sum(axis=1)
    g_type = g_type * np.divide(frozen_at, G, out=np.zeros(U), where=G > 0)[:, None]
    G = g_type.sum(axis=1)
    tasks = G / dstar
    g = bundle = None
    if per_server:
        g = g_type[:, server_type] / n[server_type][None, :]
        bundle = g[:, :, None] * dbar[:, None, :] * T[None, None, :]
    return DrfhAllocation(tasks=tasks, G=G, g=g, bundle=bundle, level=float(level), dstar=dstar,
                          g_type=g_type, type_capacity=C, type_count=n, server_type=server_type)

