"""Speed of the single-resource baselines against ``fq-single``, interleaved: CPU ns per service.

    python scripts/bench_baselines.py [--reps N] [--services N] [--schedulers a,b,...]

Each workload is a ``mrfq bench`` row's scenario (``router.bench.scenario_for``: 3, 30 and 300
static flows on a CPU and a link; the C yardstick's flow arrivals at load 0.8) with the scheduler
replaced.  Every loop is compiled and run once before timing; then each repetition runs every
scheduler once in turn (interleaved, so a burst of load on the machine lands on all of them), with
the delays not recorded (the loop the packet-vs-fluid sweeps run).  It prints, per workload and
scheduler, the minimum and median CPU ns per service and the median ratio of its service rate to
``fq-single``'s in the same repetition; it never fails on timing (docs/performance.md).
"""
from __future__ import annotations

import argparse
import statistics
import time

from mrfq.router.bench import WORKLOADS, scenario_for
from mrfq.router.run import simulate

ROWS = ("3 static, drfq", "30 static, drfq", "300 static, drfq", "dynamic rho=0.8, drfq")
BASELINES = ("fq-single", "scfq", "virtual-clock", "wfq", "wf2q-plus", "drr")


def ns_per_service(sc) -> float:
    c0 = time.process_time()
    r = simulate(sc, record_delays=False)
    return (time.process_time() - c0) / r.services * 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--services", type=int, default=2_000_000)
    ap.add_argument("--schedulers", default=",".join(BASELINES))
    args = ap.parse_args()
    names = args.schedulers.split(",")
    if "fq-single" not in names:
        names.insert(0, "fq-single")
    print(f"CPU ns per service, {args.services:,} services, {args.reps} interleaved repetitions "
          f"(min / median; rate against fq-single, median of the per-repetition ratios)")
    for row in ROWS:
        w = next(x for x in WORKLOADS if x.name == row)
        base = scenario_for(w, args.services)
        sc = {n: base.replace(**{"router.scheduler": n}) for n in names}
        for n in names:   # compile (or load) every loop first
            simulate(sc[n].replace(**{"run.max_services": 10_000}), record_delays=False)
        t = {n: [] for n in names}
        for _ in range(args.reps):
            for n in names:
                t[n].append(ns_per_service(sc[n]))
        label = row.replace(", drfq", "")
        print(f"\n{label}")
        for n in names:
            ratio = statistics.median(a / b for a, b in zip(t["fq-single"], t[n]))
            print(f"  {n:14s} {min(t[n]):7.1f} / {statistics.median(t[n]):7.1f} ns   {ratio:5.2f} x fq-single",
                  flush=True)


if __name__ == "__main__":
    main()
