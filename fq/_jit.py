"""One place for numba flags (STYLE practice 9).

``jit`` is :func:`numba.njit` with ``fastmath`` off (reassociation could change
tag ties and break exact trace equality between the engine and the SimPy
reference) and the on-disk cache controlled by one environment variable:

* ``MRFQ_NUMBA_CACHE=0`` disables caching (use it while editing kernels: numba
  keys a cached function on its *own* source file only, so editing a kernel in
  ``fq/`` leaves the engine's cached machine code in ``router/engine.py``
  stale);
* ``NUMBA_CACHE_DIR`` moves the cache (CI points it at a job-local directory).

``NUMBA_DISABLE_JIT=1`` turns every kernel into plain Python (slow, but the
coverage it reports is honest); the kernels are written to give the same
results either way.
"""

from __future__ import annotations

import os

from numba import njit

CACHE = os.environ.get("MRFQ_NUMBA_CACHE", "1") not in ("0", "false", "no")


def jit(fn=None, **kwargs):
    """``@jit`` / ``@jit(inline="always")``: numba's njit with the project's flags."""
    opts = dict(cache=CACHE, fastmath=False)
    opts.update(kwargs)
    if fn is None:
        return njit(**opts)
    return njit(**opts)(fn)


def jit_no_refcount(fn):
    """njit for a hot loop that allocates nothing: compiled without numba's
    runtime (NRT), so no atomic reference counting of the arrays it is passed.

    In the engine's event loop that counting cost ~80 % of the time (numba
    cannot prune the incref/decref pairs that inlined helpers with array
    arguments leave across branches).  The function must not allocate
    (compilation fails loudly if it does).  ``_nrt`` is a numba-internal
    flag: if a numba release drops it we fall back to plain ``jit``.
    """
    try:
        return njit(cache=CACHE, fastmath=False, _nrt=False)(fn)
    except TypeError:  # pragma: no cover - numba without the flag
        return jit(fn)


# ---------------------------------------------------------------------------
# array indices without the negative-index wraparound
_NO_WRAP_MODULES: set[str] = set()


def _mangled(module: str) -> str:
    """How numba's mangled LLVM function names spell a module path (``6router6engine``)."""
    return "".join(f"{len(p)}{p}" for p in module.split("."))


def no_wraparound(module: str) -> bool:
    """Compile the functions defined in ``module`` without numba's negative-index wraparound.

    numba turns every ``a[i]`` with a signed ``i`` into ``a[i + n if i < 0 else i]``
    (an extra compare, add and select, plus the array's length kept live), and
    offers no switch to turn it off (numba issue #3205; only unsigned indices
    skip it, PR #929).  In the engine's event loop, whose computed indices
    are never negative, the wraparound cost ~25 % of the time.  This wraps
    numba's ``fix_integer_index`` so that, while lowering a function whose
    mangled name belongs to ``module`` (inline="always" helpers are lowered
    inside their caller), signed indices are used as they are.  Every other
    function, numba's own overloads included, keeps the wraparound.

    Only for modules whose kernels never index with a negative number: with
    ``NUMBA_BOUNDSCHECK=1`` such an index raises IndexError instead of
    wrapping, which is how the test suite checks it.  Returns False (and
    changes nothing) if this numba has no such internal hook; the code is
    then only slower.
    """
    try:
        from numba.core import types
        from numba.np import arrayobj
    except ImportError:  # pragma: no cover - a numba without the module
        return False
    original = getattr(arrayobj, "fix_integer_index", None)
    if original is None:  # pragma: no cover - a numba without the hook
        return False
    if not hasattr(original, "_mrfq_original"):
        def fix_integer_index(context, builder, idxty, idx, size):
            if idxty.signed:
                name = builder.function.name
                for marker in _NO_WRAP_MODULES:
                    if marker in name:
                        return context.cast(builder, idx, idxty, types.intp)
            return original(context, builder, idxty, idx, size)

        fix_integer_index._mrfq_original = original
        arrayobj.fix_integer_index = fix_integer_index
    _NO_WRAP_MODULES.add(_mangled(module))
    return True
