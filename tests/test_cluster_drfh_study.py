"""The synthetic [DRFH] §VI study: Table I sampling, derived utilisation, the script end to end (tiny)."""

import importlib.util
import os

import numpy as np
import pytest

from mrfq.analysis.cluster import drfh_study as ds
from mrfq.analysis.cluster.drfh import drfh
from mrfq.router.cluster import simulate

pytestmark = pytest.mark.nojit
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_table_i_frequencies():
    caps = ds.table_i_servers(np.random.default_rng(0), 20000)
    share = np.mean([c == (0.5, 0.5) for c in caps])
    assert share == pytest.approx(6732 / 12584, abs=0.01)
    assert set(caps) <= {(c, m) for _, c, m in ds.TABLE_I}


def test_fig4_scenario_is_the_papers_and_fluid_phases_are_drfh():
    sc = ds.fig4_scenario(3)
    assert sc.capacity().shape == (100, 2)
    np.testing.assert_allclose(sc.demand(), [[0.2, 0.3], [0.5, 0.1], [0.1, 0.3]])
    assert [(u.start, u.stop) for u in sc.users] == [(0.0, 1080.0), (200.0, np.inf), (500.0, np.inf)]
    fl = ds.fluid_phase_shares(sc)
    np.testing.assert_allclose(fl["u1+u2"][:2], drfh(sc.capacity(), sc.demand()[:2]).G)
    assert fl["u1+u2"][2] == 0.0
    # one user alone, fluid: every server filled with user 1's tasks -> its dominant (memory) share
    caps = sc.capacity()
    alone = np.minimum(caps[:, 0] / 0.2, caps[:, 1] / 0.3).sum() * 0.3 / caps[:, 1].sum()
    assert fl["u1 alone"][0] == pytest.approx(alone)


def test_demand_utilisation_equals_the_simulators_when_charge_is_demand():
    sc = ds.trace_scenario(2, n_servers=20, n_users=3, load=1.5, duration=300.0, warmup=50.0, samples=10)
    r = simulate(sc, allocator="drf")
    mean, series = ds.demand_utilisation(sc, r)
    np.testing.assert_allclose(mean, r.utilisation, rtol=1e-12)
    assert series.shape == (10, 2) and np.all(series <= 1 + 1e-12)
    s = simulate(sc, allocator="slots", options={"n_slots": 14})
    mean_s, _ = ds.demand_utilisation(sc, s)
    assert np.all(mean_s <= s.utilisation + 1e-12)           # slots charge at least the demand
    tk, ca, cb = ds.matched_completions(sc, r, r)
    assert tk.size == r.job_user.size and np.array_equal(ca, cb)
    assert all(x == 0.0 or np.isnan(x) for _, _, x in ds.reduction_by_size(tk, ca, cb))


def test_study_script_runs_tiny(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("cds", os.path.join(ROOT, "scripts", "cluster_drfh_study.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--servers", "20", "--users", "3", "--duration", "200", "--slots", "14",
                     "--fig4-duration", "250", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Best-Fit DRFH" in out and "Fig. 6" in out
    assert {p.name for p in tmp_path.iterdir()} == {"drfh_fig4.png", "drfh_fig5.png", "drfh_fig6.png"}
