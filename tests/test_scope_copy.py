"""fq._jit.fast_scope_copy: numba's IR scopes copied in linear time, the same IR and machine code.

The copy replaces the generic ``copy.deepcopy`` of ``numba.core.ir.Scope`` (quadratic when
``inline="always"`` callees are inlined block by block).  These tests check that a block copied
either way prints the same, has the same scope (names, versions) and points its variables at its
own scope, and that a loop variant compiles to the same LLVM IR with and without it.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core import ir
from numba.core.compiler import run_frontend

import mrfq.fq._jit as fj
from conftest import JIT_DISABLED

ROOT = Path(__file__).resolve().parent.parent


def _sample(a, n):
    s = 0.0
    for i in range(n):
        if a[i] > 0:
            s += a[i]
            i = i + 1
        else:
            s -= a[i]
    x = s
    x = x * 2
    return x, s


def _stock_copy(block):
    """The block copied by numba's own (generic) deepcopy of the scope."""
    patched = ir.Scope.__dict__.get("__deepcopy__")
    if patched is not None:
        del ir.Scope.__deepcopy__
    try:
        return copy.deepcopy(block)
    finally:
        if patched is not None:
            ir.Scope.__deepcopy__ = patched


@pytest.mark.nojit
def test_fast_scope_copy_is_installed_unless_switched_off():
    assert fj.FAST_SCOPE_COPY_INSTALLED == fj.FAST_SCOPE_COPY
    if fj.FAST_SCOPE_COPY:
        assert getattr(ir.Scope.__deepcopy__, "_mrfq", False)
        assert fj.fast_scope_copy()  # idempotent


@pytest.mark.nojit
def test_a_block_copies_the_same_either_way():
    assert fj.fast_scope_copy()
    func_ir = run_frontend(_sample)
    for label, block in func_ir.blocks.items():
        stock = _stock_copy(block)
        fast = copy.deepcopy(block)
        assert fast.scope is not block.scope and fast.scope is not stock.scope
        assert [(type(s), str(s)) for s in fast.body] == [(type(s), str(s)) for s in stock.body]
        assert fast.scope == stock.scope                      # numba's equality: the same names
        assert list(fast.scope.localvars._con) == list(stock.scope.localvars._con) == list(block.scope.localvars._con)
        assert dict(fast.scope.redefined) == dict(stock.scope.redefined)
        assert dict(fast.scope.var_redefinitions) == dict(stock.scope.var_redefinitions)
        for name, v in fast.scope.localvars._con.items():
            old = block.scope.localvars._con[name]
            assert v is not old and v.scope is fast.scope and (v.name, v.loc) == (old.name, old.loc)
        for stmt in fast.body:
            for v in stmt.list_vars():
                assert v.scope is fast.scope
        # inlining renames in the copy's scope: the original is untouched
        n = len(block.scope.localvars)
        fast.scope.redefine("x", ir.Loc("t", 1))
        assert len(block.scope.localvars) == n
        # a copy of a copy whose variable map was never read
        again = copy.deepcopy(copy.deepcopy(block))
        assert list(again.scope.localvars._con) == list(block.scope.localvars._con)
        assert all(v.scope is again.scope for v in again.scope.localvars._con.values())


_LLVM = r"""
import hashlib
import mrfq.fq._jit as fj
from mrfq.flows.scenario import load_preset
from mrfq.router.run import simulate
import mrfq.router.loop as rl
assert fj.FAST_SCOPE_COPY_INSTALLED == fj.FAST_SCOPE_COPY
simulate(load_preset("middlebox-mix"), scheduler="drfq-dovetail", specialise=False, max_services=500)
(f,) = rl._LOOPS.values()
print(hashlib.sha256("".join(f.inspect_llvm().values()).encode()).hexdigest())
"""


@pytest.mark.skipif(JIT_DISABLED, reason="compiled code only")
def test_a_loop_variant_compiles_to_the_same_llvm_ir_either_way(tmp_path):
    """The generic loop with packet sizes (drfq-dovetail, J = 2), compiled afresh (no cache)
    in two processes, with numba's scope copy and with ours."""
    procs = []
    for on in ("0", "1"):
        env = dict(os.environ, MRFQ_FAST_SCOPE_COPY=on, MRFQ_NUMBA_CACHE="0", NUMBA_BOUNDSCHECK="0")
        procs.append(subprocess.Popen([sys.executable, "-c", _LLVM], cwd=tmp_path, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
    stock, fast = (out.strip() for out, _ in outs)
    assert len(stock) == 64 and stock == fast
