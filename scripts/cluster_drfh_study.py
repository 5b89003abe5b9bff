#!/usr/bin/env python
"""The [DRFH] §VI study on a synthetic Table-I cluster: Fig. 4, Fig. 5, Fig. 6 and Table II.

Prints (1) Fig. 4: per-phase global dominant shares of Best-Fit / First-Fit DRFH in the
simulator, the fluid DRFH allocation of the active users, and the paper's numbers;
(2) Fig. 5 / Table II: mean CPU and memory utilisation (demanded resources) of Best-Fit,
First-Fit and the slot scheduler for several slot sizes; (3) Fig. 6: job completion times of
jobs finished under both Best-Fit and Slots (14 per maximum server), and the mean reduction per
job-size class.  Saves drfh_fig4.png, drfh_fig5.png, drfh_fig6.png in --out.  See
analysis/cluster/drfh_study.py for what is drawn where the paper uses its trace.

    python scripts/cluster_drfh_study.py [--servers 200 --users 8 --load 2.0 --duration 2000 --seed 1 --out .]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from mrfq.analysis.cluster import drfh_study as ds  # noqa: E402
from mrfq.router.cluster import simulate  # noqa: E402


def _pct(x) -> str:
    return "   -  " if x is None or not np.isfinite(x) else f"{100 * x:5.1f}%"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=200)
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--load", type=float, default=2.0, help="offered load / pooled capacity of the busiest resource")
    ap.add_argument("--duration", type=float, default=2000.0)
    ap.add_argument("--warmup", type=float, default=None, help="default: 15%% of --duration")
    ap.add_argument("--slots", default="10,12,14,16,20")
    ap.add_argument("--demand-hi", type=float, default=0.15, help="largest per-task demand (max server = 1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=".")
    ap.add_argument("--fig4-duration", type=float, default=1400.0)
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    # ---- Fig. 4 ---------------------------------------------------------------------------
    sc = ds.fig4_scenario(args.seed, duration=args.fig4_duration)
    T = sc.capacity().sum(axis=0)
    print(f"Fig. 4: 100 Table-I servers, pool {T[0]:.2f} CPU, {T[1]:.2f} mem "
          "(paper: 52.75 CPU, 51.32 mem)")
    bf = simulate(sc, allocator="drfh-best-fit")
    ff = simulate(sc, allocator="drfh-first-fit")
    fluid = ds.fluid_phase_shares(sc)
    sb, sf = ds.phase_shares(bf), ds.phase_shares(ff)
    print(f"{'phase':10} {'user':>4} {'paper':>7} {'fluid':>7} {'BestFit':>7} {'FirstFit':>8}")
    for name, (_, _, act) in ds.FIG4_PHASES.items():
        for k, u in enumerate(act):
            print(f"{name:10} {u + 1:>4} {_pct(ds.FIG4_PAPER[name][k]):>7} {_pct(fluid[name][u]):>7} "
                  f"{_pct(sb[name][u]):>7} {_pct(sf[name][u]):>8}")
    print(f"simulator speed (Best-Fit, 100 servers): {bf.tasks_per_second:.0f} tasks/s "
          f"({int(bf.launched.sum())} tasks in {bf.wall:.2f} s)\n")
    ds.plot_fig4(bf, fluid).savefig(os.path.join(args.out, "drfh_fig4.png"), dpi=120)

    # ---- Fig. 5 and Table II --------------------------------------------------------------
    sc = ds.trace_scenario(args.seed, n_servers=args.servers, n_users=args.users, load=args.load,
                           duration=args.duration, demand_hi=args.demand_hi,
                           warmup=0.15 * args.duration if args.warmup is None else args.warmup)
    T = sc.capacity().sum(axis=0)
    print(f"Figs. 5-6: {args.servers} Table-I servers (pool {T[0]:.1f} CPU, {T[1]:.1f} mem), {args.users} users, "
          f"Poisson jobs at {sc.traffic.rate:.3f}/s (offered load {args.load:g}), {args.duration:g} s")
    runs, series = {}, {}
    print(f"{'allocator':16} {'CPU util':>8} {'mem util':>8} {'paper CPU':>9} {'paper mem':>9} "
          f"{'jobs done':>9} {'tasks/s':>8}")
    todo = [("Best-Fit DRFH", "drfh-best-fit", {}), ("First-Fit DRFH", "drfh-first-fit", {})]
    todo += [(f"Slots ({n}/max)", "slots", {"n_slots": int(n)}) for n in args.slots.split(",")]
    for label, name, opts in todo:
        r = simulate(sc, allocator=name, options=opts)
        mean, s = ds.demand_utilisation(sc, r)
        runs[label], series[label] = r, s
        paper = ds.TABLE_II.get(opts.get("n_slots"), (None, None))
        print(f"{label:16} {_pct(mean[0]):>8} {_pct(mean[1]):>8} {_pct(paper[0]):>9} {_pct(paper[1]):>9} "
              f"{len(r.job_user):>9} {r.tasks_per_second:>8.0f}")
    keep = [k for k in series if not k.startswith("Slots") or k == "Slots (14/max)"]
    ds.plot_utilisation({k: series[k] for k in keep}, runs[keep[0]].sample_time).savefig(
        os.path.join(args.out, "drfh_fig5.png"), dpi=120)

    # ---- Fig. 6 ---------------------------------------------------------------------------
    if "Slots (14/max)" in runs:
        tk, cb, cs = ds.matched_completions(sc, runs["Best-Fit DRFH"], runs["Slots (14/max)"])
        print(f"\nFig. 6: {tk.size} jobs finished under both Best-Fit and Slots (14): mean completion "
              f"{cb.mean():.1f} s vs {cs.mean():.1f} s, median {np.median(cb):.1f} s vs {np.median(cs):.1f} s")
        red = ds.reduction_by_size(tk, cb, cs)
        print(f"{'tasks/job':>10} {'jobs':>6} {'reduction':>9}")
        for label, n, x in red:
            print(f"{label:>10} {n:>6} " + (f"{x:>8.1f}%" if np.isfinite(x) else f"{'-':>9}"))
        ds.plot_completion({"Best-Fit DRFH": cb, "Slots (14/max)": cs}, red).savefig(
            os.path.join(args.out, "drfh_fig6.png"), dpi=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
