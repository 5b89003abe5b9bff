"""Estimates from one run's raw batch sums: each class's gamma with its interval.

The runner (:func:`router.run.simulate`) does no statistics: it returns, per
class and batch, the packets that left and the integral of the number of flows
in the system (and the completed flows' sizes and completion times).  Here:

* ``run.gamma_method = "little"``: gamma_k = class packets served / integral of
  class-k flows in system (Little: gamma_k = rho_k / E[x_k]);
* ``"completions"``: sum of sizes / sum of completion times of the flows that
  arrived after warm-up;

both as ratio estimators over the ``run.batches`` batch means with a delta-method
t-interval at ``run.confidence`` (:func:`analysis.batch_stats.ratio_ci`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mrfq.analysis.batch_stats import ratio_ci
from mrfq.analysis.delay_stats import row_delays


@dataclass(frozen=True)
class ClassEstimate:
    name: str
    gamma: float            # mean service rate, packets per time unit (nan: no data after warm-up)
    ci: tuple[float, float]
    method: str


def class_estimates(r) -> list[ClassEstimate]:
    """gamma and its interval for every class of the run ``r`` (a router.run.RunResult)."""
    run = r.scenario.run
    B, conf = run.batches, run.confidence
    out = []
    for k, c in enumerate(r.classes):
        if run.gamma_method == "little":
            g, lo, hi = ratio_ci(r.batches["departed"][k], r.batches["area"][k], conf)
            method = (f"little: class packets served / integral of flows in system, {B} batch means, "
                      f"t-interval {conf:g}")
        else:
            g, lo, hi = ratio_ci(r.batches["done_packets"][k], r.batches["done_time"][k], conf)
            method = (f"completions: sum of sizes / sum of completion times of flows arrived after warm-up, "
                      f"{B} batch means, t-interval {conf:g}")
        out.append(ClassEstimate(c.name, g, (lo, hi), method))
    return out


def _null(v):
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


DELAY_KEYS = ("mean", "ci", "p50", "p90", "p99", "p999", "max")


def _delay_json(s: dict) -> dict:
    return {k: [_null(x) for x in s[k]] if k == "ci" else _null(s[k]) for k in DELAY_KEYS}


def run_fairness(r) -> dict:
    """Jain's index and the max/min ratio of the run's windowed flows' normalised dominant shares
    (analysis.fairness_index)."""
    from mrfq.analysis import fairness_index as fi
    from mrfq.analysis.scorecard import flow_mean_costs

    sc = r.scenario
    return fi.fairness_indices(fi.normalised_dominant_shares(sc, r.flows.rate, flow_mean_costs(sc)))


def run_json(r) -> dict:
    """``r.to_json()`` with each class's gamma, interval and method (null where undefined), the
    fairness indices of the windowed flows (``fairness``: ``jain``, ``max_min_ratio``, ``flows``),
    and on each flow and class its sojourn ``delay`` (:mod:`analysis.delay_stats`; with more than
    ``router.delays.PER_FLOW_MAX`` static flows a flow's is its [[flow]] table's)."""
    d = r.to_json()
    rc = r.scenario.router
    d["schedule_at"] = rc.schedule_at
    d["stage_buffer"] = None if rc.stage_buffer is None else list(rc.stage_buffer)
    for c, e in zip(d["classes"], class_estimates(r)):
        c.update(gamma=_null(e.gamma), ci=[_null(e.ci[0]), _null(e.ci[1])], method=e.method)
    d["fairness"] = run_fairness(r)
    dh = r.delays
    if dh is not None:
        rows = [_delay_json(s) for s in row_delays(dh, r.scenario.run.confidence)]
        for f, row in zip(d["flows"], dh.flow_row.tolist()):
            f["delay"] = rows[row]
        for k, c in enumerate(d["classes"]):
            c["delay"] = rows[dh.n_static_rows + k]
        table = r.scenario.static_spec()
        for i, f in enumerate(d["flows"]):  # a TCP flow's round-trip time: its rtt plus its sojourn
            if "transport" in f:
                rtt = r.scenario.flows[int(table[i])].transport.rtt
                f["transport"] = {**f["transport"], "round_trip": {
                    q: None if f["delay"].get(q) is None else rtt + f["delay"][q] for q in ("mean", "p50", "p99")}}
    return d
