"""Batch-means accumulators: integrals and counts split over the batches of [warmup, T].

The run's post-warm-up span ``[warmup, T]`` is cut into ``B`` equal batches;
the engine adds each class's flows-in-system integral (:func:`add_area`) and
its departures (via :func:`batch_starts`) per batch, and
:mod:`analysis.batch_stats` turns the per-batch sums into estimates with
intervals.  The fluid path (:mod:`analysis.fluid_path`) uses the same
accumulator, so both sides split time identically.
"""

from __future__ import annotations

import numpy as np

from fq._jit import jit

INF = np.inf


@jit(inline="always")
def add_area(area, x, K, t0, t1, warmup, T, B):
    """Add x_k * |[t0, t1] ∩ batch b| to area[k, b] (batches split [warmup, T])."""
    if t1 <= warmup or t0 >= T or t1 <= t0:
        return
    blen = (T - warmup) / B
    lo = t0 if t0 > warmup else warmup
    b = int((lo - warmup) / blen)
    if b >= B:
        b = B - 1
    while b < B:
        b_lo = warmup + b * blen
        b_hi = T if b == B - 1 else warmup + (b + 1) * blen
        if b_lo >= t1:
            break
        a = t0 if t0 > b_lo else b_lo
        e = t1 if t1 < b_hi else b_hi
        if e > a:
            for k in range(K):
                area[k, b] += x[k] * (e - a)
        b += 1


@jit(inline="always")
def batch_index(t, warmup, T, B):
    """The batch of instant t, or -1 outside [warmup, T]."""
    if t < warmup or t > T:
        return -1
    b = int((t - warmup) / ((T - warmup) / B))
    if b >= B:
        b = B - 1
    return b


def batch_starts(warmup: float, T: float, B: int) -> np.ndarray:
    """``b_start[b]`` = the first instant t with ``batch_index(t) >= b`` (b = 0..B-1; ``b_start[B]``
    = inf), found by bisection over the doubles, so that moving a batch index along a
    non-decreasing clock gives exactly :func:`batch_index` without its two divisions per packet."""
    out = np.full(B + 1, INF)
    out[0] = warmup
    if not (T > warmup):
        return out

    def batch(t):  # batch_index for t in [warmup, T], the same floating-point operations
        return min(int((t - warmup) / ((T - warmup) / B)), B - 1)

    bits = lambda x: int(np.float64(x).view(np.int64))  # noqa: E731 - positive doubles order like their bits
    for b in range(1, B):
        lo, hi = bits(warmup), bits(T)  # batch(lo) < b <= batch(hi)
        if batch(T) < b:
            continue
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if batch(float(np.int64(mid).view(np.float64))) >= b:
                hi = mid
            else:
                lo = mid
        out[b] = float(np.int64(hi).view(np.float64))
    return out


def add_area_py(area, x, K, t0, t1, warmup, T, B):
    """Python twin of :func:`add_area` for the last piece of a run (called once)."""
    if t1 <= warmup or t0 >= T or t1 <= t0:
        return
    blen = (T - warmup) / B
    for b in range(B):
        b_lo = warmup + b * blen
        b_hi = T if b == B - 1 else warmup + (b + 1) * blen
        a = max(t0, b_lo)
        e = min(t1, b_hi)
        if e > a:
            area[:K, b] += x[:K] * (e - a)
