"""Long-run packet rates against the fluid allocations (docs/allocators.md, docs/schedulers.md) and the SFQ bound."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrfq import flows
from mrfq.router.run import simulate
from conftest import SCALE, scaled


def rates(preset, scheduler, duration=None, **kw):
    sc = flows.load_preset(preset)
    if duration is not None:
        sc = sc.replace(**{"run.duration": duration, "run.warmup": duration / 20})
    return [f.rate for f in simulate(sc, scheduler=scheduler, **kw).flows]


@pytest.mark.parametrize("scheduler,expected,rel", [
    ("drfq", [0.6, 0.6], 1e-3),
    ("drfq-dovetail", [0.6, 0.6], 1e-3),
    ("bmf-wfq", [0.75, 0.5], 1e-3),
    ("pf-sfq", [0.75, 0.5], 2e-2),
])
def test_spec_4_6_long_run_rates(scheduler, expected, rel):
    got = rates("oracle-rates", scheduler, duration=scaled(60000.0, 20000.0))
    assert got == pytest.approx(expected, rel=rel)


def test_drfq_in_service_virtual_time_long_run():
    got = rates("oracle-rates", "drfq", duration=20000.0, virtual_time="in-service")
    assert got == pytest.approx([0.6, 0.6], rel=1e-3)


@pytest.mark.parametrize("preset,scheduler,expected,rel", [
    ("oracle-two-flows", "drfq", [2 / 3, 2 / 3], 2e-3),
    ("oracle-two-flows", "bmf-wfq", [2 / 3, 2 / 3], 2e-3),
    ("oracle-two-flows", "pf-sfq", [2 / 3, 2 / 3], 2e-2),
    ("oracle-three-flows", "drfq", [0.4, 0.4, 0.4], 2e-3),
    ("oracle-three-flows", "bmf-wfq", [2 / 3, 1 / 3, 1 / 3], 2e-3),
    ("oracle-three-flows", "pf-sfq", [2 / 3, 1 / 3, 1 / 3], 3e-2),
])
def test_spec_1_4_oracles(preset, scheduler, expected, rel):
    got = rates(preset, scheduler, duration=scaled(30000.0, 15000.0))
    assert got == pytest.approx(expected, rel=rel)


@pytest.mark.parametrize("scheduler,increment", [("fifo", "cost"), ("bmf-wfq", "packet"), ("pf-sfq", "packet")])
def test_negative_controls_do_not_realise_pf_bmf(scheduler, increment):
    # negative controls (docs/schedulers.md, 'fifo'): per-resource FIFO and SFQ with packet-count
    # increments converge to DRF-like rates (0.6, 0.6 here), not to PF/BMF's (0.75, 0.5).
    sc = flows.load_preset("oracle-rates").replace(**{"router.increment": increment,
                                                       "run.duration": 20000.0})
    got = [f.rate for f in simulate(sc, scheduler=scheduler).flows]
    assert got == pytest.approx([0.6, 0.6], rel=2e-2)
    assert abs(got[0] - 0.75) > 0.1


def test_weights_scale_drf_shares():
    # weighted DRF with a single resource used: rates proportional to weights (a resource nobody uses
    # appended, which changes nothing, so that the runs take the two-resource loops other tests compile)
    sc = flows.from_dict({"resources": ["link", "spare"], "router": {"window": 10},
                          "run": {"duration": 20000.0, "warmup": 500.0},
                          "flow": [{"cost": [1.0, 0.0], "weight": 1.0}, {"cost": [1.0, 0.0], "weight": 3.0}]})
    for s in ("drfq", "drfq-dovetail", "bmf-wfq", "pf-sfq"):
        got = [f.rate for f in simulate(sc, scheduler=s).flows]
        assert got == pytest.approx([0.25, 0.75], rel=5e-3), s


@pytest.mark.parametrize("scheduler", ["fq-single", "fifo"])
def test_fq_single_fair_on_the_link_only(scheduler):
    """Flows (0.2, 1) and (0.1, 0.5), window 30: the link is the only bottleneck (the CPU carries
    at most 1/5 of the link's load).  SFQ of the link's time alone gives each flow half the
    link, i.e. the BMF (= DRF = PF) rates (0.5, 1.0), computed here by analysis.allocations;
    FIFO everywhere gives equal packet rates (2/3, 2/3), which the same check must reject."""
    from mrfq.analysis.allocations import bmf

    a = [[0.2, 1.0], [0.1, 0.5]]
    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"window": 30, "fq_resource": "link"},
                          "run": {"duration": 30000.0, "warmup": 1000.0},
                          "flow": [{"cost": a[0]}, {"cost": a[1]}]})
    r = simulate(sc, scheduler=scheduler)
    got = [f.rate for f in r.flows]
    fair = list(bmf(np.array(a)).phi)
    assert fair == pytest.approx([0.5, 1.0], rel=1e-9)
    if scheduler == "fq-single":
        assert got == pytest.approx(fair, rel=2e-3)
    else:
        assert got == pytest.approx([2 / 3, 2 / 3], rel=2e-3)
        assert got != pytest.approx(fair, rel=0.1)
    assert r.resources[1].utilization == pytest.approx(1.0, abs=1e-3)


def test_finite_flows_complete_and_rates_add_up():
    # a finite flow of 100 packets alone at (1, 0.5): window 30, bottleneck cpu, departs at k + 0.5
    sc = flows.from_dict({"resources": ["cpu", "link"], "run": {"duration": 1000.0},
                          "flow": [{"cost": [1.0, 0.5], "packets": 100, "start": 3.0}]})
    r = simulate(sc, scheduler="drfq")
    assert r.flows[0].completion_time == 100.5
    assert r.flows[0].packets == 100
    assert r.resources[0].services == 100 and r.resources[1].services == 100


def test_rtt_delays_admission():
    # one flow, N = 1, s = (1, 1), rtt = 2: a packet every 1 + 1 + 2 = 4 time units
    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"window": 1, "rtt": 2.0},
                          "run": {"duration": 4000.0}, "flow": [{"cost": [1.0, 1.0]}]})
    r = simulate(sc, scheduler="bmf-wfq", trace=10)
    assert [row[0] for row in r.trace.rows(resource=0)[:4]] == [0.0, 4.0, 8.0, 12.0]
    assert r.flows[0].rate == pytest.approx(0.25, rel=1e-3)


def _service_in(trace, flow, t1, t2):
    w = 0.0
    for i in range(len(trace.start)):
        if trace.flow[i] == flow:
            a, b = max(trace.start[i], t1), min(trace.end[i], t2)
            if b > a:
                w += b - a
    return w


@settings(deadline=None, max_examples=max(5, int(25 * SCALE)))
@given(
    costs=st.lists(st.sampled_from([0.25, 0.5, 1.0, 1.5, 2.0]), min_size=2, max_size=3),
    weights=st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0]), min_size=3, max_size=3),
    window=st.integers(1, 4),
    t1=st.floats(0.0, 40.0), length=st.floats(0.5, 40.0),
)
def test_sfq_fairness_bound(costs, weights, window, t1, length):
    """[SFQ] bound on one resource: |W_f/r_f - W_m/r_m| <= l_f/r_f + l_m/r_m for backlogged f, m."""
    n = len(costs)
    sc = flows.from_dict({"resources": ["link", "spare"], "router": {"window": window}, "run": {"duration": 100.0},
                          "flow": [{"cost": [c, 0.0], "weight": weights[i]} for i, c in enumerate(costs)]})
    r = simulate(sc, scheduler="bmf-wfq", trace=10000)
    t2 = t1 + length
    for f in range(n):
        for m in range(f + 1, n):
            wf = _service_in(r.trace, f, t1, t2) / weights[f]
            wm = _service_in(r.trace, m, t1, t2) / weights[m]
            assert abs(wf - wm) <= costs[f] / weights[f] + costs[m] / weights[m] + 1e-9


def test_idle_cpu_drfq_degrades_to_fifo_dovetail_keeps_drf():
    """The idle-CPU probe: (0.2, 1) and (0.1, 0.5), link the only bottleneck, CPU mostly idle.

    DRF gives (0.5, 1.0).  Memoryless DRFQ with either virtual-time rule gives
    equal packet rates (2/3, 2/3), i.e. FIFO: the idle CPU starts every packet
    at once, so V runs ahead to the newest tag and every admission is tagged
    V (the known limit of docs/schedulers.md, 'drfq').  Dovetailing keeps a virtual time per
    resource and realises DRF, as do BMF-WFQ and PF-SFQ (BMF = PF = DRF here).
    """
    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"window": 30},
                          "run": {"duration": 60000.0, "warmup": 2000.0},
                          "flow": [{"name": "a", "cost": [0.2, 1.0]}, {"name": "b", "cost": [0.1, 0.5]}]})
    for vt in ("started", "in-service"):
        got = [f.rate for f in simulate(sc, scheduler="drfq", virtual_time=vt).flows]
        assert got == pytest.approx([2 / 3, 2 / 3], rel=2e-3), vt
    for s in ("drfq-dovetail", "bmf-wfq", "pf-sfq"):
        got = [f.rate for f in simulate(sc, scheduler=s).flows]
        assert got == pytest.approx([0.5, 1.0], rel=2e-3), s


def test_drfq_equal_rates_where_a_later_resource_is_drfs_bottleneck():
    """(0.5, 1), (1, 0.25), (0.25, 0.5), window 30: DRF 0.444 / 0.444 / 0.889 (the link binds, the CPU
    0.889 busy).  Both DRFQ variants give 0.571 each with both resources saturated; mr3 reaches DRF
    and bmf-wfq BMF (docs/schedulers.md, 'drfq')."""
    from mrfq.analysis.allocations import bmf, drf

    costs = [[0.5, 1.0], [1.0, 0.25], [0.25, 0.5]]
    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"window": 30},
                          "run": {"duration": 20000.0, "warmup": 2000.0},
                          "flow": [{"name": n, "cost": c} for n, c in zip("abc", costs)]})
    for s in ("drfq", "drfq-dovetail"):
        r = simulate(sc, scheduler=s)
        assert [f.rate for f in r.flows] == pytest.approx([4 / 7] * 3, rel=2e-3), s
    assert [f.rate for f in simulate(sc, scheduler="mr3").flows] == pytest.approx(drf(np.array(costs)).phi, rel=2e-3)
    assert [f.rate for f in simulate(sc, scheduler="bmf-wfq").flows] == pytest.approx(bmf(np.array(costs)).phi,
                                                                                    rel=2e-3)


def test_dovetail_reaches_drf_when_flows_skip_resources():
    """a = (1, 0), b = (0, 1), c = (0.5, 1): weighted DRF gives 0.75 / 0.5 / 0.5 (the link saturates
    at dominant share 0.5 for b and c; a then fills the CPU).  Dovetailing DRFQ's default
    (router.skipped = "virtual-time": a skipped resource enters the key with its virtual time) reaches
    it; with "ignore" the CPU's virtual time runs ahead of the link's and c starves
    (docs/schedulers.md, 'drfq-dovetail')."""
    from mrfq.analysis.allocations import drf

    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"scheduler": "drfq-dovetail", "window": 30},
                          "run": {"duration": 20000.0, "warmup": 2000.0, "seed": 1},
                          "flow": [{"name": "a", "cost": [1.0, 0.0]}, {"name": "b", "cost": [0.0, 1.0]},
                                   {"name": "c", "cost": [0.5, 1.0]}]})
    want = drf(np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 1.0]])).phi
    assert want == pytest.approx([0.75, 0.5, 0.5])
    got = [f.rate for f in simulate(sc).flows]
    assert got == pytest.approx(want, rel=2e-3)
    starved = [f.rate for f in simulate(sc.replace(**{"router.skipped": "ignore"}), specialise=False).flows]
    assert starved[2] < 0.1 and sum(starved) > 1.5, starved


@pytest.mark.slow
def test_variable_costs_per_resource_schedulers_track_bmf_and_pf():
    """Per-packet costs drawn from IMIX-like sizes: BMF-WFQ and PF-SFQ against BMF/PF on mean costs."""
    from mrfq.analysis.allocations import bmf, pf

    sc = flows.load_preset("middlebox-mix").replace(**{"run.duration": scaled(50000.0, 20000.0)})
    a = np.array([f.mean_cost() for f in sc.flows])
    got = np.array([f.rate for f in simulate(sc, scheduler="bmf-wfq").flows])
    assert np.allclose(got, bmf(a).phi, rtol=0.02), got
    got = np.array([f.rate for f in simulate(sc, scheduler="pf-sfq").flows])
    assert np.allclose(got, pf(a).phi, rtol=0.04), got
