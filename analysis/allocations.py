"""Static multi-resource allocations: DRF, asset fairness, PF, CEEI and BMF.

The fluid model of docs/allocators.md ([BR] §2, [DRF] §4): resources ``j = 0..J-1`` of
capacity 1, transactions ``i = 0..n-1`` with requirement vectors
``a[i, j] >= 0`` (time units of resource j per unit of rate, e.g. the
processing time of one packet) and weights ``w[i] > 0``.  An allocation is a
rate vector ``phi`` (packets per time unit) with ``sum_i phi_i a_ij <= 1`` for
every j (docs/allocators.md, eq. (1)).  Resource j is *saturated* when equality holds.

Every public solver validates its input once, then returns an
:class:`Allocation`.  Only numpy is imported at module level so that
``mrfq alloc`` answers quickly; scipy is imported lazily and only by the BMF
enumeration when a linear system is singular (a possible continuum).

Tolerances: a resource counts as saturated when its usage is ``>= 1 - SAT_TOL``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from mrfq.flows.errors import MrfqError, quote

#: a resource is saturated when sum_i phi_i a_ij >= 1 - SAT_TOL
SAT_TOL = 1e-9
#: BMF continuum: which point to report (a choice; docs/allocators.md, 'BMF')
BMF_SELECT = ("maxmin", "maxsum")


@dataclass(frozen=True, eq=False)
class Allocation:
    """One allocation.

    phi        rate of each transaction (packets per time unit), shape (n,)
    saturated  indices of the saturated resources (usage >= 1 - SAT_TOL)
    unique     False when the objective admits a continuum of allocations (BMF, J >= 3)
    prices     Lagrange multipliers mu_j (PF, KKT (3)) or market prices p_j (CEEI); else None
    objective  its name in :data:`analysis.objectives.TABLE`
    """

    phi: np.ndarray
    saturated: tuple[int, ...]
    unique: bool
    prices: np.ndarray | None
    objective: str

    def to_dict(self) -> dict:
        d = {"phi": [float(v) for v in self.phi], "saturated": list(self.saturated),
             "unique": bool(self.unique)}
        if self.prices is not None:
            d["prices"] = [float(v) for v in self.prices]
        return d


# ---------------------------------------------------------------------------
# validation (the one gate)
# ---------------------------------------------------------------------------
def prepare(a, w=None) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert ``a`` (n x J) and ``w`` (n,) to contiguous float64 arrays."""
    try:
        A = np.array(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise MrfqError("a: must be a 2-D array of numbers (transactions x resources)") from None
    if A.ndim != 2 or A.shape[0] < 1 or A.shape[1] < 1:
        raise MrfqError(f"a: has shape {A.shape}; must be 2-D with at least one transaction and one resource")
    if not np.all(np.isfinite(A)):
        i, j = np.argwhere(~np.isfinite(A))[0]
        raise MrfqError(f"a[{i}, {j}] = {A[i, j]}: must be finite")
    if np.any(A < 0):
        i, j = np.argwhere(A < 0)[0]
        raise MrfqError(f"a[{i}, {j}] = {A[i, j]:g}: must be >= 0")
    zero = np.flatnonzero(A.max(axis=1) <= 0)
    if zero.size:
        raise MrfqError(f"a[{zero[0]}]: all zero; every transaction must use at least one resource")
    n = A.shape[0]
    if w is None:
        W = np.ones(n)
    else:
        try:
            W = np.array(w, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise MrfqError("w: must be a list of numbers, one weight per transaction") from None
        if W.shape != (n,):
            raise MrfqError(f"w: has {W.size} entries; must have {n}, one per transaction")
        bad = np.flatnonzero(~(np.isfinite(W) & (W > 0)))
        if bad.size:
            raise MrfqError(f"w[{bad[0]}] = {W[bad[0]]:g}: must be a finite number > 0")
    return np.ascontiguousarray(A), np.ascontiguousarray(W)


def usage(a, phi) -> np.ndarray:
    """Usage of each resource, ``sum_i phi_i a_ij``."""
    return np.asarray(phi, dtype=np.float64) @ np.asarray(a, dtype=np.float64)


def saturated_of(a, phi, tol: float = SAT_TOL) -> tuple[int, ...]:
    return tuple(int(j) for j in np.flatnonzero(usage(a, phi) >= 1.0 - tol))


def _alloc(a, phi, objective, *, unique=True, prices=None) -> Allocation:
    phi = np.asarray(phi, dtype=np.float64)
    phi.setflags(write=False)
    if prices is not None:
        prices = np.asarray(prices, dtype=np.float64)
        prices.setflags(write=False)
    return Allocation(phi=phi, saturated=saturated_of(a, phi), unique=bool(unique),
                      prices=prices, objective=objective)


# ---------------------------------------------------------------------------
# progressive filling: DRF and asset fairness
# ---------------------------------------------------------------------------
def progressive_filling(a: np.ndarray, w: np.ndarray, norm: np.ndarray, cap: np.ndarray | None = None) -> np.ndarray:
    """Weighted lexicographic max-min of the measure ``phi_i * norm_i / w_i``.

    Raise the level t of every unfrozen transaction together (``phi_i = t w_i / norm_i``)
    until a resource saturates; freeze every transaction using a saturated resource
    (``a_ij > 0``); repeat (docs/allocators.md, 'DRF').  With ``cap`` (rates; inf: none) a
    transaction also freezes when its rate reaches its cap ([DRF] §4, demand vectors).  Validated
    arrays only.
    """
    n, J = a.shape
    phi = np.zeros(n)
    frozen = np.zeros(n, dtype=bool) if cap is None else cap <= 0
    sat = np.zeros(J, dtype=bool)
    speed = w / norm
    while not frozen.all():
        act = ~frozen
        fixed = phi[frozen] @ a[frozen]
        slope = speed[act] @ a[act]
        ok = (slope > 0) & ~sat
        tj = np.full(J, np.inf)
        tj[ok] = (1.0 - fixed[ok]) / slope[ok]
        t = tj.min()
        if cap is None:
            phi[act] = t * speed[act]
        else:
            tcap = np.where(act, cap / speed, np.inf)
            t = min(t, tcap.min())
            phi[act] = np.minimum(t * speed[act], cap[act])
        newly = ok & (tj <= t * (1.0 + 1e-12))
        sat |= newly
        frz = act & (a[:, newly] > 0).any(axis=1)
        if cap is not None:
            frz |= act & (tcap <= t * (1.0 + 1e-12))
        frozen |= frz
    return phi


def drf(a, w=None) -> Allocation:
    """Dominant resource fairness ([DRF] §4; docs/allocators.md): weighted max-min of ``phi_i max_j a_ij``.

    Unique.  ``prices`` is None.
    """
    A, W = prepare(a, w)
    return _alloc(A, progressive_filling(A, W, A.max(axis=1)), "drf")


def drf_demands(a, demand, w=None) -> Allocation:
    """DRF with demands ([DRF] §4 (demand vectors); docs/allocators.md, 'DRF'): progressive filling of the
    weighted dominant shares ``phi_i max_j a_ij / w_i`` in which transaction i also freezes when its
    rate reaches ``demand[i]`` (packets per time unit; ``inf``: no cap).

    A transaction whose demand lies below its share gets its demand; the others share what it
    leaves.  So a capped transaction's rate is ``min(demand_i, DRF share with the caps)``, and with
    no finite demand this is :func:`drf`.

    >>> [round(x, 4) for x in drf_demands([[1.0, 0.25], [0.25, 1.0], [0.5, 0.5]],
    ...                                    [float("inf"), float("inf"), 0.1]).phi]
    [0.76, 0.76, 0.1]
    """
    A, W = prepare(a, w)
    D = np.array(demand, dtype=np.float64)
    if D.shape != (A.shape[0],):
        raise MrfqError(f"demand: has shape {D.shape}; must be one rate per transaction ({A.shape[0]})")
    if np.any(np.isnan(D)) or np.any(D < 0):
        i = int(np.flatnonzero(np.isnan(D) | (D < 0))[0])
        raise MrfqError(f"demand[{i}] = {D[i]:g}: must be >= 0 (inf: no cap)")
    return _alloc(A, progressive_filling(A, W, A.max(axis=1), D), "drf")


def asset_fairness(a, w=None) -> Allocation:
    """Asset fairness [DRF] §5.1: weighted max-min of ``phi_i sum_j a_ij`` (progressive filling)."""
    A, W = prepare(a, w)
    return _alloc(A, progressive_filling(A, W, A.sum(axis=1)), "asset")


# ---------------------------------------------------------------------------
# proportional fairness
# ---------------------------------------------------------------------------
def _pf_two(A: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PF for J = 2 (docs/allocators.md, 'PF'): with mu_1 + mu_2 = sum w, mu_1 minimises the convex dual
    ``g(m) = -sum_i w_i log(m a_i1 + (W - m) a_i2)`` on [0, W]; ``g'(m) = d_2 - d_1`` where
    ``d_j`` is the demand for resource j at ``phi_i = w_i / (m a_i1 + (W - m) a_i2)``.
    Endpoints are the single-bottleneck active sets (a), an interior root is case (b).
    """
    Wt = W.sum()
    a1, a2 = A[:, 0], A[:, 1]

    def h(m):  # d_1 - d_2, decreasing in m
        den = m * a1 + (Wt - m) * a2
        if np.any(den <= 0):
            return np.inf if m <= 0.5 * Wt else -np.inf
        phi = W / den
        return float(phi @ a1 - phi @ a2)

    if h(0.0) <= 0:
        m = 0.0
    elif h(Wt) >= 0:
        m = Wt
    else:
        lo, hi = 0.0, Wt
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if h(mid) > 0:
                lo = mid
            else:
                hi = mid
        m = 0.5 * (lo + hi)
    mu = np.array([m, Wt - m])
    return W / (A @ mu), mu


def _pf_barrier(A: np.ndarray, W: np.ndarray, t_final: float = 1e-13) -> np.ndarray:
    """Primal log-barrier path following (Newton in phi) for max sum w log phi s.t. A^T phi <= 1.

    Returns a strictly feasible point whose duality gap is ``<= J t_final sum w``.
    """
    n, J = A.shape
    Wt = W.sum()
    phi = 0.5 / (n * A.max(axis=1))  # usage <= 1/2
    t = Wt

    def F(p, t):
        s = 1.0 - p @ A
        if np.any(p <= 0) or np.any(s <= 0):
            return -np.inf
        return float(W @ np.log(p) + t * np.log(s).sum())

    while True:
        for _ in range(200):
            s = 1.0 - phi @ A
            g = W / phi - A @ (t / s)
            H = np.diag(W / phi ** 2) + (A * (t / s ** 2)) @ A.T
            try:
                d = np.linalg.solve(H, g)
            except np.linalg.LinAlgError:
                d = np.linalg.lstsq(H, g, rcond=None)[0]
            lam2 = float(g @ d)
            if lam2 <= 1e-20 * Wt:
                break
            alpha = 1.0
            neg = d < 0
            if neg.any():
                alpha = min(alpha, 0.99 * float(np.min(-phi[neg] / d[neg])))
            du = d @ A
            pos = du > 0
            if pos.any():
                alpha = min(alpha, 0.99 * float(np.min(s[pos] / du[pos])))
            f0 = F(phi, t)
            while alpha > 1e-16 and F(phi + alpha * d, t) < f0 + 0.25 * alpha * lam2:
                alpha *= 0.5
            if alpha <= 1e-16:
                break
            phi = phi + alpha * d
        if t <= t_final * Wt:
            return phi
        t = max(t * 0.1, t_final * Wt)


def _pf_polish(A, W, phi0, S) -> tuple[np.ndarray, np.ndarray] | None:
    """Newton on the KKT equations with active set S (equalities ``A_S^T phi = 1``).

    Returns ``(phi, mu)`` when the result satisfies all KKT conditions (feasible,
    ``mu >= 0``, stationarity), else None.  Linearly dependent active columns are
    dropped (their price is 0: degenerate vertex).
    """
    n, J = A.shape
    Wt = W.sum()
    S = list(S)
    for _ in range(2 * J + 2):
        # drop dependent columns (keep a maximal independent subset, greedy)
        keep: list[int] = []
        for j in S:
            M = A[:, keep + [j]]
            if np.linalg.matrix_rank(M, tol=1e-10 * max(1.0, np.abs(M).max())) == len(keep) + 1:
                keep.append(j)
        phi = phi0.copy()
        nu = np.zeros(len(keep))
        AS = A[:, keep]
        k = len(keep)
        for _ in range(60):
            r1 = W / phi - AS @ nu
            r2 = 1.0 - AS.T @ phi
            if max(np.abs(r1 * phi / W).max(), np.abs(r2).max() if k else 0.0) < 1e-15:
                break
            K = np.zeros((n + k, n + k))
            K[:n, :n] = np.diag(W / phi ** 2)
            K[:n, n:] = AS
            K[n:, :n] = AS.T
            rhs = np.concatenate([W / phi, r2])
            try:
                sol = np.linalg.solve(K, rhs)
            except np.linalg.LinAlgError:
                return None
            d, nu_new = sol[:n], sol[n:]
            alpha = 1.0
            neg = d < 0
            if neg.any():
                alpha = min(1.0, 0.9 * float(np.min(-phi[neg] / d[neg])))
            phi = phi + alpha * d
            nu = nu + alpha * (nu_new - nu) if alpha < 1 else nu_new
        if k:
            nu = np.linalg.lstsq(AS, W / phi, rcond=None)[0]
        u = phi @ A
        mu = np.zeros(J)
        mu[keep] = nu
        bad_mu = [keep[i] for i in range(k) if nu[i] < -1e-9 * Wt]
        over = [j for j in range(J) if j not in S and u[j] > 1.0 + 1e-12]
        if not bad_mu and not over:
            if np.abs(W / phi - A @ np.maximum(mu, 0)).max() > 1e-8 * np.abs(W / phi).max():
                return None
            return phi, np.maximum(mu, 0.0)
        if bad_mu:
            S.remove(min(bad_mu, key=lambda j: mu[j]))
        for j in over:
            S.append(j)
        S = sorted(set(S))
    return None


def _pf_general(A: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    phi = _pf_barrier(A, W)
    s = 1.0 - phi @ A
    for thr in (1e-5, 1e-7, 1e-3, 1e-9):
        res = _pf_polish(A, W, phi, [int(j) for j in np.flatnonzero(s < thr)])
        if res is not None:
            return res
    # fall back to the barrier point (gap <= J 1e-13 sum w); price estimate t / s
    return phi, (1e-13 * W.sum()) / np.maximum(s, 1e-300)


def pf(a, w=None, *, method: str = "auto") -> Allocation:
    """Proportional fairness ([BR] eqs. (3)-(5)): maximise ``sum_i w_i log phi_i`` s.t. (1).

    method: "auto" (closed form for J <= 2, else interior point), "closed" (J <= 2 only),
    "interior" (primal log-barrier Newton path following for any J, then an active-set
    Newton polish of the KKT system (3) that is verified before it is accepted).
    ``prices`` are the KKT multipliers ``mu_j`` (``w_i / phi_i = sum_j mu_j a_ij``); on a
    degenerate instance a saturated resource can have ``mu_j = 0``.  Unique.
    """
    A, W = prepare(a, w)
    J = A.shape[1]
    if method not in ("auto", "closed", "interior"):
        raise MrfqError(f"method = {quote(method)}: choose auto, closed or interior")
    if method == "closed" and J > 2:
        raise MrfqError(f"method = 'closed': only for 1 or 2 resources, got {J}")
    if J == 1 and method != "interior":
        mu = np.array([W.sum()])
        phi = W / (W.sum() * A[:, 0])
    elif J == 2 and method != "interior":
        phi, mu = _pf_two(A, W)
    else:
        phi, mu = _pf_general(A, W)
    return _alloc(A, phi, "pf", prices=mu)


# ---------------------------------------------------------------------------
# CEEI: a market computation
# ---------------------------------------------------------------------------
def ceei(a, w=None, *, iterations: int = 500) -> Allocation:
    """Competitive equilibrium from equal incomes (weighted: income ``w_i``).

    Transaction i spends its whole budget on its Leontief bundle: at prices ``p``
    it buys ``phi_i = w_i / (a_i . p)``.  Prices clear the markets: demand
    ``d_j(p) = sum_i phi_i a_ij <= 1`` with equality where ``p_j > 0``.

    Computed as a market, independently of :func:`pf`: proportional-response
    price updates ``p_j <- p_j d_j(p)`` (the total price ``sum p = sum w`` is
    conserved; it is the EM iteration for ``max sum_i w_i log(a_i . p)`` over that
    simplex, Eisenberg–Gale's dual), then Newton's method on the excess demand of
    the priced goods, adding or dropping goods until every market clears.  For
    Leontief demands the equilibrium equals PF (a test checks it).
    """
    A, W = prepare(a, w)
    n, J = A.shape
    Wt = W.sum()
    p = np.full(J, Wt / J)
    for _ in range(iterations):
        d = (W / (A @ p)) @ A
        p = p * d
    S = [int(j) for j in np.flatnonzero(p > 1e-6 * Wt)]
    for _ in range(4 * J + 4):
        q = np.zeros(J)
        q[S] = p[S]
        for _ in range(100):
            spend = A @ q
            phi = W / spend
            ex = (phi @ A)[S] - 1.0
            if np.abs(ex).max() < 1e-15:
                break
            # Jacobian of excess demand w.r.t. p_S: -A_S^T diag(w / spend^2) A_S
            Jm = -(A[:, S] * (W / spend ** 2)[:, None]).T @ A[:, S]
            step = np.linalg.lstsq(Jm, -ex, rcond=None)[0]
            alpha = 1.0
            # keep every budget-spending denominator positive and prices non-negative
            while alpha > 1e-12:
                qn = q.copy()
                qn[S] = q[S] + alpha * step
                if np.all(A @ qn > 0) and np.abs((W / (A @ qn)) @ A[:, S] - 1.0).max() <= np.abs(ex).max():
                    break
                alpha *= 0.5
            if alpha <= 1e-12:
                break
            q = qn
        phi = W / (A @ q)
        dem = phi @ A
        neg = [j for j in S if q[j] < -1e-12 * Wt]
        cleared = not S or np.abs(dem[S] - 1.0).max() <= 1e-10
        over = [j for j in range(J) if j not in S and dem[j] > 1.0 + 1e-12]
        if not neg and cleared and not over:
            return _alloc(A, phi, "ceei", prices=np.maximum(q, 0.0))
        if neg:
            S.remove(min(neg, key=lambda j: q[j]))
            p = np.maximum(q, 0.0)
        elif not cleared:
            # the priced goods cannot all clear: the least demanded one must be free
            S.remove(min(S, key=lambda j: dem[j]))
            p = np.maximum(q, 0.0)
        else:
            S = sorted(set(S) | set(over))
            p = np.maximum(q, 0.0)
            p[over] = 1e-3 * Wt
    raise MrfqError("ceei: the price computation did not converge; please report this instance")


# ---------------------------------------------------------------------------
# bottleneck max fairness
# ---------------------------------------------------------------------------
def is_bmf(a, phi, w=None, tol: float = 1e-9) -> bool:
    """BMF ([BR] eqs. (6)-(7)): feasible, and every i has a saturated j with ``a_ij > 0`` on which its
    weighted share ``phi_i a_ij / w_i`` is the largest (up to ``tol``, relative)."""
    A, W = prepare(a, w)
    phi = np.asarray(phi, dtype=np.float64)
    if phi.shape != (A.shape[0],) or np.any(phi < 0):
        return False
    u = phi @ A
    if np.any(u > 1.0 + tol):
        return False
    sat = u >= 1.0 - tol
    share = phi[:, None] * A / W[:, None]
    top = share.max(axis=0)
    ok = (A > 0) & sat[None, :] & (share >= top[None, :] * (1.0 - tol) - tol)
    return bool(ok.any(axis=1).all())


def _bmf_classes(A, W, x, *, select="maxmin", max_maps=1 << 16):
    """Enumerate maps class -> resource (docs/allocators.md, 'BMF') on grouped classes.

    Class k has ``x[k]`` identical transactions with vector ``A[k]`` and weight ``W[k]``.
    Returns (phi per transaction of each class, unique).
    """
    K, J = A.shape
    cand = [np.flatnonzero(A[k] > 0) for k in range(K)]
    nmaps = int(np.prod([len(c) for c in cand], dtype=float))
    if nmaps > max_maps:
        raise MrfqError(
            f"bmf: {K} distinct transactions on {J} resources need {nmaps} maps; "
            f"the exact enumeration allows at most {max_maps} (group identical transactions)")
    sols: list[np.ndarray] = []
    continuum = False
    tol = 1e-10
    for m in itertools.product(*cand):
        U = sorted(set(int(j) for j in m))
        pos = {j: r for r, j in enumerate(U)}
        B = np.zeros((K, len(U)))  # phi = B s, s = weighted share level on each used resource
        for k in range(K):
            B[k, pos[m[k]]] = W[k] / A[k, m[k]]
        M = (A[:, U].T * x) @ B  # saturation of used resources: M s = 1
        # inequality rows G s <= h : feasibility of unused resources, maximality
        G, h = [], []
        for j in range(J):
            if j not in pos:
                G.append((A[:, j] * x) @ B)
                h.append(1.0)
        for j in U:
            for l in range(K):
                if A[l, j] > 0:
                    row = (A[l, j] / W[l]) * B[l].copy()
                    row[pos[j]] -= 1.0
                    G.append(row)
                    h.append(0.0)
        G = np.array(G).reshape(-1, len(U))
        h = np.array(h)
        sv = np.linalg.svd(M, compute_uv=False)
        if sv.min() > 1e-10 * sv.max():
            s = np.linalg.solve(M, np.ones(len(U)))
            if np.all(s > 0) and np.all(G @ s <= h + tol * (1 + np.abs(G).sum(axis=1) * s.max())):
                sols.append(B @ s)
            continue
        # singular: a polytope of solutions, possibly a continuum; LP (lazy scipy import)
        from scipy.optimize import linprog

        nU = len(U)
        # variables (s, t); maximise t (maxmin of phi/w) or sum phi
        Ae = np.hstack([M, np.zeros((nU, 1))])
        Gi = np.hstack([G, np.zeros((G.shape[0], 1))])
        Gt = np.hstack([-(B / W[:, None]), np.ones((K, 1))])  # t <= phi_k / w_k
        Aub = np.vstack([Gi, Gt])
        bub = np.concatenate([h, np.zeros(K)])
        bounds = [(0, None)] * nU + [(None, None)]
        if select == "maxmin":
            c = np.zeros(nU + 1)
            c[-1] = -1.0
        else:
            c = np.concatenate([-(x @ B), [0.0]])
        res = linprog(c, A_ub=Aub, b_ub=bub, A_eq=Ae, b_eq=np.ones(nU), bounds=bounds, method="highs")
        if res.status != 0:
            continue
        s = res.x[:nU]
        sols.append(B @ s)
        # continuum iff some share level can move within the polytope
        for r in range(nU):
            e = np.zeros(nU + 1)
            e[r] = 1.0
            lo = linprog(e, A_ub=Aub, b_ub=bub, A_eq=Ae, b_eq=np.ones(nU), bounds=bounds, method="highs")
            hi = linprog(-e, A_ub=Aub, b_ub=bub, A_eq=Ae, b_eq=np.ones(nU), bounds=bounds, method="highs")
            if lo.status == 0 and hi.status == 0 and (-hi.fun - lo.fun) > 1e-9 * max(1.0, -hi.fun):
                continuum = True
                break
    if not sols:
        raise MrfqError("bmf: no bottleneck max fair allocation found; please report this instance")
    distinct: list[np.ndarray] = []
    for s in sols:
        if not any(np.allclose(s, d, rtol=1e-8, atol=1e-12) for d in distinct):
            distinct.append(s)
    if select == "maxmin":
        key = lambda p: (round(float((p / W).min()), 12), float(x @ p))  # noqa: E731
    else:
        key = lambda p: (round(float(x @ p), 12), float((p / W).min()))  # noqa: E731
    best = max(distinct, key=key)
    return best, (len(distinct) == 1 and not continuum)


def bmf(a, w=None, *, select: str = "maxmin", max_maps: int = 1 << 16) -> Allocation:
    """Bottleneck max fairness ([BR] eqs. (6)-(7)) by exact enumeration of bottleneck maps.

    Identical transactions (same vector and weight) are grouped first; BMF gives them
    equal rates.  For J = 2 the allocation is unique.  For J >= 3 the BMF set can be a
    continuum; then ``unique=False`` and the reported point is chosen by ``select``
    (a choice; docs/allocators.md, 'BMF'): "maxmin" = the BMF point with the largest ``min_i phi_i / w_i``
    (default), "maxsum" = the one with the largest total rate.
    """
    A, W = prepare(a, w)
    if select not in BMF_SELECT:
        raise MrfqError(f"select = {quote(select)}: choose one of {', '.join(BMF_SELECT)}")
    keys, inv, counts = np.unique(np.column_stack([A, W]), axis=0, return_inverse=True,
                                  return_counts=True)
    inv = inv.reshape(-1)
    phic, unique = _bmf_classes(np.ascontiguousarray(keys[:, :-1]), np.ascontiguousarray(keys[:, -1]),
                                counts.astype(np.float64), select=select, max_maps=max_maps)
    return _alloc(A, phic[inv], "bmf", unique=unique)
