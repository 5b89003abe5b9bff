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


#: The bounds-checked runs: one subprocess per chunk (pytest-xdist spreads them over the workers),
#: all sharing one numba cache of their own (never the run's: its machine code has no bounds checks),
#: so a loop variant two chunks need compiles once.  A chunk is (schedulers checked at J = 2 with both
#: cost layouts, resource counts checked with drfq, whether it also runs every other engine test of
#: tests/test_reference.py and tests/test_traces.py).
#:
#: Which loop variants: a generic variant is compiled per (J, scheduler, costs per flow or per packet)
#: (router.loop.loop_for).  The scheduler's hooks and the cost layout are structural: different code,
#: so every scheduler is checked with both layouts (at J = 2: the presets, the flow table growing, the
#: admission ring growing, random scenarios with the scheduler's options; tests/bounds_engine.py).
#: J is a compile-time constant only: it sets the trip counts of the loops over resources (unrolled)
#: and the strides of the flat arrays (``ri[RI_* * J + j]``, ``qs[(s * J + j) * QS_WIDTH]``, the packet
#: and cost records, the histograms' ``J + 1`` columns); no kernel in router/ or fq/ indexes with
#: ``j - 1``, ``J - 1`` or a negative offset from J (the records' ``pb + W - J - 1`` is the first of
#: the J + 1 time words at the end of a W-word record), and no branch tests J itself, only
#: ``j < J``.  So a negative index at J = 1 or 3 would come from the same statements with the same
#: runtime values a scheduler's hooks see at J = 2; drfq at J = 1 (the first resource is the last)
#: and J = 3 (a middle resource), both layouts, checks the loop's own J structure.  Before (one
#: subprocess running those two files, the property test drawing J and the scheduler at random)
#: 29 variants compiled, 785 s on CI; now 20, spread over 5 subprocesses.
BOUNDS_CHUNKS = [
    ("pf-sfq,bmf-wfq", "", False),
    ("fifo,fq-single", "", False),
    ("drr,mr3", "", False),
    ("", "1,3", False),
    ("drfq,drfq-dovetail", "", True),
]


def _chunk_id(chunk):
    scheds, js, rest = chunk
    return "+".join([s for s in scheds.split(",") if s] + [f"J{j}" for j in js.split(",") if j]
                    + (["rest"] if rest else []))


def test_bounds_chunks_cover_every_scheduler():
    from mrfq.fq.registry import SCHEDULERS

    named = [s for scheds, _, _ in BOUNDS_CHUNKS for s in scheds.split(",") if s]
    assert sorted(named) == sorted(SCHEDULERS) and len(named) == len(set(named))
    assert sum(rest for _, _, rest in BOUNDS_CHUNKS) == 1


@pytest.fixture(scope="session")
def bounds_cache(tmp_path_factory):
    """One numba cache for every chunk, also across pytest-xdist workers (their base temp folders
    share a parent)."""
    d = tmp_path_factory.getbasetemp().parent / "bounds-numba-cache"
    d.mkdir(exist_ok=True)
    return d


@pytest.mark.slow
@pytest.mark.parametrize("chunk", BOUNDS_CHUNKS, ids=_chunk_id)
def test_engine_never_indexes_negatively(chunk, tmp_path, bounds_cache):
    """Whole traces against the SimPy reference (every scheduler, Poisson flows, rtt, packet sizes,
    table growth, J = 1, 2 and 3), with bounds checks on.  The chunk with ``rest`` runs every test
    of tests/test_reference.py and tests/test_traces.py not run per scheduler here: the engine's
    hand-checked traces, max_services, the stored quotients...; at reduced size (CI) not the slow
    property test (the same kinds of scenario as tests/bounds_engine.py draws per variant)."""
    from mrfq.fq.registry import SCHEDULERS

    scheds, js, rest = chunk
    mine = [s for s in scheds.split(",") if s]
    per_scheduler = ["test_engine_equals_reference_on_presets", "test_engine_equals_reference_when_flow_table_grows"]
    presets = ["oracle-drfq-trace", "oracle-memoryless", "oracle-three-flows", "middlebox-mix"]
    nodes = [f"tests/test_reference.py::test_engine_equals_reference_on_presets[{p}-{s}]" for p in presets for s in mine]
    nodes += [f"tests/test_reference.py::test_engine_equals_reference_when_flow_table_grows[{s}]" for s in mine]
    if rest:
        # every other test of the two files; replaced by tests/bounds_engine.py: the property test
        # (J and the scheduler drawn at random: a compilation per variant drawn) and LONG_RTT at J = 1
        # for every scheduler (there at J = 2, and at J = 1 with drfq)
        replaced = ["tests/test_reference.py::test_engine_equals_reference"] + [
            f"tests/test_reference.py::test_engine_equals_reference_with_many_admissions_waiting[{s}]"
            for s in SCHEDULERS]
        others = [f"tests/test_reference.py::{t}[{p}-{s}]" for t in per_scheduler[:1] for p in presets
                  for s in SCHEDULERS if s not in mine]
        others += [f"tests/test_reference.py::{per_scheduler[1]}[{s}]" for s in SCHEDULERS if s not in mine]
        select = [] if SCALE >= 1.0 else ["-m", "not slow"]
        nodes = ["tests/test_reference.py", "tests/test_traces.py", *select]
        drop = replaced + others
    else:
        drop = []
    env = {"MRFQ_BOUNDS_SCHEDULERS": ",".join(mine), "MRFQ_BOUNDS_J": js, "MRFQ_BOUNDS_DESELECT": "\n".join(drop)}
    p = _run(["-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "bounds_select", *nodes, "tests/bounds_engine.py"],
             tmp_path, module=True, cache=bounds_cache, env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
