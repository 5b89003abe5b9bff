"""Task launches per CPU-second of the cluster simulator, compiled engine against the reference.

    PYTHONPATH=. python scripts/bench_cluster_sim.py                  # every row below
    PYTHONPATH=. python scripts/bench_cluster_sim.py --sizes 12000 --allocators drfh-best-fit
    PYTHONPATH=. python scripts/bench_cluster_sim.py --no-reference   # the compiled engine only

Servers: ``N`` servers of the Google cluster's configuration mix ([DRFH] Table I: ten CPU / memory
configurations normalised to the largest server; counts proportional to the table's, at least one
of each).  Users: ``--users`` users (default 20) whose task demands are drawn uniformly in
[0.01, 0.1] CPU and [0.01, 0.1] memory of the largest server (seeded), tasks of exponential
duration, mean 1 time unit.  Two workloads:

``backlogged``  every user always has a task waiting (the cluster stays saturated: every finish is
                followed by a launch);
``poisson``     jobs of geometric size (mean 20 tasks) arrive as a Poisson process at the rate
                that would keep about 80 % of the cluster's CPU busy; users idle between jobs.

Each row runs ``--duration`` time units (scaled down for the reference so that a row takes a few
seconds) after a warm-up run that compiles the kernels, and prints launches, CPU seconds
(``time.process_time`` around one ``simulate`` call, setup included) and launches per CPU-second.
The reference's horizon is chosen for about ``--ref-launches`` launches but cannot be shorter than
the first instant, when backlogged users fill the empty cluster (about 110,000 launches on 12,000
servers: several minutes of the reference).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

#: [DRFH] Table I: (servers, CPU, memory), normalised to the largest server
TABLE_I = ((6732, 0.50, 0.50), (3863, 0.50, 0.25), (1001, 0.50, 0.75), (795, 1.00, 1.00), (126, 0.25, 0.25),
           (52, 0.50, 0.12), (5, 0.50, 0.03), (5, 0.50, 0.97), (3, 1.00, 0.50), (1, 0.50, 0.06))


def servers(n: int) -> list[dict]:
    """About ``n`` servers of Table I's mix (largest remainder, at least one of each configuration)."""
    tot = sum(c for c, _, _ in TABLE_I)
    raw = [n * c / tot for c, _, _ in TABLE_I]
    cnt = [max(1, int(x)) for x in raw]
    rest = n - sum(cnt)
    for i in sorted(range(len(raw)), key=lambda i: raw[i] - int(raw[i]), reverse=True)[:max(0, rest)]:
        cnt[i] += 1
    return [{"name": f"t{i}", "capacity": [cpu, mem], "count": c} for i, ((_, cpu, mem), c) in
            enumerate(zip(TABLE_I, cnt))]


def scenario(n: int, users: int, workload: str, allocator: str, duration: float, seed: int = 1):
    from mrfq.flows.cluster import cluster_from_dict

    rng = np.random.default_rng(seed)
    dem = rng.uniform(0.01, 0.1, size=(users, 2))
    srv = servers(n)
    d = {"resources": ["cpu", "mem"], "server": srv,
         "run": {"allocator": allocator, "duration": duration, "seed": seed, "samples": 10}}
    if workload == "backlogged":
        d["user"] = [{"name": f"u{i}", "demand": dem[i].round(4).tolist(), "duration": 1.0} for i in range(users)]
    else:
        cpu = sum(s["capacity"][0] * s["count"] for s in srv)
        per_job = 20.0 * float(dem[:, 0].round(4).mean())  # CPU time units of work per job
        d["traffic"] = {"kind": "poisson", "rate": 0.8 * cpu / per_job}
        d["user"] = [{"name": f"u{i}", "demand": dem[i].round(4).tolist(), "duration": 1.0, "job_share": 1.0,
                      "tasks_per_job": 20.0, "tasks_law": "geometric"} for i in range(users)]
    return cluster_from_dict(d)


def measure(sc, engine: str) -> tuple[int, float]:
    from mrfq.router.cluster import simulate

    c0 = time.process_time()
    run = simulate(sc, engine=engine)
    cpu = time.process_time() - c0
    return int(run.launched.sum()), cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,2000,12000", help="server counts (comma-separated)")
    ap.add_argument("--allocators", default="drfh-best-fit,drfh-first-fit,drf,slots")
    ap.add_argument("--workloads", default="backlogged,poisson")
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--launches", type=float, default=3e6, help="target launches per compiled row")
    ap.add_argument("--ref-launches", type=float, default=3e4, help="target launches per reference row")
    ap.add_argument("--no-reference", action="store_true", help="skip the reference engine")
    a = ap.parse_args(argv)
    from mrfq.flows.cluster import MAX_TASKS, expected_tasks

    sizes = [int(x) for x in a.sizes.split(",")]
    allocs = a.allocators.split(",")
    wls = a.workloads.split(",")
    engines = ["compiled"] if a.no_reference else ["compiled", "reference"]
    # compile once (cached on disk afterwards)
    measure(scenario(20, 3, "backlogged", "drfh-best-fit", 5.0), "compiled")
    print(f"{'workload':<11}{'servers':>8}{'allocator':>16}{'engine':>10}{'launches':>11}{'CPU s':>9}"
          f"{'launches/CPU-s':>16}")
    for wl in wls:
        for n in sizes:
            for al in allocs:
                for eng in engines:
                    # a short probe run sets the horizon for the target number of launches
                    probe = scenario(n, a.users, wl, al, 2.0)
                    k, _ = measure(probe, "compiled")
                    target = a.launches if eng == "compiled" else a.ref_launches
                    # at least 2 time units for the compiled engine; the reference may stop after the
                    # first fill of the cluster (every backlogged user launches at t = 0)
                    dur = max(2.0 if eng == "compiled" else 0.01, round(2.0 * target / max(k, 1), 2))
                    # the gate's estimate (every backlogged user alone on the servers) caps the horizon
                    per_unit = expected_tasks(scenario(n, a.users, wl, al, 1.0))
                    dur = min(dur, round(0.99 * MAX_TASKS / per_unit, 2))
                    sc = scenario(n, a.users, wl, al, dur)
                    k, cpu = measure(sc, eng)
                    print(f"{wl:<11}{n:>8}{al:>16}{eng:>10}{k:>11,}{cpu:>9.2f}{k / cpu:>16,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
