#!/usr/bin/env python
"""Benchmark the fluid model: exact Markov solves of the [BR] presets and `mrfq alloc`.

Prints, for br-balanced and br-unbalanced at loads 0.3, 0.6, 0.8 and the
objectives DRF, PF, BMF: gamma_k per class (packets per time unit), the
truncation (cap per class), the boundary mass P(some x_k = X_k), the number of
states and the solve time.  Then the time of one `mrfq alloc` call after import.

    python scripts/bench_fluid.py [--loads 0.3,0.6,0.8]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import flows  # noqa: E402
from analysis import markov  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", default="0.3,0.6,0.8")
    ap.add_argument("--presets", default="br-balanced,br-unbalanced")
    args = ap.parse_args(argv)
    loads = [float(x) for x in args.loads.split(",")]

    t = time.perf_counter()
    markov.solve(flows.load_preset("br-balanced"), "drf", load=0.1)
    for o in ("pf", "bmf"):
        markov.solve(flows.load_preset("br-balanced"), o, load=0.1)
    print(f"numba compilation and warm-up: {time.perf_counter() - t:.2f} s\n")

    print(f"{'preset':14} {'load':>4} {'obj':4} {'gamma_1':>9} {'gamma_2':>9} {'gamma_3':>9}  "
          f"{'truncation':>14} {'boundary':>8} {'states':>7} {'seconds':>7}")
    total = {}
    for name in args.presets.split(","):
        sc = flows.load_preset(name)
        for x in loads:
            for o in ("drf", "pf", "bmf"):
                r = markov.solve(sc, o, load=x)
                total[(name, x)] = total.get((name, x), 0.0) + r.solve_seconds
                g = " ".join(f"{v:9.5f}" for v in r.gamma)
                print(f"{name:14} {x:4.2f} {o:4} {g}  {str(list(r.truncation)):>14} {r.boundary_mass:8.1e} "
                      f"{r.n_states:7d} {r.solve_seconds:7.3f}")
    print()
    for (name, x), s in total.items():
        print(f"total {name} at load {x}: {s:.2f} s for DRF+PF+BMF")

    import argparse as _ap

    from analysis.cli_fluid import register

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
