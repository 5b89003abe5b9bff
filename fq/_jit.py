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
