"""The block-parallel Krylov solve of the flow-level Markov chain (analysis.markov):
the blocked ILU(0) is the ILU(0) of the block-diagonal part, entry for entry; the solve with any
number of blocks reaches the same law as one block and as a dense oracle; and the iterates
depend on the blocks, not on the number of threads that runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from mrfq import flows
from mrfq.analysis import markov
from mrfq.analysis import markov_region as mr
from conftest import JIT_DISABLED

ROOT = Path(__file__).resolve().parent.parent


def _model(load=0.8, preset="br-unbalanced"):
    return markov.model_from(flows.load_preset(preset), load=load)


def _box(caps=(14, 5, 5), load=0.8):
    """The reduced system of a box truncation (CSR arrays and right-hand side), as the solve builds it."""
    from mrfq.analysis.state_rates import state_rates

    m = _model(load)
    shape = tuple(c + 1 for c in caps)
    X = markov._states(caps)
    strides = np.array([int(np.prod(shape[k + 1:])) for k in range(3)], dtype=np.int64)
    death = X * state_rates("drf", X, m.a, m.w) / m.sigma
    birth = np.where(X < np.array(caps), m.lam, 0.0)
    scale = max(float(death.max()), float(m.lam.max()))
    return markov._kernels()["box_system"](np.array(shape, dtype=np.int64), strides, birth / scale, death / scale)


@pytest.mark.nojit
def test_padded_rows_sum_in_column_order_at_every_width():
    """The row products of the padded layout (written out for the stencils of 2-4 classes, a loop
    otherwise) give the bits of the plain left-to-right loop: A's rows ``sum_q A_iq x_q`` and
    the factors' ``s - A_i0 x_0 - A_i1 x_1 - ...``, at every row length, with float32 factors too."""
    rng = np.random.default_rng(7)
    n = 50
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)
    for w in range(1, 11):
        for dt in (np.float64, np.float32):
            V = (rng.standard_normal((n, w)) * 10.0 ** rng.integers(-6, 6, (n, w))).astype(dt)
            I = rng.integers(0, n, (n, w)).astype(np.int32)
            for i in range(n):
                want = 0.0
                for q in range(w):
                    want += float(V[i, q]) * x[I[i, q]]
                if dt is np.float64:          # A is double; the factors may be single
                    assert markov._row_dot(V, I, x, i) == want, (w, i)
                s = x[i]
                for q in range(w):
                    s -= float(V[i, q]) * x[I[i, q]]
                assert markov._row_sub(V, I, x, i, x[i]) == s, (w, i, dt)


@pytest.mark.nojit
def test_block_bounds_split_the_rows_evenly(monkeypatch):
    monkeypatch.setattr(markov, "KRYLOV_BLOCK_MIN_ROWS", 10)
    assert markov.block_bounds(100, 3).tolist() == [0, 33, 66, 100]
    assert markov.block_bounds(9, 3).tolist() == [0, 9]          # below the minimum: one block
    assert markov.block_bounds(11, 20).tolist() == list(range(12))  # never an empty block
    with pytest.raises(ValueError, match="KRYLOV_BLOCKS = 0: give 1 or more"):
        markov.block_bounds(100, 0)


@pytest.mark.nojit
@pytest.mark.parametrize("blocks", [2, 3])
def test_blocked_ilu0_is_the_ilu0_of_the_block_diagonal_part(blocks):
    indptr, indices, data, _ = _box()
    n = indptr.shape[0] - 1
    bnd = (np.arange(blocks + 1, dtype=np.int64) * n) // blocks
    lu, diag, inv = markov.ilu0(indptr, indices, data, bnd)
    # the plain ILU(0) (one block) of A with every entry outside the diagonal blocks removed
    A = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    blk = np.searchsorted(bnd, np.arange(n), side="right") - 1
    C = A.tocoo()
    keep = blk[C.row] == blk[C.col]
    D = sp.csr_matrix((C.data[keep], (C.row[keep], C.col[keep])), shape=(n, n))
    D.sort_indices()
    lu1, diag1, inv1 = markov.ilu0(D.indptr.astype(indptr.dtype), D.indices.astype(indices.dtype), D.data,
                                   np.array([0, n], dtype=np.int64))
    inside = blk[np.repeat(np.arange(n), np.diff(indptr))] == blk[indices]
    assert inside.sum() == D.nnz < indices.size          # some entries do cross the blocks
    assert np.array_equal(lu[inside], lu1)                # bit for bit: the same eliminations
    assert np.array_equal(inv, inv1)
    assert np.array_equal(indices[diag], np.arange(n))

    # the padded layout keeps only the factors' in-block entries, each padding column inside the block
    Av, Ai, Lv, Li, Uv, Ui = markov.ell_split(indptr, indices, data, lu, diag, bnd)
    for i in range(n):
        s0, s1 = bnd[blk[i]], bnd[blk[i] + 1]
        assert np.all((Li[i] >= s0) & (Li[i] <= i)) and np.all((Ui[i] >= i) & (Ui[i] < s1))
        np.testing.assert_array_equal(np.sort(Ai[i][Av[i] != 0]), A.indices[A.indptr[i]:A.indptr[i + 1]])


@pytest.mark.nojit
@pytest.mark.parametrize("krylov", ["bicgstab", "gmres"])
@pytest.mark.parametrize("blocks", [2, 3])
def test_blocked_solve_gives_the_one_block_law(monkeypatch, krylov, blocks):
    """The region solve (with the two-level correction: a start) and the box solve (ILU(0)
    alone) with 2 and 3 blocks against 1 block: the same law to the residual."""
    m = _model(0.8)
    region = mr.Region(np.full((15, 6), 0, dtype=np.int64), np.full((15, 6), 5, dtype=np.int64))
    monkeypatch.setattr(markov, "KRYLOV", krylov)
    want = markov.solve_region(m, "drf", region)
    want_box = markov.solve_truncated(m, "drf", (14, 5, 5))
    start = want.pi * (1 + 0.3 * np.cos(np.arange(want.pi.size)))
    want2 = markov.solve_region(m, "drf", region, x0=start / start[0])
    monkeypatch.setattr(markov, "KRYLOV_BLOCK_MIN_ROWS", 1)
    monkeypatch.setattr(markov, "KRYLOV_BLOCKS", blocks)
    got = markov.solve_region(m, "drf", region)
    got_box = markov.solve_truncated(m, "drf", (14, 5, 5))
    got2 = markov.solve_region(m, "drf", region, x0=start / start[0])
    assert markov.LAST_KRYLOV == krylov
    for g, w in ((got, want), (got_box, want_box), (got2, want2)):
        assert g.residual <= markov.EXACT_RTOL
        np.testing.assert_allclose(g.pi, w.pi, rtol=1e-7, atol=1e-10)
        np.testing.assert_allclose(g.gamma, w.gamma, rtol=1e-7)    # EXACT_RTOL: gamma within 3e-8 each


THREADS = """
import hashlib, numba, numpy as np
from mrfq.analysis import markov
from mrfq.analysis import markov_region as mr
from test_markov_blocks import _model
markov.KRYLOV_BLOCK_MIN_ROWS = 1
markov.KRYLOV_BLOCKS = 2
m = _model(0.9)
region = mr.Region(np.full((40, 12), 0, dtype=np.int64), np.full((40, 12), 11, dtype=np.int64))
for threads in (1, 2, 1):
    numba.set_num_threads(threads)
    t = markov.solve_region(m, "drf", region)
    print(threads, t.pi.size, hashlib.sha256(t.pi.tobytes() + t.gamma.tobytes()).hexdigest())
"""


@pytest.mark.skipif(JIT_DISABLED, reason="threads: compiled code only")
def test_blocked_solve_does_not_depend_on_the_thread_count():
    """The same blocks run by one thread or two: the same iterates, bit for bit (in a process of
    its own with two threads: the test workers run one, tests/conftest.py)."""
    env = dict(os.environ, NUMBA_NUM_THREADS="2", PYTHONPATH=str(ROOT / "tests"))
    p = subprocess.run([sys.executable, "-c", THREADS], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [line.split() for line in p.stdout.split("\n") if line.strip()]
    assert [r[0] for r in rows] == ["1", "2", "1"] and {r[1] for r in rows} == {str(40 * 12 * 12)}
    assert len({r[2] for r in rows}) == 1, rows


def test_blocked_solve_reaches_the_dense_oracle(monkeypatch):
    """Two blocks on the region test's odd region (not downward closed): the plain generator's law."""
    from test_markov_region import _odd_region, _oracle_pi

    monkeypatch.setattr(markov, "KRYLOV_BLOCK_MIN_ROWS", 1)
    m = _model(0.8)
    r = _odd_region()
    t = markov.solve_region(m, "pf", r)
    np.testing.assert_allclose(t.pi, _oracle_pi(m, "pf", r), rtol=3e-8, atol=1e-10)
