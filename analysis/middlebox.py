"""Where the scheduler sits: every scheduler under both placements and a range of stage buffers,
on the cases of docs/middlebox.md (the finding's table and figure).

:func:`study` runs each case with ``router.schedule_at`` in ``placements`` and
``router.stage_buffer`` in ``stages`` (``None``: unbounded) through :func:`analysis.scorecard.scorecard`
(every scheduler on the same packets) and returns one row per (case, placement, stage buffer,
scheduler): the light flow's mean and p99 sojourn (cases with an open-loop flow), the greedy flows'
largest relative distance from their weighted DRF rates, the relative fairness bound reached and
each resource's utilisation.  :func:`analysis.plots.plot_middlebox` draws the rows.
"""

from __future__ import annotations

import math

from mrfq.flows.errors import MrfqError

#: stage buffers the finding sweeps (None: unbounded)
STAGES = (1, 2, 4, 8, 16, 64, 256, None)
PLACEMENTS = ("every", "ingress")


def cases(duration: float = 20_000.0) -> dict[str, dict]:
    """The finding's scenarios, as dicts for :func:`flows.from_dict`: ``voip`` (a light Poisson flow
    beside a greedy one, the link the only bottleneck), ``weighted`` (three greedy flows with weights
    1, 2, 1, the link the bottleneck) and ``isolation`` (the preset: a light flow beside a greedy flow
    bottlenecked on each resource)."""
    run = {"duration": duration, "warmup": duration / 20, "seed": 1}
    return {
        "voip": {"name": "voip", "resources": ["cpu", "link"], "router": {"window": 30}, "run": run,
                 "flow": [{"name": "bulk", "cost": [0.5, 1.0]},
                          {"name": "voip", "cost": [0.05, 0.2], "arrival": {"law": "poisson", "rate": 0.5}}]},
        "weighted": {"name": "weighted", "resources": ["cpu", "link"], "router": {"window": 30}, "run": run,
                     "flow": [{"name": "x", "cost": [1.0, 0.25]}, {"name": "y", "cost": [1.0, 1.0], "weight": 2.0},
                              {"name": "z", "cost": [0.0, 1.0]}]},
        "isolation": {"name": "isolation", "resources": ["cpu", "link"], "router": {"window": 20}, "run": run,
                      "flow": [{"name": "cpu-hog", "cost": [1.0, 0.25]}, {"name": "link-hog", "cost": [0.25, 1.0]},
                               {"name": "light", "cost": [0.5, 0.5],
                                "arrival": {"law": "poisson", "rate": 0.177778}}]},
    }


def study(schedulers, *, case_names=None, stages=STAGES, placements=PLACEMENTS, duration: float = 20_000.0,
          progress=None) -> list[dict]:
    """One row per (case, placement, stage buffer, scheduler); see the module docstring."""
    from mrfq import flows
    from mrfq.analysis.scorecard import scorecard

    all_cases = cases(duration)
    names = list(all_cases) if case_names is None else list(case_names)
    for n in names:
        if n not in all_cases:
            raise MrfqError(f"case {n!r}: unknown; choose from {', '.join(all_cases)}")
    rows = []
    for name in names:
        base = flows.from_dict(all_cases[name])
        for placement in placements:
            for b in stages:
                changes = {"router.schedule_at": placement}
                if b is not None:
                    changes["router.stage_buffer"] = b
                sc = base.replace(**changes)
                card = scorecard(sc, schedulers)
                for s in schedulers:
                    mine = [r for r in card.rows if r["scheduler"] == s]
                    light = [r for r in mine if r["source"] != "window"]
                    greedy = [r for r in mine if r["source"] == "window"]
                    run = card.runs[s]
                    rfb = next(r["rfb"] for r in card.schedulers if r["scheduler"] == s)
                    rows.append({
                        "case": name, "schedule_at": placement, "stage_buffer": b, "scheduler": s,
                        "light_mean": light[0]["mean"] if light else None,
                        "light_p99": light[0]["p99"] if light else None,
                        "light_packet_time": light[0]["packet_time"] if light else None,
                        "drf_distance": max(abs(r["rate_over_share"] - 1.0) for r in greedy),
                        "rates": {r["flow"]: r["rate"] for r in mine},
                        "shares": {r["flow"]: r["share"] for r in mine},
                        "rfb": rfb if rfb is not None and math.isfinite(rfb) else None,
                        "utilization": {res.name: res.utilization for res in run.resources},
                    })
                if progress is not None:
                    progress(name, placement, b)
    return rows
