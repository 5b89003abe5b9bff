"""Delay estimates from a run's histograms: mean with a batch-means interval, quantiles, max.

The engine (router/delays.py) fills, per row (a static flow, or a [[flow]] table when there are
more than ``router.delays.PER_FLOW_MAX`` static flows, then a class), one log-bucket histogram of
the wait at each resource and one of the sojourn, plus per batch the sum and count of the
sojourns (by departure).  Here, per row:

* ``mean``: sum of sojourns / their number over the ``run.batches`` batches, with the
  delta-method t-interval at ``run.confidence`` of :func:`analysis.batch_stats.ratio_ci`
  (a ratio estimator: batches hold different numbers of packets);
* ``p50``, ``p90``, ``p99``, ``p999``: the midpoint of the bucket holding the sample quantile
  (the smallest value with at least ``ceil(q n)`` values at or below it), capped at the exact
  maximum: relative error below ``router.delays.REL_ERROR`` (0.8 %);
* ``max``: exact.

Time units throughout.
"""

from __future__ import annotations

import math

import numpy as np

from mrfq.analysis.batch_stats import ratio_ci

QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999))


def quantile(counts: np.ndarray, lo: np.ndarray, hi: np.ndarray, q: float, vmax: float) -> float:
    """The q-quantile of the values a histogram holds (nan when it is empty)."""
    n = int(counts.sum())
    if n == 0:
        return math.nan
    r = max(1, math.ceil(q * n))
    i = int(np.searchsorted(np.cumsum(counts), r, side="left"))
    if i == 0:
        return 0.0  # below the smallest resolved delay (a wait of zero, mostly)
    return float(min(0.5 * (lo[i] + hi[i]), vmax))


def summary(counts: np.ndarray, lo: np.ndarray, hi: np.ndarray, vmax: float, sums: np.ndarray | None = None,
            nums: np.ndarray | None = None, confidence: float = 0.95) -> dict:
    """``{"mean", "ci", "p50", "p90", "p99", "p999", "max", "packets"}`` of one histogram; the mean and its
    interval from per-batch sums (``sums``, ``nums``) when given, else from the bucket midpoints (no
    interval)."""
    n = int(counts.sum())
    if sums is not None:
        m, a, b = ratio_ci(sums, nums, confidence)
    elif n:
        mid = 0.5 * (lo + hi)
        mid[0] = 0.0
        m, a, b = float((counts * mid).sum()) / n, math.nan, math.nan
    else:
        m = a = b = math.nan
    out = {"mean": m, "ci": [a, b]}
    for name, q in QUANTILES:
        out[name] = quantile(counts, lo, hi, q, vmax)
    out["max"] = float(vmax) if n else math.nan
    out["packets"] = n
    return out


def row_delays(dh, confidence: float = 0.95) -> list[dict]:
    """The sojourn summary of every row of ``dh`` (a router.run.DelayHistograms)."""
    lo, hi = dh.edges
    J = dh.hist.shape[1] - 1
    return [summary(dh.hist[r, J], lo, hi, dh.dmax[r], dh.dsum[r], dh.dcnt[r], confidence)
            for r in range(len(dh.rows))]


def wait_summaries(dh, resources) -> list[dict]:
    """Per row, ``{resource: summary of the wait there}`` (means from the buckets' midpoints; the
    max is the upper edge of the highest non-empty bucket: the engine keeps no exact wait maximum)."""
    lo, hi = dh.edges
    out = []
    for r in range(len(dh.rows)):
        row = {}
        for j, name in enumerate(resources):
            nz = np.flatnonzero(dh.hist[r, j])
            row[name] = summary(dh.hist[r, j], lo, hi, float(hi[nz[-1]]) if len(nz) else math.nan)
        out.append(row)
    return out


def write_csv(f, dh, resources) -> int:
    """The histograms as CSV rows ``row,kind,measure,lower,upper,count`` (non-empty buckets only;
    ``kind`` flow, table or class; ``measure`` sojourn or wait:<resource>; bucket edges in time
    units, the first bucket ``[0, lower edge of the next)``).  Returns the number of rows."""
    lo, hi = dh.edges
    J = dh.hist.shape[1] - 1
    f.write("row,kind,measure,lower,upper,count\n")
    n = 0
    for r, name in enumerate(dh.rows):
        kind = ("flow" if dh.per_flow else "table") if r < dh.n_static_rows else "class"
        for j in range(J + 1):
            measure = "sojourn" if j == J else f"wait:{resources[j]}"
            for i in np.flatnonzero(dh.hist[r, j]).tolist():
                f.write(f"{name},{kind},{measure},{float(lo[i])!r},{float(hi[i])!r},{int(dh.hist[r, j, i])}\n")
                n += 1
    return n
