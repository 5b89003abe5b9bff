"""scripts/markov_solvers.py, the measured case for keeping the numba ILU(0) + Krylov solver,
at a tiny size: every solver reaches the residual and gives the same gamma, and the
project's solve equals analysis.markov.solve_truncated's."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "markov_solvers.py"


def _one(solver, caps="24,6,6"):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    p = subprocess.run([sys.executable, str(SCRIPT), "--one", solver, "--case", "br-unbalanced:0.7", "--caps", caps],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("solver", ["numba-ilu0", "numba-2level", "scipy-ilu0", "scipy-ilu", "scipy-2level",
                                    "superlu"])
def test_every_solver_gives_the_truncated_solve(solver):
    from mrfq import flows
    from mrfq.analysis import markov

    m = markov.model_from(flows.load_preset("br-unbalanced"), load=0.7)
    want = markov.solve_truncated(m, "drf", (24, 6, 6)).gamma
    d = _one(solver)
    assert d["states"] == 25 * 7 * 7
    assert d["residual"] <= 1e-10
    assert np.allclose(d["gamma"], want, rtol=1e-9)


def test_unknown_solver_is_one_line():
    p = subprocess.run([sys.executable, str(SCRIPT), "--one", "nope", "--caps", "4,2,2"], capture_output=True,
                       text=True, env=dict(os.environ), timeout=600)
    assert p.returncode != 0 and "unknown" in p.stderr and "Traceback" not in p.stderr
