"""The relative fairness bound a run reaches (router/rfb.py): against the plain-Python oracle of
analysis.theory_bounds on always-backlogged flows, against the SimPy reference (equal, bit for bit),
by hand, and the cases where it is not computed."""

from __future__ import annotations

import numpy as np
import pytest

from mrfq import flows
from mrfq.analysis import theory_bounds as tb
from mrfq.router import rfb
from mrfq.router.reference import simulate_reference
from mrfq.router.run import simulate


def oracle(r, dominant, weights, warmup):
    out = tb.relative_fairness(r.trace, list(range(len(weights))), dominant, dict(enumerate(weights)), warmup,
                               r.t_end)
    return max(out.values()), max(out, key=out.get)


@pytest.mark.parametrize("scheduler,weights,duration", [("drfq", (1.0, 1.0, 1.0), 400.0),
                                                        ("mr3", (1.0, 2.0, 1.0), 2000.0)])
def test_equals_the_oracle_on_always_backlogged_flows(scheduler, weights, duration):
    """Three greedy flows on a CPU and a link (theory_bounds.two_resources); the long run logs more
    services than the loop's buffer holds, so the flush runs inside the loop too."""
    sc = tb.two_resources(scheduler, duration, weights=weights)
    sc["run"]["warmup"] = 50.0
    r = simulate(flows.from_dict(sc), trace=10_000_000)
    if duration > 1000:
        assert r.services > 2 * rfb.BUF
    want, pair = oracle(r, {0: 0, 1: 1, 2: 0}, weights, 50.0)
    got = r.rfb
    assert got.flows == 3 and got.reason is None
    assert abs(got.raw - want) < 1e-9
    assert got.pair == tuple("abc"[k] for k in pair)
    assert got.unit == max(1000.0 * max(f["per_byte"]) / f["weight"] for f in sc["flow"])
    assert got.value == got.raw / got.unit


def test_a_late_flow_against_the_oracle():
    """A flow that starts late: its pairs count from its start (the oracle over that interval), the
    others' pair from warm-up; no service before a flow's first counts for it."""
    sc = tb.two_resources("drfq", 300.0)
    sc["flow"][2]["start"] = 40.0
    sc["run"]["warmup"] = 10.0
    r = simulate(flows.from_dict(sc), trace=1_000_000)
    w = {0: 1.0, 1: 1.0, 2: 1.0}
    dom = {0: 0, 1: 1, 2: 0}
    want = {**tb.relative_fairness(r.trace, [0, 1], dom, w, 10.0, r.t_end),
            **tb.relative_fairness(r.trace, [0, 1, 2], dom, w, 40.0, r.t_end)}
    want[(0, 1)] = tb.relative_fairness(r.trace, [0, 1], dom, w, 10.0, r.t_end)[(0, 1)]
    assert abs(r.rfb.raw - max(want.values())) < 1e-9
    assert r.rfb == simulate_reference(flows.from_dict(sc)).rfb


@pytest.mark.nojit
def test_round_robin_by_hand():
    """Two equal flows, one resource, one packet each at a time: services alternate a, b, a, ...;
    X_a - X_b runs between 0 and 1 packet, so the bound reached is one packet."""
    sc = flows.from_dict({"resources": ["link"], "router": {"scheduler": "drfq", "window": 1},
                          "run": {"duration": 50.0},
                          "flow": [{"name": "a", "cost": [2.0]}, {"name": "b", "cost": [2.0]}]})
    r = simulate(sc, trace=1000)
    assert [int(f) for f in r.trace.flow[:4]] == [0, 1, 0, 1]
    assert (r.rfb.value, r.rfb.raw, r.rfb.unit, r.rfb.pair) == (1.0, 2.0, 2.0, ("a", "b"))


def test_two_flows_in_lockstep_reach_zero():
    """(1/2, 1) and (1, 1/2) under drfq: the CPU serves b while the link serves a, then the other
    way round, so X_a and X_b grow together and never part: 0 L, still reported with its pair."""
    from mrfq.analysis.api import load

    sc = load("oracle-two-flows")
    r = simulate(sc, duration=3000.0)
    assert (r.rfb.value, r.rfb.pair, r.rfb.reason) == (0.0, ("a", "b"), None)
    assert simulate_reference(sc, duration=3000.0).rfb == r.rfb


TWO_RES = tb.two_resources("drfq", 60.0, weights=(1.0, 2.0, 1.0))


@pytest.mark.parametrize("sc", [
    dict(TWO_RES, run={"duration": 60.0, "warmup": 5.0, "seed": 3}),
    # finite static flows, one starting late, and a class: periods end and start
    {"resources": ["cpu", "link"], "router": {"scheduler": "bmf-wfq", "window": 3},
     "run": {"duration": 40.0, "warmup": 2.0, "seed": 5, "max_flows": 100},
     "flow": [{"name": "x", "cost": [1.0, 0.5], "packets": 20}, {"name": "y", "cost": [0.25, 1.0], "start": 3.0},
              {"name": "z", "cost": [0.5, 0.5], "weight": 2.0, "packets": 7, "start": 1.5}],
     "class": [{"name": "k", "cost": [0.5, 0.25], "rate": 0.3, "mean_packets": 3.0}]},
    # open-loop sources: backlogged only while they have packets in the router
    tb.one_resource("fq-single", 80.0, rate=0.5),
], ids=["two-resources", "finite-and-class", "open-loop"])
def test_engine_equals_reference(sc):
    s = flows.from_dict(sc)
    eng = simulate(s)
    ref = simulate_reference(s)
    assert eng.rfb == ref.rfb and eng.rfb.value is not None
    assert simulate(s, specialise=False).rfb == eng.rfb


def test_not_computed_and_why():
    sc = flows.from_dict(dict(TWO_RES, run={"duration": 20.0}))
    off = simulate(sc, record_delays=False).rfb
    assert off.value is None and "recording off" in off.reason
    on = simulate(sc)
    alone = simulate(sc, record_fairness=False)
    assert alone.rfb.value is None and "record_fairness=False" in alone.rfb.reason
    assert alone.delays == on.delays and alone.services == on.services and on.rfb.value is not None
    # one resource used ("spare", unused, changes nothing: the two-resource loops other tests compile)
    one = flows.from_dict({"resources": ["link", "spare"], "run": {"duration": 10.0},
                           "flow": [{"name": "a", "cost": [1.0, 0.0]}]})
    assert "needs a pair" in simulate(one).rfb.reason
    many = flows.from_dict({"resources": ["link", "spare"], "run": {"duration": 5.0},
                            "flow": [{"name": "a", "cost": [1.0, 0.0], "count": rfb.RFB_MAX + 1}]})
    r = simulate(many)
    assert r.rfb.value is not None and r.rfb.flows == rfb.RFB_SUBSET
    assert r.rfb.reason.startswith(f"over {rfb.RFB_SUBSET} of the {rfb.RFB_MAX + 1} static flows")
    assert simulate(many, record_delays=False).services == r.services


@pytest.mark.nojit
def test_covered_flows_above_the_limit_take_each_table_in_turn():
    spec = np.repeat(np.arange(3), [50, 10, 40])  # three tables, ids by table
    cov = rfb.covered(spec)
    assert len(cov) == rfb.RFB_SUBSET
    # the first flow of every table, then the second, ...: 6 from the first table, 5 and 5 from the others
    assert cov.tolist() == sorted([0, 50, 60, 1, 51, 61, 2, 52, 62, 3, 53, 63, 4, 54, 64, 5])
    assert rfb.covered(spec[:rfb.RFB_MAX]).tolist() == list(range(rfb.RFB_MAX))


def test_above_the_limit_engine_equals_reference():
    """90 flows in three counted tables: the bound and the share series over the 16 covered flows."""
    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"scheduler": "drfq", "window": 2},
                          "run": {"duration": 30.0, "warmup": 3.0, "flow_order": "round-robin"},
                          "flow": [{"name": "x", "cost": [1.0, 0.5], "count": 30},
                                   {"name": "y", "cost": [0.25, 1.0], "count": 30},
                                   {"name": "z", "cost": [0.5, 0.5], "weight": 2.0, "count": 30}]})
    eng = simulate(sc, share_window=3.0)
    ref = simulate_reference(sc, share_window=3.0)
    assert eng.rfb == ref.rfb and eng.rfb.value is not None and eng.rfb.flows == rfb.RFB_SUBSET
    assert np.array_equal(eng.share_series.x, ref.share_x)
    assert eng.share_series.flows[:3] == ["x.0", "y.0", "z.0"] and len(eng.share_series.flows) == rfb.RFB_SUBSET


@pytest.mark.nojit
@pytest.mark.parametrize("n,J", [(5, 2), (4, 3)])
def test_the_twin_equals_the_kernel_on_random_logs(n, J):
    """Random logs of services and backlog changes replayed by the compiled flush and the plain-Python
    twin, with a share series: equal state, bit for bit."""
    rng = np.random.default_rng(7)
    w = rng.choice([0.5, 1.0, 2.0], n)
    dom = rng.integers(J, size=n)
    log, f, g, ser = rfb.allocate(n, J, w, 3.0, dom, 2.5, 4000)
    twin = rfb.RfbPy(n, J, w, 3.0, dom, 2.5, 4000)
    W = rfb.REC_W

    def put(k, t, end, code):
        log[W * k], log[W * k + 1], log[W * k + 2] = t, end, code

    busy = [0.0] * J  # each resource serves one packet at a time
    for i in range(n):
        put(i, 0.0, 0.0, (i << 2) | rfb.K_BACKLOG)
        twin.record(0.0, 0.0, i, rfb.K_BACKLOG)
    k = n
    t = 0.0
    backlogged = [True] * n
    for _ in range(3000):
        t += float(rng.choice([0.0, 0.25, 0.5]))
        i = int(rng.integers(n))
        j = int(dom[i])
        if busy[j] <= t:
            end = t + float(rng.choice([0.25, 1.0, 1.5]))
            put(k, t, end, i << 2)
            twin.record(t, end, i, rfb.K_SERVICE)
            busy[j] = end
            k += 1
        if rng.random() < 0.02:  # a flow's backlog ends or starts again
            q = int(rng.integers(n))
            kind = rfb.K_IDLE if backlogged[q] else rfb.K_BACKLOG
            backlogged[q] = not backlogged[q]
            put(k, t, t, (q << 2) | kind)
            twin.record(t, t, q, kind)
            k += 1
        if k >= rfb.BUF:
            rfb.flush(log, k, f, g, ser)
            k = 0
    rfb.flush(log, k, f, g, ser)
    rfb.finish(f, g, ser, t + 5.0)
    twin.finish(t + 5.0)
    assert np.array_equal(f, twin.f) and np.array_equal(g, twin.g) and np.array_equal(ser, twin.ser)
    assert rfb.result(f, g)[0] > 0.0
    x = rfb.samples(g, ser)
    assert x.shape == (int((t + 5.0) // 2.5) + 1, n) and (np.diff(x, axis=0) >= 0).all()


def test_cli_reports_it(capsys, tmp_path):
    import json

    from mrfq.analysis.cli import main

    p = tmp_path / "s.toml"
    p.write_text('resources = ["link"]\n[router]\nscheduler = "drfq"\nwindow = 1\n[run]\nduration = 50.0\n'
                 '[[flow]]\nname = "a"\ncost = [2.0]\n[[flow]]\nname = "b"\ncost = [2.0]\n')
    assert main(["run", str(p), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["rfb"]
    assert (d["value"], d["raw"], d["unit"], d["pair"], d["flows"], d["reason"]) == (1.0, 2.0, 2.0, ["a", "b"], 2, None)
    assert main(["run", str(p)]) == 0
    assert "relative fairness reached: 1 L (flows a and b" in capsys.readouterr().out
    assert main(["run", "--preset", "dynamic-small", "--duration", "300", "--warmup", "30"]) == 0
    assert "relative fairness: not computed: 0 static flows" in capsys.readouterr().out


def test_share_series_against_the_trace_and_the_reference():
    """Each flow's X = S / w at the multiples of the window: the service at its dominant resource cut
    at the boundary, from the service trace; the SimPy reference's twin gives the same floats."""
    sc = flows.from_dict(dict(TWO_RES, run={"duration": 60.0, "warmup": 5.0, "seed": 3}))
    r = simulate(sc, trace=100_000, share_window=2.5)
    ss = r.share_series
    assert ss.flows == ["a", "b", "c"] and ss.x.shape == (25, 3)
    w = np.array([1.0, 2.0, 1.0])
    dom = [0, 1, 0]
    tr = r.trace
    for k in range(25):
        b = 2.5 * k
        for i in range(3):
            m = (tr.flow == i) & (tr.resource == dom[i])
            served = np.clip(np.minimum(tr.end[m], b) - tr.start[m], 0.0, None).sum()
            assert abs(ss.x[k, i] - served / w[i]) < 1e-9, (k, i)
    sh = ss.share
    assert sh.shape == (24, 3) and (sh >= -1e-12).all()
    # the two flows whose dominant resource is the CPU never get more than all of it together
    assert (sh[:, 0] + sh[:, 2] <= 1.0 + 1e-9).all() and (sh[:, 1] <= 1.0 + 1e-9).all()
    ref = simulate_reference(sc, share_window=2.5)
    assert np.array_equal(ref.share_x, ss.x)
    # written to an open file or to a path, the same lines
    import io
    import tempfile
    from pathlib import Path

    buf = io.StringIO()
    assert ss.write_csv(buf) == 24
    with tempfile.TemporaryDirectory() as d:
        assert ss.write_csv(Path(d) / "s.csv") == 24 and ss.write_csv(str(Path(d) / "t.csv")) == 24
        assert (Path(d) / "s.csv").read_text() == (Path(d) / "t.csv").read_text() == buf.getvalue()
    assert buf.getvalue().splitlines()[0] == "window_start,window_end,flow,share" and buf.getvalue().count("\n") == 73


def test_share_series_cli_and_its_errors(capsys, tmp_path):
    import json

    from mrfq.analysis.cli import main

    p = tmp_path / "s.toml"
    p.write_text('resources = ["link"]\n[router]\nscheduler = "drfq"\nwindow = 1\n[run]\nduration = 50.0\n'
                 '[[flow]]\nname = "a"\ncost = [2.0]\n[[flow]]\nname = "b"\ncost = [2.0]\n')
    out = tmp_path / "share.csv"
    assert main(["run", str(p), "--share-series", str(out), "--share-window", "4"]) == 0
    assert "share series: 12 windows of 4 time units x 2 flows" in capsys.readouterr().out
    lines = out.read_text().splitlines()
    assert lines[0] == "window_start,window_end,flow,share" and len(lines) == 1 + 12 * 2
    # one packet of 2 each in turn: each flow gets half of every window of 4
    assert {ln.split(",")[3] for ln in lines[1:]} == {"0.5"}
    assert main(["run", str(p), "--share-window", "4"]) == 2
    assert "--share-window: give --share-series" in capsys.readouterr().err
    one = tmp_path / "one.toml"
    one.write_text('resources = ["link"]\n[run]\nduration = 10.0\n[[flow]]\nname = "a"\ncost = [1.0]\n')
    assert main(["run", str(one), "--share-series", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--share-series: the scenario has 1 static flow;" in err
    assert out.read_text().splitlines() == lines  # the file already there is unchanged
    assert main(["run", str(p), "--share-series", str(out), "--share-window", "1e9"]) == 2
    err = capsys.readouterr().err
    assert "--share-window 1e+09: wider than the run (50 time units), so no whole window; choose at most 50" in err
    assert out.read_text().splitlines() == lines
    assert main(["run", str(p), "--no-rfb", "--json"]) == 0
    assert "record_fairness=False" in json.loads(capsys.readouterr().out)["rfb"]["reason"]


def test_open_loop_backlog_periods_against_the_trace_oracle():
    """A finite Poisson source beside two greedy flows: its backlog periods, rebuilt from the
    packets' arrivals and departures (a period ends at a departure that leaves none inside and a
    new one starts at the next arrival, even at the same instant), and the oracle over each pair's
    joint periods after warm-up give the bound the run reports."""
    sc = flows.from_dict({
        "resources": ["cpu", "link"], "router": {"scheduler": "drfq", "window": 5},
        "run": {"duration": 700.0, "warmup": 20.0, "seed": 4},
        "flow": [{"name": "a", "cost": [1.0, 0.25]}, {"name": "b", "cost": [0.25, 1.0]},
                 {"name": "c", "cost": [0.5, 0.5], "arrival": {"law": "poisson", "rate": 0.4},
                  "buffer": 50, "packets": 200}]})
    r = simulate(sc, trace=1_000_000)
    T, warm = r.t_end, 20.0
    d = r.departures
    m = np.asarray(d.flow) == 2
    pres = sorted(zip(np.asarray(d.arrived)[m].tolist(), np.asarray(d.time)[m].tolist()))
    periods = []
    for a, e in pres:  # merge overlapping presences; one that starts at or after the end is a new period
        if periods and a < periods[-1][1]:
            periods[-1][1] = max(periods[-1][1], e)
        else:
            periods.append([a, e])
    assert len(periods) > 10 and periods[-1][1] < T  # every packet left before the end
    dom, w = {0: 0, 1: 1, 2: 0}, {0: 1.0, 1: 1.0, 2: 1.0}
    want = tb.relative_fairness(r.trace, [0, 1], dom, w, warm, T)
    for i in (0, 1):
        for u, v in periods:
            if v > warm:
                got = tb.relative_fairness(r.trace, [i, 2], dom, w, max(u, warm), v)[(i, 2)]
                want[(i, 2)] = max(want.get((i, 2), 0.0), got)
    best = max(want, key=want.get)
    assert abs(r.rfb.raw - want[best]) < 1e-9, (r.rfb, want)
    assert r.rfb.pair == tuple("abc"[k] for k in best)
    assert simulate_reference(sc).rfb == r.rfb
