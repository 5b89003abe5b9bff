"""``mrfq compare`` and ``mrfq results``."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

from flows.errors import MrfqError

DEFAULT_RESULTS = "mrfq-results.sqlite"


def cmd_compare(args) -> int:
    from analysis.compare import CompareConfig, compare, format_table, plot_comparison
    from analysis.sweep import ResultStore, parse_loads
    from router.cli import atomic_write, load_scenario_arg

    sc = load_scenario_arg(args)
    if args.virtual_time:
        sc = sc.replace(**{"router.virtual_time": args.virtual_time})
    scheds = tuple(s.strip() for s in args.schedulers.split(",") if s.strip())
    if not scheds:
        raise MrfqError("--schedulers: give a comma-separated list, e.g. drfq,pf-sfq")
    loads = tuple(parse_loads(args.loads))
    kw = dict(schedulers=scheds, loads=loads, seed=args.seed)
    if args.replications is not None:
        if args.replications < 1:
            raise MrfqError(f"--replications = {args.replications}: must be >= 1")
        kw["replications"] = args.replications
    if args.target is not None:
        if not 0 < args.target < 1:
            raise MrfqError(f"--target = {args.target}: relative CI half-width must be in (0, 1)")
        kw["target"] = args.target
    if args.max_replications is not None:
        if args.max_replications < 1:
            raise MrfqError(f"--max-replications = {args.max_replications}: must be >= 1")
        kw["max_replications"] = args.max_replications
    if args.flows is not None:
        if args.flows < 10:
            raise MrfqError(f"--flows = {args.flows}: give at least 10 flow arrivals per replication")
        kw["flows_per_replication"] = args.flows
    cfg = CompareConfig.quick(**kw) if args.quick else CompareConfig(**kw)
    if cfg.max_replications < cfg.replications:
        cfg = CompareConfig(**{**cfg.__dict__, "max_replications": cfg.replications})
    if args.plot and not Path(args.plot).parent.exists():
        raise MrfqError(f"--plot {args.plot}: folder {Path(args.plot).parent} does not exist")
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
        buf = io.BytesIO()
        fig.savefig(buf, format=Path(args.plot).suffix.lstrip(".") or "png", dpi=120)
        tmp = Path(args.plot).with_name("." + Path(args.plot).name + ".tmp")
        tmp.write_bytes(buf.getvalue())
        tmp.replace(args.plot)
    if args.json:
        print(json.dumps(res.to_json()))
    else:
        print(format_table(res))
        if not args.results:
            print(f"results stored in {DEFAULT_RESULTS} (re-running the same sweep reuses them)")
        if args.plot:
            print(f"figure written to {args.plot}")
    if args.csv:
        atomic_write(args.csv, _rows_csv([r.to_json() for r in res.rows]))
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
    from analysis.sweep import ResultStore

    p = Path(args.file)
    if not p.exists():
        raise MrfqError(f"{args.file}: no such results file")
    store = ResultStore(p)
    try:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["scenario", "scenario_hash", "scheduler", "load", "replication", "seed", "duration", "class",
                    "departed", "flow_time_integral", "completed", "arrived", "services", "wall_seconds"])
        n = 0
        for scen, h, sched, load, rep, seed, dur, payload in store.rows():
            d = json.loads(payload)
            for k, c in enumerate(d["classes"]):
                w.writerow([scen, h, sched, load, rep, seed, dur, c, sum(d["departed"][k]), sum(d["area"][k]),
                            d["completed"][k], d["arrived"][k], d["services"], d["wall_seconds"]])
            n += 1
    finally:
        store.close()
    if args.csv:
        sys.stdout.write(buf.getvalue())
    else:
        print(f"{args.file}: {n} stored points (use --csv to export them)")
    return 0


def register(sub) -> None:
    from router.cli import add_scenario_args

    p = sub.add_parser("compare", help="packet schedulers vs the fluid Markov model over a range of loads")
    add_scenario_args(p)
    p.add_argument("--schedulers", default="drfq,drfq-dovetail,pf-sfq,bmf-wfq",
                   help="comma-separated scheduler names")
    p.add_argument("--loads", default="0.1:0.9:0.1", help="start:stop:step or a list 0.3,0.6,0.8")
    p.add_argument("--replications", type=int, help="initial replications per point (default 2)")
    p.add_argument("--max-replications", type=int, help="cap of the stopping rule (default 32; quick 4)")
    p.add_argument("--target", type=float, help="target CI half-width relative to gamma (default 0.02; quick 0.05)")
    p.add_argument("--flows", type=float, help="flow arrivals per replication (default 2000; quick 400)")
    p.add_argument("--virtual-time", choices=("started", "in-service"),
                   help="drfq's virtual-time rule for this sweep (default: the scenario's)")
    p.add_argument("--seed", type=int, default=1, help="seed of replication 0 (replication r uses seed + r)")
    p.add_argument("--quick", action="store_true", help="a few-minute version")
    p.add_argument("--json", action="store_true", help="print one JSON object {rows: [...]}, no progress bar")
    p.add_argument("--plot", metavar="FILE.png", help="write [BR] Fig. 3 for this sweep")
    p.add_argument("--csv", metavar="FILE.csv", help="also write the table as CSV")
    p.add_argument("--results", metavar="FILE.sqlite", help=f"results store (default ./{DEFAULT_RESULTS})")
    p.add_argument("--workers", type=int, help="worker processes (default: one per core)")
    p.add_argument("--dask", metavar="ADDRESS", help="run on a dask.distributed scheduler ('local' starts one)")
    p.set_defaults(func=cmd_compare)

    r = sub.add_parser("results", help="inspect or export a results store")
    r.add_argument("file", help="FILE.sqlite written by mrfq compare")
    r.add_argument("--csv", action="store_true", help="print every stored point and class as CSV")
    r.set_defaults(func=cmd_results)
