"""The region truncation of the flow-level Markov chain (analysis.markov_region):
the numba assembly against a plain-Python generator on hand-made regions, the box as a special
case, the region pieces (connectivity, union, embedding), and the solve against the box solve."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mrfq import flows
from mrfq.analysis import markov
from mrfq.analysis import markov_region as mr
from mrfq.analysis.state_rates import state_rates
from conftest import scaled


def _model(load=0.8, preset="br-unbalanced"):
    return markov.model_from(flows.load_preset(preset), load=load)


def _states_of(region: mr.Region) -> list[tuple[int, ...]]:
    """The region's states in its numbering, enumerated the obvious way."""
    out = []
    for col in itertools.product(*(range(n) for n in region.lo.shape)):
        out += [col + (z,) for z in range(int(region.lo[col]), int(region.hi[col]) + 1)]
    return out


def _oracle_pi(m, objective, region: mr.Region) -> np.ndarray:
    """Stationary law of the chain restricted to the region: every transition that leaves it
    blocked, the generator built state by state, ``pi Q = 0`` solved densely."""
    S = _states_of(region)
    where = {s: i for i, s in enumerate(S)}
    K = len(S[0])
    Q = np.zeros((len(S), len(S)))
    for i, s in enumerate(S):
        phi = state_rates(objective, np.array([s], dtype=float), m.a, m.w)[0]
        for k in range(K):
            up = s[:k] + (s[k] + 1,) + s[k + 1:]
            if up in where:
                Q[i, where[up]] += m.lam[k]
            down = s[:k] + (s[k] - 1,) + s[k + 1:]
            if s[k] >= 1 and down in where:
                Q[i, where[down]] += s[k] * phi[k] / m.sigma[k]
        Q[i, i] = -Q[i].sum()
    A = Q.T / np.abs(Q).max()
    A[-1] = 1.0                     # the textbook way: one balance equation replaced by sum(pi) = 1
    rhs = np.zeros(len(S))
    rhs[-1] = 1.0
    return np.linalg.solve(A, rhs)


def _odd_region() -> mr.Region:
    """A connected region that is not downward closed: columns start above 0 away from the axes."""
    lo = np.array([[0, 0, 1, 2], [0, 1, 2, 3], [2, 2, 3, 4]], dtype=np.int64)
    hi = np.array([[3, 4, 5, 6], [4, 5, 6, 7], [5, 6, 7, 7]], dtype=np.int64)
    return mr.Region(lo, hi)


@pytest.mark.nojit
@pytest.mark.parametrize("objective", ["drf", "pf", "bmf"])
def test_region_solve_equals_the_plain_generator(objective):
    m = _model(0.8)
    r = _odd_region()
    t = markov.solve_region(m, objective, r)
    ref = _oracle_pi(m, objective, r)
    assert t.pi.size == r.n == len(_states_of(r))
    # the Krylov solve stops at relative residual 1e-10 (EXACT_RTOL), so a probability can be off by
    # about that much: one full run on an AMD VM stopped 2.3e-11 away from the oracle at
    # one state, where every other run, and this test alone, had matched it to 1e-11
    np.testing.assert_allclose(t.pi, ref, rtol=3e-8, atol=1e-10)
    X = np.array(_states_of(r), dtype=float)
    np.testing.assert_allclose(t.mean_flows, ref @ X, rtol=3e-8)
    assert t.caps == (2, 3, 7)


@pytest.mark.nojit
def test_boundary_is_where_a_transition_is_blocked():
    m = _model(0.8)
    r = _odd_region()
    t = markov.solve_region(m, "drf", r)
    S = _states_of(r)
    inside = set(S)
    blocked = []
    for s in S:
        moves = [s[:k] + (s[k] + d,) + s[k + 1:] for k in range(3) for d in (1, -1) if s[k] + d >= 0]
        blocked.append(any(mv not in inside for mv in moves))
    assert np.isclose(t.boundary, t.pi[np.array(blocked)].sum(), rtol=1e-12)
    coords = mr.region_coords(*r.flat(), 0, r.n, np.empty((r.n, 3)))
    assert np.array_equal(coords, np.array(S, dtype=float))
    part = mr.region_coords(*r.flat(), 5, 17, np.empty((12, 3)))
    assert np.array_equal(part, coords[5:17])


@pytest.mark.nojit
def test_a_box_region_is_the_box_truncation():
    m = _model(0.8)
    caps = (12, 5, 6)
    box = markov.solve_truncated(m, "drf", caps)
    reg = markov.solve_region(m, "drf", mr.box(caps))
    # the same system up to the order of the diagonal's sum (test below); BiCGSTAB turns that
    # 1e-17 into differences at the solve's accuracy (relative residual 1e-11)
    np.testing.assert_allclose(reg.pi, box.pi, rtol=1e-6, atol=1e-300)
    np.testing.assert_allclose(reg.gamma, box.gamma, rtol=1e-8)
    assert reg.caps == caps and np.isclose(reg.boundary, box.boundary, rtol=1e-12)


def test_box_region_system_equals_box_system():
    """Same CSR pattern as the box assembly, and the same values up to the order of the diagonal's sum."""
    m = _model(0.9)
    caps = (20, 7, 9)
    shape = tuple(c + 1 for c in caps)
    X = markov._states(caps)
    death = X * state_rates("drf", X, m.a, m.w) / m.sigma
    birth = np.where(X < np.array(caps), m.lam, 0.0)
    strides = np.array([shape[1] * shape[2], shape[2], 1], dtype=np.int64)
    ip, ix, dv, b = markov.box_system(np.array(shape, dtype=np.int64), strides, birth, death)
    r = mr.box(caps)
    ip2, ix2, dv2, b2, edge, total = mr.region_system(*r.flat(), death, m.lam, False)
    assert np.array_equal(ip, ip2) and np.array_equal(ix, ix2)
    np.testing.assert_allclose(dv2, dv, rtol=1e-14)
    np.testing.assert_allclose(b2, b, rtol=1e-14)
    assert np.array_equal(total, X.sum(axis=1)) and np.array_equal(edge, (X == np.array(caps)).any(axis=1))


@pytest.mark.nojit
def test_connected_columns_drop_islands_and_union_closes_intervals():
    lo = np.array([[0, 0, 0, 5], [0, 9, 0, 0]], dtype=np.int64)
    hi = np.array([[3, 2, -1, 8], [2, 12, -1, -1]], dtype=np.int64)
    lo2, hi2 = lo.ravel().copy(), hi.ravel().copy()
    mr.connected_columns(np.array(lo.shape, dtype=np.int64), lo2, hi2)
    kept = hi2 >= lo2
    # (0,3) is cut off by the empty (0,2); (1,1) = [9, 12] does not overlap its neighbours
    assert kept.tolist() == [True, True, False, False, True, False, False, False]
    a = mr.Region(np.array([[0, 0]]), np.array([[2, 1]]))
    b = mr.Region(np.array([[0], [4]]), np.array([[1], [6]]))
    u = mr.union(a, b)
    assert u.lo.tolist() == [[0, 0], [4, 0]] and u.hi.tolist() == [[2, 1], [6, -1]]
    assert u.n == 3 + 2 + 3 and u.caps == (1, 1, 6)


@pytest.mark.nojit
def test_embed_moves_values_by_coordinates():
    old = mr.Region(np.array([[0, 1], [1, 2]]), np.array([[3, 4], [2, 5]]))
    new = mr.union(old, mr.box((2, 2, 6)))
    v = np.arange(old.n, dtype=float) + 1.0
    out = np.zeros(new.n)
    mr.region_embed(*old.flat(), v, *new.flat(), out)
    X_old = [tuple(s) for s in _states_of(old)]
    X_new = {tuple(s): i for i, s in enumerate(_states_of(new))}
    for j, s in enumerate(X_old):
        assert out[X_new[s]] == v[j]
    assert np.count_nonzero(out) == old.n


@pytest.mark.nojit
def test_embed_continues_each_column_from_the_old_values():
    """The next region's start: the new states of a column that shares states with the old
    region are the shape in ``out`` scaled to meet the old values at the shared interval's ends
    (below it by the ratio at its lowest state, above by the ratio at its highest); a column
    with no shared state keeps ``out``; the shared states get the old values."""
    old = mr.Region(np.array([[0, 1], [1, 2]]), np.array([[3, 4], [2, 5]]))
    new = mr.union(old, mr.box((2, 2, 6)))
    X_old = {tuple(s): j for j, s in enumerate(_states_of(old))}
    X_new = np.array(_states_of(new))
    v = 1.0 + np.arange(old.n, dtype=float)
    shape = 0.5 ** X_new.sum(axis=1)                  # a law's shape on the new region
    out = shape.copy()
    mr.region_embed(*old.flat(), v, *new.flat(), out, True)
    for i, s in enumerate(map(tuple, X_new)):
        col = [j for j, t in enumerate(map(tuple, X_new)) if t[:2] == s[:2] and t in X_old]
        if s in X_old:
            assert out[i] == v[X_old[s]]
        elif not col:
            assert out[i] == shape[i]
        else:
            ends = [min(col, key=lambda j: X_new[j][2]), max(col, key=lambda j: X_new[j][2])]
            end = ends[0] if s[2] < X_new[ends[0]][2] else ends[1]
            assert s[2] < X_new[ends[0]][2] or s[2] > X_new[ends[1]][2]
            np.testing.assert_allclose(out[i], shape[i] * v[X_old[tuple(X_new[end])]] / shape[end], rtol=1e-14)
    plain = shape.copy()
    mr.region_embed(*old.flat(), v, *new.flat(), plain)
    moved = np.array([tuple(s) in X_old for s in X_new])
    np.testing.assert_array_equal(plain[~moved], shape[~moved])
    np.testing.assert_array_equal(plain[moved], out[moved])


@pytest.mark.parametrize("objective", ["drf", "pf", "bmf"])
def test_region_truncation_agrees_with_the_box(objective):
    m = _model(0.9)
    box = markov.solve(m, objective, truncation="box")
    reg = markov.solve(m, objective)
    assert reg.truncation_shape == "region" and box.truncation_shape == "box"
    np.testing.assert_allclose(reg.gamma, box.gamma, rtol=1e-4)
    assert reg.boundary_mass < 1e-6 and reg.gamma_change < 1e-4
    assert reg.n_states < box.n_states
    assert reg.to_dict()["truncation_shape"] == "region"


@pytest.mark.slow
def test_region_truncation_reaches_load_098():
    """br-unbalanced at 0.98: exact on about 2 M states (the box needs 8.4 M and minutes): the
    box's gamma (solved once with its guard lifted, README) to 3e-5, inside the simulated chain's
    99 % interval; the graded lattice (default grading) within 0.3 % of it (measured 0.16 %)."""
    sc = flows.load_preset("br-unbalanced")
    r = markov.solve(sc, "drf", load=0.98)
    np.testing.assert_allclose(r.gamma, [0.020367, 0.020972, 0.020365], rtol=3e-5)
    assert r.boundary_mass < 1e-6 and r.gamma_change < 1e-4 and r.n_states < 3_000_000
    g = markov.solve(sc, "drf", load=0.98, method="graded")
    assert np.all(np.abs(g.gamma / r.gamma - 1) < 3e-3), g.gamma / r.gamma - 1
    rng = np.random.default_rng(np.random.SeedSequence(98))
    sim = markov.solve(sc, "drf", load=0.98, method="simulate", rng=rng,
                       events=int(scaled(40_000_000, 12_000_000)), confidence=0.99)
    assert np.all(sim.gamma_low <= r.gamma) and np.all(r.gamma <= sim.gamma_high), (
        r.gamma, sim.gamma_low, sim.gamma_high)
    with pytest.raises(markov.TruncationTooLarge, match="box truncation"):
        markov.solve(sc, "drf", load=0.98, truncation="box")


def test_unknown_truncation_is_refused():
    with pytest.raises(flows.MrfqError, match="truncation = 'simplex': unknown; choose one of region, box"):
        markov.solve(_model(0.5), "drf", truncation="simplex")


def test_single_class_region_is_its_birth_death_chain():
    """K = 1: the region is an interval; M/M/1-PS with rate 1/a: P(x) = (1 - rho) rho^x."""
    m = markov.model_from([markov._Spec("c", (0.5,), 1.2, 1.0, 1.0)])
    r = markov.solve(m, "drf")
    rho = 1.2 * 0.5
    np.testing.assert_allclose(r.mean_flows, [rho / (1 - rho)], rtol=2e-5)  # truncated: tol_gamma 1e-4
    assert r.boundary_mass < 1e-6


def test_a_region_that_cannot_grow_is_refused(monkeypatch):
    """Criteria not met and the next region no larger (as when the estimate's caps are reached):
    one line, no endless loop."""
    monkeypatch.setattr(markov, "_region_for", lambda t, omitted: mr.box((5, 3, 3)))
    with pytest.raises(markov.TruncationTooLarge, match="cannot grow past the graded estimate's caps"):
        markov.solve(_model(0.5), "drf")


# ---------------------------------------------------------------------------
# lumping by the mirror symmetry of two classes (solve's symmetry="auto")
def _symmetric_region() -> mr.Region:
    """A region symmetric under x_0 <-> x_1 that is not a box (every column's interval depends on
    (x_0, x_1) symmetrically), with the origin."""
    n = 6
    lo = np.zeros((n, n), np.int64)
    hi = np.zeros((n, n), np.int64)
    for i in range(n):
        for j in range(n):
            lo[i, j] = max(0, min(i, j) - 2)
            hi[i, j] = 7 - abs(i - j) // 2
    return mr.Region(lo, hi)


@pytest.mark.nojit
@pytest.mark.parametrize("objective", ["drf", "pf", "bmf"])
def test_lumped_solve_is_the_orbit_law_of_the_full_solve(objective):
    """br-balanced is symmetric under c1 <-> c2 (with the resources swapped): the lumped chain on
    the half x_0 >= x_1 of a symmetric region has, per orbit, the probability the plain generator
    gives the orbit's states together; gamma and the boundary mass are the full chain's."""
    m = _model(0.9, "br-balanced")
    assert markov.mirror_pair(m, objective) == (0, 1)
    full = _symmetric_region()
    S = _states_of(full)
    ref = _oracle_pi(m, objective, full)
    where = {s: i for i, s in enumerate(S)}
    half = mr.half(full)
    lumped = markov.solve_region(m, objective, half, mirror=True)
    H = _states_of(half)
    assert len(H) == sum(1 for s in S if s[0] >= s[1]) and all(s[0] >= s[1] for s in H)
    orbit = np.array([ref[where[s]] + (ref[where[(s[1], s[0]) + s[2:]]] if s[0] > s[1] else 0.0) for s in H])
    np.testing.assert_allclose(lumped.pi, orbit, rtol=1e-8, atol=1e-14)
    plain = markov.solve_region(m, objective, full)
    np.testing.assert_allclose(lumped.gamma, plain.gamma, rtol=1e-9)
    assert lumped.gamma[0] == lumped.gamma[1]
    assert np.isclose(lumped.boundary, plain.boundary, rtol=1e-8)
    assert lumped.caps == plain.caps


def test_mirror_pair_finds_the_symmetry_in_any_class_order():
    m = _model(0.9, "br-balanced")
    for order, want in [([0, 1, 2], (0, 1)), ([2, 0, 1], (1, 2)), ([1, 2, 0], (0, 2))]:
        assert markov.mirror_pair(markov._permuted(m, order), "drf") == want
    assert markov.mirror_pair(_model(0.9, "br-unbalanced"), "drf") is None   # rho (8, 1, 1): no symmetry
    lopsided = markov.FluidModel(names=m.names, a=m.a, lam=m.lam * np.array([1.0, 1.001, 1.0]), sigma=m.sigma,
                                 w=m.w, resources=m.resources)
    assert markov.mirror_pair(lopsided, "drf") is None


@pytest.mark.parametrize("objective", ["drf", "pf", "bmf"])
def test_symmetry_auto_agrees_with_off_in_any_class_order(objective):
    """The whole region solve, lumped (default) and not, at load 0.9; the lumped one with the
    symmetric pair moved to classes 1 and 2 gives the same gamma per class name."""
    m = _model(0.9, "br-balanced")
    off = markov.solve(m, objective, symmetry="off")
    auto = markov.solve(m, objective)
    assert auto.lumped == ("c1", "c2") and off.lumped is None
    assert auto.n_states < 0.6 * off.n_states
    np.testing.assert_allclose(auto.gamma, off.gamma, rtol=2e-5)
    moved = markov.solve(markov._permuted(m, [2, 0, 1]), objective)
    assert moved.names == ("c3", "c1", "c2") and moved.lumped == ("c1", "c2")
    np.testing.assert_allclose(moved.gamma, auto.gamma[[2, 0, 1]], rtol=1e-9)
    assert moved.truncation == tuple(auto.truncation[k] for k in (2, 0, 1))
    with pytest.raises(flows.MrfqError, match=r"symmetry = 'sometimes': unknown; choose one of auto, off"):
        markov.solve(m, objective, symmetry="sometimes")


def test_direct_fallback_gives_the_krylov_solution(monkeypatch):
    """When both Krylov loops fail (forced here), SuperLU solves the system rebuilt from the
    solver's padded layout: the same law."""
    m = _model(0.8)
    want = markov.solve_region(m, "drf", _odd_region())
    monkeypatch.setattr(markov, "_krylov_chunked", lambda *a, **k: (0, float("nan")))
    got = markov.solve_region(m, "drf", _odd_region())
    assert markov.LAST_KRYLOV == "superlu"
    np.testing.assert_allclose(got.pi, want.pi, rtol=1e-7, atol=1e-10)  # the Krylov side: residual 1e-10


@pytest.mark.slow
def test_lumped_solve_at_095_inside_the_simulated_chain():
    """br-balanced at 0.95, lumped by c1 <-> c2 (0.66 M states, 2.6 s): inside the 99 % interval of
    the simulated (unlumped) chain, for every class."""
    sc = flows.load_preset("br-balanced")
    ex = markov.solve(sc, "drf", load=0.95)
    assert ex.lumped == ("c1", "c2") and ex.boundary_mass < 1e-6 and ex.gamma[0] == ex.gamma[1]
    rng = np.random.default_rng(np.random.SeedSequence(95))
    sim = markov.solve(sc, "drf", load=0.95, method="simulate", rng=rng,
                       events=int(scaled(20_000_000, 6_000_000)), confidence=0.99)
    assert np.all(sim.gamma_low <= ex.gamma) and np.all(ex.gamma <= sim.gamma_high), (
        ex.gamma, sim.gamma_low, sim.gamma_high)


@pytest.mark.nojit
@pytest.mark.parametrize("K", [1, 2, 3, 4])
def test_multilinear_equals_scipys_interpolation_at_integer_points(K):
    """The region solves' start (:func:`analysis.markov._graded_start`): the kernel's multilinear
    interpolation on integer tables equals scipy's RegularGridInterpolator at every integer point
    of a graded grid, its nodes and its last node included."""
    from scipy.interpolate import RegularGridInterpolator

    rng = np.random.default_rng(K)
    axes = [np.unique(np.concatenate([[0], rng.choice(np.arange(1, 13), size=4, replace=False)]))
            for _ in range(K)]
    values = rng.normal(size=[len(a) for a in axes])
    cell, frac, strides, top = markov.axis_tables(axes)
    X = np.array(list(itertools.product(*[range(t + 1) for t in top])), dtype=np.float64)
    out = np.empty(len(X))
    markov.multilinear(cell, frac, values.reshape(-1), strides, X, out)
    want = RegularGridInterpolator([a.astype(np.float64) for a in axes], values)(X)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    on_nodes = np.all([np.isin(X[:, k], axes[k]) for k in range(K)], axis=0)
    idx = [np.searchsorted(axes[k], X[on_nodes, k]) for k in range(K)]
    np.testing.assert_array_equal(out[on_nodes], values[tuple(idx)])
