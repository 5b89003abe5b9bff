"""``mrfq scorecard``: every scheduler on the same packets, one table and one figure.

Every argument and output path is checked before the first simulation; the figure is written
atomically (:mod:`flows.cli_args`).  The runs and the table are :mod:`analysis.scorecard`'s.
"""

from __future__ import annotations

import math
import sys

from mrfq.flows.cli_args import (
    add_pipeline_args,
    add_scenario_args,
    check_distinct_outputs,
    check_output_path,
    count_text,
    dumps_strict,
    int_type,
    load_scenario_arg,
    pipeline_changes,
    number_type,
    parse_names,
    parse_number,
    save_figure,
    shorten,
)
from mrfq.flows.errors import MrfqError
from mrfq.flows.scenario import MAX_SEED, MAX_TIME


def parse_intervals(text: str) -> list[float]:
    """``--intervals``: edges ``t0,t1,...`` or ``START:STOP:STEP`` (inclusive)."""
    from mrfq.analysis.scorecard import MAX_INTERVALS

    s = str(text).strip()
    if not s:
        raise MrfqError(f"--intervals {shorten(text)}: empty; give edges like 0,10,20 or START:STOP:STEP "
                        "(e.g. 1000:1500:50)")
    if ":" in s:
        parts = s.split(":")
        if len(parts) != 3:
            raise MrfqError(f"--intervals {shorten(text)}: give START:STOP:STEP (e.g. 1000:1500:50) or edges like "
                            "0,10,20")
        a, b, st = (parse_number("--intervals", p, lo=0.0, hi=MAX_TIME) for p in parts)
        if st <= 0 or b <= a:
            raise MrfqError(f"--intervals {shorten(text)}: need START < STOP and STEP > 0")
        n = (b - a) / st + 1e-9  # infinite when STEP is a tiny subnormal number
        if not n < MAX_INTERVALS + 1:
            raise MrfqError(f"--intervals {shorten(text)}: {count_text(n)} intervals; at most {MAX_INTERVALS:,}")
        return [a + i * st for i in range(math.floor(n) + 1)]
    parts = s.split(",")
    if len(parts) > MAX_INTERVALS + 1:
        raise MrfqError(f"--intervals: {len(parts):,} edges; at most {MAX_INTERVALS + 1}")
    return [parse_number("--intervals", p, lo=0.0, hi=MAX_TIME) for p in parts]


def cmd_scorecard(args) -> int:
    from mrfq.analysis.cli_run import say_estimate
    from mrfq.analysis.plots import plot_delay_cdfs, plot_interval_shares
    from mrfq.analysis.scorecard import format_scorecard, scorecard
    from mrfq.fq.registry import SCHEDULERS

    for opt, path in (("--plot", args.plot), ("--plot-intervals", args.plot_intervals)):
        if path is not None:  # an empty name is refused, not ignored
            check_output_path(opt, path, figure=True)
    check_distinct_outputs(("--plot", args.plot), ("--plot-intervals", args.plot_intervals))
    intervals = parse_intervals(args.intervals) if args.intervals is not None else None  # '' is refused
    if args.plot_intervals and intervals is None:
        raise MrfqError("--plot-intervals: give --intervals too (the edges of the intervals to draw)")
    sc = load_scenario_arg(args)
    scheds = parse_names("--schedulers", args.schedulers, tuple(SCHEDULERS)) if args.schedulers is not None \
        else list(SCHEDULERS)
    if args.duration is not None and args.warmup is None and not sc.run.warmup < args.duration:
        raise MrfqError(f"--duration {args.duration:g}: not longer than the scenario's run.warmup = "
                        f"{sc.run.warmup:g}; also give --warmup (e.g. --warmup {args.duration / 10:g}, 10 % of it)")
    if args.warmup is not None:
        sc = sc.replace(**{"run.warmup": args.warmup})
    if pipeline_changes(args):
        sc = sc.replace(**pipeline_changes(args))
    sc = sc.with_overrides(seed=args.seed, duration=args.duration, virtual_time=args.virtual_time)
    for line in sc.overload_warnings():
        print(f"mrfq: warning: {line}", file=sys.stderr)
    say_estimate(sc, "this scorecard", len(scheds))
    res = scorecard(sc, scheds, intervals=intervals)
    if args.plot:
        save_figure(plot_delay_cdfs(res.cdfs, title=f"{sc.name}: sojourn CDF per flow (seed {res.seed})"), args.plot,
                    field="--plot")
    if args.plot_intervals:
        save_figure(plot_interval_shares(res.intervals, title=f"{sc.name}: dominant share per interval "
                                         f"(seed {res.seed})"), args.plot_intervals, field="--plot-intervals")
    if args.json:
        print(dumps_strict(res.to_json()))
    else:
        print(format_scorecard(res))
        for path in (args.plot, args.plot_intervals):
            if path:
                print(f"figure written to {path}")
    return 0


def register(sub) -> None:
    """Add ``scorecard`` to an argparse subparsers object."""
    from mrfq.flows.scenario import VIRTUAL_TIMES

    p = sub.add_parser("scorecard", help="every scheduler on the same packets: rates vs DRF shares, delays, drops")
    add_scenario_args(p)
    p.add_argument("--schedulers", help="comma-separated scheduler names (default: every scheduler)")
    p.add_argument("--virtual-time", choices=VIRTUAL_TIMES, help="drfq: 'started' [BR] or 'in-service' [DRFQ]")
    p.add_argument("--seed", type=int_type("--seed", lo=0, hi=MAX_SEED), help="override run.seed")
    p.add_argument("--duration", type=number_type("--duration", lo=0.0, lo_open=True, hi=MAX_TIME),
                   help="override run.duration")
    p.add_argument("--warmup", type=number_type("--warmup", lo=0.0, hi=MAX_TIME), help="override run.warmup")
    add_pipeline_args(p)
    p.add_argument("--intervals", metavar="EDGES",
                   help="also each flow's dominant share and mean delay per interval: edges t0,t1,... or "
                        "START:STOP:STEP (from the service trace)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", metavar="FILE.png", help="write the sojourn CDFs: one panel per flow, one line per scheduler")
    p.add_argument("--plot-intervals", metavar="FILE.png",
                   help="with --intervals: write each flow's dominant share per interval, one line per scheduler")
    p.set_defaults(func=cmd_scorecard)
