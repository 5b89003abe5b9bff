"""The engine is compiled without numba's negative-index wraparound (fq._jit.no_wraparound).

That is only sound if no index in its kernels is ever negative.  With
``NUMBA_BOUNDSCHECK=1`` a negative index there fails the bounds check (it is
no longer wrapped), so running the engine-vs-reference tests that way, in a
fresh process with its own numba cache, checks every code path they reach.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import JIT_DISABLED, SCALE

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(JIT_DISABLED, reason="compiled code only")


def _run(code_or_args, tmp_path, *, module: bool = False):
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(tmp_path)]))
    args = [sys.executable] + (code_or_args if module else ["-c", code_or_args])
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)


def test_a_negative_index_fails_the_bounds_check_in_a_no_wraparound_module(tmp_path):
    (tmp_path / "negk.py").write_text(textwrap.dedent("""
        from mrfq.fq._jit import jit_no_refcount, no_wraparound
        assert no_wraparound(__name__)

        @jit_no_refcount
        def get(a, i):
            return a[i]
    """))
    p = _run(textwrap.dedent("""
        import numpy as np
        import negk
        a = np.arange(5.0)
        assert negk.get(a, 4) == 4.0
        try:
            negk.get(a, -1)
        except IndexError:
            print("raised")
    """), tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "raised"


def test_other_modules_keep_the_wraparound(tmp_path):
    p = _run(textwrap.dedent("""
        import numpy as np
        import mrfq.router.engine  # installs the hook for mrfq.router.engine only
        from numba import njit

        @njit
        def last(a):
            return a[-1]

        print(last(np.arange(5.0)))
    """), tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "4.0"


@pytest.mark.slow
def test_engine_never_indexes_negatively(tmp_path):
    """Whole traces against the SimPy reference (every scheduler, Poisson flows, rtt,
    packet sizes, table growth, J = 2 and 3), with bounds checks on.  At reduced size (CI) the
    slow property test is left out: the 40-example one draws the same kinds of scenario, and
    every variant compiles afresh with bounds checks (this test took 6 min of CI's 21 with it)."""
    select = [] if SCALE >= 1.0 else ["-m", "not slow"]
    p = _run(["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *select, "tests/test_reference.py",
              "tests/test_traces.py"], tmp_path, module=True)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
