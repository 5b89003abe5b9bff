#!/usr/bin/env python
"""Benchmark the fluid model: exact Markov solves of the [BR] presets and `mrfq alloc`.

Prints, for br-balanced and br-unbalanced at loads 0.3, 0.6, 0.8 and the
objectives DRF, PF, BMF: gamma_k per class (packets per time unit), the
truncation (cap per class), the boundary mass P(some x_k = X_k), the number of
states and the solve time.  Then the time of one `mrfq alloc` call after import.

    python scripts/bench_fluid.py [--loads 0.3,0.6,0.8]
    python scripts/bench_fluid.py --near-saturation   # DRF at 0.95 / 0.98 and the 4-class case

``--near-saturation`` times the exact DRF solve of both presets at loads 0.95 and
0.98 and of a 4-class, 3-resource scenario (:data:`FOUR_BY_THREE`) at 0.9, each
with the default limits (8e6 states, 4 GB; ``--truncation region`` (default) or ``box``); a
refused truncation is printed with its reason and the time it took to find out.  ``--method graded [--grading G]``
times the graded-lattice approximation (``analysis.markov.solve_graded``) instead;
``--case br-balanced:0.98`` runs one case (peak RSS is then that case's).

    python scripts/bench_fluid.py --near-saturation --method graded --grading 0.05
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mrfq import flows  # noqa: E402
from mrfq.analysis import markov, objectives  # noqa: E402


#: cpu, link and memory bandwidth; one class heavy on each and a balanced one, shares (8, 1, 1, 1)
FOUR_BY_THREE = {"name": "four-by-three", "resources": ["cpu", "link", "mem"], "traffic": {"load": 0.5},
                 "class": [{"name": f"c{k + 1}", "cost": c, "share": s, "mean_packets": 20000}
                           for k, (c, s) in enumerate(zip([[1, .25, .25], [.25, 1, .25], [.25, .25, 1], [1, 1, 1]],
                                                          [8, 1, 1, 1]))]}


CASES = [("br-unbalanced", 0.95), ("br-balanced", 0.95), ("br-unbalanced", 0.98), ("br-balanced", 0.98),
         ("four-by-three", 0.9)]


def near_saturation(max_states: float, method: str = "exact", grading: float = markov.GRADING,
                    cases=None, truncation: str = "region") -> None:
    import os
    import resource

    markov.solve(flows.load_preset("br-balanced"), "drf", load=0.1, method=method, grading=grading)  # compile
    print(f"# method {method}" + (f", grading {grading:g}" if method == "graded" else f", {truncation} truncation")
          + f"; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}", flush=True)
    for name, x in cases or CASES:
        sc = flows.from_dict(FOUR_BY_THREE) if name == "four-by-three" else flows.load_preset(name)
        t = time.perf_counter()
        try:
            r = markov.solve(sc, "drf", load=x, max_states=int(max_states), method=method, grading=grading,
                             truncation=truncation)
            g = " ".join(f"{v:.5f}" for v in r.gamma)
            print(f"{name:14} {x:<5g} drf  gamma {g}  caps {list(r.truncation)} states {r.n_states:,} "
                  f"boundary {r.boundary_mass:.1e} gamma change {r.gamma_change:.1e}  {r.solve_seconds:.1f} s "
                  f"(peak RSS so far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB)",
                  flush=True)
        except markov.TruncationTooLarge as e:
            print(f"{name:14} {x:<5g} drf  refused after {time.perf_counter() - t:.1f} s: {e}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", default="0.3,0.6,0.8")
    ap.add_argument("--presets", default="br-balanced,br-unbalanced")
    ap.add_argument("--near-saturation", action="store_true", help="time DRF at 0.95/0.98 and the 4-class case")
    ap.add_argument("--max-states", type=float, default=8e6, help="--near-saturation: state limit (default 8e6)")
    ap.add_argument("--method", default="exact", choices=("exact", "graded"),
                    help="--near-saturation: the exact box or the graded lattice (default exact)")
    ap.add_argument("--grading", type=float, default=markov.GRADING,
                    help=f"--near-saturation --method graded: lattice grading (default {markov.GRADING})")
    ap.add_argument("--truncation", default="region", choices=markov.TRUNCATIONS,
                    help="--near-saturation --method exact: the truncation's shape (default region)")
    ap.add_argument("--case", action="append", default=None, metavar="PRESET:LOAD",
                    help="--near-saturation: only this case (repeatable; preset br-balanced, br-unbalanced "
                         "or four-by-three)")
    args = ap.parse_args(argv)
    if args.near_saturation:
        cases = None
        if args.case:
            cases = []
            for c in args.case:
                name, _, x = c.partition(":")
                try:
                    cases.append((name, float(x)))
                except ValueError:
                    ap.error(f"--case {c!r}: must be PRESET:LOAD, e.g. br-balanced:0.98")
                if name not in ("br-balanced", "br-unbalanced", "four-by-three"):
                    ap.error(f"--case {c!r}: preset must be br-balanced, br-unbalanced or four-by-three")
        near_saturation(args.max_states, args.method, args.grading, cases, args.truncation)
        return 0
    loads = [float(x) for x in args.loads.split(",")]

    t = time.perf_counter()
    markov.solve(flows.load_preset("br-balanced"), "drf", load=0.1)
    for o in objectives.MARKOV:
        markov.solve(flows.load_preset("br-balanced"), o, load=0.1)
    print(f"numba compilation and warm-up: {time.perf_counter() - t:.2f} s\n")

    print(f"{'preset':14} {'load':>4} {'obj':4} {'gamma_1':>9} {'gamma_2':>9} {'gamma_3':>9}  "
          f"{'truncation':>14} {'boundary':>8} {'states':>7} {'seconds':>7}")
    total = {}
    for name in args.presets.split(","):
        sc = flows.load_preset(name)
        for x in loads:
            for o in objectives.MARKOV:
                r = markov.solve(sc, o, load=x)
                total[(name, x)] = total.get((name, x), 0.0) + r.solve_seconds
                g = " ".join(f"{v:9.5f}" for v in r.gamma)
                print(f"{name:14} {x:<5g} {o:4} {g}  {str(list(r.truncation)):>14} {r.boundary_mass:8.1e} "
                      f"{r.n_states:7d} {r.solve_seconds:7.3f}")
    print()
    for (name, x), s in total.items():
        print(f"total {name} at load {x}: {s:.2f} s for DRF+PF+BMF")

    import argparse as _ap

    from mrfq.analysis.cli_fluid import register

    p = _ap.ArgumentParser(prog="mrfq")
    register(p.add_subparsers(dest="cmd"))
    a = p.parse_args(["alloc", "--cost", "0.5,1", "--cost", "1,0.5", "--cost", "1,0.5", "--json"])
    t = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        a.func(a)
    dt1 = time.perf_counter() - t
    t = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        a.func(a)
    dt2 = time.perf_counter() - t
    a3 = p.parse_args(["alloc", "--cost", "1,1,1", "--cost", "1,0.5,0.75", "--cost", "0.5,1,0.75", "--json"])
    t = time.perf_counter()
    with redirect_stdout(io.StringIO()):
        a3.func(a3)
    dt3 = time.perf_counter() - t
    print(f"\nmrfq alloc (2 resources, 3 transactions, all objectives) after import: {1e3 * dt2:.1f} ms "
          f"(first call {1e3 * dt1:.1f} ms)")
    print(f"mrfq alloc (3 resources, BMF continuum, all objectives; scipy.optimize imported lazily): "
          f"{1e3 * dt3:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
