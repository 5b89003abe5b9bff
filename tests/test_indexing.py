"""The engine is compiled without numba's negative-index wraparound (fq._jit.no_wraparound).

That is only sound if no index in its kernels is ever negative.  With
``NUMBA_BOUNDSCHECK=1`` a negative index there fails the bounds check (it is
no longer wrapped); the compiled pass of the suite runs that way (tests/conftest.py),
so the engine-vs-reference tests check every code path they reach.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import JIT_DISABLED

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(JIT_DISABLED, reason="compiled code only")


def _run(code_or_args, tmp_path, *, module: bool = False, cache=None, env=None):
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(cache or tmp_path / "numba-cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(tmp_path)]), **(env or {}))
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


def test_the_suite_runs_bounds_checked():
    """tests/conftest.py turns numba's bounds checks on for the compiled pass, so every engine test
    (the engine-vs-reference traces of every scheduler and loop variant among them) also checks
    that no kernel indexes outside its arrays; and keeps the suite's machine code in a cache of its own."""
    import numba

    assert numba.config.BOUNDSCHECK
    assert os.path.basename(os.environ["NUMBA_CACHE_DIR"]) == "boundscheck"


def test_compiled_code_here_fails_on_an_index_out_of_bounds():
    """In this process a jitted function refuses an index past the end of its array."""
    import numpy as np
    from numba import njit

    @njit
    def get(a, i):
        return a[i]

    assert get(np.arange(4.0), 3) == 3.0
    with pytest.raises(IndexError):
        get(np.arange(4.0), 4)
