"""One place for numba flags (STYLE practice 9).

``jit`` is :func:`numba.njit` with ``fastmath`` off (reassociation could change
tag ties and break exact trace equality between the engine and the SimPy
reference) and the on-disk cache controlled by one environment variable:

* ``MRFQ_NUMBA_CACHE=0`` disables caching.  numba keys a cached function on its
  *own* source file only; :func:`engine_cache` stamps every cached function of
  ``fq/`` and ``router/`` with a hash of all their sources instead, so editing a
  hook or a helper recompiles the loops that hold it (elsewhere, e.g. ``analysis/``,
  numba's own rule applies);
* ``NUMBA_CACHE_DIR`` moves the cache (CI points it at a job-local directory).
* ``MRFQ_FAST_SCOPE_COPY=0`` compiles with numba's own copy of IR scopes instead of
  :func:`fast_scope_copy` (slower to compile, the same machine code).
* ``MRFQ_LAZY_LOAD=0`` loads cached functions as numba does, after registering its whole compiler
  (:class:`_LoadOnlyCache`: about 0.6 s of a warm run).
* ``MRFQ_LAZY_DISPATCH=0`` makes every helper's dispatcher at import (:class:`LazyInline`: about
  0.1 s of a warm run).

``NUMBA_DISABLE_JIT=1`` turns every kernel into plain Python (slow, but the
coverage it reports is honest); the kernels are written to give the same
results either way.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from numba import njit
from numba.core import config as _numba_config
from numba.core.typing.typeof import typeof_impl as _typeof_impl
from numba.core import types as _types
from numba.core.registry import CPUDispatcher as _CPUDispatcher
from numba.core import ir as _ir
from numba.core.caching import FunctionCache as _FunctionCache
from numba.core.runtime import rtsys as _rtsys

CACHE = os.environ.get("MRFQ_NUMBA_CACHE", "1") not in ("0", "false", "no")
#: ``MRFQ_FAST_SCOPE_COPY=0``: compile with numba's own (slower) IR scope copy (:func:`fast_scope_copy`)
FAST_SCOPE_COPY = os.environ.get("MRFQ_FAST_SCOPE_COPY", "1") not in ("0", "false", "no")
#: ``MRFQ_LAZY_LOAD=0``: load cached functions as numba does, its whole compiler first (:class:`_LoadOnlyCache`)
LAZY_LOAD = os.environ.get("MRFQ_LAZY_LOAD", "1") not in ("0", "false", "no")
#: ``MRFQ_LAZY_DISPATCH=0``: make every helper's dispatcher at import (:class:`LazyInline`)
LAZY_DISPATCH = os.environ.get("MRFQ_LAZY_DISPATCH", "1") not in ("0", "false", "no")


def jit(fn=None, **kwargs):
    """``@jit`` / ``@jit(inline="always")``: numba's njit with the project's flags."""
    opts = dict(cache=CACHE, fastmath=False)
    opts.update(kwargs)
    if fn is None:
        return lambda f: _lazy_load(njit(**opts)(f))
    return _lazy_load(njit(**opts)(fn))


class _LoadOnlyCache(_FunctionCache):
    """numba's on-disk cache of a function, loading without first filling numba's whole compiler.

    numba's ``load_overload`` refreshes the target context before it reads a cached function: it
    imports and registers every implementation numba has (numpy's linear algebra, which imports
    scipy.linalg, typed containers, jitclass...), about 0.6 s of a warm ``mrfq run``'s 1.6 s of CPU,
    only to load machine code that needs none of it.  Loading needs the runtime's symbols alone
    (``rtsys.initialize``); numba's compiler refreshes the context itself before it compiles
    anything (``numba.core.compiler``), and a lookup of an implementation it has not registered
    yet refreshes it too, so a later compilation in the same process is unchanged."""

    def load_overload(self, sig, target_context):
        _rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            cres = self._load_overload(sig, target_context)
        if cres is None and _NO_WRAP_MARKERS:  # numba compiles it next: lowered without the wraparound
            _install_no_wrap()
        return cres


def _lazy_load(d):
    """``d`` (a dispatcher) reading its cache with :class:`_LoadOnlyCache` (``MRFQ_LAZY_LOAD=0``:
    numba's own)."""
    if LAZY_LOAD and type(getattr(d, "_cache", None)) is _FunctionCache:
        d._cache.__class__ = _LoadOnlyCache
    return d


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
        return _lazy_load(njit(cache=CACHE, fastmath=False, _nrt=False)(fn))
    except TypeError:  # pragma: no cover - numba without the flag
        return jit(fn)


def jit_internal(fn):
    """:func:`jit_no_refcount` for a function called only from compiled code (never from
    Python): compiled without the wrapper that would convert Python objects into its
    arguments (``no_cpython_wrapper``), which for arguments that are named tuples of a dozen
    arrays is a large part of a small function's compile time.  Compiled for the types of its
    arguments, not their literal values (:class:`UnliteralDispatcher`): an out-of-line helper
    such as ``router.flowtable.flow_starts`` (about 5 s to compile) was compiled again for every
    number of resources the loops pass it as a constant, and for the lean loop's constant
    trace bound 0.  Called from Python (only ``NUMBA_DISABLE_JIT=1`` does) it is the plain
    function."""
    try:
        d = njit(cache=CACHE, fastmath=False, _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)(fn)
    except TypeError:  # pragma: no cover - numba without the flags
        return jit(fn)
    if type(d) is _CPUDispatcher:
        d.__class__ = UnliteralDispatcher  # compiled once, not once per number of resources
    return _lazy_load(d)


def jit_inline(fn=None, *, python: bool = True, error_model: str | None = None, wraparound: bool = False):
    """A helper of the event loop (router/loop.py): compiled once per signature, on its own and
    cached, and inlined by LLVM into every caller (``forceinline``: LLVM's ``alwaysinline``), so
    the loop's machine code is that of one function.

    numba's own ``inline="always"`` inlines the helper's IR at every call site instead, so each
    loop variant types, checks and lowers every copy again: compiling a loop variant took about
    three times as long (``docs/performance.md``, 'Start-up').  Like the loop, a helper runs
    without numba's runtime (no reference counting: it must not allocate) and without the
    negative-index wraparound (:func:`no_wraparound`: it never indexes with a negative number).
    ``python=False`` leaves out the wrapper that lets Python call it (less to compile, for a
    helper whose arguments are the engine's named tuples and that only compiled code calls:
    called from Python, such a function would crash the interpreter).  ``error_model="numpy"``:
    a division by zero gives inf or nan instead of raising (the task simulator's kernels rely on
    it); ``wraparound=True`` keeps numba's negative-index wraparound (for kernels not checked
    against negative indices)."""
    if fn is None:
        return lambda f: jit_inline(f, python=python, error_model=error_model, wraparound=wraparound)
    if not wraparound and _no_wrap_hook():
        _NO_WRAP_MARKERS.add(_mangled(f"{fn.__module__}.{fn.__qualname__}"))
    extra = {} if error_model is None else {"error_model": error_model}

    def make():
        try:
            d = njit(cache=CACHE, fastmath=False, forceinline=True, _nrt=False, no_cpython_wrapper=not python,
                     no_cfunc_wrapper=True, **extra)(fn)
        except TypeError:  # pragma: no cover - a numba without the flags
            return njit(cache=CACHE, fastmath=False, inline="always", **extra)(fn)
        if type(d) is _CPUDispatcher:
            d.__class__ = UnliteralDispatcher
        return _lazy_load(d)

    if _numba_config.DISABLE_JIT or not LAZY_DISPATCH:
        return make()
    return LazyInline(fn, make)


class LazyInline:
    """A :func:`jit_inline` helper whose numba dispatcher is made when something first needs it:
    numba typing a caller that is being compiled (``typeof`` of the global), a call from Python, or
    any dispatcher attribute (``overloads``...).  A warm run loads its loop's machine code from the
    cache, helpers inlined, and never needs the 170-odd helpers' dispatchers: making them cost about
    0.1 s of a warm ``mrfq run`` (``MRFQ_LAZY_DISPATCH=0``: made at import, as numba does)."""

    def __init__(self, fn, make):
        functools.update_wrapper(self, fn)
        self.py_func = fn
        self._make = make
        self._d = None

    def dispatcher(self):
        """The numba dispatcher (made on the first call)."""
        d = self._d
        if d is None:
            d = self._d = self._make()
        return d

    def __call__(self, *args, **kwargs):
        return self.dispatcher()(*args, **kwargs)

    def __getattr__(self, name):  # (only for attributes the proxy does not have itself)
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(self.dispatcher(), name)

    def __reduce__(self):
        return self.dispatcher().__reduce__()

    def __repr__(self):
        return f"<lazily compiled {self.__module__}.{self.__qualname__}>"


@_typeof_impl.register(LazyInline)
def _typeof_lazy_inline(val, c):
    return _typeof_impl(val.dispatcher(), c)


def inline_copy(fn, suffix: str = "_inline", **kwargs):
    """:func:`jit_inline` of a copy of ``fn`` (a plain function or a dispatcher's) named ``name +
    suffix``: an out-of-line helper inlined at a hot call site.

    The copy needs a name of its own.  numba's symbol for a compiled function is its qualified name,
    its argument types and a counter of the compiling process (``uid``); a function loaded from the
    on-disk cache keeps the counter of the process that compiled it, so an inline copy of the same
    name could get the out-of-line version's very symbol.  LLVM then links one of the two
    definitions into the loop, and where it keeps the out-of-line one the hot call site calls it
    (``router.transport``'s sender would pay a call with about 120 arguments on the stack per packet)."""
    import types as _pytypes

    py = getattr(fn, "py_func", fn)
    name = py.__name__ + suffix
    code = py.__code__.replace(co_name=name, co_qualname=py.__qualname__ + suffix)
    copy = _pytypes.FunctionType(code, py.__globals__, name, py.__defaults__, py.__closure__)
    copy.__qualname__ = py.__qualname__ + suffix
    copy.__module__ = py.__module__
    copy.__doc__ = py.__doc__
    return jit_inline(copy, **kwargs)


class UnliteralDispatcher(_CPUDispatcher):
    """numba's dispatcher, compiling for the non-literal types of the arguments compiled code
    passes (``int64`` for ``J = 2`` or a constant ``-1``).

    numba compiles a callee once per literal value a caller passes, so the same hook compiled
    once for a call ``start(..., -1, -1, t)`` and again for ``start(..., next_pb, next_cb, t)``,
    and every helper once per number of resources.  Compiled for the types alone, a helper is
    compiled once and shared by the loop's variants; the constants still reach its code, as LLVM
    inlines it (:func:`jit_inline`) and folds them."""

    def get_call_template(self, args, kws):
        args = tuple(_types.unliteral(a) for a in args)
        kws = {k: _types.unliteral(v) for k, v in kws.items()}
        return super().get_call_template(args, kws)


# ---------------------------------------------------------------------------
# array indices without the negative-index wraparound
#: mangled name prefixes (a module's, or a function's) lowered without the wraparound
_NO_WRAP_MARKERS: set[str] = set()


def _mangled(module: str) -> str:
    """How numba's mangled LLVM function names spell a module path (``6router6engine``)."""
    return "".join(f"{len(p)}{p}" for p in module.split("."))


def _no_wrap_hook() -> bool:
    """Whether numba has the hook :func:`_install_no_wrap` wraps.  It is installed before the first
    compilation (:class:`_LoadOnlyCache` on a cache miss), not at import: the module holding it takes
    about 0.04 s to import, which a warm run (every function from the cache) never needs; at import
    when cached functions load numba's way (``MRFQ_LAZY_LOAD=0``, ``MRFQ_NUMBA_CACHE=0``)."""
    if CACHE and LAZY_LOAD:
        import importlib.util

        return importlib.util.find_spec("numba.np.arrayobj") is not None
    return _install_no_wrap()


def _install_no_wrap() -> bool:
    """Wrap numba's ``fix_integer_index`` (once) so that functions whose mangled name holds one
    of :data:`_NO_WRAP_MARKERS` use signed indices as they are; False if this numba has no
    such hook."""
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
                for marker in _NO_WRAP_MARKERS:
                    if marker in name:
                        return context.cast(builder, idx, idxty, types.intp)
            return original(context, builder, idxty, idx, size)

        fix_integer_index._mrfq_original = original
        arrayobj.fix_integer_index = fix_integer_index
    return True


def no_wraparound(module: str) -> bool:
    """Compile the functions defined in ``module`` without numba's negative-index wraparound.

    numba turns every ``a[i]`` with a signed ``i`` into ``a[i + n if i < 0 else i]``
    (an extra compare, add and select, plus the array's length kept live), and
    offers no switch to turn it off (numba issue #3205; only unsigned indices
    skip it, PR #929).  In the engine's event loop, whose computed indices
    are never negative, the wraparound cost ~25 % of the time.  This wraps
    numba's ``fix_integer_index`` so that, while lowering a function whose
    mangled name belongs to ``module`` (or a :func:`jit_inline` helper), signed
    indices are used as they are.  Every other function, numba's own overloads
    included, keeps the wraparound.

    Only for modules whose kernels never index with a negative number: with
    ``NUMBA_BOUNDSCHECK=1`` such an index raises IndexError instead of
    wrapping, which is how the test suite checks it.  Returns False (and
    changes nothing) if this numba has no such internal hook; the code is
    then only slower.
    """
    if not _no_wrap_hook():  # pragma: no cover - a numba without the hook
        return False
    _NO_WRAP_MARKERS.add(_mangled(module))
    return True


# ---------------------------------------------------------------------------
# the on-disk cache of the engine: stale when any of its sources changes
_ROOT = Path(__file__).resolve().parent.parent  # the folder holding fq/ and router/ (mrfq/ once installed)
_SOURCES_HASH: str | None = None


def engine_sources_hash() -> str:
    """A hash of every source of the engine's compiled code (``fq/`` and ``router/``)."""
    global _SOURCES_HASH
    if _SOURCES_HASH is None:
        h = hashlib.sha256()
        for d in ("fq", "router"):
            for f in sorted((_ROOT / d).rglob("*.py")):
                h.update(f.relative_to(_ROOT).as_posix().encode())
                h.update(f.read_bytes())
        _SOURCES_HASH = h.hexdigest()[:20]
    return _SOURCES_HASH


def _engine_file(py_file) -> bool:
    try:
        rel = Path(py_file).resolve().relative_to(_ROOT)
    except (ValueError, OSError):
        return False
    return rel.parts[:1] in (("fq",), ("router",))


def engine_cache() -> bool:
    """Key the on-disk cache of every function in ``fq/`` and ``router/`` on all of their sources.

    numba checks a cached function against its *own* file only, while its machine code holds
    the helpers it calls from other files (the event loop holds the schedulers' hooks, the heap,
    the buffers...): edit ``router/heap.py`` and every cached caller would run the old heap.
    Here the cache's stamp of such a function is :func:`engine_sources_hash`, so any edit to the
    engine recompiles what depends on it (where the cache lives does not change).  Returns False
    (and changes nothing) if this numba's cache has no locator list."""
    try:
        from numba.core import caching
    except ImportError:  # pragma: no cover
        return False
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if not isinstance(classes, list):  # pragma: no cover - a numba that changed its cache
        return False
    if any(getattr(c, "_mrfq", False) for c in classes):
        return True

    class _EngineSourcesLocator(caching._CacheLocator):
        """Another locator's cache path, with :func:`engine_sources_hash` as the source stamp."""
        _mrfq = True

        _ensured: set = set()  # cache paths already made and found writable in this process

        def __init__(self, inner):
            self._inner = inner
            # (numba's warning that a function cannot be cached names its file)
            self._py_file = getattr(inner, "_py_file", None)

        def ensure_cache_path(self):
            # numba makes the folder and writes a temporary file in it for every function it caches
            # (about 0.05 s of a warm run's imports over the engine's ~170): once per folder here
            path = self._inner.get_cache_path()
            if path not in self._ensured:
                self._inner.ensure_cache_path()
                self._ensured.add(path)

        def get_cache_path(self):
            return self._inner.get_cache_path()

        def get_source_stamp(self):
            return ("mrfq-engine-sources", engine_sources_hash())

        def get_disambiguator(self):
            return self._inner.get_disambiguator()

        @classmethod
        def from_function(cls, py_func, py_file):
            if not _engine_file(py_file):
                return None
            for other in classes:
                if other is cls:
                    continue
                inner = other.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner)
            return None

    classes.insert(0, _EngineSourcesLocator)
    return True


ENGINE_CACHE_INSTALLED = CACHE and engine_cache()


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
