"""``mrfq compare`` and ``mrfq results``.

Every argument, the results store and every output path are checked before
the first simulation; figures and CSV files are written atomically; the store
is refused (and left byte-identical) unless it is an mrfq results store
(:class:`analysis.sweep.ResultStore`).
"""

from __future__ import annotations

import csv
import io
import sys

from mrfq.flows.cli_args import (
    MAX_FLOWS,
    MAX_REPLICATIONS,
    MAX_WORKERS,
    MIN_FLOWS,
    add_scenario_args,
    atomic_write,
    check_distinct_outputs,
    check_output_path,
    dumps_strict,
    int_type,
    load_scenario_arg,
    number_type,
    parse_loads,
    parse_names,
    save_figure,
)
from mrfq.flows.errors import MrfqError
from mrfq.flows.scenario import MAX_SEED

DEFAULT_RESULTS = "mrfq-results.sqlite"
#: points of one sweep (schedulers x loads x the largest number of replications)
MAX_POINTS = 200_000


def cmd_compare(args) -> int:
    from mrfq.analysis.compare import CompareConfig, compare, format_table, plot_comparison, point_scenario
    from mrfq.analysis.sweep import ResultStore
    from mrfq.fq.registry import SCHEDULERS

    # ---- everything is checked before the first simulation
    for field, path, fig in (("--plot", args.plot, True), ("--csv", args.csv, False)):
        if path is not None:  # an empty name is refused, not ignored
            check_output_path(field, path, figure=fig)
    if args.results == "":
        raise MrfqError(f"--results: empty file name; give a file name, e.g. --results {DEFAULT_RESULTS} (the default)")
    check_distinct_outputs(("--results", args.results or DEFAULT_RESULTS), ("--plot", args.plot), ("--csv", args.csv))
    sc = load_scenario_arg(args)
    if args.virtual_time:
        sc = sc.replace(**{"router.virtual_time": args.virtual_time})
    scheds = tuple(parse_names("--schedulers", args.schedulers, tuple(SCHEDULERS)))
    loads = tuple(parse_loads(args.loads))
    kw = dict(schedulers=scheds, loads=loads, seed=args.seed)
    if args.replications is not None:
        kw["replications"] = args.replications
    if args.target is not None:
        kw["target"] = args.target
    if args.max_replications is not None:
        kw["max_replications"] = args.max_replications
    if args.flows is not None:
        kw["flows_per_replication"] = args.flows
    if args.coarse is not None:
        kw["coarse"] = args.coarse
    cfg = CompareConfig.quick(**kw) if args.quick else CompareConfig(**kw)
    if cfg.max_replications < cfg.replications:
        cfg = CompareConfig(**{**cfg.__dict__, "max_replications": cfg.replications})
    if cfg.seed + cfg.max_replications > MAX_SEED:
        raise MrfqError(f"--seed = {cfg.seed}: seed + replications must stay <= {MAX_SEED}")
    n_points = len(scheds) * len(loads) * cfg.max_replications
    if n_points > MAX_POINTS:
        raise MrfqError(f"--loads, --schedulers, --max-replications: up to {n_points:,} points; at most "
                        f"{MAX_POINTS:,} in one sweep")
    if not sc.classes or sc.load is None:
        raise MrfqError(f"scenario {sc.name}: compare needs [[class]] tables with shares and [traffic] load "
                        "to sweep the load")
    for s in scheds:  # every point's scenario goes through the gate now, not mid-sweep
        for x in loads:
            point_scenario(sc, s, x, cfg)
    executor = "local"
    if args.dask:
        executor = f"dask:{args.dask}"
    elif args.workers == 1:
        executor = "serial"
    store = ResultStore(args.results or DEFAULT_RESULTS)
    try:
        res = compare(sc, cfg, store, executor=executor, workers=args.workers, progress=not args.json)
    finally:
        store.close()
    if args.plot:
        fig = plot_comparison(res.rows, title=f"{sc.name}: packet γ (points, 95% CI) vs fluid γ (lines)")
        save_figure(fig, args.plot, field="--plot")
    if args.csv:
        atomic_write(args.csv, _rows_csv([r.to_json() for r in res.rows]), field="--csv")
    if args.json:
        print(dumps_strict(res.to_json()))
    else:
        print(format_table(res))
        if args.dask and res.points_run == 0 and res.points_reused > 0:
            print(f"0 points run on the cluster: all {res.points_reused:,} were in {res.results_file}; use "
                  "--results NEW.sqlite to recompute")
        if not args.results:
            print(f"results stored in {DEFAULT_RESULTS} (re-running the same sweep reuses them)")
        if args.plot:
            print(f"figure written to {args.plot}")
    return 0


def _rows_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["scheduler", "load", "class", "gamma_packet", "ci_low", "ci_high", "gamma_fluid", "rel_error",
                "inside", "replications", "completed"])
    for r in rows:
        w.writerow([r["scheduler"], r["load"], r["class"], r["gamma_packet"], r["ci"][0], r["ci"][1],
                    r["gamma_fluid"], r["rel_error"], r["inside"], r["replications"], r["completed"]])
    return buf.getvalue()


def cmd_results(args) -> int:
    from mrfq.analysis.sweep import ResultStore

    store = ResultStore(args.file, readonly=True, what="results")
    try:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["scenario", "scenario_hash", "scheduler", "load", "replication", "seed", "duration", "class",
                    "departed", "flow_time_integral", "completed", "arrived", "services", "wall_seconds"])
        n = 0
        for scen, h, sched, load, rep, seed, dur, d in store.rows():
            try:
                for k, c in enumerate(d["classes"]):
                    w.writerow([scen, h, sched, load, rep, seed, dur, c, sum(d["departed"][k]), sum(d["area"][k]),
                                d["completed"][k], d["arrived"][k], d["services"], d["wall_seconds"]])
            except (KeyError, IndexError, TypeError):
                raise MrfqError(f"results {args.file}: the stored point of {sched} at load {load} (replication "
                                f"{rep}) lacks fields; the store is damaged") from None
            n += 1
    finally:
        store.close()
    if args.csv:
        sys.stdout.write(buf.getvalue())
    else:
        print(f"{args.file}: {n} stored points (use --csv to export them)")
    return 0


def register(sub) -> None:
    """Add ``compare`` and ``results`` to an argparse subparsers object."""
    p = sub.add_parser("compare", help="packet schedulers vs the fluid Markov model over a range of loads")
    add_scenario_args(p)
    p.add_argument("--schedulers", default="drfq,drfq-dovetail,pf-sfq,bmf-wfq",
                   help="comma-separated scheduler names")
    p.add_argument("--loads", default="0.1:0.9:0.1", help="START:STOP:STEP (inclusive) or a list 0.3,0.6,0.8")
    p.add_argument("--replications", type=int_type("--replications", lo=1, hi=MAX_REPLICATIONS),
                   help="initial replications per point (default 2)")
    p.add_argument("--max-replications", type=int_type("--max-replications", lo=1, hi=MAX_REPLICATIONS),
                   help="cap of the stopping rule (default 32; quick 4)")
    p.add_argument("--target", type=number_type("--target", lo=0.0, lo_open=True, hi=1.0, hi_open=True),
                   help="target CI half-width relative to gamma (default 0.02; quick 0.05)")
    p.add_argument("--flows", type=number_type("--flows", lo=MIN_FLOWS, hi=MAX_FLOWS),
                   help=f"flow arrivals per replication (default 2000; quick 400; at most {MAX_FLOWS:g})")
    p.add_argument("--coarse", choices=("auto", "always", "never"), default=None,
                   help="the coarse-packet control variate (the same scheduler on the same flows in "
                        "fewer, larger packets; its mean from independent replications): for points "
                        "the fluid controls leave above --target (auto, the default), every point, or none")
    p.add_argument("--virtual-time", choices=("started", "in-service"),
                   help="drfq's virtual-time rule for this sweep (default: the scenario's)")
    p.add_argument("--seed", type=int_type("--seed", lo=0, hi=MAX_SEED), default=1,
                   help="seed of replication 0 (replication r uses seed + r)")
    p.add_argument("--quick", action="store_true", help="a few-minute version")
    p.add_argument("--json", action="store_true", help="print one JSON object {rows: [...]}, no progress bar")
    p.add_argument("--plot", metavar="FILE.png", help="write [BR] Fig. 3 for this sweep")
    p.add_argument("--csv", metavar="FILE.csv", help="also write the table as CSV")
    p.add_argument("--results", metavar="FILE.sqlite", help=f"results store (default ./{DEFAULT_RESULTS})")
    p.add_argument("--workers", type=int_type("--workers", lo=1, hi=MAX_WORKERS),
                   help="worker processes (default: one per core)")
    p.add_argument("--dask", metavar="ADDRESS", help="run on a dask.distributed scheduler ('local' starts one)")
    p.set_defaults(func=cmd_compare)

    r = sub.add_parser("results", help="inspect or export a results store (opened read-only)")
    r.add_argument("file", help="FILE.sqlite written by mrfq compare")
    r.add_argument("--csv", action="store_true", help="print every stored point and class as CSV")
    r.set_defaults(func=cmd_results)
