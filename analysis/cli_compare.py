"""``mrfq compare`` and ``mrfq results``.

Every argument, the results store and every output path are checked before
the first simulation; figures and CSV files are written atomically; the store
is refused (and left byte-identical) unless it is an mrfq results store
(:class:`analysis.sweep.ResultStore`).  ``mrfq results`` prints the tables of the
sweeps a store holds, as ``mrfq compare`` printed them, and ``--csv`` writes those
tables (``--csv --raw``: the stored points' per-replication sums); see the "Results
store and workers" section of the "Packet vs fluid" documentation page.
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
    on_terminal,
    parse_loads,
    parse_names,
    save_figure,
    shorten,
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
            check_not_sqlite(field, path)
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
    for line in sc.overload_warnings():  # an open-loop flow beside the classes, the same at every load
        print(f"mrfq: warning: {line}", file=sys.stderr)
    executor = "local"
    if args.dask:
        executor = f"dask:{args.dask}"
    elif args.workers == 1:
        executor = "serial"
    store = ResultStore(args.results or DEFAULT_RESULTS)
    try:
        # the bar on a terminal only (a pipe or a log file would collect its redrawn lines)
        res = compare(sc, cfg, store, executor=executor, workers=args.workers,
                      progress=not args.json and on_terminal(sys.stderr))
    finally:
        store.close()
    if args.plot:
        fig = plot_comparison(res.rows, title=f"{sc.name}: packet γ (points, 95% CI) vs fluid γ (lines)")
        save_figure(fig, args.plot, field="--plot")
    if args.csv:
        atomic_write(args.csv, rows_csv([r.to_json() for r in res.rows]), field="--csv")
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


#: a sweep's table as CSV (``mrfq compare --csv``, ``mrfq results --csv``): the table's columns in its
#: order at full precision; the 95 % interval as ``ci_low``, ``ci_high``; ``rel_error`` a fraction (the
#: table shows it in %); ``inside`` the table's "in CI"; ``replications`` its "reps", ``completed`` its
#: "flows"; ``insensitivity_guaranteed`` False where the table marks the fluid value with ``*``; an
#: empty cell where the table shows "-"
TABLE_COLUMNS = ("scheduler", "load", "class", "gamma_packet", "ci_low", "ci_high", "gamma_fluid", "rel_error",
                 "inside", "replications", "completed", "insensitivity_guaranteed")
#: ``mrfq results --csv --raw``: one row per stored point and class, the sums over its batches
RAW_COLUMNS = ("scenario", "scenario_hash", "scheduler", "load", "replication", "seed", "duration", "class",
               "departed", "flow_time_integral", "completed", "arrived", "services", "wall_seconds")


def rows_csv(rows: list[dict], sweeps: list[tuple[int, str]] | None = None) -> str:
    """The table's rows (:meth:`analysis.compare.Row.to_json`) as CSV, :data:`TABLE_COLUMNS`;
    ``sweeps`` (``mrfq results``): each row's (sweep number, scenario), two leading columns."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow((("sweep", "scenario") if sweeps is not None else ()) + TABLE_COLUMNS)
    for i, r in enumerate(rows):
        w.writerow(list(sweeps[i] if sweeps is not None else ()) + [
            r["scheduler"], r["load"], r["class"], r["gamma_packet"], r["ci"][0], r["ci"][1], r["gamma_fluid"],
            r["rel_error"], r["inside"], r["replications"], r["completed"], r.get("insensitivity_guaranteed", True)])
    return buf.getvalue()


def check_not_sqlite(field: str, path: str) -> None:
    """Refuse to write an output over an existing SQLite file (a results store, most likely: ``mrfq results
    --csv A.sqlite B.sqlite`` would replace the store A with a table of B)."""
    from mrfq.analysis.sweep import _SQLITE_MAGIC

    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError:  # no such file yet (or unreadable: the write will say so)
        return
    if head == _SQLITE_MAGIC:
        raise MrfqError(f"{field} {shorten(path)}: an SQLite file (a results store?), which {field} would replace; "
                        "give a new file name")


def _raw_csv(store, file: str) -> tuple[str, int]:
    """Every stored point's per-class batch sums as CSV (:data:`RAW_COLUMNS`), and the number of points."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(RAW_COLUMNS)
    n = 0
    for scen, h, sched, load, rep, seed, dur, d in store.rows():
        try:
            for k, c in enumerate(d["classes"]):
                w.writerow([scen, h, sched, load, rep, seed, dur, c, sum(d["departed"][k]), sum(d["area"][k]),
                            d["completed"][k], d["arrived"][k], d["services"], d["wall_seconds"]])
        except (KeyError, IndexError, TypeError):
            raise MrfqError(f"results {file}: the stored point of {sched} at load {load} (replication "
                            f"{rep}) lacks fields; the store is damaged") from None
        n += 1
    return buf.getvalue(), n


def _sweep_title(i: int, sw: dict) -> str:
    """The line above a stored sweep's table: what was swept, and when."""
    import time

    c = sw["config"]
    try:
        loads = ",".join(f"{x:g}" for x in c["loads"])
        what = (f"schedulers {','.join(c['schedulers'])}, loads {loads}, replications {c['replications']}.."
                f"{c['max_replications']}, target {c['target']:g}, {c['flows_per_replication']:g} flows per "
                f"replication, seed {c['seed']}" + ("" if c.get("fluid", True) else ", no fluid model"))
    except (KeyError, TypeError, ValueError):
        what = "configuration not readable"
    return f"sweep {i}: {sw['scenario']}, {what} (stored {time.strftime('%Y-%m-%d %H:%M', time.localtime(sw['created']))})"


def cmd_results(args) -> int:
    """``mrfq results FILE [--csv [FILE.csv] [--raw]]`` ("Packet vs fluid" page, "Results store and workers")."""
    from mrfq.analysis.compare import Row, format_rows
    from mrfq.analysis.sweep import ResultStore

    if args.file is None:  # e.g. mrfq results --csv FILE.sqlite: --csv took the store as its output
        took = f" (--csv took {shorten(args.csv)} as the CSV file to write)" if args.csv not in (None, "-") else ""
        raise MrfqError(f"results: no results file given{took}; mrfq results FILE.sqlite [--csv [FILE.csv]] [--raw]")
    if args.raw and args.csv is None:
        raise MrfqError("--raw: selects what --csv writes (every stored point's per-replication sums); "
                        "give both: mrfq results FILE.sqlite --csv [FILE.csv] --raw")
    to_file = args.csv not in (None, "-")
    if to_file:  # checked before the store is read
        check_output_path("--csv", args.csv)
        check_distinct_outputs(("results", args.file), ("--csv", args.csv))
        check_not_sqlite("--csv", args.csv)
    store = ResultStore(args.file, readonly=True, what="results")
    try:
        n = store.count()
        if args.raw:
            text, n = _raw_csv(store, args.file)
        else:
            sweeps = store.sweeps()
    finally:
        store.close()
    if not args.raw:
        try:
            tables = [[Row.from_json(r) for r in sw["rows"]] for sw in sweeps]
        except (KeyError, IndexError, TypeError, ValueError):
            raise MrfqError(f"results {args.file}: a stored sweep's table lacks fields; the store is damaged; "
                            "re-run its mrfq compare command to store it again") from None
    if args.csv is None:
        for i, (sw, rows) in enumerate(zip(sweeps, tables), 1):
            print(_sweep_title(i, sw))
            print("\n".join(format_rows(rows)))
            print()
        tabled = (f"{len(sweeps)} sweep table{'s' if len(sweeps) != 1 else ''}" if sweeps else
                  "no finished sweep's table (a sweep stores it when it ends: re-run its mrfq compare command, "
                  "which reuses the stored points)")
        print(f"{args.file}: {n:,} stored points, {tabled}; --csv [FILE.csv] writes the tables as CSV, "
              "--csv --raw the stored points' per-replication sums")
        return 0
    if not args.raw:
        if not sweeps:
            raise MrfqError(f"--csv: {args.file} holds no finished sweep's table ({n:,} stored points); re-run its "
                            "mrfq compare command, which reuses them and stores the table, or give --raw for the "
                            "stored points' per-replication sums")
        # the rows the tables above were printed from, each after its sweep's number and scenario
        ids = [(i, sw["scenario"]) for i, (sw, t) in enumerate(zip(sweeps, tables), 1) for _ in t]
        text = rows_csv([r.to_json() for t in tables for r in t], ids)
        what = f"{len(ids):,} rows of {len(sweeps)} sweep table{'s' if len(sweeps) != 1 else ''}"
    else:
        what = f"{n:,} stored points' per-replication sums"
    if to_file:
        atomic_write(args.csv, text, field="--csv")
        print(f"{what} written to {args.csv}")
    else:
        sys.stdout.write(text)
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
    p.add_argument("--json", action="store_true",
                   help="print one JSON object {rows: [...]}, no progress bar (shown on a terminal only)")
    p.add_argument("--plot", metavar="FILE.png", help="write [BR] Fig. 3 for this sweep")
    p.add_argument("--csv", metavar="FILE.csv", help="also write the table as CSV")
    p.add_argument("--results", metavar="FILE.sqlite", help=f"results store (default ./{DEFAULT_RESULTS})")
    p.add_argument("--workers", type=int_type("--workers", lo=1, hi=MAX_WORKERS),
                   help="worker processes (default: one per core)")
    p.add_argument("--dask", metavar="ADDRESS", help="run on a dask.distributed scheduler ('local' starts one)")
    p.set_defaults(func=cmd_compare)

    r = sub.add_parser("results", help="the tables of the sweeps a results store holds, printed or as CSV "
                                       "(the store is opened read-only)")
    r.add_argument("file", nargs="?", help="FILE.sqlite written by mrfq compare")
    r.add_argument("--csv", nargs="?", const="-", metavar="FILE.csv",
                   help="write the stored sweeps' tables as CSV, one row per sweep, scheduler, load and class, "
                        "the table's numbers at full precision (the interval as ci_low, ci_high), to FILE.csv "
                        "or, without it, to stdout")
    r.add_argument("--raw", action="store_true",
                   help="with --csv: every stored point's per-replication, per-class sums instead (departed "
                        "packets, flow-time integral, completed and arrived flows)")
    r.set_defaults(func=cmd_results)
