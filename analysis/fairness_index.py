"""Fairness indices of the flows' normalised dominant shares: Jain's index and the max/min ratio.

[JCH] R. Jain, D.-M. Chiu, W. Hawe, *A quantitative measure of fairness and discrimination for
resource allocation in shared computer systems*, DEC-TR-301, 1984: for allocations ``x_1..x_n``,

    J(x) = (sum_i x_i)^2 / (n sum_i x_i^2),

1 when every ``x_i`` is equal, ``1/n`` when one flow has everything.  Here ``x_i`` is flow i's
*normalised dominant share*: its rate times its mean time at its dominant resource (the share of
that resource's time it gets), over its weight.  Weighted DRF equalises exactly these among the
flows that are not limited by their own demand, so J = 1 and max/min = 1 there.  Only the windowed
(greedy) static flows count: an open-loop flow's share is its demand's, and a class's flows come
and go (docs/relative-fairness.md, 'Fairness indices').
"""

from __future__ import annotations

import numpy as np


def fairness_indices(x) -> dict:
    """``{"jain", "max_min_ratio", "flows"}`` of the values ``x`` (normalised dominant shares >= 0):
    Jain's index (None with no flow, or when every share is 0) and the largest share over the
    smallest (None with fewer than one flow, or when the smallest is 0: infinite)."""
    v = np.asarray(x, dtype=np.float64)
    n = int(v.size)
    sq = float(np.sum(v * v))
    jain = float(np.sum(v)) ** 2 / (n * sq) if n and sq > 0.0 else None
    lo = float(v.min()) if n else 0.0
    ratio = float(v.max()) / lo if n and lo > 0.0 else None
    return {"jain": jain, "max_min_ratio": ratio, "flows": n}


def windowed_flows(sc) -> np.ndarray:
    """The static flow ids (in ``RunResult.flows`` order) of the scenario's windowed [[flow]] tables."""
    table = sc.static_spec()
    greedy = np.array([not f.open_loop for f in sc.flows], dtype=bool)
    return np.flatnonzero(greedy[table]) if len(table) else np.zeros(0, np.int64)


def normalised_dominant_shares(sc, rates, costs) -> np.ndarray:
    """``x_i`` of the windowed static flows: ``rates`` per static flow (packets per time unit),
    ``costs`` per [[flow]] table (its mean time at each resource: analysis.scorecard.flow_mean_costs)."""
    table = sc.static_spec()
    ids = windowed_flows(sc)
    dom = np.array([max(c) for c in costs], dtype=np.float64)
    w = np.array([f.weight for f in sc.flows], dtype=np.float64)
    k = table[ids]
    return np.asarray(rates, dtype=np.float64)[ids] * dom[k] / w[k]


def interval_indices(sc, rows: list[dict]) -> list[dict]:
    """Per scheduler and interval, the indices of the windowed tables' dominant shares in it
    (``rows``: analysis.scorecard's interval rows, a counted table's share summed over its flows:
    each of its flows counts with the table's mean), over the weights."""
    greedy = {(f.name if f.count == 1 else f"{f.name}.*"): f for f in sc.flows if not f.open_loop}
    out: dict = {}
    for r in rows:
        f = greedy.get(r["flow"])
        if f is None:
            continue
        key = (r["scheduler"], r["start"], r["end"])
        out.setdefault(key, []).extend([r["dominant_share"] / f.count / f.weight] * f.count)
    return [{"scheduler": s, "start": a, "end": b, **fairness_indices(x)} for (s, a, b), x in out.items()]


def ratio_text(ix: dict) -> str:
    """The max/min ratio as printed: ``inf`` where the smallest share is 0, ``-`` where undefined."""
    if ix["max_min_ratio"] is not None:
        return format(ix["max_min_ratio"], ".4g")
    return "inf" if ix["flows"] and ix["jain"] is not None else "-"


def text(ix: dict) -> str:
    """``Jain 0.9999, max/min 1.0002`` (``-`` where undefined, ``inf`` for a zero share)."""
    j = "-" if ix["jain"] is None else f"{ix['jain']:.4f}"
    return f"Jain {j}, max/min {ratio_text(ix)}"
