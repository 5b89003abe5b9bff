"""Per-state allocations for the flow-level Markov model, vectorised over many states.

In state ``x = (x_1..x_K)`` there are ``x_k`` identical flows of class k (vector
``a_k``, weight ``w_k``).  Every objective gives them equal per-flow rates
``phi_k(x)``, and the class-level problem is the static one with class weights
``x_k w_k`` (docs/allocators.md).  This module computes ``phi_k(x)`` (packets per
time unit per flow; 0 where ``x_k = 0``) for a whole array of states:

* DRF (and asset fairness): progressive filling by class groups, any J (numba);
* PF: for J <= 2 the closed form of docs/allocators.md, 'PF' — mu_1 + mu_2 =
  sum_k x_k w_k and mu_1 the root of the monotone ``d_1(mu) - d_2(mu)``, by safeguarded Newton
  (numba); for J >= 3 a Python loop over :func:`analysis.allocations.pf`;
* BMF: for J <= 2 the enumeration of bottleneck maps of docs/allocators.md, 'BMF'
  (at most 2^K maps, 2x2 systems; unique for J = 2) in numba; for J >= 3 a Python loop over
  :func:`analysis.allocations.bmf` (slow; the reported point of a continuum is
  its "maxmin" choice).

Kernels see arrays and scalars only ([STYLE] wrapper + kernel); the wrapper
:func:`state_rates` validates and allocates.  A million states take about a
second for J = 2 after compilation.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from mrfq.analysis import allocations as _alloc
from mrfq.analysis import objectives
from mrfq.analysis.objectives import S_ASSET, S_DRF, S_PF
from mrfq.flows.errors import MrfqError
from mrfq.fq._jit import (
    jit,  # the project's numba flags (cache by MRFQ_NUMBA_CACHE, fastmath off)
)


@jit
def drf_state(x, a, w, norm, out):
    """Progressive filling for one state (docs/allocators.md, 'DRF'), measure ``phi_k norm_k / w_k``.

    x (K,) flows per class, a (K, J) time units per packet, w (K,) weights,
    norm (K,) max_j a_kj for DRF or sum_j a_kj for asset fairness; out (K,) per-flow rates.
    """
    K, J = a.shape
    frozen = np.zeros(K, dtype=np.bool_)
    sat = np.zeros(J, dtype=np.bool_)
    fixed = np.zeros(J)
    slope = np.zeros(J)
    for k in range(K):
        out[k] = 0.0
        if x[k] <= 0:
            frozen[k] = True
    for _ in range(K + 1):
        n_act = 0
        for k in range(K):
            if not frozen[k]:
                n_act += 1
        if n_act == 0:
            break
        t = np.inf
        for j in range(J):
            slope[j] = 0.0
            if sat[j]:
                continue
            for k in range(K):
                if not frozen[k]:
                    slope[j] += x[k] * w[k] / norm[k] * a[k, j]
            if slope[j] > 0:
                tj = (1.0 - fixed[j]) / slope[j]
                if tj < t:
                    t = tj
        for j in range(J):
            if not sat[j] and slope[j] > 0 and (1.0 - fixed[j]) / slope[j] <= t * (1.0 + 1e-12):
                sat[j] = True
        for k in range(K):
            if not frozen[k]:
                out[k] = t * w[k] / norm[k]
        for k in range(K):
            if frozen[k]:
                continue
            hit = False
            for j in range(J):
                if sat[j] and a[k, j] > 0:
                    hit = True
            if hit:
                frozen[k] = True
                for j in range(J):
                    fixed[j] += x[k] * out[k] * a[k, j]


@jit
def _pf2_h(m, x, a, w, Wt):
    """d_1 - d_2 and its derivative at mu = (m, Wt - m), class weights x_k w_k."""
    h = 0.0
    dh = 0.0
    for k in range(x.shape[0]):
        if x[k] <= 0:
            continue
        den = m * a[k, 0] + (Wt - m) * a[k, 1]
        if den <= 0:
            return (np.inf if m < 0.5 * Wt else -np.inf), 0.0
        c = x[k] * w[k] * (a[k, 0] - a[k, 1])
        h += c / den
        dh -= c * (a[k, 0] - a[k, 1]) / (den * den)
    return h, dh


@jit
def pf2_state(x, a, w, out):
    """PF for one state with J <= 2 (closed form of docs/allocators.md, 'PF'; safeguarded Newton on mu_1)."""
    K, J = a.shape
    Wt = 0.0
    for k in range(K):
        out[k] = 0.0
        if x[k] > 0:
            Wt += x[k] * w[k]
    if Wt <= 0:
        return
    if J == 1:
        for k in range(K):
            if x[k] > 0:
                out[k] = w[k] / (Wt * a[k, 0])
        return
    h0, _ = _pf2_h(0.0, x, a, w, Wt)
    hW, _ = _pf2_h(Wt, x, a, w, Wt)
    if h0 <= 0:
        m = 0.0
    elif hW >= 0:
        m = Wt
    else:
        lo = 0.0
        hi = Wt
        m = 0.5 * Wt
        for _ in range(200):
            h, dh = _pf2_h(m, x, a, w, Wt)
            if h == 0:
                break
            if h > 0:
                lo = m
            else:
                hi = m
            if hi - lo <= 4e-16 * Wt:
                break
            mn = m - h / dh if dh < 0 else -1.0
            if not (lo < mn < hi):
                mn = 0.5 * (lo + hi)
            if abs(mn - m) <= 1e-16 * Wt:
                m = mn
                break
            m = mn
    for k in range(K):
        if x[k] > 0:
            out[k] = w[k] / (m * a[k, 0] + (Wt - m) * a[k, 1])


@jit
def _solve_small(A, r, n, out):
    """Solve the leading n x n block of A x = r in place (Gaussian elimination, partial pivoting).

    A and r are overwritten; False when (numerically) singular.
    """
    scale = 0.0
    for i in range(n):
        for j in range(n):
            scale = max(scale, abs(A[i, j]))
    for c in range(n):
        p = c
        for i in range(c + 1, n):
            if abs(A[i, c]) > abs(A[p, c]):
                p = i
        if abs(A[p, c]) <= 1e-12 * scale:
            return False
        if p != c:
            for j in range(n):
                A[c, j], A[p, j] = A[p, j], A[c, j]
            r[c], r[p] = r[p], r[c]
        for i in range(c + 1, n):
            f = A[i, c] / A[c, c]
            for j in range(c, n):
                A[i, j] -= f * A[c, j]
            r[i] -= f * r[c]
    for i in range(n - 1, -1, -1):
        s = r[i]
        for j in range(i + 1, n):
            s -= A[i, j] * out[j]
        out[i] = s / A[i, i]
    return True


@jit
def bmf_state(x, a, w, out):
    """BMF for one state by enumerating bottleneck maps (docs/allocators.md, 'BMF'); out = NaN if none found.

    Class k with x_k > 0 is mapped to a resource m(k) with a_{k m(k)} > 0; weighted shares
    ``phi_k a_km / w_k`` are equal (= s_j) among classes mapped to j; used resources are
    saturated (a |U| x |U| system); feasibility and maximality are then checked.  Among
    several solutions the one with the largest min_k phi_k / w_k is kept.
    """
    K, J = a.shape
    tol = 1e-10
    m = np.zeros(K, dtype=np.int64)
    for k in range(K):
        out[k] = np.nan
    present = 0
    for k in range(K):
        if x[k] > 0:
            present += 1
    if present == 0:
        for k in range(K):
            out[k] = 0.0
        return
    # first valid map
    for k in range(K):
        m[k] = -1
        if x[k] > 0:
            for j in range(J):
                if a[k, j] > 0:
                    m[k] = j
                    break
    best = -1.0
    phi = np.zeros(K)
    pos = np.zeros(J, dtype=np.int64)
    U = np.zeros(J, dtype=np.int64)
    M = np.zeros((J, J))
    rhs = np.zeros(J)
    s = np.zeros(J)
    while True:
        # used resources
        nU = 0
        for j in range(J):
            pos[j] = -1
        for k in range(K):
            if x[k] > 0 and pos[m[k]] < 0:
                pos[m[k]] = 0
        for j in range(J):
            if pos[j] == 0:
                pos[j] = nU
                U[nU] = j
                nU += 1
        for r in range(nU):
            rhs[r] = 1.0
            for c in range(nU):
                M[r, c] = 0.0
        for r in range(nU):
            j = U[r]
            for k in range(K):
                if x[k] > 0:
                    M[r, pos[m[k]]] += x[k] * a[k, j] * w[k] / a[k, m[k]]
        if _solve_small(M, rhs, nU, s):
            ok = True
            for r in range(nU):
                if s[r] <= 0:
                    ok = False
            if ok:
                for k in range(K):
                    phi[k] = w[k] * s[pos[m[k]]] / a[k, m[k]] if x[k] > 0 else 0.0
                for j in range(J):
                    u = 0.0
                    for k in range(K):
                        u += x[k] * phi[k] * a[k, j]
                    if u > 1.0 + tol:
                        ok = False
                for j in range(J):
                    if pos[j] < 0 or not ok:
                        continue
                    lvl = s[pos[j]]
                    for k in range(K):
                        if x[k] > 0 and phi[k] * a[k, j] / w[k] > lvl * (1.0 + tol):
                            ok = False
                if ok:
                    mn = np.inf
                    for k in range(K):
                        if x[k] > 0:
                            mn = min(mn, phi[k] / w[k])
                    if mn > best * (1.0 + 1e-12):
                        best = mn
                        for k in range(K):
                            out[k] = phi[k]
        # next map (mixed radix over resources with a_kj > 0)
        k = 0
        while k < K:
            if x[k] <= 0:
                k += 1
                continue
            j = m[k] + 1
            while j < J and a[k, j] <= 0:
                j += 1
            if j < J:
                m[k] = j
                break
            j = 0
            while a[k, j] <= 0:
                j += 1
            m[k] = j
            k += 1
        if k >= K:
            break
    for k in range(K):
        if x[k] <= 0 and best >= 0:
            out[k] = 0.0


@jit
def rates_kernel(code, X, a, w, norm, out):
    """Per-flow rates for every row of X (S, K) into out (S, K); ``code`` is an objective's
    ``state_code`` (:data:`analysis.objectives.TABLE`)."""
    S = X.shape[0]
    x = np.zeros(X.shape[1])
    for i in range(S):
        for k in range(X.shape[1]):
            x[k] = X[i, k]
        state_phi(code, x, a, w, norm, out[i])


#: :func:`state_rates` on at least this many states runs :func:`rates_kernel_parallel`
PARALLEL_STATES = 1 << 16


@jit(parallel=True)
def rates_kernel_parallel(code, X, a, w, norm, out):
    """:func:`rates_kernel` on chunks of rows in parallel (numba ``prange``); every state is
    computed alone, so the rates are those of the sequential kernel, bit for bit (the Markov
    model's region solves take the rates of millions of states)."""
    S = X.shape[0]
    chunk = 4096
    for c in prange((S + chunk - 1) // chunk):
        x = np.zeros(X.shape[1])
        for i in range(c * chunk, min(S, (c + 1) * chunk)):
            for k in range(X.shape[1]):
                x[k] = X[i, k]
            state_phi(code, x, a, w, norm, out[i])


@jit(inline="always")
def state_phi(code, x, a, w, norm, out):
    """Per-flow rates in one state for the objective whose ``state_code`` is ``code``
    (:data:`analysis.objectives.TABLE`; the named constants are compile-time constants here):
    the one dispatch used by the vectorised rates, the Markov simulation and the fluid path."""
    if code == S_DRF or code == S_ASSET:
        drf_state(x, a, w, norm, out)
    elif code == S_PF:
        pf2_state(x, a, w, out)
    else:
        bmf_state(x, a, w, out)


def _python_state(objective, x, a, w):
    pres = np.flatnonzero(x > 0)
    out = np.zeros(x.shape[0])
    if pres.size == 0:
        return out
    tot = objectives.TABLE[objective].allocate(a[pres], x[pres] * w[pres]).phi  # class totals with class weights x_k w_k
    out[pres] = tot / x[pres]
    return out


def kernel_norm(objective: str, a: np.ndarray) -> np.ndarray:
    """The progressive-filling measure's normaliser ``norm_k`` of :func:`drf_state`:
    ``sum_j a_kj`` for asset fairness, ``max_j a_kj`` otherwise (unused by PF/BMF)."""
    return a.sum(axis=1) if objective == "asset" else a.max(axis=1)


def state_rates(objective: str, X, a, w=None) -> np.ndarray:
    """Per-flow rates ``phi_k(x)`` for every state (row) of ``X``.

    objective  one of :data:`analysis.objectives.STATE` (drf, pf, bmf, asset)
    X          (S, K) flows per class (non-negative integers or floats)
    a          (K, J) requirement vectors (time units per packet at each resource)
    w          (K,) class weights (default 1)
    Returns an (S, K) float64 array of packets per time unit per flow (0 where x_k = 0).
    """
    obj = objectives.get(objective, objectives.STATE)
    A, W = _alloc.prepare(a, w)
    X = np.ascontiguousarray(np.atleast_2d(np.asarray(X, dtype=np.float64)))
    K, J = A.shape
    if X.shape[1] != K:
        raise MrfqError(f"X: has {X.shape[1]} columns; must have {K}, one per class")
    if np.any(X < 0):
        raise MrfqError("X: flow counts must be >= 0")
    out = np.zeros(X.shape)
    if objectives.kernel_handles(objective, J):
        kern = rates_kernel_parallel if X.shape[0] >= PARALLEL_STATES else rates_kernel
        kern(obj.state_code, X, A, W, np.ascontiguousarray(kernel_norm(objective, A)), out)
        bad = np.flatnonzero(np.isnan(out).any(axis=1))
    else:
        bad = np.arange(X.shape[0])
    for i in bad:  # J >= 3, or a BMF state the kernel could not settle
        out[i] = _python_state(objective, X[i], A, W)
    return out
