"""``mrfq run``: one scenario through the packet emulator, with each class's gamma and interval.

The runner (:func:`router.run.simulate`) returns counts and raw batch sums;
this subcommand turns them into estimates (:mod:`analysis.run_report`), so it
sits in the analysis layer.  Every output path is checked before the first
simulation; the ``--trace`` CSV is written atomically (:mod:`flows.cli_args`).
"""

from __future__ import annotations

import numpy as np

from analysis.run_report import class_estimates, run_json
from flows.cli_args import (
    add_scenario_args,
    atomic_writer,
    check_output_path,
    dumps_strict,
    int_type,
    load_scenario_arg,
    number_type,
    shorten,
)
from flows.errors import MrfqError
from flows.scenario import MAX_SEED, MAX_TIME, MAX_WINDOW

#: most service starts a ``--trace`` may record (40 bytes each in memory)
MAX_TRACE = 10_000_000


def format_run(r) -> str:
    """The text report of one run (flows, classes with gamma and interval, resources)."""
    lines = [f"mrfq run: scenario {r.scenario.name}, scheduler {r.scheduler}"
             + (f" (virtual time: {r.virtual_time})" if r.scheduler == "drfq" else "")
             + f", seed {r.seed}, window {r.scenario.router.window}, rtt {r.scenario.router.rtt:g}",
             f"simulated {r.t_end:g} time units (warm-up {r.scenario.run.warmup:g}), "
             f"{r.services:,} services in {r.wall_seconds:.2f} s "
             f"({r.services / max(r.wall_seconds, 1e-9) / 1e6:.1f} M services/s"
             + (f"; numba compilation or cache load took {r.compile_seconds:.1f} s"
                if r.compile_seconds > 0.05 else "") + ")", ""]
    if r.flows:
        lines.append(f"{'flow':<12} {'cost':<22} {'weight':>6} {'rate':>10} {'packets':>11} {'completion':>11}")
        table = r.scenario.static_spec()
        counted = False
        for k, spec in enumerate(r.scenario.flows):
            cost = "(" + ", ".join(f"{c:.4g}" for c in spec.mean_cost()) + ")"
            ids = np.flatnonzero(table == k)  # its flows' ids (a block, or every n-th under round-robin)
            if spec.count == 1:
                f = r.flows[int(ids[0])]
                ct = "-" if f.completion_time is None else f"{f.completion_time:.4g}"
                lines.append(f"{f.name:<12} {cost:<22} {spec.weight:>6.3g} {f.rate:>10.5f} {f.packets:>11,} {ct:>11}")
            else:  # a counted [[flow]] table: one line, the mean over its flows
                counted = True
                ct = r.flows.completion_time[ids]
                ctm = "-" if np.isnan(ct).any() else f"{ct.mean():.4g}"
                name = f"{spec.name}.*"
                lines.append(f"{name:<12} {cost:<22} {spec.weight:>6.3g} {r.flows.rate[ids].mean():>10.5f} "
                             f"{int(r.flows.packets[ids].sum()):>11,} {ctm:>11}")
        if counted:
            lines.append("name.*: a [[flow]] table with count > 1: its flows' mean rate, their packets in all, "
                         "their mean completion time (--json: every flow)")
        lines.append("")
    if r.classes:
        est = class_estimates(r)
        lines.append(f"{'class':<8} {'cost':<18} {'gamma':>9} {'95% CI' if r.scenario.run.confidence == 0.95 else 'CI':>21}"
                     f" {'arrived':>8} {'completed':>9} {'mean flows':>10}")
        for spec, c, e in zip(r.scenario.classes, r.classes, est):
            cost = "(" + ", ".join(f"{x:.4g}" for x in spec.mean_cost()) + ")"
            ci = f"[{e.ci[0]:.4f}, {e.ci[1]:.4f}]"
            lines.append(f"{c.name:<8} {cost:<18} {e.gamma:>9.4f} {ci:>21} {c.arrived:>8} {c.completed:>9} "
                         f"{c.mean_flows:>10.3f}")
        lines.append(f"gamma = mean service rate (packets per time unit); {est[0].method}")
        lines.append("")
    lines.append(f"{'resource':<12} {'utilization':>11} {'services':>14}")
    for x in r.resources:
        lines.append(f"{x.name:<12} {x.utilization:>11.4f} {x.services:>14,}")
    return "\n".join(lines)


def cmd_run(args) -> int:
    from router.run import simulate

    if args.trace:
        check_output_path("--trace", args.trace)
    sc = load_scenario_arg(args)
    changes = {}
    if args.load is not None:
        if sc.load is None:
            raise MrfqError("--load: this scenario has no [traffic] load to scale (its classes give rates)")
        changes["traffic.load"] = args.load
    if args.window is not None:
        changes["router.window"] = args.window
    if args.rtt is not None:
        changes["router.rtt"] = args.rtt
    if args.warmup is not None:
        changes["run.warmup"] = args.warmup
    elif args.duration is not None and not sc.run.warmup < args.duration:
        raise MrfqError(f"--duration {args.duration:g}: not longer than the scenario's run.warmup = "
                        f"{sc.run.warmup:g}; also give --warmup (e.g. --warmup {args.duration / 10:g}, 10 % of it)")
    if args.fq_resource is not None:
        changes["router.fq_resource"] = args.fq_resource
    # the overrides go through the scenario gate before anything runs
    sc = sc.replace(**changes).with_overrides(virtual_time=args.virtual_time, seed=args.seed,
                                               duration=args.duration)
    # --scheduler runs the scenario under another scheduler: its own scheduler's options do not apply
    r = simulate(sc, scheduler=args.scheduler, trace=args.trace_limit if args.trace else 0)
    if args.trace:
        names = r.scenario.static_flow_names()
        res_names = r.scenario.resources
        tr = r.trace
        try:
            with atomic_writer(args.trace) as f:
                f.write("start,end,resource,flow,flow_id,seq\n")
                for i in range(len(tr.start)):
                    fid = int(tr.flow[i])
                    fname = names[fid] if fid < len(names) else f"dyn{fid}"
                    f.write(f"{float(tr.start[i])!r},{float(tr.end[i])!r},{res_names[int(tr.resource[i])]},"
                            f"{fname},{fid},{int(tr.seq[i])}\n")
        except OSError as e:  # e.g. a full disk: the temporary file is removed, an older trace kept
            raise MrfqError(f"--trace {shorten(str(args.trace))}: cannot write ({e.strerror}); nothing was written "
                            "(a file already there is unchanged)") from None
    if args.json:
        print(dumps_strict(run_json(r)))
    else:
        print(format_run(r))
        if args.trace:
            print(f"\ntrace: {len(r.trace.start):,} service starts written to {args.trace}")
    return 0


def register(sub) -> None:
    """Add ``run`` to an argparse subparsers object."""
    from flows.scenario import VIRTUAL_TIMES
    from fq.registry import SCHEDULERS

    r = sub.add_parser("run", help="run one scenario through the packet emulator")
    add_scenario_args(r)
    r.add_argument("--scheduler", choices=list(SCHEDULERS), help="override router.scheduler")
    r.add_argument("--virtual-time", choices=VIRTUAL_TIMES, help="drfq: 'started' [BR] or 'in-service' [DRFQ]")
    r.add_argument("--fq-resource", help="fq-single: the resource that is fair-queued")
    r.add_argument("--seed", type=int_type("--seed", lo=0, hi=MAX_SEED), help="override run.seed")
    r.add_argument("--duration", type=number_type("--duration", lo=0.0, lo_open=True, hi=MAX_TIME),
                   help="override run.duration")
    r.add_argument("--warmup", type=number_type("--warmup", lo=0.0, hi=MAX_TIME), help="override run.warmup")
    r.add_argument("--load", type=number_type("--load", lo=0.0, lo_open=True, hi=1.0, hi_open=True),
                   help="load of the most loaded resource")
    r.add_argument("--window", type=int_type("--window", lo=1, hi=MAX_WINDOW), help="override router.window")
    r.add_argument("--rtt", type=number_type("--rtt", lo=0.0, hi=MAX_TIME), help="override router.rtt")
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.add_argument("--trace", metavar="FILE", help="write the service trace as CSV")
    r.add_argument("--trace-limit", type=int_type("--trace-limit", lo=1, hi=MAX_TRACE), default=1_000_000,
                   help=f"most service starts to record (default 1000000, at most {MAX_TRACE})")
    r.set_defaults(func=cmd_run)
