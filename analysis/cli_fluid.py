"""``mrfq alloc`` and ``mrfq fluid``: the static allocations and the flow-level Markov model.

:func:`register` adds both subcommands to an ``argparse`` subparsers object;
each sets ``func`` to a handler ``handler(args) -> int``.  Handlers raise
:class:`flows.errors.MrfqError` on bad input (the dispatcher prints it and
exits 2) and never call ``sys.exit``.  ``mrfq alloc`` imports numpy only;
numba, scipy and matplotlib are imported lazily by ``mrfq fluid``.
"""

from __future__ import annotations

import sys

from mrfq.analysis import objectives
from mrfq.flows.cli_args import (
    check_load,
    check_output_path,
    dumps_strict,
    load_scenario_arg,
    parse_int,
    parse_loads,
    parse_number,
    save_figure,
)
from mrfq.flows.errors import MrfqError
from mrfq.flows.scenario import MAX_SEED

#: documented range of ``mrfq alloc`` costs (each 0 or in this range) and weights
ALLOC_MIN, ALLOC_MAX = 1e-6, 1e6
#: most resources (entries of one cost vector) and transactions of ``mrfq alloc``
ALLOC_MAX_RESOURCES, ALLOC_MAX_TRANSACTIONS = 64, 1000
#: most events of ``mrfq fluid --method simulate``
MAX_EVENTS = 10**8  # about a minute (Ctrl-C is seen between chunks of markov.SIM_CHUNK events)
#: range of ``mrfq fluid --time-limit`` (seconds of one exact solve)
MAX_TIME_LIMIT = 86_400.0


def register(subparsers) -> None:
    """Add the ``alloc`` and ``fluid`` subcommands."""
    p = subparsers.add_parser(
        "alloc", help="static DRF/PF/BMF/asset/CEEI allocations for given cost vectors",
        description="Rates of transactions sharing resources of capacity 1 (docs/allocators.md). Each --cost is "
                    "one transaction's usage of each resource per unit rate (e.g. processing time per packet).")
    p.add_argument("cluster", nargs="?", metavar="CLUSTER.toml",
                   help="instead of --cost: a cluster scenario (servers, users, tree); its fluid allocations "
                        "(drf, drfh, h-drf, asset, ceei), as `mrfq cluster alloc`")
    p.add_argument("--cost", action="append", default=[], metavar="A1,A2,...",
                   help="one transaction's cost vector (repeat per transaction)")
    p.add_argument("--weight", action="append", default=[], metavar="W",
                   help="weight of each transaction, in --cost order (repeat; default all 1)")
    p.add_argument("--objective", default="all", metavar="NAME",
                   help=f"{', '.join(objectives.ALLOC)} or all (default all)")
    p.add_argument("--json", action="store_true", help="print one JSON object, one key per objective")
    p.set_defaults(func=alloc_handler)

    q = subparsers.add_parser(
        "fluid", help="flow-level Markov model ([BR] §4.1): mean flow throughput gamma_k per class",
        description="gamma_k = lambda_k sigma_k / E[x_k] (packets per time unit) for the scenario's "
                    "classes under DRF, PF and BMF, by an exact truncated solve or a simulation.")
    q.add_argument("scenario", nargs="?", metavar="SCENARIO.toml", help="scenario file with [[class]] tables")
    q.add_argument("--preset", metavar="NAME", help="a shipped scenario instead of a file")
    q.add_argument("--load", metavar="X", help="load of the most loaded resource, in (0, 1)")
    q.add_argument("--loads", metavar="LOADS", help="a range START:STOP:STEP (inclusive), e.g. 0.05:0.95:0.05, "
                   "or a list 0.3,0.6")
    q.add_argument("--objective", default="all", metavar="NAME", help=f"{', '.join(objectives.MARKOV)} or all (default all)")
    q.add_argument("--method", default="exact", metavar="M",
                   help="exact (default), simulate, auto (exact unless the truncation would exceed "
                        "8e6 states or 4 GB or the solve would pass --time-limit, then simulate), or graded "
                        "(the chain on a graded lattice: an approximation for loads near 1, a few %% off at "
                        "0.98; see the Allocators page of the documentation)")
    q.add_argument("--json", action="store_true", help="print one JSON object")
    q.add_argument("--plot", metavar="FILE.png", help="draw gamma against load ([BR] Figs. 1-2)")
    q.add_argument("--seed", metavar="N", help="simulate: seed (default: the scenario's run.seed)")
    q.add_argument("--events", metavar="N", default="4000000", help="simulate: events (default 4000000)")
    q.add_argument("--tol-boundary", metavar="P", default="1e-6",
                   help="exact: grow the truncation until P(some x_k = X_k) < P (default 1e-6)")
    q.add_argument("--truncation", default="region", metavar="SHAPE",
                   help="exact: region (default; the states a graded estimate of the law gives the most "
                        "probability, blocking every transition that leaves them) or box (x_k <= X_k)")
    q.add_argument("--symmetry", default="auto", metavar="S",
                   help="exact, region truncation: auto (default: two classes that a swap of the resources "
                        "exchanges, with equal rates, sizes and weights, are solved lumped by that symmetry, "
                        "half the states, the same law) or off")
    q.add_argument("--time-limit", metavar="SECONDS", default="300",
                   help="exact: give up one solve after this many seconds, suggesting --method simulate "
                        "(auto: simulate instead; default 300)")
    q.set_defaults(func=fluid_handler)


# ---------------------------------------------------------------------------
# parsing helpers (all errors are one-line MrfqErrors)
# ---------------------------------------------------------------------------
def _float(field: str, text: str) -> float:
    return parse_number(field, text)


def parse_costs(costs: list[str]) -> list[list[float]]:
    """``--cost A1,A2,...`` per transaction: each entry 0 or in [ALLOC_MIN, ALLOC_MAX]."""
    if not costs:
        raise MrfqError("--cost: missing; give one --cost A1,A2,... per transaction, e.g. --cost 0.5,1 --cost 1,0.5")
    out = []
    for i, c in enumerate(costs):
        parts = [s.strip() for s in str(c).split(",")]
        if not parts or any(s == "" for s in parts):
            raise MrfqError(f"--cost #{i + 1} = {_short(c)}: must be comma-separated numbers, one per resource, "
                            "e.g. 0.5,1")
        if len(parts) > ALLOC_MAX_RESOURCES:
            raise MrfqError(f"--cost #{i + 1}: {len(parts)} resources; at most {ALLOC_MAX_RESOURCES}")
        row = []
        for s in parts:
            try:
                v = parse_number(f"--cost #{i + 1}", s)
            except MrfqError:
                raise MrfqError(f"--cost #{i + 1} = {_short(c)}: {_short(s)} is not a finite number; "
                                "give comma-separated numbers, one per resource") from None
            if v < 0:
                raise MrfqError(f"--cost #{i + 1} = {_short(c)}: costs must be >= 0")
            if v != 0 and not ALLOC_MIN <= v <= ALLOC_MAX:
                raise MrfqError(f"--cost #{i + 1} = {_short(c)}: {s} is out of range; each cost is 0 or in "
                                f"[{ALLOC_MIN:g}, {ALLOC_MAX:g}] (rescale the units)")
            row.append(v)
        if max(row) <= 0:
            raise MrfqError(f"--cost #{i + 1} = {_short(c)}: at least one cost must be > 0")
        if out and len(row) != len(out[0]):
            raise MrfqError(f"--cost #{i + 1} = {_short(c)}: has {len(row)} resources; --cost #1 has {len(out[0])}; "
                            "every --cost needs one number per resource")
        out.append(row)
    if len(out) > ALLOC_MAX_TRANSACTIONS:
        raise MrfqError(f"--cost: {len(out)} transactions; at most {ALLOC_MAX_TRANSACTIONS}")
    return out


def _short(v) -> str:
    from mrfq.flows.cli_args import shorten

    return shorten(v)


def parse_weights(weights: list[str], n: int) -> list[float] | None:
    if not weights:
        return None
    if len(weights) != n:
        raise MrfqError(f"--weight: given {len(weights)} times for {n} --cost vectors; give one per --cost or none")
    ws = [parse_number(f"--weight #{i + 1}", w) for i, w in enumerate(weights)]
    for i, w in enumerate(ws):
        if w <= 0:
            raise MrfqError(f"--weight #{i + 1} = {_short(weights[i])}: must be > 0")
        if not ALLOC_MIN <= w <= ALLOC_MAX:
            raise MrfqError(f"--weight #{i + 1} = {_short(weights[i])}: out of range; give a number in "
                            f"[{ALLOC_MIN:g}, {ALLOC_MAX:g}]")
    return ws


def _objectives(text: str, allowed: tuple[str, ...]) -> list[str]:
    if text == "all":
        return list(allowed)
    names = [s.strip() for s in str(text).split(",")]
    for s in names:
        if s not in allowed:
            raise MrfqError(f"--objective {_short(text)}: unknown; choose one of {', '.join(allowed)} or all")
    if len(set(names)) != len(names):
        raise MrfqError(f"--objective {_short(text)}: a name is given twice")
    return names


def _check_load(field: str, x: float) -> float:
    return check_load(field, x)


# ---------------------------------------------------------------------------
# mrfq alloc
# ---------------------------------------------------------------------------
def alloc_handler(args) -> int:
    if getattr(args, "cluster", None):
        if args.cost or args.weight:
            raise MrfqError("alloc: give --cost vectors or a CLUSTER.toml, not both")
        from mrfq.analysis import cli_cluster

        args.scenario, args.preset = args.cluster, None
        return cli_cluster.alloc_handler(args)
    costs = parse_costs(args.cost)
    w = parse_weights(args.weight, len(costs))
    objs = _objectives(args.objective, objectives.ALLOC)
    results = {o: objectives.allocate(o, costs, w) for o in objs}
    if args.json:
        print(dumps_strict({o: r.to_dict() for o, r in results.items()}))
        return 0
    n, J = len(costs), len(costs[0])
    head = ["objective", "unique", "saturated"] + [f"phi_{i + 1}" for i in range(n)]
    rows = []
    for o, r in results.items():
        row = [o, "yes" if r.unique else "no (one point)",
               ",".join(str(j + 1) for j in r.saturated) or "-"] + [f"{v:.6g}" for v in r.phi]
        if r.prices is not None:
            row.append("prices " + " ".join(f"{v:.6g}" for v in r.prices))
        rows.append(row)
    print(f"{n} transactions, {J} resources of capacity 1 (resources numbered from 1)")
    _print_table(head, rows)
    return 0


def _print_table(head, rows, out=None) -> None:
    out = out or sys.stdout
    widths = [max(len(str(r[i])) for r in [head] + [r[:len(head)] for r in rows]) for i in range(len(head))]
    print("  ".join(h.ljust(wd) for h, wd in zip(head, widths)).rstrip(), file=out)
    for r in rows:
        cells = [str(c).ljust(wd) for c, wd in zip(r, widths)] + [str(c) for c in r[len(head):]]
        print("  ".join(cells).rstrip(), file=out)


# ---------------------------------------------------------------------------
# mrfq fluid
# ---------------------------------------------------------------------------
def _scenario(args):
    return load_scenario_arg(args)


def fluid_entry(sc, load, objectives, *, method="exact", seed=1, events=4_000_000,
                tol_boundary=1e-6, time_limit=300.0, truncation="region", symmetry="auto") -> dict:
    """One per-load entry: {load, resource_loads, truncation, boundary_mass, objectives: {...}}."""
    import numpy as np

    from mrfq.analysis import markov

    m = markov.model_from(sc, load=load)
    entry = {"load": round(m.max_load, 12),
             "resource_loads": {r: float(v) for r, v in zip(m.resources, m.resource_loads())},
             # the model assumes geometric sizes ([BR] §4): another size law gets the geometric
             # model of the same mean, flagged as in `mrfq compare`
             "insensitivity_guaranteed": sc.geometric_sizes}
    res = {}
    for i, o in enumerate(objectives):
        r = None
        if method == "graded":
            r = markov.solve(m, o, method="graded", tol_boundary=tol_boundary, time_limit=time_limit)
        if method in ("exact", "auto"):
            try:
                r = markov.solve(m, o, method="exact", tol_boundary=tol_boundary, time_limit=time_limit,
                                 truncation=truncation, symmetry=symmetry)
            except markov.TruncationTooLarge:
                if method == "exact":
                    raise
        if r is None:
            rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(len(objectives))[i])
            r = markov.solve(m, o, method="simulate", rng=rng, events=events)
        res[o] = r
    exact = [r for r in res.values() if r.method in ("exact", "graded")]
    if exact:
        K = len(m.names)
        entry["truncation"] = [max(r.truncation[k] for r in exact) for k in range(K)]
        entry["boundary_mass"] = max(r.boundary_mass for r in exact)
    else:
        entry["truncation"] = None
        entry["boundary_mass"] = None
    entry["objectives"] = {o: r.to_dict() for o, r in res.items()}
    return entry


def fluid_handler(args) -> int:
    # every argument is checked before the first solve
    if args.plot is not None:  # an empty name is refused, not ignored
        check_output_path("--plot", args.plot, figure=True)
    method = args.method
    if method not in ("exact", "simulate", "auto", "graded"):
        raise MrfqError(f"--method {_short(method)}: unknown; choose exact, simulate, auto or graded")
    if args.load is not None and args.loads is not None:
        raise MrfqError("fluid: give --load X or --loads LOADS, not both")
    from mrfq.analysis.markov import SYMMETRIES, TRUNCATIONS

    if args.truncation not in TRUNCATIONS:
        raise MrfqError(f"--truncation {_short(args.truncation)}: unknown; choose {' or '.join(TRUNCATIONS)}")
    if args.symmetry not in SYMMETRIES:
        raise MrfqError(f"--symmetry {_short(args.symmetry)}: unknown; choose {' or '.join(SYMMETRIES)}")
    tol_b = parse_number("--tol-boundary", args.tol_boundary, lo=1e-15, hi=1.0, hi_open=True)
    events = parse_int("--events", args.events, lo=1000, hi=MAX_EVENTS)
    time_limit = parse_number("--time-limit", args.time_limit, lo=0.0, lo_open=True, hi=MAX_TIME_LIMIT)
    if args.loads is not None:
        loads = parse_loads(args.loads)
    elif args.load is not None:
        loads = [_check_load("--load", parse_number("--load", args.load))]
    else:
        loads = [None]
    sc = _scenario(args)
    objs = _objectives(args.objective, objectives.MARKOV)
    seed = sc.run.seed if args.seed is None else parse_int("--seed", args.seed, lo=0, hi=MAX_SEED)
    kw = dict(method=method, seed=int(seed), events=int(events), tol_boundary=tol_b, time_limit=time_limit,
              truncation=args.truncation, symmetry=args.symmetry)
    entries = [fluid_entry(sc, x, objs, **kw) for x in loads]
    if args.plot:
        from mrfq.analysis.plots import plot_gamma_vs_load

        fig = plot_gamma_vs_load(entries, title=f"{sc.name}: flow throughput vs load ({method})")
        save_figure(fig, args.plot, field="--plot")
    if args.json:
        if args.loads is not None:
            print(dumps_strict({"scenario": sc.name, "method": method, "loads": entries}))
        else:
            print(dumps_strict(entries[0]))
        return 0
    for e in entries:
        _print_entry(sc.name, e)
    if args.plot:
        print(f"plot written to {args.plot}")
    return 0


def _print_entry(name, e) -> None:
    rl = ", ".join(f"{r} {v:.4g}" for r, v in e["resource_loads"].items())
    print(f"{name}: load {e['load']:.4g} (resource loads: {rl})")
    objs = list(e["objectives"])
    classes = [c["name"] for c in e["objectives"][objs[0]]["classes"]]
    head = ["class"] + [f"gamma {o.upper()}" for o in objs]
    rows = []
    for ci, c in enumerate(classes):
        row = [c]
        for o in objs:
            cl = e["objectives"][o]["classes"][ci]
            s = f"{cl['gamma']:.5f}"
            if "gamma_low" in cl:
                hi = cl["gamma_high"]
                s += f" [{cl['gamma_low']:.4f}, {hi:.4f}]" if hi is not None else f" [{cl['gamma_low']:.4f}, inf]"
            row.append(s)
        rows.append(row)
    _print_table(head, rows)
    if not e["insensitivity_guaranteed"]:
        print("  non-geometric flow sizes: these are the Markov model's values for geometric sizes of the same "
              "mean; insensitivity to the size law is not guaranteed (insensitivity_guaranteed: false)")
    for o in objs:
        r = e["objectives"][o]
        if r["method"] == "exact":
            lumped = f" (lumped by the symmetry {' <-> '.join(r['lumped'])})" if r.get("lumped") else ""
            print(f"  {o}: {r['truncation_shape']} truncation, caps {r['truncation']}, boundary mass "
                  f"{r['boundary_mass']:.2g}, "
                  f"{r['n_states']} states{lumped}, {r['solve_seconds']:.2f} s")
        elif r["method"] == "graded":
            print(f"  {o}: graded lattice (grading {r['grading']:g}, an approximation), truncation "
                  f"{r['truncation']}, boundary mass {r['boundary_mass']:.2g}, {r['n_states']} nodes, "
                  f"{r['solve_seconds']:.2f} s")
        else:
            print(f"  {o}: {r['events']} events, {100 * r['confidence']:.0f}% confidence intervals, "
                  f"{r['solve_seconds']:.2f} s")
