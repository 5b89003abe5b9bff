"""The engine's on-disk numba cache: keyed on every source of fq/ and router/ (fq._jit.engine_cache)."""

import json
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


def _engine_dispatchers():
    """Every compiled function of fq/ and router/ (the loop's helpers, the schedulers' hooks)."""
    import importlib
    import pkgutil

    from numba.core.dispatcher import Dispatcher

    import mrfq.fq
    import mrfq.router
    from mrfq.fq._jit import LazyInline

    seen = {}
    for pkg in (mrfq.fq, mrfq.router):
        for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            mod = importlib.import_module(m.name)
            for name, d in vars(mod).items():
                if isinstance(d, LazyInline):  # (a helper whose dispatcher is made on first use)
                    d = d.dispatcher()
                if isinstance(d, Dispatcher):  # (imported ones too: one entry per dispatcher)
                    seen[id(d)] = d
    return list(seen.values())


def test_no_two_compiled_engine_functions_share_a_name():
    """numba names a compiled function by its module, qualified name, argument types and a counter
    of the compiling process, which a cached function keeps: two dispatchers of one name (an inline
    copy of an out-of-line helper) can get the same symbol, and the loop then links whichever LLVM
    meets first (the TCP sender's copy of router.buffers.arrive would then be called out of line,
    once per packet); fq._jit.inline_copy gives such a copy a name of its own."""
    names = {}
    for d in _engine_dispatchers():
        key = (d.py_func.__module__, d.py_func.__qualname__)
        assert key not in names, f"two compiled functions named {key}"
        names[key] = d
    from mrfq.router import buffers, transport
    assert ("mrfq.router.buffers", "arrive_inline") == (transport.buffer_arrive.py_func.__module__,
                                                        transport.buffer_arrive.py_func.__qualname__)
    assert buffers.arrive.py_func.__code__.co_code == transport.buffer_arrive.py_func.__code__.co_code


LOAD_PROBE = r"""
import json, sys
import numpy as np
from numba import njit
from mrfq.fq._jit import LazyInline
from mrfq.router import heap
import mrfq.router.loop, mrfq.fq.registry
hp = np.zeros((1, 8), np.int64)
heap._fill_root_far(hp, 1, 0, 5, 7)
sig = heap._fill_root_far.signatures[0]
hit = heap._fill_root_far.stats.cache_hits.get(sig, 0)
bare = "numba.np.arraymath" not in sys.modules  # numba's implementations not registered to load it
arrayobj = "numba.np.arrayobj" in sys.modules
patched = arrayobj and hasattr(sys.modules["numba.np.arrayobj"].fix_integer_index, "_mrfq_original")
lazies = {id(v): v for m in list(sys.modules.values()) if getattr(m, "__name__", "").startswith("mrfq.")
          for v in vars(m).values() if isinstance(v, LazyInline)}
made = sorted(v.__qualname__ for v in lazies.values() if v._d is not None)


@njit
def later(a):  # compiled after the load: numba registers its implementations first, as always
    return np.linalg.norm(a) + a.sum()


print(json.dumps(dict(hit=hit, bare=bare, arrayobj=arrayobj, patched=patched, helpers=len(lazies), made=made,
                      later=later(np.array([3.0, 4.0])), hp=hp[0].tolist())))
"""


def test_a_cached_function_loads_without_numbas_whole_compiler_and_compiling_still_works(tmp_path):
    """fq._jit._LoadOnlyCache: a warm process loads a cached engine function without importing
    numba's implementations (numpy's linear algebra...), and a function compiled afterwards in the
    same process compiles and runs as usual.  fq._jit.LazyInline: the helpers' dispatchers are made
    only when a compilation needs them (none for a load), and numba's index hook is wrapped (no wraparound) before
    a compilation, never for a load."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    env.pop("MRFQ_LAZY_DISPATCH", None)
    env.pop("MRFQ_LAZY_LOAD", None)
    cold, warm = (json.loads(subprocess.run([sys.executable, "-c", LOAD_PROBE], env=env, capture_output=True,
                                            text=True, check=True).stdout) for _ in range(2))
    assert cold["hit"] == 0 and warm["hit"] == 1  # compiled, then loaded
    assert warm["bare"] and not warm["arrayobj"]
    assert cold["patched"]
    assert warm["made"] == [] and cold["made"] and warm["helpers"] > 100  # (made for the compilation)
    assert cold["later"] == warm["later"] == 12.0 and cold["hp"] == warm["hp"]


def test_an_engine_function_numba_cannot_cache_warns_instead_of_failing():
    """numba refuses to cache a function holding dynamic globals with a warning naming its file
    (``CacheImpl.check_cachable``): the engine's locator passes the file on, so that compilation
    goes on uncached (as under ``NUMBA_OPT=0``) instead of failing on a missing attribute."""
    from types import SimpleNamespace

    from numba.core import caching
    from numba.core.errors import NumbaWarning

    from mrfq.router import heap

    py = heap._fill_root_far.py_func
    impl = caching.CompileResultCacheImpl(py)
    assert getattr(type(impl.locator), "_mrfq", False)
    assert impl.locator._py_file == py.__code__.co_filename
    cres = SimpleNamespace(lifted=(), library=SimpleNamespace(has_dynamic_globals=True),
                           fndesc=SimpleNamespace(qualname="heap._fill_root_far"))
    with pytest.warns(NumbaWarning, match="Cannot cache compiled function"):
        assert impl.check_cachable(cres) is False
