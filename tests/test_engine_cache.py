"""The engine's on-disk numba cache: keyed on every source of fq/ and router/ (fq._jit.engine_cache)."""

import os
import subprocess
import sys

import pytest

from mrfq.fq import _jit

pytestmark = pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1" or not _jit.CACHE,
                                reason="needs numba's compiled, cached functions")

PROBE = r"""
import sys
import numpy as np
import mrfq.fq._jit as jj
if sys.argv[1] == "edited":
    jj._SOURCES_HASH = "an edited engine"   # as if a source in fq/ or router/ had changed
from mrfq.router import heap
hp = np.zeros((1, 8), np.int64)
heap._fill_root_far(hp, 1, 0, 5, 7)
s = heap._fill_root_far.stats
print(s.cache_hits.get(heap._fill_root_far.signatures[0], 0), s.cache_misses.get(heap._fill_root_far.signatures[0], 0))
"""


def _probe(cache_dir, state):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", PROBE, state], env=env, capture_output=True, text=True, check=True)
    hits, misses = out.stdout.split()
    return int(hits), int(misses)


def test_an_edit_anywhere_in_the_engine_recompiles_its_cached_functions(tmp_path):
    """A cached function of router/ is loaded again while the engine's sources are unchanged, and
    compiled again once any of them changes (numba alone would check only router/heap.py)."""
    assert _jit.ENGINE_CACHE_INSTALLED
    assert _probe(tmp_path, "same") == (0, 1)  # compiled and saved
    assert _probe(tmp_path, "same") == (1, 0)  # loaded
    assert _probe(tmp_path, "edited") == (0, 1)  # another engine: compiled again
    assert _probe(tmp_path, "edited") == (1, 0)


def test_only_the_engine_folders_are_stamped_with_its_sources():
    root = _jit._ROOT
    assert _jit._engine_file(root / "router" / "loop.py")
    assert _jit._engine_file(root / "fq" / "cluster" / "kernels.py")
    assert not _jit._engine_file(root / "analysis" / "markov.py")
    assert not _jit._engine_file("/elsewhere/router/loop.py")


def test_a_helper_is_compiled_once_for_its_argument_types_not_per_literal_value():
    """fq._jit.jit_inline: calls with the constants 2 and 3, and with a variable, share one
    compilation of the helper (numba would compile one per literal value), and the constants
    still give the right results (LLVM inlines the helper)."""
    import numpy as np
    from numba import njit

    @_jit.jit_inline
    def scaled(a, J, k):
        s = 0.0
        for j in range(J):
            s += a[j] * k
        return s

    @njit
    def caller(a, n):
        return scaled(a, 2, -1) + scaled(a, 3, 2) + scaled(a, n, 1)

    a = np.arange(1.0, 5.0)
    assert caller(a, 4) == -(1 + 2) + 2 * (1 + 2 + 3) + (1 + 2 + 3 + 4)
    assert len(scaled.signatures) == 1
