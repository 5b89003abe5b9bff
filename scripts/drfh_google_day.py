#!/usr/bin/env python
"""The [DRFH] §VI evaluation on a Google-like day: Fig. 4, Table II (+ Fig. 5), Fig. 6 and Fig. 8.

Subcommands (each prints its table and saves its figures in --out):

  fig4     three users join and leave 100 Table-I servers (Best-Fit and First-Fit DRFH against the
           fluid DRFH allocation and the paper's 40 %/62 %, 44 %, 26 %)       -> drfh-fig4.png
  table2   demanded CPU / memory utilisation of Slots (10-20 per maximum server), First-Fit and
           Best-Fit DRFH on the Google-like day                     -> drfh-table2.png, drfh-fig5.png
           (--slot-rule one: a task runs in one slot or, if larger than a slot, never)
  fig6     job completion times (Best-Fit vs Slots 14) and the task completion ratio per user
                                                                     -> drfh-fig6.png, drfh-fig8.png
  all      the three, sharing the day's runs

The day (analysis/cluster/google_day.py) is written as google-day.csv / google-day.toml in
--trace-dir; --scenario runs any cluster scenario TOML instead (e.g. one whose [traffic] trace is
a CSV extracted from the real Google trace).  --size full is the paper's size (2,000 servers,
24 hours, 100 users); the default --size reduced (200 servers, 2 hours, 20 users) takes about two
minutes per subcommand with the Python task simulator.

    python scripts/drfh_google_day.py all --out docs/_static
    python scripts/drfh_google_day.py table2 --size full --out /tmp/drfh
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from mrfq.analysis.cluster import drfh_study as ds  # noqa: E402
from mrfq.analysis.cluster import google_day as gd  # noqa: E402
from mrfq.flows.cluster import load_cluster  # noqa: E402
from mrfq.flows.errors import MrfqError  # noqa: E402
from mrfq.router.cluster import simulate  # noqa: E402

SIZES = {"reduced": {"servers": 200, "users": 20, "hours": 2.0},
         "full": {"servers": 2000, "users": 100, "hours": 24.0}}
SLOTS_FIG6 = 14


def _pct(x) -> str:
    return "    -  " if x is None or not np.isfinite(x) else f"{100 * x:6.1f}%"


def _save(fig, out: str, name: str) -> str:
    p = os.path.join(out, name)
    fig.savefig(p, dpi=110)
    return p


# ---------------------------------------------------------------------------
def run_fig4(args) -> dict:
    sc = ds.fig4_scenario(args.fig4_seed, duration=args.fig4_duration, samples=int(args.fig4_duration // 10))
    T = sc.capacity().sum(axis=0)
    print(f"Fig. 4: 100 Table-I servers (seed {args.fig4_seed}), pool {T[0]:.2f} CPU, {T[1]:.2f} mem "
          f"(paper: {gd.FIG4_POOL[0]} CPU, {gd.FIG4_POOL[1]} mem)")
    runs = {"Best-Fit": simulate(sc, allocator="drfh-best-fit"), "First-Fit": simulate(sc, allocator="drfh-first-fit")}
    fluid = ds.fluid_phase_shares(sc)
    rows = gd.fig4_table(sc, runs, fluid)
    print(f"{'phase':10} {'user':>4} {'share of':>9} {'paper':>7} {'fluid':>7} {'BestFit':>7} {'FirstFit':>8}")
    for r in rows:
        print(f"{r['phase']:10} {r['user']:>4} {r['resource']:>9} {_pct(r['paper']):>7} {_pct(r['fluid']):>7} "
              f"{_pct(r['Best-Fit']):>7} {_pct(r['First-Fit']):>8}")
    segs = [(t0, t1, u, fluid[name][u]) for name, (t0, t1, act) in ds.FIG4_PHASES.items() for u in act]
    fig = gd.plot_fig4(runs["Best-Fit"].sample_time, {k: r.share_time for k, r in runs.items()}, segs)
    print(f"saved {_save(fig, args.out, 'drfh-fig4.png')}\n")
    return {"rows": rows}


def day_scenario(args):
    """The Google-like day's scenario (or --scenario), with bins of about one second."""
    if args.scenario:
        sc = load_cluster(args.scenario)
        if sc.traffic.kind != "trace":
            raise MrfqError(f"--scenario {args.scenario}: [traffic] kind must be 'trace' (a job CSV), "
                            f"not {sc.traffic.kind!r}")
        if sc.n_resources != 2:
            raise MrfqError(f"--scenario {args.scenario}: has {sc.n_resources} resources; the study needs two "
                            "(CPU, memory), as in the paper")
        T = sc.run.duration
        sc = sc.replace_run(samples=int(min(100_000, math.ceil(T))))
        print(f"Google-like day: scenario {args.scenario} ({sc.capacity().shape[0]} servers, {sc.n_users} users, "
              f"{len(sc.trace_rows)} jobs, {T:g} s)")
        return sc, None
    size = SIZES[args.size]
    servers = args.servers or size["servers"]
    users = args.users or size["users"]
    T = 3600.0 * (args.hours or size["hours"])
    w = gd.google_day(args.seed, n_servers=servers, n_users=users, horizon=T, load=args.load)
    run = {"duration": T, "warmup": args.warmup * T, "samples": int(min(100_000, math.ceil(T)))}
    if args.trace_dir:
        sc = w.scenario(args.trace_dir, **run)
        kept = f"trace in {args.trace_dir}"
    else:                       # the scenario holds the trace's rows: the files are not needed after loading
        with tempfile.TemporaryDirectory(prefix="drfh-day-") as out:
            sc = w.scenario(out, **run)
        kept = "trace not kept (--trace-dir DIR keeps it)"
    load = w.offered_load()
    print(f"Google-like day: {servers} Table-I servers, {users} users, {w.n_jobs} jobs / {int(w.tasks.sum())} tasks "
          f"in {T / 3600:g} h (seed {args.seed}); offered load {load[0]:.2f} CPU, {load[1]:.2f} mem "
          f"(target {args.load:g} on the busiest); {kept}")
    return sc, w


def simulate_all(sc, todo, cache: dict, slot_rule: str = "ceil") -> dict:
    out = {}
    for label, name, opts in todo:
        if label not in cache:
            t0 = time.perf_counter()
            run_sc = gd.one_slot_scenario(sc, opts["n_slots"]) if name == "slots" and slot_rule == "one" else sc
            cache[label] = simulate(run_sc, allocator=name, options=opts)
            r = cache[label]
            print(f"  ran {label:16} {int(r.launched.sum()):>9} tasks in {time.perf_counter() - t0:6.1f} s "
                  f"({r.tasks_per_second:,.0f} tasks/s)")
        out[label] = cache[label]
    return out


def _todo(slots) -> list:
    todo = [(f"Slots ({n}/max)", "slots", {"n_slots": int(n)}) for n in slots]
    return todo + [("First-Fit DRFH", "drfh-first-fit", {}), ("Best-Fit DRFH", "drfh-best-fit", {})]


def run_table2(args, sc, cache: dict) -> dict:
    slots = [int(x) for x in args.slots.split(",")]
    runs = simulate_all(sc, _todo(slots), cache, args.slot_rule)
    rows, series = [], {}
    for label, r in runs.items():
        mean, s = gd.demand_util(sc, r)
        n = int(label.split("(")[1].split("/")[0]) if label.startswith("Slots") else None
        paper = gd.TABLE_II.get(n, (None, None))
        rows.append({"allocator": label, "cpu": float(mean[0]), "mem": float(mean[1]), "paper_cpu": paper[0],
                     "paper_mem": paper[1], "jobs_done": int(r.job_user.shape[0])})
        series[label] = s
    print(f"\nTable II: demanded utilisation over [{sc.run.warmup:g}, {sc.run.duration:g}] s "
          f"(slot rule: {args.slot_rule})")
    print(f"{'allocator':16} {'CPU':>7} {'mem':>7} {'paper CPU':>9} {'paper mem':>9} {'jobs done':>9}")
    for r in rows:
        print(f"{r['allocator']:16} {_pct(r['cpu']):>7} {_pct(r['mem']):>7} {_pct(r['paper_cpu']):>9} "
              f"{_pct(r['paper_mem']):>9} {r['jobs_done']:>9}")
    print(f"saved {_save(gd.plot_table2(rows), args.out, 'drfh-table2.png')}")
    keep = [k for k in series if not k.startswith("Slots") or k == f"Slots ({SLOTS_FIG6}/max)"]
    t = next(iter(runs.values())).sample_time
    reb = {}
    for k in keep:
        reb[k], tt = gd.rebin(series[k], t, 200)
    print(f"saved {_save(gd.plot_utilisation(tt, reb), args.out, 'drfh-fig5.png')}\n")
    return {"rows": rows}


def run_fig6(args, sc, cache: dict) -> dict:
    slot_label = f"Slots ({SLOTS_FIG6}/max)"
    runs = simulate_all(sc, [t for t in _todo([SLOTS_FIG6]) if t[0] in (slot_label, "Best-Fit DRFH")], cache,
                        args.slot_rule)
    bf, sl = runs["Best-Fit DRFH"], runs[slot_label]
    tk, cb, cs = ds.matched_completions(sc, bf, sl)
    red = gd.reduction_by_size(tk, cb, cs)
    print(f"\nFig. 6: {tk.size} jobs finished under both Best-Fit DRFH and {slot_label} "
          f"(of {bf.job_user.size} and {sl.job_user.size} finished)")
    if tk.size:
        print(f"  completion time: mean {cb.mean():.0f} s vs {cs.mean():.0f} s, median {np.median(cb):.0f} s vs "
              f"{np.median(cs):.0f} s, 90th percentile {np.percentile(cb, 90):.0f} s vs {np.percentile(cs, 90):.0f} s")
    print(f"{'tasks/job':>10} {'jobs':>7} {'mean reduction':>15}")
    for label, n, x in red:
        print(f"{label:>10} {n:>7} " + (f"{x:>14.1f}%" if np.isfinite(x) else f"{'-':>15}"))
    print(f"saved {_save(gd.plot_fig6({'Best-Fit DRFH': cb, slot_label: cs}, red), args.out, 'drfh-fig6.png')}")
    sub, rb = gd.completion_ratio(sc, bf)
    _, rs = gd.completion_ratio(sc, sl)
    m = sub > 0
    better = int(np.sum(rb[m] > rs[m] + 1e-12))
    full_b = int(np.sum((rb[m] >= 1 - 1e-12) & (rs[m] < 1 - 1e-12)))
    print(f"\nFig. 8: task completion ratio of {int(m.sum())} users: mean {np.nanmean(rb[m]):.3f} (Best-Fit) vs "
          f"{np.nanmean(rs[m]):.3f} (Slots); higher under Best-Fit for {better} users ({100 * better / max(m.sum(), 1):.0f} %), "
          f"all tasks done under Best-Fit but not Slots for {full_b} ({100 * full_b / max(m.sum(), 1):.0f} %; paper: "
          "'higher for almost all users', 'around 20 %')")
    print(f"saved {_save(gd.plot_fig8(sub, rb, rs, ('Best-Fit DRFH', slot_label)), args.out, 'drfh-fig8.png')}\n")
    return {"matched": int(tk.size), "reductions": red, "better": better, "users": int(m.sum()), "all_done": full_b}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("fig4", "table2", "fig6", "all"))
    ap.add_argument("--size", choices=tuple(SIZES), default="reduced")
    ap.add_argument("--servers", type=int, default=None, help="default: 200 (reduced) / 2000 (full)")
    ap.add_argument("--users", type=int, default=None, help="default: 20 (reduced) / 100 (full)")
    ap.add_argument("--hours", type=float, default=None, help="simulated hours; default 2 (reduced) / 24 (full)")
    ap.add_argument("--load", type=float, default=2.0, help="offered work / pooled capacity of the busiest resource")
    ap.add_argument("--warmup", type=float, default=0.2, help="fraction of the run before the averages start")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slots", default="10,12,14,16,20", help="slots per maximum server (Table II)")
    ap.add_argument("--slot-rule", choices=("ceil", "one"), default="ceil",
                    help="ceil: a task takes ceil(demand / slot) slots (the slots allocator); one: a task runs in "
                         "one slot or, if larger, never")
    ap.add_argument("--scenario", default=None, help="a cluster scenario TOML with [traffic] kind = 'trace'")
    ap.add_argument("--trace-dir", default=None, help="where to write google-day.csv/.toml (default: a temp dir)")
    ap.add_argument("--fig4-seed", type=int, default=gd.FIG4_SEED)
    ap.add_argument("--fig4-duration", type=float, default=1400.0)
    ap.add_argument("--out", default=".", help="directory for the PNG figures")
    args = ap.parse_args(argv)
    for name in ("servers", "users"):
        v = getattr(args, name)
        if v is not None and v < 1:
            print(f"error: --{name} = {v}: must be >= 1", file=sys.stderr)
            return 2
    if args.hours is not None and not args.hours > 0 or not args.load > 0 or not 0 <= args.warmup < 1:
        print("error: --hours and --load must be > 0 and --warmup in [0, 1)", file=sys.stderr)
        return 2
    if args.seed < 0 or args.fig4_seed < 0:
        print("error: --seed and --fig4-seed must be >= 0", file=sys.stderr)
        return 2
    try:
        if any(int(x) < 1 for x in args.slots.split(",")):
            raise ValueError
    except ValueError:
        print(f"error: --slots = {args.slots!r}: give whole numbers >= 1 separated by commas, e.g. 10,14,20",
              file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    try:
        if args.what in ("fig4", "all"):
            run_fig4(args)
        if args.what in ("table2", "fig6", "all"):
            sc, _ = day_scenario(args)
            cache: dict = {}
            if args.what in ("table2", "all"):
                run_table2(args, sc, cache)
            if args.what in ("fig6", "all"):
                run_fig6(args, sc, cache)
    except (MrfqError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
