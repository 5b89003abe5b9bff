"""``mrfq run``: one scenario through the packet emulator, with each class's gamma and interval.

The runner (:func:`router.run.simulate`) returns counts and raw batch sums;
this subcommand turns them into estimates (:mod:`analysis.run_report`), so it
sits in the analysis layer.  Every output path is checked before the first
simulation; the ``--trace`` CSV is written atomically (:mod:`flows.cli_args`).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from mrfq.analysis.delay_stats import summary, write_csv
from mrfq.router.state import REASONS
from mrfq.analysis.run_report import class_estimates, run_json
from mrfq.flows.cli_args import (
    add_pipeline_args,
    add_scenario_args,
    atomic_writer,
    check_distinct_outputs,
    check_output_path,
    pipeline_changes,
    dumps_strict,
    int_type,
    load_scenario_arg,
    number_type,
    shorten,
)
from mrfq.flows.errors import MrfqError
from mrfq.flows.scenario import MAX_SEED, MAX_TIME, MAX_WINDOW

#: most service starts a ``--trace`` may record (40 bytes each in memory)
MAX_TRACE = 10_000_000
#: --share-series without --share-window: this many windows over the run
SHARE_WINDOWS = 1000


def format_run(r) -> str:
    """The text report of one run (flows, classes with gamma and interval, resources)."""
    lines = [f"mrfq run: scenario {r.scenario.name}, scheduler {r.scheduler}"
             + (f" (virtual time: {r.virtual_time})" if r.scheduler == "drfq" else "")
             + f", seed {r.seed}, window {r.scenario.router.window}, rtt {r.scenario.router.rtt:g}"
             + r.scenario.router.pipeline_text(),
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
    lines.extend(format_delays(r))
    lines.extend(format_transport(r))
    lines.extend(format_rfb(r))
    lines.extend(format_fairness(r))
    lines.append(f"{'resource':<12} {'utilization':>11} {'services':>14}")
    for x in r.resources:
        lines.append(f"{x.name:<12} {x.utilization:>11.4f} {x.services:>14,}")
    return "\n".join(lines)


def _g(x: float) -> str:
    return "-" if x != x else f"{x:.4g}"


def format_delays(r) -> list[str]:
    """The delay table: per [[flow]] table (its flows' histograms merged) and per class, the sojourn's
    mean with its interval, quantiles and max; an open-loop flow's drops and drop fraction."""
    dh = r.delays
    if dh is None:
        return []
    lo, hi = dh.edges
    J = dh.hist.shape[1] - 1
    conf = r.scenario.run.confidence
    ci_name = "95% CI" if conf == 0.95 else "CI"
    lines = [f"{'delay':<12} {'packets':>10} {'mean':>9} {ci_name:>21} {'p50':>9} {'p90':>9} {'p99':>9} "
             f"{'p999':>9} {'max':>9} {'drops':>9}"]
    groups = []
    why: list[str] = []
    table = r.scenario.static_spec()
    for k, spec in enumerate(r.scenario.flows):
        ids = np.flatnonzero(table == k)
        rows = np.unique(dh.flow_row[ids])
        name = spec.name if spec.count == 1 else f"{spec.name}.*"
        drops = int(r.flows.drops[ids].sum())
        offered = int(r.flows.offered[ids].sum())
        d = f"{drops:,} ({100.0 * drops / offered:.3g}%)" if spec.buffered and offered else "-"
        groups.append((name, rows, d))
        by = r.flows.drops_by_reason[ids].sum(axis=0)
        if spec.buffered and drops and by[0] != drops:  # other reasons than the flow's own limit
            why.append(f"{name} " + ", ".join(f"{REASONS[i].replace('_', '-')} {int(n):,}" for i, n in enumerate(by) if n))
    for k, c in enumerate(r.scenario.classes):
        groups.append((c.name, np.array([dh.n_static_rows + k]), "-"))
    for name, rows, d in groups:
        s = summary(dh.hist[rows, J].sum(axis=0), lo, hi, float(dh.dmax[rows].max()), dh.dsum[rows].sum(axis=0),
                    dh.dcnt[rows].sum(axis=0), conf)
        ci = f"[{_g(s['ci'][0])}, {_g(s['ci'][1])}]"
        lines.append(f"{name:<12} {s['packets']:>10,} {_g(s['mean']):>9} {ci:>21} {_g(s['p50']):>9} "
                     f"{_g(s['p90']):>9} {_g(s['p99']):>9} {_g(s['p999']):>9} {_g(s['max']):>9} {d:>9}")
    lines.append("delay = sojourn in the router (arrival or admission to departure, time units) of the packets "
                 f"that left after warm-up; mean with {r.scenario.run.batches} batch means, quantiles within "
                 "0.8 %; drops = open-loop or TCP packets from warm-up on dropped: at arrival (the flow's buffer full, "
                 "the shared pool, RED) or waiting (pushed out, CoDel)")
    if why:
        lines.append("drops by reason: " + "; ".join(why))
    lines.append("")
    return lines


def transport_rows(r) -> list[dict]:
    """Per TCP [[flow]] table (its flows summed, the window averaged): goodput, rate, retransmissions,
    timeouts, random losses, drops, marks, the mean window and the round-trip time (the flow's rtt plus
    the router's sojourn: mean, p50, p99) of the packets that left after warm-up (docs/transport.md)."""
    dh = r.delays
    table = r.scenario.static_spec()
    out = []
    for k, spec in enumerate(r.scenario.flows):
        if not spec.tcp:
            continue
        ids = np.flatnonzero(table == k)
        t = [r.flows.transport[int(i)] for i in ids]
        row = {"name": spec.name if spec.count == 1 else f"{spec.name}.*", "cc": spec.transport.cc,
               "rtt": spec.transport.rtt, "goodput": sum(x["goodput"] for x in t),
               "rate": float(r.flows.rate[ids].sum()), "drops": int(r.flows.drops[ids].sum()),
               **{key: sum(x[key] for x in t) for key in ("retransmissions", "timeouts", "random_losses", "marks")},
               "mean_cwnd": sum(x["mean_cwnd"] for x in t) / len(t)}
        if dh is not None:
            lo, hi = dh.edges
            J = dh.hist.shape[1] - 1
            rows = np.unique(dh.flow_row[ids])
            sm = summary(dh.hist[rows, J].sum(axis=0), lo, hi, float(dh.dmax[rows].max()), dh.dsum[rows].sum(axis=0),
                          dh.dcnt[rows].sum(axis=0), r.scenario.run.confidence)
            row["round_trip"] = {q: spec.transport.rtt + sm[q] for q in ("mean", "p50", "p99")}
        out.append(row)
    return out


def format_transport(r) -> list[str]:
    """The TCP flows' table (:func:`transport_rows`)."""
    rows = transport_rows(r)
    if not rows:
        return []
    lines = [f"{'tcp':<12} {'cc':>5} {'goodput':>9} {'rate':>9} {'retx':>7} {'timeouts':>8} {'losses':>7} "
             f"{'drops':>7} {'marks':>7} {'cwnd':>7} {'rtt mean':>9} {'p50':>8} {'p99':>8}"]
    for x in rows:
        rt = x.get("round_trip", {})
        lines.append(f"{x['name']:<12} {x['cc']:>5} {x['goodput']:>9.5f} {x['rate']:>9.5f} {x['retransmissions']:>7,} "
                     f"{x['timeouts']:>8,} {x['random_losses']:>7,} {x['drops']:>7,} {x['marks']:>7,} "
                     f"{x['mean_cwnd']:>7.4g} {_g(rt.get('mean', math.nan)):>9} {_g(rt.get('p50', math.nan)):>8} "
                     f"{_g(rt.get('p99', math.nan)):>8}")
    lines.append("tcp = TCP flows from warm-up on: goodput = packets delivered once per time unit (rate counts "
                 "retransmitted copies too); losses = random losses before the router (loss); cwnd = the "
                 "time-average congestion window (packets); rtt = the flow's rtt + its sojourn in the router")
    lines.append("")
    return lines


def format_rfb(r) -> list[str]:
    """The relative fairness bound the run reached (router/rfb.py), or why it was not computed."""
    f = r.rfb
    if f is None:
        return []
    if f.value is None:
        return [f"relative fairness: {f.reason}", ""]
    return [f"relative fairness reached: {f.value:.4g} L (flows {f.pair[0]} and {f.pair[1]}; "
            f"{f.raw:.4g} time units over weight), L = {f.unit:.4g} (the largest packet's dominant cost over its "
            f"weight); the largest |S_i/w_i - S_j/w_j| over pairs of the {f.flows} static flows and intervals after "
            "warm-up on which both are backlogged, S the service at the flow's dominant resource"
            + (f"; {f.reason}" if f.reason else ""), ""]


def format_fairness(r) -> list[str]:
    """Jain's index and the max/min ratio of the windowed flows' normalised dominant shares, where there
    are two such flows or more."""
    from mrfq.analysis import fairness_index as fi
    from mrfq.analysis.run_report import run_fairness

    ix = run_fairness(r)
    if ix["flows"] < 2:
        return []
    return [f"fairness index: {fi.text(ix)} over the {ix['flows']} greedy (windowed or TCP) flows' normalised "
            "dominant shares "
            "(rate x dominant cost / weight; 1 and 1 at weighted DRF)", ""]


def say_estimate(sc, what: str = "this run", runs: int = 1) -> None:
    """On a terminal (where the progress line goes: flows.notice), the estimated work and time of a
    run that would take more than about a minute (flows.workload), before it starts."""
    from mrfq.flows import notice
    from mrfq.flows.workload import estimate_line

    if notice.progress is None:
        return
    line = estimate_line(sc, what, runs)
    if line:
        print(f"mrfq: {line}", file=sys.stderr)


def cmd_run(args) -> int:
    from mrfq.router.run import simulate

    for field, path in (("--trace", args.trace), ("--delays", args.delays), ("--share-series", args.share_series),
                        ("--cwnd-series", args.cwnd_series)):
        if path is not None:  # an empty name is refused, not ignored
            check_output_path(field, path)
    check_distinct_outputs(("--trace", args.trace), ("--delays", args.delays), ("--share-series", args.share_series),
                           ("--cwnd-series", args.cwnd_series))
    if args.cwnd_width is not None and not args.cwnd_series:
        raise MrfqError("--cwnd-width: give --cwnd-series FILE.csv too (the file the windows go to)")
    if args.share_window is not None and not args.share_series:
        raise MrfqError("--share-window: give --share-series FILE.csv too (the file the shares go to)")
    if args.share_series and args.no_rfb:
        raise MrfqError("--share-series: comes from the relative fairness log; drop --no-rfb")
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
    changes.update(pipeline_changes(args))
    # the overrides go through the scenario gate before anything runs
    sc = sc.replace(**changes).with_overrides(virtual_time=args.virtual_time, seed=args.seed,
                                               duration=args.duration)
    # --scheduler runs the scenario under another scheduler: its own scheduler's options do not apply
    share_window = 0.0
    if args.share_series:
        share_window = args.share_window if args.share_window is not None else sc.run.duration / SHARE_WINDOWS
    if args.cwnd_series and not any(f.tcp for f in sc.flows):
        raise MrfqError("--cwnd-series: the scenario has no TCP flow; give a [[flow]] a transport = {cc = \"reno\", "
                        "rtt = ...}")
    for line in sc.overload_warnings():
        print(f"mrfq: warning: {line}", file=sys.stderr)
    say_estimate(sc)
    try:
        r = simulate(sc, scheduler=args.scheduler, trace=args.trace_limit if args.trace else 0,
                     record_fairness=not args.no_rfb, share_window=share_window, cwnd_series=bool(args.cwnd_series))
    except MrfqError as e:
        m = str(e)
        if args.share_series and m.startswith("share window = ") and args.share_window is not None:
            raise MrfqError(f"--share-window {m.removeprefix('share window = ')}") from None
        if args.share_series and m.startswith("share"):
            raise MrfqError(f"--share-series: {m.removeprefix('share series: ')}") from None
        raise
    if args.trace:
        names = r.scenario.static_flow_names()
        res_names = r.scenario.resources
        tr = r.trace
        try:
            with atomic_writer(args.trace, field="--trace") as f:
                f.write("start,end,resource,flow,flow_id,seq\n")
                for i in range(len(tr.start)):
                    fid = int(tr.flow[i])
                    fname = names[fid] if fid < len(names) else f"dyn{fid}"
                    f.write(f"{float(tr.start[i])!r},{float(tr.end[i])!r},{res_names[int(tr.resource[i])]},"
                            f"{fname},{fid},{int(tr.seq[i])}\n")
        except OSError as e:  # e.g. a full disk: the temporary file is removed, an older trace kept
            raise MrfqError(f"--trace {shorten(str(args.trace))}: cannot write ({e.strerror}); nothing was written "
                            "(a file already there is unchanged)") from None
    if args.delays:
        try:
            with atomic_writer(args.delays, field="--delays") as f:
                n_rows = write_csv(f, r.delays, r.scenario.resources)
        except OSError as e:  # e.g. a full disk: the temporary file is removed, an older file kept
            raise MrfqError(f"--delays {shorten(str(args.delays))}: cannot write ({e.strerror}); nothing was written "
                            "(a file already there is unchanged)") from None
    if args.share_series:
        try:
            with atomic_writer(args.share_series, field="--share-series") as f:
                n_windows = r.share_series.write_csv(f)
        except OSError as e:  # e.g. a full disk: the temporary file is removed, an older file kept
            raise MrfqError(f"--share-series {shorten(str(args.share_series))}: cannot write ({e.strerror}); "
                            "nothing was written (a file already there is unchanged)") from None
    if args.cwnd_series:
        cs = r.cwnd_series
        if args.cwnd_width is not None:
            tcp_ids = [i for i, k in enumerate(r.scenario.static_spec().tolist()) if r.scenario.flows[k].tcp]
            cs = cs.sampled(args.cwnd_width, r.t_end, tcp_ids)
        names = r.scenario.static_flow_names()
        try:
            with atomic_writer(args.cwnd_series, field="--cwnd-series") as f:
                f.write("time,flow,cwnd,ssthresh\n")
                for t, k, c, h in zip(cs.time.tolist(), cs.flow.tolist(), cs.cwnd.tolist(), cs.ssthresh.tolist()):
                    f.write(f"{t!r},{names[k]},{c!r},{h!r}\n")
        except OSError as e:  # e.g. a full disk: the temporary file is removed, an older file kept
            raise MrfqError(f"--cwnd-series {shorten(str(args.cwnd_series))}: cannot write ({e.strerror}); "
                            "nothing was written (a file already there is unchanged)") from None
    if args.json:
        print(dumps_strict(run_json(r)))
    else:
        print(format_run(r))
        if args.trace:
            print(f"\ntrace: {len(r.trace.start):,} service starts written to {args.trace}")
        if args.delays:
            print(f"\ndelays: {n_rows:,} histogram buckets written to {args.delays}")
        if args.share_series:
            print(f"\nshare series: {n_windows:,} windows of {share_window:g} time units x "
                  f"{len(r.share_series.flows)} flows written to {args.share_series}")
        if args.cwnd_series:
            what = "every change of" if args.cwnd_width is None else f"samples every {args.cwnd_width:g} time units of"
            print(f"\ncwnd series: {len(cs.time):,} rows ({what} each TCP flow's window) written to {args.cwnd_series}")
    return 0


def register(sub) -> None:
    """Add ``run`` to an argparse subparsers object."""
    from mrfq.flows.scenario import VIRTUAL_TIMES
    from mrfq.fq.registry import SCHEDULERS

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
    add_pipeline_args(r)
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.add_argument("--trace", metavar="FILE", help="write the service trace as CSV")
    r.add_argument("--delays", metavar="FILE.csv", help="write the delay histograms as CSV "
                   "(row,kind,measure,lower,upper,count; non-empty buckets)")
    r.add_argument("--trace-limit", type=int_type("--trace-limit", lo=1, hi=MAX_TRACE), default=1_000_000,
                   help=f"most service starts to record (default 1000000, at most {MAX_TRACE})")
    r.add_argument("--share-series", metavar="FILE.csv", help="write each static flow's dominant share per window "
                   "as CSV (window_start,window_end,flow,share; the flows the relative fairness bound covers)")
    r.add_argument("--cwnd-series", metavar="FILE.csv", help="write each TCP flow's congestion window as CSV "
                   "(time,flow,cwnd,ssthresh): every change, or sampled with --cwnd-width")
    r.add_argument("--cwnd-width", type=number_type("--cwnd-width", lo=0.0, lo_open=True, hi=MAX_TIME),
                   help="sample --cwnd-series at 0, W, 2W, ... (the window in force there) instead of every change")
    r.add_argument("--share-window", type=number_type("--share-window", lo=0.0, lo_open=True, hi=MAX_TIME),
                   help=f"the windows' width for --share-series (default: run.duration / {SHARE_WINDOWS})")
    r.add_argument("--no-rfb", action="store_true", help="do not compute the relative fairness bound "
                   "(the delays are still recorded)")
    r.set_defaults(func=cmd_run)
