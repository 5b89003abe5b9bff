"""The Google-like day generator (analysis/cluster/google_day.py) and the DRFH §VI study script."""

import importlib.util
import math
import os

import numpy as np
import pytest
from scipy.stats import norm

from mrfq.analysis.cluster import drfh_study as ds
from mrfq.analysis.cluster import google_day as gd
from mrfq.flows.cluster import cluster_from_dict
from mrfq.router.cluster import simulate

pytestmark = pytest.mark.nojit
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
P = gd.DayParams()


def _binom_ok(hits: int, n: int, p: float, z: float = 5.0) -> bool:
    return abs(hits - n * p) <= z * math.sqrt(n * p * (1 - p)) + 1


# ---- determinism ---------------------------------------------------------------------------------
def test_same_seed_same_day_bit_for_bit(tmp_path):
    a = gd.google_day(7, n_servers=50, n_users=9, horizon=1800.0)
    b = gd.google_day(7, n_servers=50, n_users=9, horizon=1800.0)
    for k in ("servers", "demand", "share", "time", "user", "tasks", "duration", "start", "length"):
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    assert a.rate == b.rate and a.n_jobs > 50
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a.write_csv(tmp_path / "a" / "j.csv")
    b.write_csv(tmp_path / "b" / "j.csv")
    assert (tmp_path / "a" / "j.csv").read_bytes() == (tmp_path / "b" / "j.csv").read_bytes()
    c = gd.google_day(8, n_servers=50, n_users=9, horizon=1800.0)
    assert not np.array_equal(a.time[:10], c.time[:10]) and not np.array_equal(a.demand, c.demand)


def test_csv_and_toml_round_trip_exactly(tmp_path):
    w = gd.google_day(3, n_servers=30, n_users=5, horizon=900.0)
    sc = w.scenario(tmp_path, warmup=100.0, samples=50)
    rows = np.array([(t, u, n, d) for t, u, n, d in sc.trace_rows])
    assert np.array_equal(rows[:, 0], w.time) and np.array_equal(rows[:, 1].astype(int), w.user)
    assert np.array_equal(rows[:, 2].astype(int), w.tasks) and np.array_equal(rows[:, 3], w.duration)
    assert np.array_equal(sc.capacity(), w.servers) and np.array_equal(sc.demand(), w.demand)
    from mrfq.flows.cluster import load_cluster

    again = load_cluster(tmp_path / "google-day.toml")
    assert again.trace_rows == sc.trace_rows and again.servers == sc.servers and again.users == sc.users
    assert again.run == sc.run


# ---- the marginals the docstring claims, on large samples ------------------------------------------
def test_servers_follow_table_i():
    caps = gd.table_i_draw(np.random.default_rng(0), 200_000)
    total = sum(c for c, _, _ in ds.TABLE_I)
    for count, c, m in ds.TABLE_I:
        hits = int(np.sum((caps[:, 0] == c) & (caps[:, 1] == m)))
        assert _binom_ok(hits, caps.shape[0], count / total), (c, m, hits)


def test_tasks_per_job_law_and_its_exact_pmf():
    n = 400_000
    k = gd.draw_tasks(np.random.default_rng(1), n, P)
    pmf = gd.tasks_pmf(P)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12) and pmf[0] == 0.0
    assert k.min() >= 1 and k.max() <= P.t_max
    cdf = np.cumsum(pmf)
    for q in (1, 2, 3, 5, 10, 30, 100, 1000):
        assert _binom_ok(int(np.sum(k <= q)), n, cdf[q]), q
    # the tail is Pareto of index t_alpha: P(tasks > q) = (1 - p_single) q^-alpha for 1 <= q < t_max
    for q in (10, 100, 1000):
        assert 1 - cdf[q] == pytest.approx((1 - P.p_single) * q ** -P.t_alpha, rel=1e-9)
    assert 0.5 <= np.mean(k == 1) <= 0.52           # p_single plus the tail's own ones: none (t_min = 1)
    assert k[k == P.t_max].size > 0                  # the cap is reached in 4e5 draws (P = 0.5 x 5000^-1.1)


def test_durations_are_clipped_lognormal():
    n = 400_000
    d = gd.draw_durations(np.random.default_rng(2), n, P)
    assert d.min() == P.dur_min and d.max() == P.dur_max
    for q in (0.1, 0.5, 0.9, 0.99):
        want = P.dur_median * math.exp(P.dur_sigma * norm.ppf(q))
        assert np.quantile(d, q) == pytest.approx(want, rel=0.02), q
    p_lo = norm.cdf((math.log(P.dur_min) - math.log(P.dur_median)) / P.dur_sigma)
    assert _binom_ok(int(np.sum(d == P.dur_min)), n, p_lo)
    exact = gd.mean_clipped_lognormal(P.dur_median, P.dur_sigma, P.dur_min, P.dur_max)
    assert d.mean() == pytest.approx(exact, rel=0.01)


def test_demands_lognormal_medians_spread_and_correlation():
    dem = gd.draw_demands(np.random.default_rng(3), 200_000, P)
    assert dem.min() >= P.demand_lo and dem.max() <= P.demand_hi
    assert np.median(dem[:, 0]) == pytest.approx(P.cpu_median, rel=0.02)
    assert np.median(dem[:, 1]) == pytest.approx(P.mem_median, rel=0.02)
    lg = np.log(dem)
    q = norm.ppf(0.9)
    assert np.quantile(lg[:, 0], 0.9) - np.log(P.cpu_median) == pytest.approx(P.cpu_sigma * q, rel=0.03)
    assert np.quantile(lg[:, 1], 0.9) - np.log(P.mem_median) == pytest.approx(P.mem_sigma * q, rel=0.03)
    assert np.corrcoef(lg.T)[0, 1] == pytest.approx(P.rho, abs=0.02)


def test_users_activity_is_zipf_and_the_rate_gives_the_offered_load():
    w = gd.google_day(5, n_servers=400, n_users=10, horizon=20000.0, t_alpha=3.0, dur_sigma=0.3, load=1.2)
    assert sorted(w.share, reverse=True) == pytest.approx(np.arange(1, 11) ** -1.0 / np.sum(np.arange(1, 11) ** -1.0))
    freq = np.bincount(w.user, minlength=10) / w.n_jobs
    assert np.abs(freq - w.share).max() < 0.02
    assert w.offered_load().max() == pytest.approx(1.2, rel=0.05)   # light tails: the mean converges
    assert np.all(np.diff(w.time) > 0) and w.time[-1] < 20000.0


def test_users_submit_only_in_their_sessions():
    w = gd.google_day(11, n_servers=100, n_users=40, horizon=5000.0)
    assert np.all(w.length >= 0.1 * 5000.0) and np.all(w.length <= 5000.0)
    assert np.all(w.start >= 0) and np.all(w.start < 5000.0)
    for u in range(40):
        t = w.time[w.user == u]
        assert np.all(np.fmod(t - w.start[u] + 5000.0, 5000.0) < w.length[u])   # inside the window, mod the day
    assert w.time.min() >= 0 and w.time.max() < 5000.0 and np.all(np.diff(w.time) > 0)
    # stationary: as many jobs in the first as in the last tenth of the day (within noise)
    first, last = np.sum(w.time < 500.0), np.sum(w.time >= 4500.0)
    assert abs(first - last) < 5 * math.sqrt(first + last)
    # the windows' lengths are uniform in [0.1, 1] x horizon
    _, length = gd.draw_sessions(np.random.default_rng(4), gd.DayParams(n_users=100_000, horizon=1.0))
    assert np.quantile(length, [0.25, 0.5, 0.75]) == pytest.approx([0.325, 0.55, 0.775], abs=0.005)


def test_bad_params_are_refused():
    with pytest.raises(ValueError, match="p_single"):
        gd.google_day(1, p_single=1.5)
    with pytest.raises(ValueError, match="n_servers"):
        gd.DayParams(n_servers=0)
    with pytest.raises(ValueError, match="cpu_sigma"):
        gd.DayParams(cpu_sigma=float("nan"))


# ---- study helpers ---------------------------------------------------------------------------------
def test_completion_ratio_counts_finished_tasks_exactly(tmp_path):
    # one server that holds one task at a time; one job of 3 tasks of 10 s at t = 0; run 25 s:
    # tasks finish at 10 and 20, the third runs at the end -> 2 of 3 completed
    (tmp_path / "j.csv").write_text("time,user,tasks,duration\n0,a,3,10\n30,a,2,10\n")
    sc = gd.trace_scenario_from_csv(tmp_path / "j.csv", {"a": (0.6, 0.6)}, np.array([[1.0, 1.0]]),
                                    duration=25.0, samples=25)
    r = simulate(sc)
    assert gd.running_at_end(sc, r).tolist() == [1]
    sub, ratio = gd.completion_ratio(sc, r)
    assert sub.tolist() == [3] and ratio.tolist() == [pytest.approx(2 / 3)]
    full = simulate(sc.replace_run(duration=100.0, samples=100))
    assert gd.completion_ratio(sc.replace_run(duration=100.0), full)[1].tolist() == [1.0]


def test_one_slot_scenario_drops_exactly_the_users_larger_than_a_slot(tmp_path):
    w = gd.google_day(2, n_servers=40, n_users=12, horizon=1200.0)
    sc = w.scenario(tmp_path, samples=20)
    for n in (10, 20):
        one = gd.one_slot_scenario(sc, n)
        big = np.any(w.demand > 1.0 / n, axis=1)          # the largest server is (1, 1)
        assert [r for r in sc.trace_rows if not big[r[1]]] == list(one.trace_rows)
        r = simulate(one, allocator="slots", options={"n_slots": n})
        assert np.all(r.launched[big] == 0) and r.launched[~big].sum() > 0
    assert 0 < np.sum(np.any(w.demand > 1.0 / 20, axis=1)) < 12


def test_reduction_by_size_classes():
    tasks = np.array([1, 1, 5, 50, 2000])
    red = gd.reduction_by_size(tasks, np.array([10.0, 10, 5, 50, 100]), np.array([10.0, 10, 10, 100, 400]))
    assert [r[0] for r in red] == ["1", "2-10", "11-100", "101-1000", ">1000"]
    assert [r[1] for r in red] == [2, 1, 1, 0, 1]
    assert red[0][2] == 0.0 and red[1][2] == 50.0 and red[2][2] == 50.0 and np.isnan(red[3][2])
    assert red[4][2] == 75.0


def test_fig4_seed_matches_the_papers_pool_and_the_preset_is_that_scenario():
    sc = ds.fig4_scenario(gd.FIG4_SEED, duration=1400.0, samples=140)
    T = sc.capacity().sum(axis=0)
    assert T[0] == pytest.approx(52.75) and T[1] == pytest.approx(51.32, abs=0.1)
    from mrfq.flows.cluster import load_cluster_preset

    pre = load_cluster_preset("drfh-fig4")
    assert np.array_equal(pre.capacity(), sc.capacity()) and np.array_equal(pre.demand(), sc.demand())
    assert [(u.start, u.stop, u.duration, u.backlogged) for u in pre.users] == \
        [(u.start, u.stop, u.duration, u.backlogged) for u in sc.users]
    assert pre.run == sc.run


# ---- the script, tiny --------------------------------------------------------------------------------
def _script():
    spec = importlib.util.spec_from_file_location("dgd", os.path.join(ROOT, "scripts", "drfh_google_day.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_script_fig4_tiny(tmp_path, capsys):
    assert _script().main(["fig4", "--fig4-duration", "260", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "pool 52.75 CPU" in out and "u1 alone" in out and "40.0%" in out and "62.0%" in out
    assert (tmp_path / "drfh-fig4.png").stat().st_size > 1000


def test_script_table2_and_fig6_tiny(tmp_path, capsys):
    mod = _script()
    args = ["--servers", "20", "--users", "3", "--hours", "0.1", "--slots", "10,14", "--out", str(tmp_path),
            "--trace-dir", str(tmp_path / "day")]
    assert mod.main(["table2", *args]) == 0
    out = capsys.readouterr().out
    assert "Slots (10/max)" in out and "Best-Fit DRFH" in out and "35.1%" in out   # the paper's column
    assert mod.main(["table2", *args, "--slot-rule", "one"]) == 0
    assert "(slot rule: one)" in capsys.readouterr().out
    assert mod.main(["fig6", *args[:-2]]) == 0                      # no --trace-dir: nothing left behind
    out = capsys.readouterr().out
    assert "Fig. 6" in out and "Fig. 8" in out and ">1000" in out and "trace not kept" in out
    assert {p.name for p in tmp_path.glob("*.png")} == {"drfh-table2.png", "drfh-fig5.png", "drfh-fig6.png",
                                                        "drfh-fig8.png"}
    assert (tmp_path / "day" / "google-day.csv").exists() and (tmp_path / "day" / "google-day.toml").exists()
    # the written scenario runs again through --scenario (any trace scenario)
    assert mod.main(["fig6", "--scenario", str(tmp_path / "day" / "google-day.toml"), "--out", str(tmp_path)]) == 0


def test_script_bad_input_one_line_exit_2(tmp_path, capsys):
    mod = _script()
    for bad in (["--servers", "0"], ["--slots", "14,x"], ["--slots", "0"], ["--seed", "-1"], ["--load", "0"]):
        assert mod.main(["table2", *bad]) == 2, bad
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: --"), bad
    d = cluster_from_dict({"resources": ["cpu"], "server": [{"capacity": [1]}], "user": [{"demand": [0.5]}]})
    assert d.traffic.kind == "none"
    (tmp_path / "b.toml").write_text('resources = ["cpu"]\n[[server]]\ncapacity = [1]\n[[user]]\ndemand = [0.5]\n')
    assert mod.main(["fig6", "--scenario", str(tmp_path / "b.toml"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kind must be 'trace'" in err
    (tmp_path / "j.csv").write_text("time,user,tasks\n0,u1,2\n")
    (tmp_path / "c.toml").write_text('resources = ["cpu"]\n[[server]]\ncapacity = [1]\n[[user]]\nname = "u1"\n'
                                     'demand = [0.5]\n[traffic]\nkind = "trace"\ntrace = "j.csv"\n')
    assert mod.main(["table2", "--scenario", str(tmp_path / "c.toml"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has 1 resources; the study needs two" in err
