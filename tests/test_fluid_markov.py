"""The flow-level Markov model (analysis.markov, docs/allocators.md) and `mrfq fluid`.

Analytic oracles first (M/M/1-PS, orthogonal classes, light traffic), then the
exact solve against the simulated chain, then the CLI.  MRFQ_TEST_SCALE (float,
default 0.3; 1 for full size) scales the simulation lengths of the slow tests.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from mrfq import flows
from mrfq.analysis import markov
from conftest import run_fluid_handlers
from mrfq.flows import ClassSpec
from mrfq.flows.errors import MrfqError

SCALE = float(os.environ.get("MRFQ_TEST_SCALE", "0.3"))
OBJ = ("drf", "pf", "bmf")


def _cls(name, cost, rho_dom, sigma=10.0, weight=1.0):
    """A class with dominant-time load rho_dom = lambda sigma max_j a_j."""
    return ClassSpec(name=name, cost=tuple(cost), rate=rho_dom / (sigma * max(cost)), mean_packets=sigma,
                     weight=weight)


# ---------------------------------------------------------------------------
# analytic oracles
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("objective", OBJ)
def test_identical_vectors_are_mm1_ps(objective):
    # same vector (0.5, 0.25): every objective is processor sharing; gamma_k = (1 - sum rho) / max a
    cl = [_cls("x", (0.5, 0.25), 0.3), _cls("y", (0.5, 0.25), 0.2, sigma=30.0)]
    r = markov.solve(cl, objective)
    np.testing.assert_allclose(r.gamma, [(1 - 0.5) / 0.5] * 2, rtol=1e-4)
    assert r.boundary_mass < 1e-6 and r.gamma_change < 1e-4 and r.method == "exact"


@pytest.mark.parametrize("objective", OBJ)
def test_single_resource_is_mm1_ps(objective):
    # J = 1, different per-packet costs: PS in time, gamma_k = (1 - rho) / a_k
    cl = [_cls("x", (0.5,), 0.2), _cls("y", (2.0,), 0.4)]
    r = markov.solve(cl, objective)
    np.testing.assert_allclose(r.gamma, [(1 - 0.6) / 0.5, (1 - 0.6) / 2.0], rtol=1e-4)


@pytest.mark.parametrize("objective", OBJ)
def test_orthogonal_classes(objective):
    cl = [_cls("x", (0.5, 0.0), 0.3), _cls("y", (0.0, 2.0), 0.6)]
    r = markov.solve(cl, objective)
    np.testing.assert_allclose(r.gamma, [(1 - 0.3) / 0.5, (1 - 0.6) / 2.0], rtol=1e-4)


@pytest.mark.parametrize("objective", OBJ)
def test_light_traffic(objective):
    sc = flows.load_preset("br-unbalanced")
    r = markov.solve(sc, objective, load=0.002)
    m = markov.model_from(sc, load=0.002)
    np.testing.assert_allclose(r.gamma, m.light_traffic_gamma(), rtol=5e-3)


def test_br_unbalanced_qualitative():
    """[BR] §4.3: DRF keeps class 2 from resource 1's spare capacity; PF and BMF do not."""
    sc = flows.load_preset("br-unbalanced")
    g = {o: markov.solve(sc, o, load=0.6).gamma for o in OBJ}
    assert g["pf"][1] > 1.3 * g["drf"][1] and g["bmf"][1] > 1.3 * g["drf"][1]
    for k in (0, 2):
        assert abs(g["pf"][k] - g["drf"][k]) < 0.03 * g["drf"][k]
        assert abs(g["bmf"][k] - g["drf"][k]) < 0.03 * g["drf"][k]


def test_balanced_symmetry_at_load_08():
    sc = flows.load_preset("br-balanced")
    res = {o: markov.solve(sc, o, load=0.8) for o in OBJ}
    for r in res.values():
        assert r.gamma[0] == pytest.approx(r.gamma[1], rel=1e-6)  # classes 1, 2 are mirror images
        assert r.boundary_mass < 1e-6 and r.gamma_change < 1e-4


def test_uniform_caps_agree_with_per_class_caps():
    sc = flows.load_preset("br-unbalanced")
    r = markov.solve(sc, "bmf", load=0.5)
    X = max(r.truncation)
    t = markov.solve_truncated(markov.model_from(sc, load=0.5), "bmf", (X, X, X))
    np.testing.assert_allclose(t.gamma, r.gamma, rtol=1e-5)


def test_unstable_load_refused():
    cl = [ClassSpec(name="a", cost=(1.0, 0.5), rate=0.051, mean_packets=20.0)]  # loads 1.02, 0.51
    with pytest.raises(MrfqError, match=r"load: resource 'r1' has load 1.02 >= 1; the Markov model needs"):
        markov.solve(cl, "pf")
    with pytest.raises(MrfqError, match=r"resource 'link' has load"):
        markov.solve(flows.from_dict({"resources": ["cpu", "link"], "run": {"max_flows": 500}, "class": [
            {"name": "c", "cost": [0.5, 1.0], "rate": 0.06, "mean_packets": 20}]}), "drf")  # an overload run
    with pytest.raises(MrfqError, match=r"load = 1: must be < 1"):
        markov.solve(flows.load_preset("br-balanced"), "drf", load=1.0)


def test_bad_arguments():
    sc = flows.load_preset("br-balanced")
    with pytest.raises(MrfqError, match="objective = 'asset'"):
        markov.solve(sc, "asset", load=0.3)
    with pytest.raises(MrfqError, match="method = 'fast'"):
        markov.solve(sc, "pf", load=0.3, method="fast")
    with pytest.raises(MrfqError, match="needs rng"):
        markov.solve(sc, "pf", load=0.3, method="simulate")
    with pytest.raises(MrfqError, match="has no \\[\\[class\\]\\]"):
        markov.solve(flows.load_preset("oracle-rates"), "pf")
    with pytest.raises(MrfqError, match=r"needs \d+ states at this load, more than 50 \(region caps"):
        markov.solve(sc, "pf", load=0.5, max_states=50)
    with pytest.raises(MrfqError, match=r"needs \d+ states at this load, more than 50 \(caps \[\d+, \d+, \d+\], boundary mass"):
        markov.solve(sc, "pf", load=0.5, max_states=50, truncation="box")


# ---------------------------------------------------------------------------
# exact solve vs the simulated chain
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("objective", OBJ)
def test_exact_within_simulation_ci(objective):
    sc = flows.load_preset("br-unbalanced")
    exact = markov.solve(sc, objective, load=0.5)
    rng = np.random.default_rng(np.random.SeedSequence(2024).spawn(3)[OBJ.index(objective)])
    sim = markov.solve(sc, objective, load=0.5, method="simulate", rng=rng, events=1_500_000,
                       confidence=0.99)
    assert np.all(sim.gamma_low <= exact.gamma) and np.all(exact.gamma <= sim.gamma_high), (
        exact.gamma, sim.gamma_low, sim.gamma_high)
    assert np.all((sim.gamma_high - sim.gamma_low) < 0.1 * exact.gamma)


def test_simulation_reproducible():
    sc = flows.load_preset("dynamic-small")
    a = markov.solve(sc, "pf", method="simulate", rng=np.random.default_rng(7), events=20_000)
    b = markov.solve(sc, "pf", method="simulate", rng=np.random.default_rng(7), events=20_000)
    assert np.array_equal(a.gamma, b.gamma) and np.array_equal(a.gamma_low, b.gamma_low)


@pytest.mark.slow
@pytest.mark.parametrize("objective", OBJ)
def test_exact_vs_simulation_high_load(objective):
    sc = flows.load_preset("br-balanced")
    exact = markov.solve(sc, objective, load=0.8)
    rng = np.random.default_rng(np.random.SeedSequence(99).spawn(3)[OBJ.index(objective)])
    sim = markov.solve(sc, objective, load=0.8, method="simulate", rng=rng,
                       events=int(8_000_000 * SCALE), confidence=0.99)
    assert np.all(sim.gamma_low <= exact.gamma) and np.all(exact.gamma <= sim.gamma_high)


# ---------------------------------------------------------------------------
# `mrfq fluid`
# ---------------------------------------------------------------------------
def _run(argv, capsys):
    return run_fluid_handlers(argv, capsys)


def test_fluid_json(capsys):
    rc, out = _run(["fluid", "--preset", "br-unbalanced", "--load", "0.4", "--json"], capsys)
    assert rc == 0
    d = json.loads(out)
    assert d["load"] == pytest.approx(0.4)
    assert d["resource_loads"]["link"] == pytest.approx(0.4)
    assert d["boundary_mass"] < 1e-6 and len(d["truncation"]) == 3
    assert set(d["objectives"]) == {"drf", "pf", "bmf"}
    assert d["insensitivity_guaranteed"] is True
    names = [c["name"] for c in d["objectives"]["pf"]["classes"]]
    assert names == ["c1", "c2", "c3"]
    g = markov.solve(flows.load_preset("br-unbalanced"), "pf", load=0.4).gamma
    assert [c["gamma"] for c in d["objectives"]["pf"]["classes"]] == pytest.approx(list(g), rel=1e-9)


def test_fluid_flags_non_geometric_sizes(capsys):
    """The Markov model assumes geometric sizes: a Pareto scenario gets the geometric model of
    the same mean (same gammas), flagged in the JSON and the table as `mrfq compare` does."""
    rc, out = _run(["fluid", "--preset", "br-unbalanced-pareto", "--load", "0.4", "--objective", "pf", "--json"],
                   capsys)
    d = json.loads(out)
    assert rc == 0 and d["insensitivity_guaranteed"] is False
    g = markov.solve(flows.load_preset("br-unbalanced"), "pf", load=0.4).gamma
    assert [c["gamma"] for c in d["objectives"]["pf"]["classes"]] == pytest.approx(list(g), rel=1e-9)
    rc, out = _run(["fluid", "--preset", "br-unbalanced-pareto", "--load", "0.4", "--objective", "pf"], capsys)
    assert rc == 0 and "insensitivity to the size law is not guaranteed" in out


def test_fluid_scenario_file_and_table(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text('resources = ["cpu", "link"]\n[[class]]\nname = "a"\ncost = [1.0, 0.5]\nrate = 0.01\n'
                 'mean_packets = 20\n[[class]]\nname = "b"\ncost = [0.5, 1.0]\nrate = 0.01\nmean_packets = 20\n')
    rc, out = _run(["fluid", str(f), "--objective", "pf"], capsys)
    assert rc == 0 and "gamma PF" in out and "truncation" in out
    rc, out = _run(["fluid", str(f), "--objective", "drf", "--load", "0.3", "--json"], capsys)
    assert json.loads(out)["resource_loads"] == {"cpu": pytest.approx(0.3), "link": pytest.approx(0.3)}


def test_fluid_loads_plot_json(tmp_path, capsys):
    png = tmp_path / "g.png"
    rc, out = _run(["fluid", "--preset", "br-unbalanced", "--loads", "0.2:0.4:0.1", "--plot", str(png),
                    "--json"], capsys)
    assert rc == 0 and png.stat().st_size > 1000
    d = json.loads(out)
    assert [e["load"] for e in d["loads"]] == pytest.approx([0.2, 0.3, 0.4])


def test_plot_function_returns_figure():
    from matplotlib.figure import Figure

    from mrfq.analysis.plots import plot_gamma_vs_load

    table = [{"load": x, "objectives": {o: {"classes": [{"name": "c1", "gamma": 1 - x}, {"name": "c2", "gamma": 1 - x / 2}]}
                                        for o in OBJ}} for x in (0.1, 0.5)]
    fig = plot_gamma_vs_load(table)
    assert isinstance(fig, Figure)
    assert len(fig.axes[0].lines) == 6


def test_size_law_plot_draws_every_row():
    from matplotlib.figure import Figure

    from mrfq.analysis.plots import plot_size_laws

    rows = [dict(scheduler=s, load=x, cls=c, law=law, rel=0.01 * i, rel_halfwidth=0.002)
            for i, (s, x, c, law) in enumerate((s, x, c, law) for s in ("drfq", "pf-sfq", "bmf-wfq")
                                               for x in (0.5, 0.8) for c in ("c1", "c2")
                                               for law in ("geometric", "pareto"))]
    fig = plot_size_laws(rows)
    assert isinstance(fig, Figure)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["drfq", "pf-sfq", "bmf-wfq"]
    # one error-bar series per law, four (load, class) points each, at the rows' values in per cent
    ys = sorted(y for ax in visible for bars in ax.containers for y in bars.lines[0].get_ydata())
    assert ys == pytest.approx([100 * r["rel"] for r in sorted(rows, key=lambda r: r["rel"])])


def test_fluid_simulate(capsys):
    rc, out = _run(["fluid", "--preset", "dynamic-small", "--objective", "bmf", "--method", "simulate",
                    "--events", "50000", "--json", "--seed", "3"], capsys)
    c = json.loads(out)["objectives"]["bmf"]["classes"][0]
    assert c["gamma_low"] <= c["gamma"] <= c["gamma_high"]


@pytest.mark.parametrize("argv, msg", [
    (["--preset", "br-balanced", "--load", "1.02"], r"--load: load 1.02 >= 1"),
    (["--preset", "br-balanced", "--load", "x"], r"--load = 'x': not a number"),
    (["--preset", "br-balanced", "--loads", "0.5:1.0:0.25"], r"--loads: load 1 >= 1"),
    (["--preset", "br-balanced", "--loads", "0.5:0.9"], r"must be START:STOP:STEP"),
    (["--preset", "br-balanced", "--objective", "asset"], r"--objective 'asset': unknown"),
    (["--preset", "br-balanced", "--method", "fast"], r"--method 'fast': unknown"),
    (["--preset", "nope"], r"--preset 'nope': unknown"),
    ([], r"missing scenario"),
    (["x.toml", "--preset", "br-balanced"], r"not both"),
    (["--preset", "oracle-rates"], r"has no \[\[class\]\]"),
    (["--preset", "br-balanced", "--events", "10"], r"--events = '10'"),
])
def test_fluid_errors(argv, msg, capsys):
    with pytest.raises(MrfqError, match=msg) as e:
        _run(["fluid"] + argv, capsys)
    assert "\n" not in str(e.value)


# ---------------------------------------------------------------------------
# four classes on three resources (DRF: numba per-state kernel for any J)
# ---------------------------------------------------------------------------
#: a middlebox with cpu, link and memory bandwidth: one class heavy on each, and a balanced one;
#: shares (8, 1, 1, 1) load the cpu most (the 4-class, 3-resource case of scripts/bench_fluid.py)
FOUR_BY_THREE = {"name": "four-by-three", "resources": ["cpu", "link", "mem"], "traffic": {"load": 0.5},
                 "class": [{"name": f"c{k + 1}", "cost": c, "share": s, "mean_packets": 20000}
                           for k, (c, s) in enumerate(zip([[1, .25, .25], [.25, 1, .25], [.25, .25, 1], [1, 1, 1]],
                                                          [8, 1, 1, 1]))]}


@pytest.mark.slow
def test_four_classes_three_resources_exact_vs_simulation():
    sc = flows.from_dict(FOUR_BY_THREE)
    exact = markov.solve(sc, "drf", load=0.6)
    assert exact.boundary_mass < 1e-6 and exact.gamma_change < 1e-4
    assert len(exact.truncation) == 4
    rng = np.random.default_rng(np.random.SeedSequence(44))
    sim = markov.solve(sc, "drf", load=0.6, method="simulate", rng=rng, events=int(max(2_000_000, 6_000_000 * SCALE)),
                       confidence=0.99)
    assert np.all(sim.gamma_low <= exact.gamma) and np.all(exact.gamma <= sim.gamma_high), (
        exact.gamma, sim.gamma_low, sim.gamma_high)
    # c2 and c3 are mirror images (link vs mem) with equal shares: equal gamma
    assert exact.gamma[1] == pytest.approx(exact.gamma[2], rel=1e-9)


def test_memory_budget_refuses_before_allocating():
    sc = flows.load_preset("br-balanced")
    assert markov.exact_memory_bytes(2_000_000, 3) > markov.exact_memory_bytes(1_000_000, 3)
    with pytest.raises(markov.TruncationTooLarge, match=r"would need about .* GB \(> 0.0 GB\)"):
        markov.solve(sc, "drf", load=0.5, max_memory=1e7)


@pytest.mark.nojit
def test_restart_shrinks_with_n():
    # KRYLOV_BYTES = 800 MiB: (restart + 1) vectors of 8-byte doubles
    assert markov.restart_for(10_000) == markov.RESTART == 100
    assert markov.restart_for(2_000_000) == 838_860_800 // 16_000_000 - 1 == 51
    assert markov.restart_for(50_000_000) == 20  # the floor
