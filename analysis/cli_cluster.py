"""``mrfq cluster``: cluster scenarios — the task simulator and the fluid allocations.

:func:`register` adds one ``cluster`` subcommand with three actions, each setting ``func`` to a
handler ``handler(args) -> int`` that raises :class:`flows.errors.MrfqError` on bad input (the
dispatcher prints one line and exits 2) and never calls ``sys.exit``:

    mrfq cluster sim FILE|--preset NAME [--allocator NAME] [--option K=V ...] [--seed N]
                     [--duration T] [--engine compiled|reference] [--json] [--plot PATH]
    mrfq cluster alloc FILE|--preset NAME [--objective drf|drfh|h-drf|asset|ceei|all] [--json] [--per-server]
    mrfq cluster presets

``sim`` runs ``router.cluster.simulate`` (the compiled engine by default; ``--engine reference``
selects the plain-Python one, which also runs the allocators without kernels) and prints per-user time-averaged dominant shares
(with the fluid value of the allocator's objective when every user is backlogged), running
tasks, mean job completion times, per-resource utilisation and the speed; ``--plot`` draws the
dominant shares over time.  ``alloc`` prints the fluid allocations of ``CLUSTER_OBJECTIVES``; it checks
only what they need (not the simulator's task-launch bound, nor the trace file).
"""

from __future__ import annotations

import math

from mrfq.analysis.objectives import CLUSTER
from mrfq.flows.cli_args import check_output_path, dumps_strict, parse_int, parse_number, save_figure
from mrfq.flows.errors import MrfqError, quote

#: the objectives with a task-level solver, from the one objective table (analysis.objectives)
ALLOC_OBJECTIVES = CLUSTER


def register(subparsers) -> None:
    """Add the ``cluster`` subcommand (actions ``sim``, ``alloc``, ``presets``)."""
    p = subparsers.add_parser(
        "cluster", help="task-level clusters: simulator and fluid allocations (DRF, DRFH, H-DRF)",
        description="Cluster scenarios (TOML: servers, users, an optional H-DRF tree, job traffic; "
                    "see flows/cluster.py).")
    sub = p.add_subparsers(dest="cluster_cmd", required=True, metavar="ACTION")

    s = sub.add_parser("sim", help="run the task-level simulator",
                       description="Jobs of tasks arrive, the allocator launches tasks as resources free up.")
    _scenario_args(s)
    s.add_argument("--allocator", metavar="NAME",
                   help="drf, drfh-first-fit, drfh-best-fit, naive-drf, slots, h-drf, naive-h-drf, collapsed-h-drf "
                        "(default: the scenario's run.allocator)")
    s.add_argument("--option", action="append", default=[], metavar="K=V",
                   help="an allocator option, e.g. server=best-fit or rescale=false (repeat)")
    s.add_argument("--seed", metavar="N", help="override run.seed")
    s.add_argument("--duration", metavar="T", help="override run.duration")
    s.add_argument("--engine", default="compiled", metavar="NAME",
                   help="compiled (default: numba; drf, drfh-first-fit, drfh-best-fit and slots, the other "
                        "allocators run on the reference) or reference (plain Python, the test oracle)")
    s.add_argument("--json", action="store_true", help="print one JSON object (with the share time series)")
    s.add_argument("--plot", metavar="PATH", help="draw the dominant shares over time (PNG)")
    s.set_defaults(func=sim_handler)

    a = sub.add_parser("alloc", help="fluid allocations of the scenario's users (all backlogged)",
                       description="Fluid DRF, asset fairness and CEEI on the pooled servers, DRFH under every "
                                   "server's capacity, static H-DRF on the scenario's tree.")
    _scenario_args(a)
    a.add_argument("--objective", default="all", metavar="NAME",
                   help=f"{', '.join(ALLOC_OBJECTIVES)} or all (default all)")
    a.add_argument("--json", action="store_true", help="print one JSON object, one key per objective")
    a.add_argument("--per-server", action="store_true",
                   help="DRFH: also split each server type's allocation over its servers (per_server_tasks)")
    a.set_defaults(func=alloc_handler)

    pr = sub.add_parser("presets", help="list the shipped cluster scenarios")
    pr.set_defaults(func=presets_handler)


def _scenario_args(p) -> None:
    p.add_argument("scenario", nargs="?", metavar="FILE.toml", help="cluster scenario file")
    p.add_argument("--preset", metavar="NAME", help="a shipped cluster scenario (mrfq cluster presets)")


def _load(args, *, simulate: bool = True):
    from mrfq.flows.cluster import load_cluster, load_cluster_preset

    if args.scenario and args.preset:
        raise MrfqError("give either FILE.toml or --preset NAME, not both")
    if args.preset:
        return load_cluster_preset(args.preset, simulate=simulate)
    if args.scenario:
        return load_cluster(args.scenario, simulate=simulate)
    raise MrfqError("no scenario: give FILE.toml or --preset NAME (see `mrfq cluster presets`)")


def parse_options(items: list[str]) -> dict:
    """``K=V`` strings to allocator options: true/false to bool, whole numbers to int, else str."""
    out: dict = {}
    for it in items:
        if "=" not in it or not it.split("=", 1)[0]:
            raise MrfqError(f"--option {quote(it)}: must be KEY=VALUE, e.g. --option server=best-fit")
        k, v = it.split("=", 1)
        low = v.strip().lower()
        if low in ("true", "false"):
            out[k] = low == "true"
        elif low.lstrip("-").isdigit() and len(low) <= 19:  # longer: kept as text, refused by the allocator
            out[k] = int(low)
        else:
            out[k] = v.strip()
    return out


# ---------------------------------------------------------------------------
def sim_handler(args) -> int:
    from mrfq.analysis.cluster.simcheck import compare
    from mrfq.router.cluster import simulate

    from mrfq.flows.cluster import MAX_SEED, MAX_TIME

    if args.plot is not None:  # before the run; an empty name is refused, not ignored
        check_output_path("--plot", args.plot, figure=True)
    sc = _load(args)
    seed = None if args.seed is None else parse_int("--seed", args.seed, lo=0, hi=MAX_SEED)
    duration = None if args.duration is None else parse_number("--duration", args.duration, lo=0.0, lo_open=True,
                                                                hi=MAX_TIME)
    if args.allocator is not None:
        from mrfq.flows.cluster import ALLOCATOR_NAMES

        if args.allocator not in ALLOCATOR_NAMES:
            raise MrfqError(f"--allocator {quote(args.allocator)}: unknown; choose one of {', '.join(ALLOCATOR_NAMES)}")
    from mrfq.router.cluster import ENGINES

    if args.engine not in ENGINES:
        raise MrfqError(f"--engine {quote(args.engine)}: unknown; choose one of {', '.join(ENGINES)}")
    run = simulate(sc, allocator=args.allocator, seed=seed, duration=duration, options=parse_options(args.option),
                   engine=args.engine)
    try:
        fluid = compare(sc, run)
    except MrfqError:
        fluid = None  # not every user backlogged, or a baseline without an objective: no fluid column
    if args.plot:
        from mrfq.analysis.cluster.plot import plot_shares

        fig = plot_shares(run, fluid, title=f"{sc.name}: {run.allocator}")
        save_figure(fig, args.plot, field="--plot")
    if args.json:
        d = {"scenario": sc.name, **run.to_dict(), "engine": run.engine, "tasks_per_second": run.tasks_per_second}
        if fluid is not None:
            d["fluid"] = {"objective": fluid.objective, "dominant_share": fluid.fluid.tolist()}
        print(dumps_strict(d))
        return 0
    print(f"{sc.name}: allocator {run.allocator}, {sc.capacity().shape[0]} servers, "
          f"averages over [{sc.run.warmup:g}, {(duration or sc.run.duration):g}]")
    mc = run.mean_completion()
    head = f"{'user':<14}{'dominant share':>15}"
    if fluid is not None:
        head += f"{'fluid ' + fluid.objective:>15}"
    head += f"{'tasks':>10}{'jobs done':>11}{'mean JCT':>11}"
    print(head)
    done = [int((run.job_user == u).sum()) for u in range(len(run.users))]
    for u, name in enumerate(run.users):
        row = f"{name:<14}{run.share_mean[u]:>15.4f}"
        if fluid is not None:
            row += f"{fluid.fluid[u]:>15.4f}"
        jct = "-" if math.isnan(mc[u]) else f"{mc[u]:.3f}"
        row += f"{run.tasks_mean[u]:>10.2f}{done[u]:>11d}{jct:>11}"
        print(row)
    print("utilisation: " + ", ".join(f"{r} {x:.3f}" for r, x in zip(run.resources, run.utilisation)))
    print(f"{int(run.launched.sum())} tasks launched, {run.events} events, "
          f"{run.tasks_per_second:,.0f} tasks/s ({run.engine} engine)")
    return 0


def alloc_handler(args) -> int:
    from mrfq.analysis.cluster.simcheck import fluid_allocation

    sc = _load(args, simulate=False)  # the fluid allocations read servers, users and tree only
    if args.objective == "all":
        objs = list(ALLOC_OBJECTIVES)
    elif args.objective in ALLOC_OBJECTIVES:
        objs = [args.objective]
    else:
        raise MrfqError(f"--objective {quote(args.objective)}: unknown; choose one of {', '.join(ALLOC_OBJECTIVES)} or all")
    res = {o: fluid_allocation(sc, o, per_server=getattr(args, "per_server", False)) for o in objs}
    if args.json:
        print(dumps_strict({"scenario": sc.name, "users": sc.user_names(),
                          "objectives": {o: r.to_dict() for o, r in res.items()}}))
        return 0
    print(f"{sc.name}: {sc.capacity().shape[0]} servers, pooled capacity "
          + ", ".join(f"{r} {x:g}" for r, x in zip(sc.resources, sc.capacity().sum(axis=0))))
    for o, r in res.items():
        print(f"{o}:")
        for u, name in enumerate(sc.user_names()):
            print(f"  {name:<14} tasks {r.tasks[u]:>10.4f}   dominant share {r.dominant_share[u]:.4f}")
    return 0


def presets_handler(args) -> int:
    from mrfq.flows.cluster import cluster_preset_names, load_cluster_preset

    for n in cluster_preset_names():
        print(f"{n:<20} {load_cluster_preset(n).description}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m analysis.cli_cluster ACTION ...``: the ``mrfq cluster`` actions before the dispatcher
    is wired (one line on stderr and exit 2 on bad input, as ``mrfq``)."""
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="mrfq")
    register(p.add_subparsers(dest="cmd", required=True))
    args = p.parse_args(["cluster", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except MrfqError as e:
        print(f"mrfq: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
