"""The cost of the middlebox model: the bench's workloads under the default router (every resource
scheduled, unbounded buffers: the lean loop) and under ``schedule_at = "ingress"`` with a stage
buffer of 64 (the generic loop), timed interleaved in one process.

    python scripts/bench_middlebox.py [--services 2000000] [--reps 5]

Prints per workload the median services per CPU second of each and their ratio (ingress / default,
per interleaved pair: median, min, max).  The event loop alone is timed (setup and compilation left
out, as ``mrfq bench`` does).
"""

from __future__ import annotations

import argparse
import statistics

from mrfq.router.bench import WORKLOADS, scenario_for
from mrfq.router.run import simulate

ROWS = ("3 static, drfq", "3 static, sfq (bmf-wfq)", "dynamic rho=0.8, drfq", "30 static, drfq", "300 static, drfq")


def rate(sc) -> float:
    r = simulate(sc, timed_from=1)
    return r.loop_services / r.loop_cpu_seconds / 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--services", type=int, default=2_000_000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--stage-buffer", type=int, default=64)
    a = p.parse_args()
    print(f"| workload | default M svc/cpu-s | ingress, B = {a.stage_buffer} | ratio (min-max) |")
    print("|---|---|---|---|")
    for w in WORKLOADS:
        if w.name not in ROWS:
            continue
        base = scenario_for(w, a.services)
        var = base.replace(**{"router.schedule_at": "ingress", "router.stage_buffer": a.stage_buffer})
        rate(base), rate(var)  # compile (or load) both loops first
        xs, ys = [], []
        for _ in range(a.reps):
            xs.append(rate(base))
            ys.append(rate(var))
        ratios = [y / x for x, y in zip(xs, ys)]
        print(f"| {w.name} | {statistics.median(xs):.1f} | {statistics.median(ys):.1f} | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |", flush=True)


if __name__ == "__main__":
    main()
