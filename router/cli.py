"""The ``mrfq`` command.

Every user error (a malformed scenario, a negative rate, an unknown scheduler,
a load at or above capacity) becomes one line on stderr and exit code 2,
never a traceback; files are written atomically (a temporary file renamed into
place), so an error never leaves a half-written output behind.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from flows.errors import MrfqError


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors that raise instead of exiting."""

    def error(self, message: str):  # noqa: D401
        raise MrfqError(f"{self.prog}: {message} (see {self.prog} --help)")


def atomic_write(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder, then rename."""
    p = Path(path)
    d = p.parent if str(p.parent) else Path(".")
    if not d.is_dir():
        raise MrfqError(f"{path}: folder {d} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def add_scenario_args(p: argparse.ArgumentParser) -> None:
    """``SCENARIO.toml | --preset NAME`` plus the usual overrides."""
    p.add_argument("scenario", nargs="?", help="scenario TOML file")
    p.add_argument("--preset", help="a shipped scenario (see `mrfq presets`)")


def load_scenario_arg(args) -> "flows.Scenario":  # noqa: F821
    import flows

    if args.scenario and args.preset:
        raise MrfqError("give either SCENARIO.toml or --preset NAME, not both")
    if args.preset:
        return flows.load_preset(args.preset)
    if args.scenario:
        return flows.load_scenario(args.scenario)
    raise MrfqError("no scenario: give SCENARIO.toml or --preset NAME (see `mrfq presets`)")


def _positive_float(name):
    def conv(s):
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} = {s!r}: must be a number") from None
        return v
    return conv


# ---------------------------------------------------------------------------
def _format_run(r) -> str:
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
        for spec, f in zip(r.scenario.flows, r.flows):
            cost = "(" + ", ".join(f"{c:.4g}" for c in spec.mean_cost()) + ")"
            ct = "-" if f.completion_time is None else f"{f.completion_time:.4g}"
            lines.append(f"{f.name:<12} {cost:<22} {spec.weight:>6.3g} {f.rate:>10.5f} {f.packets:>11,} {ct:>11}")
        lines.append("")
    if r.classes:
        lines.append(f"{'class':<8} {'cost':<18} {'gamma':>9} {'95% CI' if r.scenario.run.confidence == 0.95 else 'CI':>21}"
                     f" {'arrived':>8} {'completed':>9} {'mean flows':>10}")
        for spec, c in zip(r.scenario.classes, r.classes):
            cost = "(" + ", ".join(f"{x:.4g}" for x in spec.mean_cost()) + ")"
            ci = f"[{c.ci[0]:.4f}, {c.ci[1]:.4f}]"
            lines.append(f"{c.name:<8} {cost:<18} {c.gamma:>9.4f} {ci:>21} {c.arrived:>8} {c.completed:>9} "
                         f"{c.mean_flows:>10.3f}")
        lines.append(f"gamma = mean service rate (packets per time unit); {r.classes[0].method}")
        lines.append("")
    lines.append(f"{'resource':<12} {'utilization':>11} {'services':>14}")
    for x in r.resources:
        lines.append(f"{x.name:<12} {x.utilization:>11.4f} {x.services:>14,}")
    return "\n".join(lines)


def cmd_run(args) -> int:
    from router.run import simulate

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
    if args.fq_resource is not None:
        changes["router.fq_resource"] = args.fq_resource
    if changes:
        sc = sc.replace(**changes)
    if args.trace and args.trace_limit < 1:
        raise MrfqError(f"--trace-limit = {args.trace_limit}: must be >= 1")
    r = simulate(sc, scheduler=args.scheduler, virtual_time=args.virtual_time, seed=args.seed,
                 duration=args.duration, trace=args.trace_limit if args.trace else 0)
    if args.trace:
        names = [f.name for f in r.scenario.flows]
        tr = r.trace
        rows = ["start,end,resource,flow,flow_id,seq"]
        for i in range(len(tr.start)):
            fid = int(tr.flow[i])
            fname = names[fid] if fid < len(names) else f"dyn{fid}"
            rows.append(f"{float(tr.start[i])!r},{float(tr.end[i])!r},{r.scenario.resources[int(tr.resource[i])]},"
                        f"{fname},{fid},{int(tr.seq[i])}")
        atomic_write(args.trace, "\n".join(rows) + "\n")
    if args.json:
        print(json.dumps(r.to_json()))
    else:
        print(_format_run(r))
        if args.trace:
            print(f"\ntrace: {len(r.trace.start):,} service starts written to {args.trace}")
    return 0


def cmd_presets(args) -> int:
    import flows

    for n in flows.preset_names():
        print(f"{n:<20} {flows.preset_description(n)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from flows.scenario import VIRTUAL_TIMES
    from fq.registry import SCHEDULERS

    p = _Parser(prog="mrfq", description="Packet-level multi-resource fair queueing emulator.")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    r = sub.add_parser("run", help="run one scenario through the packet emulator")
    add_scenario_args(r)
    r.add_argument("--scheduler", choices=list(SCHEDULERS), help="override router.scheduler")
    r.add_argument("--virtual-time", choices=VIRTUAL_TIMES, help="drfq: 'started' [BR] or 'in-service' [DRFQ]")
    r.add_argument("--fq-resource", help="fq-single: the resource that is fair-queued")
    r.add_argument("--seed", type=int, help="override run.seed")
    r.add_argument("--duration", type=_positive_float("--duration"), help="override run.duration")
    r.add_argument("--warmup", type=_positive_float("--warmup"), help="override run.warmup")
    r.add_argument("--load", type=_positive_float("--load"), help="load of the most loaded resource")
    r.add_argument("--window", type=int, help="override router.window")
    r.add_argument("--rtt", type=_positive_float("--rtt"), help="override router.rtt")
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.add_argument("--trace", metavar="FILE", help="write the service trace as CSV")
    r.add_argument("--trace-limit", type=int, default=1_000_000, help="most service starts to record")
    r.set_defaults(func=cmd_run)

    b = sub.add_parser("bench", help="speed: the numba engine vs the C yardstick (prints figures)")
    from router import bench as _bench

    _bench.add_arguments(b)
    b.set_defaults(func=lambda a: _bench.run(a))

    pr = sub.add_parser("presets", help="list the shipped scenarios")
    pr.set_defaults(func=cmd_presets)

    try:
        from analysis import cli_fluid
    except ImportError:
        cli_fluid = None
    if cli_fluid is not None:
        cli_fluid.register(sub)
    try:
        from analysis import cli_compare
    except ImportError:
        cli_compare = None
    if cli_compare is not None:
        cli_compare.register(sub)
    return p


def _glue_negative_values(argv: list[str]) -> list[str]:
    """``--cost -1,1`` -> ``--cost=-1,1``: argparse would take ``-1,1`` for an option, and the
    user should hear that the cost is negative, not that ``--cost`` lacks a value."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if (a.startswith("--") and "=" not in a and i + 1 < len(argv)
                and len(argv[i + 1]) > 1 and argv[i + 1][0] == "-" and (argv[i + 1][1].isdigit() or argv[i + 1][1] == ".")):
            out.append(f"{a}={argv[i + 1]}")
            i += 2
        else:
            out.append(a)
            i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(_glue_negative_values(list(sys.argv[1:] if argv is None else argv)))
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return int(args.func(args) or 0)
    except MrfqError as e:
        print(f"mrfq: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("mrfq: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
