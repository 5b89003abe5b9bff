"""Static allocations (analysis.allocations, analysis.state_rates) and `mrfq alloc`.

The public oracles of docs/allocators.md first, then properties on random instances, then the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrfq.analysis import allocations as al
from mrfq.analysis import objectives
from conftest import run_fluid_handlers
from mrfq.flows.errors import MrfqError

EXACT = dict(rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------
# the public oracles (docs/allocators.md, 'Public oracles')
# ---------------------------------------------------------------------------
def test_two_symmetric_transactions():
    a = [[0.5, 1.0], [1.0, 0.5]]
    for f in (al.drf, al.pf, al.bmf, al.ceei):
        r = f(a)
        np.testing.assert_allclose(r.phi, [2 / 3, 2 / 3], **EXACT)
        assert r.saturated == (0, 1) and r.unique


def test_degenerate_pf_example():
    a = [[0.5, 1.0], [1.0, 0.5], [1.0, 0.5]]
    np.testing.assert_allclose(al.drf(a).phi, [0.4] * 3, **EXACT)
    assert al.drf(a).saturated == (0,)
    for r in (al.pf(a), al.pf(a, method="interior"), al.ceei(a)):
        np.testing.assert_allclose(r.phi, [2 / 3, 1 / 3, 1 / 3], **EXACT)
        np.testing.assert_allclose(r.prices, [3.0, 0.0], atol=1e-9)
        assert r.saturated == (0, 1)  # resource 2 is saturated with price 0
    b = al.bmf(a)
    np.testing.assert_allclose(b.phi, [2 / 3, 1 / 3, 1 / 3], **EXACT)
    assert b.unique


def test_three_resource_continuum():
    a = [[1, 1, 1], [1, 0.5, 0.75], [0.5, 1, 0.75]]
    np.testing.assert_allclose(al.drf(a).phi, [0.4] * 3, **EXACT)
    for r in (al.pf(a), al.pf(a, method="interior"), al.ceei(a)):
        np.testing.assert_allclose(r.phi, [1 / 3, 4 / 9, 4 / 9], rtol=1e-10)
    b = al.bmf(a)
    assert not b.unique
    x = b.phi[1]
    assert 0.4 - 1e-12 <= x <= 4 / 9 + 1e-12
    np.testing.assert_allclose(b.phi, [1 - 1.5 * x, x, x], **EXACT)
    np.testing.assert_allclose(b.phi, [0.4] * 3, **EXACT)  # "maxmin" choice: the x = 2/5 end
    np.testing.assert_allclose(al.bmf(a, select="maxsum").phi, [1 / 3, 4 / 9, 4 / 9], rtol=1e-10)
    for x in np.linspace(0.4, 4 / 9, 7):
        assert al.is_bmf(a, [1 - 1.5 * x, x, x])
    for x in (0.39, 0.45):
        assert not al.is_bmf(a, [1 - 1.5 * x, x, x])


@pytest.mark.parametrize("n", [1, 2, 5])
def test_single_resource(n):
    a = [[1.0]] * n
    for o in objectives.ALLOC:
        np.testing.assert_allclose(objectives.allocate(o, a).phi, [1 / n] * n, **EXACT)


def test_drf_paper_example():
    # 9 CPUs, 18 GB; tasks <1 CPU, 4 GB> and <3 CPU, 1 GB>: normalise by the capacities
    a = [[1 / 9, 4 / 18], [3 / 9, 1 / 18]]
    np.testing.assert_allclose(al.drf(a).phi, [3.0, 2.0], **EXACT)


def test_weights_drf_and_pf():
    # one resource, weights 1 and 3: rates split 1:3 under every objective
    for o in objectives.ALLOC:
        np.testing.assert_allclose(objectives.allocate(o, [[1.0], [1.0]], [1, 3]).phi, [0.25, 0.75], **EXACT)


def test_validation_messages():
    with pytest.raises(MrfqError, match=r"a\[0, 1\] = -1: must be >= 0"):
        al.drf([[1, -1]])
    with pytest.raises(MrfqError, match=r"a\[1\]: all zero"):
        al.pf([[1, 1], [0, 0]])
    with pytest.raises(MrfqError, match=r"w: has 1 entries; must have 2"):
        al.bmf([[1, 1], [1, 0.5]], [1])
    with pytest.raises(MrfqError, match=r"w\[0\] = 0: must be a finite number > 0"):
        al.ceei([[1, 1]], [0])
    with pytest.raises(MrfqError, match="unknown; choose one of"):
        objectives.allocate("maxmin", [[1]])


# ---------------------------------------------------------------------------
# properties on random instances
# ---------------------------------------------------------------------------
ENTRY = st.one_of(st.just(0.0), st.sampled_from([0.25, 0.5, 1.0]), st.floats(0.05, 1.0))


@st.composite
def instances(draw, max_n=6, max_j=4, weights=True):
    n = draw(st.integers(1, max_n))
    J = draw(st.integers(1, max_j))
    a = np.array([[draw(ENTRY) for _ in range(J)] for _ in range(n)])
    for i in range(n):
        if a[i].max() <= 0:
            a[i, draw(st.integers(0, J - 1))] = draw(st.floats(0.05, 1.0))
    w = np.array([draw(st.floats(0.2, 5.0)) for _ in range(n)]) if weights and draw(st.booleans()) else None
    return a, w


def _pareto(a, r):
    """Leontief Pareto efficiency: every transaction uses a saturated resource."""
    sat = list(r.saturated)
    return bool(np.all((a[:, sat] > 0).any(axis=1))) if sat else False


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(instances())
def test_feasible_and_pareto(inst):
    a, w = inst
    for o in ("drf", "asset", "pf", "ceei"):
        r = objectives.allocate(o, a, w)
        assert np.all(r.phi > 0)
        assert np.all(al.usage(a, r.phi) <= 1 + 1e-9), o
        assert _pareto(a, r), o


@FAST
@given(instances(weights=False))
def test_sharing_incentive(inst):
    a, _ = inst
    n = a.shape[0]
    floor = 1.0 / (n * a.max(axis=1))
    for o in ("drf", "pf", "ceei"):
        assert np.all(objectives.allocate(o, a).phi >= floor * (1 - 1e-9)), o


@FAST
@given(instances())
def test_drf_bottleneck_condition(inst):
    """Each i has a saturated resource it uses on which its weighted dominant share is the largest."""
    a, w = inst
    w = np.ones(a.shape[0]) if w is None else w
    r = al.drf(a, w)
    ds = r.phi * a.max(axis=1) / w
    sat = np.zeros(a.shape[1], bool)
    sat[list(r.saturated)] = True
    for i in range(a.shape[0]):
        ok = [j for j in range(a.shape[1]) if sat[j] and a[i, j] > 0 and ds[i] >= ds[a[:, j] > 0].max() * (1 - 1e-9)]
        assert ok, i


@FAST
@given(instances())
def test_pf_kkt_and_ceei_equals_pf(inst):
    a, w = inst
    w = np.ones(a.shape[0]) if w is None else w
    r = al.pf(a, w)
    mu = r.prices
    assert np.all(mu >= 0)
    np.testing.assert_allclose(w / r.phi, a @ mu, rtol=1e-7)
    unsat = np.setdiff1d(np.arange(a.shape[1]), r.saturated)
    assert np.all(mu[unsat] <= 1e-9 * w.sum())
    c = al.ceei(a, w)
    np.testing.assert_allclose(c.phi, r.phi, rtol=1e-7)
    # the market clears: priced goods are fully sold
    u = al.usage(a, c.phi)
    assert np.all(u[c.prices > 1e-9] >= 1 - 1e-9)
    if a.shape[1] <= 2:
        np.testing.assert_allclose(al.pf(a, w, method="interior").phi, r.phi, rtol=1e-7)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(max_n=5, max_j=3))
def test_bmf_condition(inst):
    a, w = inst
    r = al.bmf(a, w)
    assert al.is_bmf(a, r.phi, w)
    assert np.all(al.usage(a, r.phi) <= 1 + 1e-9)
    if a.shape[1] <= 2:
        assert r.unique
    if a.shape[0] == 2:  # BMF = PF when n = 2
        np.testing.assert_allclose(r.phi, al.pf(a, w).phi, rtol=1e-8)


@FAST
@given(instances(max_n=4, max_j=3))
def test_weights_scale_invariant(inst):
    a, w = inst
    w = np.ones(a.shape[0]) if w is None else w
    for o in ("drf", "pf", "bmf"):
        np.testing.assert_allclose(objectives.allocate(o, a, w).phi, objectives.allocate(o, a, 3.5 * w).phi, rtol=1e-8)


# ---------------------------------------------------------------------------
# per-state allocations (numba) against the static solvers
# ---------------------------------------------------------------------------
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(max_n=4, max_j=2), st.integers(0, 2**32 - 1))
def test_state_rates_match_static(inst, seed):
    from mrfq.analysis.state_rates import state_rates

    a, w = inst
    K = a.shape[0]
    wk = np.ones(K) if w is None else w
    X = np.random.default_rng(seed).integers(0, 5, size=(30, K)).astype(float)
    for o in objectives.STATE:
        R = state_rates(o, X, a, wk)
        for x, row in zip(X, R):
            p = np.flatnonzero(x > 0)
            ref = np.zeros(K)
            if p.size:
                ref[p] = objectives.allocate(o, a[p], x[p] * wk[p]).phi / x[p]
            np.testing.assert_allclose(row, ref, rtol=1e-9, atol=1e-12)


def test_state_rates_three_resources_python_path():
    from mrfq.analysis.state_rates import state_rates

    a = np.array([[1, 1, 1], [1, 0.5, 0.75], [0.5, 1, 0.75]])
    R = state_rates("pf", [[1, 1, 1], [2, 0, 1]], a)
    np.testing.assert_allclose(R[0], [1 / 3, 4 / 9, 4 / 9], rtol=1e-9)
    np.testing.assert_allclose(R[1, 1], 0.0)


def test_state_rates_million_states_feasible():
    # a million states in one call (no wall-clock assertion: this machine's timings are not a test)
    from mrfq.analysis.state_rates import state_rates

    a = np.array([[0.25, 1], [1, 0.25], [1, 1]])
    X = np.random.default_rng(0).integers(0, 80, size=(1_000_000, 3))
    for o in ("drf", "pf", "bmf"):
        R = state_rates(o, X, a)
        assert R.shape == X.shape
        assert np.all((X * R) @ a <= 1 + 1e-9)
        # every state with a flow saturates some resource (all three objectives are Pareto-efficient)
        busy = X.sum(axis=1) > 0
        assert np.allclose(((X * R) @ a).max(axis=1)[busy], 1.0, atol=1e-6)


# ---------------------------------------------------------------------------
# `mrfq alloc`
# ---------------------------------------------------------------------------
def _run(argv, capsys):
    return run_fluid_handlers(argv, capsys)


def test_alloc_json(capsys):
    rc, out = _run(["alloc", "--cost", "0.5,1", "--cost", "1,0.5", "--cost", "1,0.5", "--json"], capsys)
    assert rc == 0
    d = json.loads(out)
    assert set(d) == {"drf", "pf", "bmf", "asset", "ceei"}
    assert d["pf"]["phi"] == pytest.approx([2 / 3, 1 / 3, 1 / 3], rel=1e-12)
    assert d["pf"]["prices"] == pytest.approx([3, 0], abs=1e-9)
    assert d["pf"]["saturated"] == [0, 1] and d["pf"]["unique"] is True
    assert d["drf"]["phi"] == pytest.approx([0.4] * 3)


def test_alloc_table_and_weights(capsys):
    rc, out = _run(["alloc", "--cost", "1", "--cost", "1", "--weight", "1", "--weight", "3",
                    "--objective", "drf"], capsys)
    assert rc == 0
    assert "drf" in out and "0.25" in out and "0.75" in out


def test_alloc_continuum_flag(capsys):
    _, out = _run(["alloc", "--cost", "1,1,1", "--cost", "1,0.5,0.75", "--cost", "0.5,1,0.75",
                   "--objective", "bmf", "--json"], capsys)
    assert json.loads(out)["bmf"]["unique"] is False


@pytest.mark.parametrize("argv, msg", [
    (["--cost", "1,x"], r"--cost #1 = '1,x': 'x' is not a finite number"),
    (["--cost", "1,,2"], r"--cost #1 = '1,,2': must be comma-separated"),
    (["--cost", "1,1", "--cost", "1"], r"--cost #2 = '1': has 1 resources; --cost #1 has 2"),
    (["--cost=-1,1"], r"--cost #1 = '-1,1': costs must be >= 0"),
    (["--cost", "0,0"], r"at least one cost must be > 0"),
    (["--cost", "1", "--weight", "1", "--weight", "2"], r"--weight: given 2 times for 1 --cost"),
    (["--cost", "1", "--weight", "0"], r"--weight #1 = '0': must be > 0"),
    (["--cost", "1", "--objective", "fair"], r"--objective 'fair': unknown"),
    ([], r"--cost: missing"),
])
def test_alloc_errors(argv, msg, capsys):
    with pytest.raises(MrfqError, match=msg) as e:
        _run(["alloc"] + argv, capsys)
    assert "\n" not in str(e.value)


def test_alloc_is_light():
    # `mrfq alloc` must not import numba, scipy.sparse or matplotlib (what made it slow to start);
    # asserted on the modules loaded, not on this busy machine's wall clock
    code = (
        "import argparse, sys, json\n"
        "from mrfq.analysis.cli_fluid import register\n"
        "p = argparse.ArgumentParser(); register(p.add_subparsers(dest='c'))\n"
        "a = p.parse_args(['alloc', '--cost', '0.5,1', '--cost', '1,0.5', '--json'])\n"
        "a.func(a)\n"
        "print(json.dumps({'numba': 'numba' in sys.modules,"
        " 'sparse': 'scipy.sparse' in sys.modules, 'mpl': 'matplotlib' in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    info = json.loads(out.strip().splitlines()[-1])
    assert not info["numba"] and not info["sparse"] and not info["mpl"]
