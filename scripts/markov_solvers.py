#!/usr/bin/env python
"""The exact Markov solve's linear system, solved by the project's numba kernels and by scipy's.

The hand-written ILU(0) + Krylov solver in ``analysis/markov.py`` is kept only while it beats
scipy's own on the measured case.  This script builds the reduced system of one
box truncation exactly as :func:`analysis.markov.solve_truncated` does (DRF rates, the CSR of
:func:`analysis.markov.box_system`), then solves it, each solver in a fresh process (so the
peak RSS printed is that solver's), with:

* ``numba-ilu0``: the project's Krylov solver (``analysis.markov.KRYLOV``, BiCGSTAB by default)
  right-preconditioned by its ILU(0), from a cold start
  (zeros), as the first truncation of a solve runs;
* ``numba-2level``: the same plus the total-population aggregation, warm-started from the
  solution of the truncation with caps scaled by 0.8 (padded), as every later truncation runs;
* ``scipy-ilu``: ``scipy.sparse.linalg.spilu`` (SuperLU's ILUTP, COLAMD ordering) with
  ``--drop-tol`` / ``--fill-factor`` (defaults 1e-4 / 10, scipy's own) as the preconditioner
  of ``scipy.sparse.linalg.gmres`` (same restart length and tolerance, cold start);
* ``scipy-ilu0``: the same with ``drop_tol=0, fill_factor=1`` and no column permutation
  (``permc_spec="NATURAL"``), the closest SuperLU comes to ILU(0);
* ``scipy-2level``: scipy's ``gmres`` with the project's own two-level preconditioner wrapped in
  a LinearOperator (warm start as ``numba-2level``), which separates scipy's Krylov loop from
  the preconditioner;
* ``superlu``: ``scipy.sparse.linalg.spsolve`` (a direct solve; only with ``--direct``, it
  takes minutes and gigabytes from about 10^5 states on).

Every solver must reach the relative residual ``--rtol`` (default 1e-11, the exact solve's);
gamma from each solution is printed beside the numba one, so a solver that stopped early
shows.  Run::

    python scripts/markov_solvers.py                         # br-unbalanced, DRF, 0.95, caps (265, 46, 46)
    python scripts/markov_solvers.py --case br-unbalanced:0.9 --caps 140,25,25 --direct
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from mrfq import flows  # noqa: E402
from mrfq.analysis import markov  # noqa: E402

SOLVERS = ("numba-ilu0", "numba-2level", "scipy-ilu0", "scipy-ilu", "scipy-2level", "superlu")


def system(case: str, caps: tuple[int, ...]):
    """(model, states X, CSR arrays, b) of the box truncation, as markov.solve_truncated builds them."""
    from mrfq.analysis.state_rates import state_rates

    name, load = case.split(":")
    m = markov.model_from(flows.load_preset(name), load=float(load))
    K = m.a.shape[0]
    shape = tuple(c + 1 for c in caps)
    X = markov._states(caps)
    strides = np.array([int(np.prod(shape[k + 1:])) for k in range(K)], dtype=np.int64)
    phi = state_rates("drf", X, m.a, m.w)
    death = X * phi / m.sigma
    birth = np.where(X < np.array(caps), m.lam, 0.0)
    scale = max(float(death.max()), float(m.lam.max()))
    indptr, indices, data, b = markov._kernels()["box_system"](np.array(shape, dtype=np.int64), strides,
                                                               birth / scale, death / scale)
    return m, X, (indptr, indices, data), b


def gamma_of(m, X, y) -> np.ndarray:
    pi = np.maximum(np.concatenate([[1.0], y]), 0.0)
    pi /= pi.sum()
    return m.rho / (pi @ X)


def warm_start(case: str, caps: tuple[int, ...]) -> np.ndarray:
    """The solution of the truncation with caps 0.8x, padded into ``caps`` (how the exact solve
    starts every truncation after its first)."""
    small = tuple(max(2, int(0.8 * c)) for c in caps)
    name, load = case.split(":")
    m = markov.model_from(flows.load_preset(name), load=float(load))
    t = markov.solve_truncated(m, "drf", small)
    return markov._pad(t.pi, small, caps)


def run_one(solver: str, case: str, caps: tuple[int, ...], rtol: float, drop_tol: float, fill: float) -> dict:
    import scipy.sparse as sp
    import scipy.sparse.linalg as sla

    m, X, (indptr, indices, data), b = system(case, caps)
    n = b.shape[0]
    A = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    restart = markov.restart_for(n)
    x0 = warm_start(case, caps) if solver.endswith("2level") else None
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    c0, w0 = time.process_time(), time.perf_counter()
    iters = 0
    if solver in ("numba-ilu0", "numba-2level"):
        y = np.zeros(n) if x0 is None else x0[1:] / x0[0]
        total = X.sum(axis=1) if x0 is not None else None
        markov._stationary((indptr, indices, data), b, y, rtol, total, x0)
        iters = markov.LAST_ITERATIONS
    elif solver in ("scipy-ilu", "scipy-ilu0"):
        if solver == "scipy-ilu0":
            ilu = sla.spilu(A.tocsc(), drop_tol=0.0, fill_factor=1.0, permc_spec="NATURAL")
        else:
            ilu = sla.spilu(A.tocsc(), drop_tol=drop_tol, fill_factor=fill)
        M = sla.LinearOperator((n, n), ilu.solve)
        count = [0]

        def cb(_):
            count[0] += 1
        y, info = sla.gmres(A, b, rtol=rtol, atol=0.0, restart=restart, maxiter=3000, M=M, callback=cb,
                            callback_type="pr_norm")
        iters = count[0]
    elif solver == "scipy-2level":
        _, P = markov.preconditioner((indptr, indices, data), X.sum(axis=1), x0)
        rc = np.zeros((P[-1].shape[0], P[-3].shape[0]))  # (blocks + 1, levels)

        def apply(r):
            z = np.zeros(n)
            r = np.ascontiguousarray(r, dtype=np.float64)
            markov.precond(*P, r, z, rc, 0, 0.0, 0.0, r, r)
            return z
        M = sla.LinearOperator((n, n), apply)
        # precond compiles on its first call (inside the project's gmres it is inlined): keep
        # that out of the timing, not the setup above
        c1, w1 = time.process_time(), time.perf_counter()
        apply(b)
        c0 += time.process_time() - c1
        w0 += time.perf_counter() - w1
        count = [0]

        def cb(_):
            count[0] += 1
        y, info = sla.gmres(A, b, x0=x0[1:] / x0[0], rtol=rtol, atol=0.0, restart=restart, maxiter=3000, M=M,
                            callback=cb, callback_type="pr_norm")
        iters = count[0]
    elif solver == "superlu":
        y = sla.spsolve(A.tocsc(), b, permc_spec="MMD_AT_PLUS_A")
    else:
        raise SystemExit(f"solver {solver!r}: unknown; one of {', '.join(SOLVERS)}")
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    res = float(np.linalg.norm(b - A @ y) / np.linalg.norm(b))
    return {"solver": solver, "states": n + 1, "cpu_s": cpu, "wall_s": wall, "iterations": iters,
            "residual": res, "gamma": gamma_of(m, X, y).tolist(),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "rss_before_mib": base_rss / 1024}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--case", default="br-unbalanced:0.95", help="PRESET:LOAD (default br-unbalanced:0.95)")
    p.add_argument("--caps", default="265,46,46", help="box caps per class (default 265,46,46)")
    p.add_argument("--rtol", type=float, default=1e-11)
    p.add_argument("--drop-tol", type=float, default=1e-4)
    p.add_argument("--fill-factor", type=float, default=10.0)
    p.add_argument("--solvers", default=",".join(s for s in SOLVERS if s != "superlu"))
    p.add_argument("--direct", action="store_true", help="add the SuperLU direct solve")
    p.add_argument("--one", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    caps = tuple(int(c) for c in a.caps.split(","))
    if a.one:
        print(json.dumps(run_one(a.one, a.case, caps, a.rtol, a.drop_tol, a.fill_factor)))
        return 0
    solvers = a.solvers.split(",") + (["superlu"] if a.direct and "superlu" not in a.solvers else [])
    markov.solve(flows.load_preset("br-balanced"), "drf", load=0.1)  # compile the kernels once (cached)
    print(f"# {a.case}, DRF, caps {caps}; load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"{'solver':<14} {'states':>9} {'cpu s':>8} {'wall s':>8} {'iters':>6} {'residual':>9} "
          f"{'peak MiB':>9}  gamma")
    for s in solvers:
        cmd = [sys.executable, os.path.abspath(__file__), "--one", s, "--case", a.case, "--caps", a.caps,
               "--rtol", str(a.rtol), "--drop-tol", str(a.drop_tol), "--fill-factor", str(a.fill_factor)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{s:<14} failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
            continue
        d = json.loads(r.stdout.strip().splitlines()[-1])
        print(f"{s:<14} {d['states']:>9,} {d['cpu_s']:>8.2f} {d['wall_s']:>8.2f} {d['iterations']:>6} "
              f"{d['residual']:>9.1e} {d['peak_rss_mib']:>9.0f}  " + " ".join(f"{g:.6f}" for g in d["gamma"]),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
