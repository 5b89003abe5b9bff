"""The graded-lattice approximation of the flow-level Markov model (analysis.markov.solve_graded).

Hand-computed lattices and edge profiles first, then the cases where the graded chain is exact
(unit spacing; one class; orthogonal classes: product-form geometric laws), then the measured
agreement with the exact box solve at moderate load, and (slow) with the simulated chain at
load 0.98, where the exact box is out of reach.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mrfq import flows
from mrfq.analysis import markov
from mrfq.flows import ClassSpec
from mrfq.flows.errors import MrfqError


def _cls(name, cost, rho_dom, sigma=10.0):
    """A class with dominant-time load rho_dom = lambda sigma max_j a_j."""
    return ClassSpec(name=name, cost=tuple(cost), rate=rho_dom / (sigma * max(cost)), mean_packets=sigma)


@pytest.mark.nojit
def test_graded_axis_by_hand():
    # spacing max(1, floor(0.2 v)): unit steps to 10, then 2, 2, 2, 3, 3, 4, 5 and the cap
    assert markov.graded_axis(30, 0.2).tolist() == list(range(11)) + [12, 14, 16, 19, 22, 26, 30]
    assert markov.graded_axis(7, 0.0).tolist() == list(range(8))
    assert markov.graded_axis(7, 0.1).tolist() == list(range(8))   # all below 2 / grading: unit spacing


def test_edge_profile_by_hand():
    # p_j = p_a (r^h - r^j) / (r^h - 1) + p_b (r^j - 1) / (r^h - 1)
    al, be = markov._edge_weights(math.log(2.0), 3, 1)             # r = 2: (8 - 2) / 7, (2 - 1) / 7
    assert (al, be) == pytest.approx((6 / 7, 1 / 7), rel=1e-14)
    al, be = markov._edge_weights(math.log(0.5), 2, 1)             # r = 1/2: (1/4 - 1/2) / (1/4 - 1), ...
    assert (al, be) == pytest.approx((1 / 3, 2 / 3), rel=1e-14)
    assert markov._edge_weights(0.0, 4, 1) == pytest.approx((0.75, 0.25), rel=1e-15)
    al, be = markov._edge_weights(800.0 / 50, 50, 49)              # r^h = e^800 would overflow
    assert math.isfinite(al) and al + be == pytest.approx(1.0, rel=1e-12) and al == pytest.approx(1 - math.exp(-16))


def test_unit_spacing_is_the_exact_chain():
    m = markov.model_from(flows.load_preset("br-unbalanced"), load=0.6)
    for obj in ("drf", "pf", "bmf"):
        t = markov.solve_truncated(m, obj, (24, 9, 9))
        g = markov.solve_graded(m, obj, (24, 9, 9), 0.0)
        np.testing.assert_allclose(g.gamma, t.gamma, rtol=3e-8)   # the exact solve: residual 1e-10
        np.testing.assert_allclose(g.pi, t.pi, rtol=1e-6, atol=1e-10)   # the solves: residual 1e-10
        assert g.boundary == pytest.approx(t.boundary, abs=1e-10)


def test_one_class_is_exact_on_a_coarse_lattice():
    # M/M/1-PS at load 0.95: gamma = (1 - rho) / a, the geometric law kept node for node
    m = markov.model_from([_cls("x", (0.5,), 0.95)])
    t = markov.solve_graded(m, "drf", (3000,), 0.3)
    assert t.pi.size < 40
    assert t.gamma[0] == pytest.approx((1 - 0.95) / 0.5, rel=1e-9)
    r = markov.solve(m, "pf", method="graded", grading=0.3)
    assert r.method == "graded" and r.grading == 0.3 and r.boundary_mass < 1e-6
    assert r.gamma[0] == pytest.approx(0.1, rel=1e-4)   # the truncation loop: tol_gamma 1e-4


@pytest.mark.parametrize("objective", ("drf", "pf", "bmf"))
def test_orthogonal_classes_are_exact_on_a_coarse_lattice(objective):
    # independent M/M/1 queues: product-form geometric law, gamma_k = (1 - rho_k) / a_k
    m = markov.model_from([_cls("x", (0.5, 0.0), 0.9), _cls("y", (0.0, 2.0), 0.8)])
    t = markov.solve_graded(m, objective, (1500, 800), 0.25)
    assert t.pi.size < 2000
    np.testing.assert_allclose(t.gamma, [(1 - 0.9) / 0.5, (1 - 0.8) / 2.0], rtol=1e-9)


@pytest.mark.parametrize("objective", ("drf", "pf", "bmf"))
def test_graded_agrees_with_exact_at_moderate_load(objective):
    # the lattice is unit-spaced below 2 / grading = 40 flows, where almost all the mass lies
    sc = flows.load_preset("br-unbalanced")
    exact = markov.solve(sc, objective, load=0.7)
    g = markov.solve(sc, objective, load=0.7, method="graded")
    np.testing.assert_allclose(g.gamma, exact.gamma, rtol=1e-4)


def test_graded_arguments_and_budgets():
    sc = flows.load_preset("br-balanced")
    for bad in (-0.1, 0.6, "x", True, float("nan")):
        with pytest.raises(MrfqError, match=r"grading = .*: must be a number in \[0, 0.5\]") as e:
            markov.solve(sc, "drf", load=0.5, method="graded", grading=bad)
        assert "\n" not in str(e.value)
    with pytest.raises(markov.TruncationTooLarge, match=r"graded lattice needs more than 100 nodes"):
        markov.solve(sc, "drf", load=0.5, method="graded", max_states=100)
    with pytest.raises(markov.TruncationTooLarge, match=r"graded lattice would need about .* GB \(> 0.0 GB\)"):
        markov.solve(sc, "drf", load=0.5, method="graded", max_memory=1e6)
    d = markov.solve(sc, "drf", load=0.5, method="graded").to_dict()
    assert d["method"] == "graded" and d["grading"] == markov.GRADING and d["boundary_mass"] < 1e-6


# the graded lattice at load 0.98 against the exact region solve and the simulated chain:
# tests/test_markov_region.py::test_region_truncation_reaches_load_098


@pytest.mark.parametrize("objective", ("drf", "pf", "bmf"))
def test_graded_error_at_load_09_shrinks_with_the_grading(objective):
    # measured (br-unbalanced, load 0.9): max relative gamma error 1.5e-3 (DRF) / 6.1e-4 (PF, BMF)
    # with grading 0.1, 2.1e-4 / 3.6e-5 with grading 0.05
    sc = flows.load_preset("br-unbalanced")
    exact = markov.solve(sc, objective, load=0.9)
    err = {c: float(np.max(np.abs(markov.solve(sc, objective, load=0.9, method="graded", grading=c).gamma
                                  / exact.gamma - 1))) for c in (0.1, 0.05)}
    assert err[0.1] < 3e-3 and err[0.05] < 4e-4 and err[0.05] < err[0.1] / 3, err


# ---------------------------------------------------------------------------
# the exact solver's direct CSR assembly and two-level preconditioner
# ---------------------------------------------------------------------------
def _coo_reduced_system(caps, birth, death):
    """The reference assembly: Q^T in COO (scipy sums and sorts), then QT[1:, 1:] and -QT[1:, 0]."""
    import scipy.sparse as sp

    shape = tuple(c + 1 for c in caps)
    N = int(np.prod(shape))
    strides = [int(np.prod(shape[k + 1:])) for k in range(len(caps))]
    idx = np.arange(N)
    rows, cols, vals = [idx], [idx], [-(birth.sum(axis=1) + death.sum(axis=1))]
    for k in range(len(caps)):
        mk = birth[:, k] > 0
        rows += [idx[mk] + strides[k]]
        cols += [idx[mk]]
        vals += [birth[mk, k]]
        mk = death[:, k] > 0
        rows += [idx[mk] - strides[k]]
        cols += [idx[mk]]
        vals += [death[mk, k]]
    QT = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(N, N))
    return markov._reduced(QT)


@pytest.mark.parametrize("caps", [(3,), (4, 2), (3, 1, 2), (2, 3, 1, 2)])
def test_box_system_equals_the_coo_assembly(caps):
    rng = np.random.default_rng(len(caps))
    X = markov._states(caps)
    birth = np.where(X < np.array(caps), rng.uniform(0.5, 2, len(caps)), 0.0)
    death = np.where(X > 0, rng.uniform(0.1, 3, X.shape), 0.0)
    shape = np.array([c + 1 for c in caps], dtype=np.int64)
    strides = np.array([int(np.prod(shape[k + 1:])) for k in range(len(caps))], dtype=np.int64)
    indptr, indices, data, b = markov.box_system(shape, strides, birth, death)
    (rp, ri, rd), rb = _coo_reduced_system(caps, birth, death)
    assert indptr.tolist() == rp.tolist() and indices.tolist() == ri.tolist()
    np.testing.assert_array_equal(data, rd)
    np.testing.assert_array_equal(b, rb)


def test_two_level_preconditioner_same_solution_fewer_iterations(monkeypatch):
    m = markov.model_from(flows.load_preset("br-unbalanced"), load=0.9)
    prev = markov.solve_truncated(m, "drf", (60, 14, 14))
    x0 = markov._pad(prev.pi, (60, 14, 14), (90, 20, 20))
    res = {}
    for two in (False, True):
        monkeypatch.setattr(markov, "TWO_LEVEL", two)
        t = markov.solve_truncated(m, "drf", (90, 20, 20), x0=x0)
        res[two] = (t, markov.LAST_ITERATIONS)
    # both stop at a relative residual of 1e-11: the same law to about 1e-6 of its largest entries
    np.testing.assert_allclose(res[True][0].pi, res[False][0].pi, rtol=0, atol=1e-6 * res[False][0].pi.max())
    np.testing.assert_allclose(res[True][0].gamma, res[False][0].gamma, rtol=1e-6)
    assert res[True][0].residual < 1e-10 and res[True][1] < res[False][1], (res[True][1], res[False][1])


def test_fluid_cli_method_graded(capsys):
    import json

    from conftest import run_fluid_handlers

    rc, out = run_fluid_handlers(["fluid", "--preset", "br-unbalanced", "--load", "0.9", "--objective", "drf",
                                  "--method", "graded", "--json"], capsys)
    d = json.loads(out)
    r = d["objectives"]["drf"]
    assert rc == 0 and r["method"] == "graded" and r["grading"] == markov.GRADING
    g = markov.solve(flows.load_preset("br-unbalanced"), "drf", load=0.9, method="graded").gamma
    assert [c["gamma"] for c in r["classes"]] == pytest.approx(list(g), rel=1e-9)
    assert d["truncation"] == r["truncation"] and d["boundary_mass"] < 1e-6
    rc, out = run_fluid_handlers(["fluid", "--preset", "br-unbalanced", "--load", "0.9", "--objective", "drf",
                                  "--method", "graded"], capsys)
    assert rc == 0 and "graded lattice (grading 0.05, an approximation)" in out
