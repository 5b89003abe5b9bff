"""The cost of the middlebox model, timed interleaved in one process against the default model on the
same workload: the bench's workloads under ``schedule_at = "ingress"`` with a stage buffer of 64
against the default router (every resource scheduled, unbounded buffers), and open-loop sources
with a shared buffer pool and RED (docs/buffers.md) against the same sources with tail drop only.

    python scripts/bench_middlebox.py [--services 2000000] [--reps 5]

Prints per workload the median services per CPU second of each and their ratio (variant / default,
per interleaved pair: median, min, max).  The event loop alone is timed (setup and compilation left
out, as ``mrfq bench`` does).
"""

from __future__ import annotations

import argparse
import statistics

from mrfq.router.bench import WORKLOADS, scenario_for
from mrfq.router.run import simulate

ROWS = ("3 static, drfq", "3 static, sfq (bmf-wfq)", "dynamic rho=0.8, drfq", "30 static, drfq", "300 static, drfq")


#: open-loop rows: three Poisson sources with the bench's cost vectors, 1.2 times what the link can
#: serve in all, each with a buffer of 1000 packets (tail drop), against the same with a shared pool of
#: 1500 packets (longest queue drop) and RED
OPEN_ROWS = ("drfq", "fifo")


def open_loop(scheduler: str, services: int) -> tuple:
    from mrfq import flows
    rates = (0.5, 0.5, 0.2)  # relative rates, scaled so that the link's work is 1.2 per time unit
    vectors = ((1.0, 0.2), (0.2, 1.0), (1.0, 1.0))
    k = 1.2 / sum(r * v[1] for r, v in zip(rates, vectors))
    d = {"name": f"open loop, {scheduler}", "resources": ["cpu", "link"], "router": {"scheduler": scheduler},
         "run": {"duration": 1e11, "seed": 1, "max_services": int(services)},
         "flow": [{"name": f"s{i}", "cost": list(v), "arrival": {"law": "poisson", "rate": r * k}, "buffer": 1000}
                  for i, (r, v) in enumerate(zip(rates, vectors))]}
    base = flows.from_dict(d)
    var = base.replace(**{"router.shared_buffer": 1500, "router.shared_buffer_policy": "longest",
                          "router.aqm": {"policy": "red", "min_th": 50, "max_th": 500}})
    return base, var


def rate(sc) -> float:
    r = simulate(sc, timed_from=1)
    return r.loop_services / r.loop_cpu_seconds / 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--services", type=int, default=2_000_000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--stage-buffer", type=int, default=64)
    a = p.parse_args()
    pairs = []
    for w in WORKLOADS:
        if w.name in ROWS:
            base = scenario_for(w, a.services)
            pairs.append((f"{w.name}; ingress, B = {a.stage_buffer}",
                          base, base.replace(**{"router.schedule_at": "ingress", "router.stage_buffer": a.stage_buffer})))
    for sched in OPEN_ROWS:
        base, var = open_loop(sched, a.services)
        pairs.append((f"{base.name}; shared pool + RED", base, var))
    print("| workload; variant | default M svc/cpu-s | variant M svc/cpu-s | ratio (min-max) |")
    print("|---|---|---|---|")
    for name, base, var in pairs:
        rate(base), rate(var)  # compile (or load) both loops first
        xs, ys = [], []
        for _ in range(a.reps):
            xs.append(rate(base))
            ys.append(rate(var))
        ratios = [y / x for x, y in zip(xs, ys)]
        print(f"| {name} | {statistics.median(xs):.1f} | {statistics.median(ys):.1f} | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |", flush=True)


if __name__ == "__main__":
    main()
