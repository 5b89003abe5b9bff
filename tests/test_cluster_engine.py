"""The compiled task simulator (router/cluster_engine.py) against the plain-Python one
(router/cluster.py, engine="reference"), the oracle: identical launch traces (time, user, server)
on every cluster preset and on random small scenarios, the same statistics, and the kernels'
building blocks (numpy's summation order, the segment tree, Best-Fit's bound)."""

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrfq.flows.cluster import cluster_from_dict, cluster_preset_names, load_cluster_preset
from mrfq.flows.errors import MrfqError
from mrfq.fq.cluster import kernels as K
from mrfq.router.cluster import simulate
from mrfq.router.cluster_engine import COMPILED, simulate_compiled, supported

#: (allocator, options) pairs of the compiled engine: every server rule and option value
CASES = [("drf", {}), ("drf", {"blocked": "stop"}), ("drfh-first-fit", {}),
         ("drfh-best-fit", {}), ("drfh-best-fit", {"blocked": "stop"}),
         ("drfh-best-fit", {"fitness_ref": "dominant"}), ("slots", {}),
         ("slots", {"task_slots": "one", "n_slots": 10})]
#: the statistics compared bit for bit (utilisation: the reference sums users with a matrix product)
EXACT = ("share_mean", "tasks_mean", "share_time", "sample_time", "job_user", "job_arrival", "job_finish",
         "job_tasks", "launched")


def _both(sc, allocator, options, **kw):
    ta, tb = [], []
    a = simulate(sc, allocator=allocator, options=options, engine="reference", trace=ta, **kw)
    b = simulate(sc, allocator=allocator, options=options, engine="compiled", trace=tb, **kw)
    assert a.engine == "reference" and b.engine == "compiled"
    return a, b, ta, tb


def _assert_same(a, b, ta, tb):
    assert tb == ta
    for f in EXACT:
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    for f in ("utilisation", "util_time"):
        np.testing.assert_allclose(getattr(b, f), getattr(a, f), rtol=1e-12, atol=1e-15)
    assert (a.events, a.picks, a.jobs_arrived) == (b.events, b.picks, b.jobs_arrived)


@pytest.mark.parametrize("preset", cluster_preset_names())
@pytest.mark.parametrize("allocator,options", CASES, ids=[f"{a}-{'-'.join(map(str, o.values())) or 'default'}"
                                                          for a, o in CASES])
def test_same_launches_as_the_reference_on_every_preset(preset, allocator, options):
    sc = load_cluster_preset(preset)
    a, b, ta, tb = _both(sc, allocator, options, duration=min(sc.run.duration, sc.run.warmup + 150.0))
    assert len(ta) > 100
    _assert_same(a, b, ta, tb)


def test_preset_allocators_route_to_the_engine_that_has_them():
    for name in cluster_preset_names():
        sc = load_cluster_preset(name)
        run = simulate(sc, duration=sc.run.warmup + 5.0)
        assert run.engine == ("compiled" if sc.run.allocator in COMPILED else "reference")
    assert supported("drfh-best-fit") and not supported("h-drf")
    with pytest.raises(MrfqError, match=r"^engine = 'fast': unknown; choose one of compiled, reference$"):
        simulate(load_cluster_preset("drf-nsdi"), engine="fast")
    with pytest.raises(MrfqError, match=r"allocator option 'rescale'"):
        simulate(load_cluster_preset("drf-nsdi"), options={"rescale": True})


@st.composite
def small_scenarios(draw):
    """1-4 resources, 1-6 servers (some repeated), 1-4 users; backlogged windows, Poisson jobs or
    both; demands on a coarse grid so that ties and exact fits happen."""
    R = draw(st.integers(1, 4))
    grid = st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0])
    servers = []
    for _ in range(draw(st.integers(1, 4))):
        cap = [draw(st.sampled_from([1.0, 2.0, 3.0, 4.0, 6.0])) for _ in range(R)]
        servers.append({"capacity": cap, "count": draw(st.integers(1, 2))})
    big = np.max([s["capacity"] for s in servers], axis=0)
    users = []
    jobs = draw(st.booleans())
    for i in range(draw(st.integers(1, 4))):
        dem = [min(draw(grid), float(big[r])) for r in range(R)]
        if max(dem) == 0:
            dem[draw(st.integers(0, R - 1))] = 0.5
        # a task must fit on some server
        if not any(all(s["capacity"][r] >= dem[r] for r in range(R)) for s in servers):
            dem = [min(x, 1.0) for x in dem]
            servers.append({"capacity": [max(1.0, x) for x in dem]})
        u = {"name": f"u{i}", "demand": dem, "weight": draw(st.sampled_from([1.0, 1.0, 2.0, 0.5])),
             "duration": draw(st.sampled_from([0.5, 1.0, 2.0])),
             "duration_law": draw(st.sampled_from(["exponential", "fixed"]))}
        if jobs and draw(st.booleans()):
            u.update(backlogged=False, job_share=1.0, tasks_per_job=draw(st.sampled_from([1.0, 3.0])),
                     tasks_law=draw(st.sampled_from(["fixed", "geometric"])))
        else:
            start = draw(st.sampled_from([0.0, 0.0, 2.0, 5.0]))
            u.update(start=start)
            if draw(st.booleans()):
                u["stop"] = start + draw(st.sampled_from([1.0, 4.0, 10.0]))
        users.append(u)
    d = {"resources": [f"r{r}" for r in range(R)], "server": servers, "user": users,
         "run": {"duration": 20.0, "warmup": draw(st.sampled_from([0.0, 3.0])), "seed": draw(st.integers(0, 99)),
                 "samples": draw(st.sampled_from([1, 7]))}}
    if any(not u.get("backlogged", True) for u in users):
        d["traffic"] = {"kind": "poisson", "rate": draw(st.sampled_from([0.5, 2.0]))}
    return cluster_from_dict(d), draw(st.sampled_from(CASES))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_scenarios())
def test_same_launches_as_the_reference_on_random_small_scenarios(case):
    sc, (allocator, options) = case
    a, b, ta, tb = _both(sc, allocator, options)
    _assert_same(a, b, ta, tb)


def test_many_servers_and_a_long_run_against_the_reference():
    """60 servers of three kinds, 5 users of mixed shapes, jobs and backlogs: thousands of picks on a
    tree of several levels, where Best-Fit's pruning and the blocked users' rescans are exercised."""
    sc = cluster_from_dict({
        "resources": ["cpu", "mem"],
        "server": [{"capacity": [0.5, 0.5], "count": 30}, {"capacity": [0.5, 0.25], "count": 20},
                   {"capacity": [1.0, 1.0], "count": 10}],
        "user": [{"name": "a", "demand": [0.05, 0.02], "duration": 1.0},
                 {"name": "b", "demand": [0.01, 0.07], "duration": 2.0, "start": 3.0, "stop": 12.0},
                 {"name": "c", "demand": [0.1, 0.1], "backlogged": False, "job_share": 1.0, "tasks_per_job": 8.0,
                  "tasks_law": "geometric"},
                 {"name": "d", "demand": [0.2, 0.01], "backlogged": False, "job_share": 2.0},
                 {"name": "e", "demand": [0.03, 0.03], "weight": 2.0, "duration_law": "fixed"}],
        "traffic": {"kind": "poisson", "rate": 3.0},
        "run": {"duration": 25.0, "seed": 5, "samples": 10}})
    for allocator, options in CASES:
        a, b, ta, tb = _both(sc, allocator, options)
        assert len(ta) > 2000
        _assert_same(a, b, ta, tb)
        if allocator == "drfh-best-fit":  # short candidate lists: incomplete, refilled by new searches
            for m in (1, 3):
                tc, st = [], {}
                c = simulate_compiled(sc.replace_run(allocator=allocator), options, trace=tc, stats=st, cand_m=m)
                assert st["full_searches"] > 0
                _assert_same(a, c, ta, tc)


@st.composite
def crowded_scenarios(draw):
    """Many identical servers (2-3 kinds, 5-30 of each) and small tasks, so that Best-Fit's shape
    index holds long runs of equal shapes and the fill ties on H; with the index's bookkeeping
    shrunk (few candidates, a small overflow, a short ring) every path of it runs: merges, full
    rebuilds after the ring wraps, fresh searches, overflow scans."""
    R = draw(st.integers(1, 3))
    servers = [{"capacity": [draw(st.sampled_from([1.0, 2.0, 4.0])) for _ in range(R)],
                "count": draw(st.integers(5, 30))} for _ in range(draw(st.integers(2, 3)))]
    users = []
    for i in range(draw(st.integers(2, 5))):
        dem = [draw(st.sampled_from([0.125, 0.25, 0.5, 0.75])) for _ in range(R)]
        u = {"name": f"u{i}", "demand": dem, "duration": draw(st.sampled_from([0.5, 1.0]))}
        if draw(st.booleans()):
            u.update(backlogged=False, job_share=1.0, tasks_per_job=draw(st.sampled_from([4.0, 20.0])),
                     tasks_law="geometric")
        users.append(u)
    d = {"resources": [f"r{r}" for r in range(R)], "server": servers, "user": users,
         "run": {"allocator": "drfh-best-fit", "duration": draw(st.sampled_from([2.0, 5.0])),
                 "seed": draw(st.integers(0, 99)), "samples": 1}}
    if any(not u.get("backlogged", True) for u in users):
        d["traffic"] = {"kind": "poisson", "rate": 4.0}
    kw = {"cand_m": draw(st.sampled_from([1, 3, 256])), "x_limit": draw(st.sampled_from([0, 2, 16, 1000])),
          "sync_limit": draw(st.sampled_from([0, 8, 10 ** 9])), "log_size": draw(st.sampled_from([8, 64, 4096]))}
    return cluster_from_dict(d), draw(st.sampled_from([{}, {"blocked": "stop"}])), kw


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(crowded_scenarios())
def test_best_fit_shape_index_against_the_reference_on_crowded_clusters(case):
    sc, options, kw = case
    ta, tb, st_ = [], [], {}
    a = simulate(sc, options=options, engine="reference", trace=ta)
    b = simulate_compiled(sc, options, trace=tb, stats=st_, **kw)
    _assert_same(a, b, ta, tb)
    assert st_["index_builds"] > 0


@pytest.mark.nojit
def test_shape_index_search_is_the_scan():
    """Random free matrices (equal shapes and ties included), members changed after the build:
    the shape index's search keeps the M least (H, index) of the scan, before and after a rebuild."""
    from mrfq.fq.cluster.state import FIT_TOL

    rng = np.random.default_rng(5)
    for trial in range(200):
        S, R = int(rng.integers(1, 40)), int(rng.integers(1, 4))
        total = np.full(R, 4.0 * S)
        free = np.round(rng.choice([0.5, 1.0], size=(S, R)) * rng.choice([0.0, 0.25, 0.5, 1.0], size=(S, R)), 3)
        dem = rng.choice([0.05, 0.125, 0.25], size=(1, R))
        thresh = dem - FIT_TOL * total
        D = dem[0] / total
        aa, kref = (D / D[0]).reshape(1, R), np.array([0])

        def shapes():
            with np.errstate(divide="ignore", invalid="ignore"):
                c = free / total
                return np.ascontiguousarray(c / c[:, 0:1])

        q0 = shapes()
        L = 1
        while L < S:
            L *= 2
        xord, ov, xbuf, xpos_of = (np.full(S, -1, np.int64) for _ in range(4))
        xout = np.zeros(S, np.bool_)
        xf, xa, xb = (np.zeros(2 * L * R) for _ in range(3))
        xs = np.zeros(2 * L, np.int64)
        xn, nov = K.x_rebuild(free, q0, S, L, R, xord, 0, xout, ov, 0, xbuf, xf, xa, xb, xs, True, xpos_of)
        changed = rng.choice(S, size=int(rng.integers(0, S + 1)), replace=True)
        for s in changed:
            free[s] = np.round(free[s] * rng.choice([0.5, 1.0]), 3)
        q0[:] = shapes()
        log = changed.astype(np.int64)
        nov = K.x_sync(log, len(log) + 1, len(log), 0, xout, ov, nov, xpos_of, L, R, xf, xa, xb, xs, S)
        M = int(rng.integers(1, 6))
        ok = np.flatnonzero(np.all(free >= thresh[0], axis=1))
        keys = sorted((float(np.abs(aa[0] - q0[s]).sum()), int(s)) for s in ok)
        for rebuild in (False, True):
            if rebuild:
                xn, nov = K.x_rebuild(free, q0, S, L, R, xord, xn, xout, ov, nov, xbuf, xf, xa, xb, xs, False,
                                      xpos_of)
                assert np.all(np.diff(q0[xord[:xn], min(1, R - 1)]) >= 0)
            ch, cs = np.zeros((1, M)), np.zeros((1, M), np.int64)
            cn, thh, ths = np.zeros(1, np.int64), np.zeros(1), np.zeros(1, np.int64)
            K.best_fit_index(free, thresh, total, aa, kref, 0, L, R, np.zeros(256, np.int64), np.zeros(256),
                             np.zeros(8), ch, cs, cn, thh, ths, M, q0, xord, xn, xout, ov, nov, xf, xa, xb, xs)
            assert list(zip(ch[0, :cn[0]].tolist(), cs[0, :cn[0]].tolist())) == keys[:M], trial
            assert (ths[0] >= 0) == (len(keys) >= M)


def test_pairwise_sum_is_numpys():
    rng = np.random.default_rng(3)
    for n in range(1, 33):
        for _ in range(20):
            x = np.abs(rng.standard_normal(n)) * 10.0 ** rng.uniform(-6, 6, n)
            assert K.pairwise_sum(x, n) == x.reshape(1, n).sum(axis=1)[0], n


def test_segment_tree_and_searches_by_hand():
    free = np.array([[1.0, 0.0], [0.5, 0.5], [2.0, 2.0]])
    tmax, tmin, L = K.build_tree(free)
    assert L == 4 and tmax.reshape(-1, 2)[1].tolist() == [2.0, 2.0] and tmin.reshape(-1, 2)[1].tolist() == [0.5, 0.0]
    assert tmax.reshape(-1, 2)[7].tolist() == [-math.inf, -math.inf]  # padding leaf never fits
    thresh = np.array([[0.5, 0.5], [0.75, 0.0], [3.0, 0.0]])
    stack = np.zeros(64, np.int64)
    assert [K.first_fit_tree(tmax, thresh, u, L, 2, stack) for u in range(3)] == [1, 0, -1]
    free[0] = [0.2, 0.2]
    K.tree_update(tmax, tmin, free, 0, L, 2)
    assert K.first_fit_tree(tmax, thresh, 1, L, 2, stack) == 2
    assert tmin.reshape(-1, 2)[1].tolist() == [0.2, 0.2]


def test_best_fit_bound_never_prunes_the_reference_choice():
    """Random free matrices: the branch-and-bound choice equals the scan (numpy's argmin rule)."""
    from mrfq.fq.cluster.drfh import fitness
    from mrfq.fq.cluster.state import FIT_TOL, ClusterState

    rng = np.random.default_rng(11)
    for trial in range(300):
        S, R = int(rng.integers(1, 40)), int(rng.integers(1, 10))
        cap = rng.choice([0.25, 0.5, 1.0], size=(S, R))
        dem = rng.choice([0.0, 0.01, 0.05, 0.125, 0.25], size=(1, R))
        dem[0, 0] = max(dem[0, 0], 0.01)
        st_ = ClusterState.new(cap, dem)
        st_.free = np.round(cap * rng.choice([0.0, 0.25, 0.5, 1.0, rng.uniform()], size=(S, R)), 3)
        total = st_.total
        thresh = dem - FIT_TOL * total
        D = dem[0] / total
        kref = np.array([0])
        aa = (D / D[0]).reshape(1, R)
        tmax, tmin, L = K.build_tree(st_.free)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = st_.free / total
            q0 = c / c[:, 0:1]
        got = K.best_fit_tree(st_.free, tmax, tmin, thresh, total, aa, kref, 0, S, L, R,
                              np.zeros(256, np.int64), np.zeros(256), np.zeros(max(R, 8)), q0)
        ok = np.flatnonzero(st_.fits(0))
        want = int(ok[int(np.argmin(fitness(st_, 0, ok)))]) if ok.size else -1
        assert got == want, trial


def test_cli_engine_option(capsys):
    from mrfq.analysis.cli import main

    outs = {}
    for engine in ("compiled", "reference"):
        assert main(["cluster", "sim", "--preset", "cluster-poisson", "--duration", "260", "--engine", engine,
                     "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        assert d["engine"] == engine
        outs[engine] = {k: v for k, v in d.items() if k not in ("engine", "tasks_per_second", "util_time",
                                                                 "utilisation")}
    assert outs["compiled"] == outs["reference"]
    assert main(["cluster", "sim", "--preset", "hdrf-fig4", "--duration", "60"]) == 0
    assert "(reference engine)" in capsys.readouterr().out  # h-drf has no kernel: routed to the reference
    assert main(["cluster", "sim", "--preset", "drf-nsdi", "--engine", "numba"]) == 2
    err = capsys.readouterr().err
    assert err == "mrfq: error: --engine 'numba': unknown; choose one of compiled, reference\n"
