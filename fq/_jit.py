"""One place for numba flags (STYLE practice 9).

``jit`` is :func:`numba.njit` with ``fastmath`` off (reassociation could change
tag ties and break exact trace equality between the engine and the SimPy
reference) and the on-disk cache controlled by one environment variable:

* ``MRFQ_NUMBA_CACHE=0`` disables caching (use it while editing kernels: numba
  keys a cached function on its *own* source file only, so editing a kernel in
  ``fq/`` leaves the engine's cached machine code in ``router/engine.py``
  stale);
* ``NUMBA_CACHE_DIR`` moves the cache (CI points it at a job-local directory).
* ``MRFQ_FAST_SCOPE_COPY=0`` compiles with numba's own copy of IR scopes instead of
  :func:`fast_scope_copy` (slower to compile, the same machine code).

``NUMBA_DISABLE_JIT=1`` turns every kernel into plain Python (slow, but the
coverage it reports is honest); the kernels are written to give the same
results either way.
"""

from __future__ import annotations

import os

from numba import njit
from numba.core import ir as _ir

CACHE = os.environ.get("MRFQ_NUMBA_CACHE", "1") not in ("0", "false", "no")
#: ``MRFQ_FAST_SCOPE_COPY=0``: compile with numba's own (slower) IR scope copy (:func:`fast_scope_copy`)
FAST_SCOPE_COPY = os.environ.get("MRFQ_FAST_SCOPE_COPY", "1") not in ("0", "false", "no")


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


# ---------------------------------------------------------------------------
# compile time: numba's copy of a scope, in linear time
class _LazyVarMap(_ir.VarMap):
    """A copied scope's variable map, built on first use: a snapshot of the names now, the
    variable copies (same name and location, pointing to the new scope) when read."""

    def __init__(self, snap, scope):
        self._snap = snap
        self._scope = scope

    def __getattr__(self, name):
        if name != "_con":
            raise AttributeError(name)
        scope = self.__dict__.pop("_scope")
        con = {k: _ir.Var(scope, v.name, v.loc) for k, v in self.__dict__.pop("_snap").items()}
        self._con = con
        return con

    def _names(self):
        d = self.__dict__
        return d["_con"].keys() if "_con" in d else d["_snap"].keys()

    def __eq__(self, other):
        if isinstance(other, _ir.VarMap):
            return self._names() == (other._names() if isinstance(other, _LazyVarMap) else other._con.keys())
        return False

    __hash__ = _ir.VarMap.__hash__


def fast_scope_copy() -> bool:
    """Deep-copy numba IR scopes (``numba.core.ir.Scope``) in time linear in the block, not in
    the function: compile time only, the same machine code.

    ``inline="always"`` inlining copies the callee's IR block by block (``copy_ir`` in
    ``numba.core.inline_closurecall``), and the generic ``copy.deepcopy`` of each block copies
    the function's whole scope, every variable it defines (numba issues #8989, #9204).  With
    callees that are themselves inlined that is quadratic: about 660 000 variable copies per
    event-loop variant.  Here a scope's copy has the same attributes and a variable map
    (:class:`_LazyVarMap`) that holds a snapshot of the names and builds the copies of the
    variables (same name and location, pointing to the new scope) only when read, which
    inlining does for one block's scope of each callee.  The statements' variables are copied as
    before (``Var.__deepcopy__``, pointing to the new scope).  Measured, 3 static drfq and
    dynamic bmf-wfq loops, 4 fresh processes each: 19.2 / 16.6 s to compile (median) with
    numba's copy, 14.0 / 10.2 s with this one; the LLVM IR of every loop variant and of the
    Markov kernels is identical (tests/test_scope_copy.py checks a loop variant).

    ``MRFQ_FAST_SCOPE_COPY=0`` leaves numba's copy in place.  Returns False (and changes
    nothing) if numba's Scope already defines its own copy or has attributes this does not
    know."""
    import copy

    Scope, VarMap = _ir.Scope, _ir.VarMap
    if getattr(getattr(Scope, "__deepcopy__", None), "_mrfq", False):  # installed already
        return True
    if hasattr(Scope, "__deepcopy__") or hasattr(VarMap, "__deepcopy__"):  # pragma: no cover
        return False
    probe = Scope(None, _ir.Loc("probe", 1))
    if set(vars(probe)) != {"parent", "localvars", "loc", "redefined", "var_redefinitions"} \
            or set(vars(probe.localvars)) != {"_con"}:  # pragma: no cover - a numba that changed Scope
        return False

    deepcopy = copy.deepcopy

    def __deepcopy__(self, memo):
        new = Scope.__new__(Scope)
        memo[id(self)] = new
        new.parent = deepcopy(self.parent, memo)
        lv = self.localvars
        d = lv.__dict__
        snap = d["_snap"] if "_snap" in d else lv._con
        new.localvars = _LazyVarMap(dict(snap), new)
        new.loc = deepcopy(self.loc, memo)
        new.redefined = deepcopy(self.redefined, memo)
        new.var_redefinitions = deepcopy(self.var_redefinitions, memo)
        return new

    __deepcopy__._mrfq = True
    Scope.__deepcopy__ = __deepcopy__
    return True


FAST_SCOPE_COPY_INSTALLED = FAST_SCOPE_COPY and fast_scope_copy()
