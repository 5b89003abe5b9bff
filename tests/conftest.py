"""Shared test settings.

``MRFQ_TEST_SCALE`` (float, default 0.3) scales the size of the slow
statistical checks: the default is the reduced size CI runs; ``MRFQ_TEST_SCALE=1`` runs them at
full size (opt-in: much longer).

Test modules import this file as ``conftest`` (``from conftest import scaled``),
the module pytest itself loads from ``tests/`` (no ``tests/__init__.py``, the
default "prepend" import mode), never as ``tests.conftest``: that second name
would load a second copy of the module.

``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) derandomizes the property tests, so CI draws the
same examples on every run and a failure there reproduces bit for bit; a local run keeps
drawing new ones, which is how new counter-examples are found (pin them with ``@example``).
"""

import importlib.abc
import os
import sys
import tempfile

import pytest
from hypothesis import settings

class _OnlyAsMrfq(importlib.abc.MetaPathFinder):
    """The checkout's folders fq/, flows/, router/ and analysis/ are mrfq's subpackages, imported as
    ``mrfq.fq`` ...  ``python -m pytest`` puts the checkout on ``sys.path``, where ``import analysis``
    would find the folder and hide code that still names a module by its folder (a user's installed
    mrfq has no such module): refuse those names here, as a user's environment does."""

    def find_spec(self, name, path=None, target=None):
        if name in ("analysis", "flows", "router", "fq"):
            raise ModuleNotFoundError(f"No module named {name!r} (mrfq's folders import as mrfq.{name})", name=name)
        return None


sys.meta_path.insert(0, _OnlyAsMrfq())

settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

SCALE = float(os.environ.get("MRFQ_TEST_SCALE", "0.3"))
JIT_DISABLED = os.environ.get("NUMBA_DISABLE_JIT", "0") == "1"

# The compiled pass runs bounds-checked (set before numba is imported; subprocesses inherit it).  The
# engine is compiled without numba's negative-index wraparound (fq._jit.no_wraparound), which is only
# sound if no index in its kernels is ever negative: with bounds checks on, a negative or too large
# index anywhere a test reaches fails as an IndexError instead of reading another record.  numba's
# cache does not tell bounds-checked machine code from the other, so the suite keeps its own cache
# (a "boundscheck" folder under NUMBA_CACHE_DIR, else under the temporary folder): a user's later
# runs never load the slower, checked code.
if not JIT_DISABLED:
    os.environ.setdefault("NUMBA_BOUNDSCHECK", "1")
    _cache = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(tempfile.gettempdir(), f"mrfq-tests-{getattr(os, 'getuid', lambda: 0)()}")
    if os.path.basename(_cache) != "boundscheck":
        os.environ["NUMBA_CACHE_DIR"] = os.path.join(_cache, "boundscheck")


# pytest-xdist (``-n auto``) runs a worker per core: the Markov solve's parallel kernels
# (analysis.markov, numba's OpenMP layer) then run one thread per worker and per process a
# worker starts (set before numba is imported), else each one's threads spin at every barrier
# waiting for a thread the other worker holds off its core (the Markov and compare tests took
# 247 s instead of 61 s on 2 cores).  Their results do not depend on the number of threads
# (tests/test_markov_blocks.py runs 1 and 2 threads in a process of its own).
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ["NUMBA_NUM_THREADS"] = "1"


def scaled(x: float, minimum: float = 0.0) -> float:
    return max(minimum, x * SCALE)


@pytest.fixture(scope="session")
def scale() -> float:
    return SCALE


def run_fluid_handlers(argv, capsys):
    """Call the `mrfq alloc` / `mrfq fluid` handlers directly (MrfqError propagates, unlike
    `analysis.cli.main`); returns (exit code, stdout)."""
    import argparse

    from mrfq.analysis.cli_fluid import register

    p = argparse.ArgumentParser(prog="mrfq")
    register(p.add_subparsers(dest="cmd", required=True))
    args = p.parse_args(argv)
    rc = args.func(args)
    return rc, capsys.readouterr().out
