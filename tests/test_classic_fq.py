"""SCFQ (fq/scfq.py) and Virtual Clock (fq/virtual_clock.py): hand-computed traces on one link, SCFQ
against SFQ (fq-single) where their definitions differ, the options and their refusals.

The engine-vs-SimPy cross-check on random scenarios and the metamorphic checks pick both up from
the registry (tests/test_reference.py, tests/test_metamorphic.py).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrfq import flows
from mrfq.flows.errors import ScenarioError
from mrfq.router.reference import ReferenceRouter, simulate_reference, trace_tuples
from test_reference import scenarios

pytestmark = pytest.mark.nojit
A, B, C = 0, 1, 2   # flow ids


def link(scheduler, fl, window=4, duration=20.0, **router):
    return flows.from_dict({"resources": ["link"], "router": {"scheduler": scheduler, "window": window, **router},
                            "run": {"duration": duration}, "flow": fl})


def both(sc):
    """The service trace (start, end, resource, flow, seq), the engine's and the reference's, equal."""
    from mrfq.router.run import simulate

    ref = simulate_reference(sc).trace
    assert trace_tuples(simulate(sc, trace=500).trace) == ref
    return ref


#: three flows on one link, every packet admitted at its flow's start (window 4):
#: a: s = 1, w = 1, 3 packets from 0;  b: s = 2, w = 2, 2 packets from 0;  c: s = 1, w = 2, 2 packets from 1.5
THREE = [{"name": "a", "cost": [1.0], "weight": 1.0, "packets": 3},
         {"name": "b", "cost": [2.0], "weight": 2.0, "packets": 2},
         {"name": "c", "cost": [1.0], "weight": 2.0, "packets": 2, "start": 1.5}]


def test_scfq_trace_by_hand():
    """SCFQ, increments s / w: a 1, b 1, c 1/2.  F = max(F_prev, v) + s / w, v = F of the packet in service.

    0    a: F = 1, 2, 3;  b: F = 1, 2.  a1 and b1 tie at 1: a (smaller id).   a1 [0, 1], v = 1
    1    heads a2 (2), b1 (1).                                                  b1 [1, 3], v = 1
    1.5  c arrives while b1 (F = 1) is in service: c1 = max(0, 1) + 1/2 = 1.5, c2 = 2
    3    heads a2 (2), b2 (2), c1 (1.5).                                        c1 [3, 4], v = 1.5
    4    a2, b2, c2 all at 2: a.                                                a2 [4, 5], v = 2
    5    b2 (2), c2 (2): b.                                                     b2 [5, 7]
    7    a3 (3), c2 (2).                                                        c2 [7, 8];  a3 [8, 9]
    """
    assert both(link("scfq", THREE)) == [
        (0.0, 1.0, 0, A, 1), (1.0, 3.0, 0, B, 1), (3.0, 4.0, 0, C, 1), (4.0, 5.0, 0, A, 2),
        (5.0, 7.0, 0, B, 2), (7.0, 8.0, 0, C, 2), (8.0, 9.0, 0, A, 3)]


def test_scfq_against_sfq_on_a_newly_backlogged_flow():
    """The same flows under fq-single (SFQ: start tags S = max(V, F_prev), V = the *start* tag in
    service): at 1.5 b1 (S = 0, F = 1) is in service, so c is tagged from V = 0: c1 S = 0, c2 S = 1/2,
    below a2's and b2's S = 1, and c sends both packets before them (c1 [3, 4], c2 [4, 5]).  Under
    SCFQ c is tagged from v = b1's *finish* tag 1 (c1 F = 1.5, c2 F = 2): c2 ties with a2 and b2 and
    goes after them.  The one difference is the tag a newly backlogged flow starts from."""
    sfq = both(link("fq-single", THREE))
    assert sfq == [
        (0.0, 1.0, 0, A, 1), (1.0, 3.0, 0, B, 1), (3.0, 4.0, 0, C, 1), (4.0, 5.0, 0, C, 2),
        (5.0, 6.0, 0, A, 2), (6.0, 8.0, 0, B, 2), (8.0, 9.0, 0, A, 3)]
    scfq = both(link("scfq", THREE))
    assert [r for r in scfq if r[3] != C] != [r for r in sfq if r[3] != C]
    # before c arrives, both serve the same packets at the same times
    assert [r for r in scfq if r[0] < 1.5] == [r for r in sfq if r[0] < 1.5]
    # with every flow backlogged from the same instant SCFQ's finish tags are SFQ's start tags plus
    # each packet's own increment: on a, b alone (no late flow) the orders agree
    ab = THREE[:2]
    assert both(link("scfq", ab)) == both(link("fq-single", ab))


def test_virtual_clock_trace_by_hand():
    """Virtual Clock on the same flows; W = 1 + 2 + 2 = 5 (the default, the sum of the weights), so
    r = w / 5 and s / r = (s / w) * 5: a 5, b 5, c 2.5.  aux = max(t, aux) + s / r.

    0    a: 5, 10, 15;  b: 5, 10.  a1, b1 tie at 5: a.                 a1 [0, 1];  b1 [1, 3]
    1.5  c: aux = max(1.5, 0) + 2.5 = 4, then 6.5 (real time, not a virtual time)
    3    c1 (4) < a2, b2 (10).                                          c1 [3, 4];  c2 (6.5) [4, 5]
    5    a2, b2 tie at 10: a.                                           a2 [5, 6];  b2 [6, 8];  a3 [8, 9]
    """
    assert both(link("virtual-clock", THREE)) == [
        (0.0, 1.0, 0, A, 1), (1.0, 3.0, 0, B, 1), (3.0, 4.0, 0, C, 1), (4.0, 5.0, 0, C, 2),
        (5.0, 6.0, 0, A, 2), (6.0, 8.0, 0, B, 2), (8.0, 9.0, 0, A, 3)]


#: a alone from 0 (6 packets, s = 1), b from 3 (2 packets, s = 1), weights 1, window 6
AHEAD = [{"name": "a", "cost": [1.0], "packets": 6}, {"name": "b", "cost": [1.0], "packets": 2, "start": 3.0}]


def test_virtual_clock_punishes_a_flow_that_ran_ahead():
    """[VC]: a flow that used the idle link beyond its rate waits for real time to catch up.

    W = 2, s / r = 2.  a's stamps 2, 4, ..., 12 (all at 0): a1, a2, a3 [0, 3].  At 3 b arrives:
    b1 = 3 + 2 = 5, b2 = 7, both below a4's 8: b1 [3, 4], b2 [4, 5], then a4, a5, a6 [5, 8].
    Under SCFQ (increments 1, v = 3 at 3: a3's finish tag) b1 = 4 ties a4 = 4 (a first), b2 = 5
    ties a5: the two alternate, a4 [3, 4], b1 [4, 5], a5 [5, 6], b2 [6, 7], a6 [7, 8]."""
    vc = both(link("virtual-clock", AHEAD, window=6))
    assert [(r[0], r[3], r[4]) for r in vc] == [
        (0.0, A, 1), (1.0, A, 2), (2.0, A, 3), (3.0, B, 1), (4.0, B, 2), (5.0, A, 4), (6.0, A, 5), (7.0, A, 6)]
    alternate = [(0.0, A, 1), (1.0, A, 2), (2.0, A, 3), (3.0, A, 4), (4.0, B, 1), (5.0, A, 5), (6.0, B, 2),
                 (7.0, A, 6)]
    assert [(r[0], r[3], r[4]) for r in both(link("scfq", AHEAD, window=6))] == alternate
    # total_weight = 1: each flow reserves the whole link (s / r = 1): b1 = 4, b2 = 5, as under SCFQ
    assert [(r[0], r[3], r[4]) for r in both(link("virtual-clock", AHEAD, window=6, total_weight=1.0))] == alternate


def test_virtual_clock_reserved_rates_by_hand():
    """A flow's own ``rate``: s / r_i.  AHEAD with a's rate 1/4 (s / r = 4): a's stamps 4, 8, ..., 24
    (all at 0), a1, a2, a3 [0, 3] alone.

    b's rate 1/2 (s / r = 2): at 3 b1 = 3 + 2 = 5, b2 = 7, both below a4's 16: b1 [3, 4], b2 [4, 5],
    then a4, a5, a6 [5, 8].  b's rate 1/8 (s / r = 8): b1 = 11, b2 = 19: b1 (11) [3, 4], a4 (16)
    [4, 5], b2 (19) [5, 6], a5 (20) [6, 7], a6 (24) [7, 8]."""
    fl = [dict(AHEAD[0], rate=0.25), dict(AHEAD[1], rate=0.5)]
    assert [(r[0], r[3], r[4]) for r in both(link("virtual-clock", fl, window=6))] == [
        (0.0, A, 1), (1.0, A, 2), (2.0, A, 3), (3.0, B, 1), (4.0, B, 2), (5.0, A, 4), (6.0, A, 5), (7.0, A, 6)]
    fl = [dict(AHEAD[0], rate=0.25), dict(AHEAD[1], rate=0.125)]
    assert [(r[0], r[3], r[4]) for r in both(link("virtual-clock", fl, window=6))] == [
        (0.0, A, 1), (1.0, A, 2), (2.0, A, 3), (3.0, B, 1), (4.0, A, 4), (5.0, B, 2), (6.0, A, 5), (7.0, A, 6)]


def test_reserved_rates_set_the_long_run_shares():
    """Backlogged flows share the link in proportion to their reserved rates, whatever their
    weights; a flow without ``rate`` reserves w_i / W; both baselines that reserve rates agree."""
    from mrfq.router.run import simulate

    fl = [{"name": "a", "cost": [1.0], "rate": 0.5, "weight": 3.0}, {"name": "b", "cost": [1.0], "rate": 0.1},
          {"name": "c", "cost": [1.0], "weight": 1.0}]
    for scheduler in ("virtual-clock", "wf2q-plus"):
        sc = link(scheduler, fl, window=8, duration=6000.0, total_weight=4.0)   # c: r = 1 / 4
        got = [f.rate for f in simulate(sc).flows]
        want = [0.5 / 0.85, 0.1 / 0.85, 0.25 / 0.85]
        assert got == pytest.approx(want, rel=2e-3), scheduler


def test_reserved_rate_refused_where_unused():
    sc = link("drr", [{"name": "a", "cost": [1.0], "rate": 0.5}])
    from mrfq.router.run import simulate

    with pytest.raises(ScenarioError, match=r"flow\[0\]\.rate: a reserved rate, which scheduler 'drr' does not use"):
        simulate(sc)
    assert simulate(sc, scheduler="drfq").flows[0].packets > 0     # an override leaves it unused
    for bad in (0.0, 1.5, -0.1, "half"):
        with pytest.raises(ScenarioError, match=r"flow\[0\]\.rate"):
            link("virtual-clock", [{"name": "a", "cost": [1.0], "rate": bad}])


def test_virtual_clock_default_total_weight_counts_tables_and_classes():
    """W = each [[flow]] table's count x weight + each class's weight once."""
    from mrfq.fq.registry import resolve

    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"scheduler": "virtual-clock"},
                          "flow": [{"name": "a", "cost": [1, 1], "weight": 2.0, "count": 3},
                                   {"name": "b", "cost": [1, 1], "weight": 0.5}],
                          "class": [{"name": "k", "cost": [1, 1], "weight": 3.0, "rate": 0.1,
                                             "mean_packets": 1.0}]})
    specs = list(sc.flows) + list(sc.classes)
    assert resolve(sc.router, sc.resources, specs=specs)[1] == (1.0, 9.5)
    assert resolve(sc.router.__class__(scheduler="virtual-clock", options=(("total_weight", 4),)),
                   sc.resources, specs=specs)[1] == (1.0, 4.0)
    assert resolve(sc.router, sc.resources)[1] == (1.0, 1.0)      # no flows known: W = 1


def test_scfq_idle_rules():
    """a: 2 packets from 0 (s = 1); the link goes idle at 2; b: 1 packet at 5.  "reset" ([SCFQ]):
    v and every F to 0 at 2, b1's tag is 0 + 1 = 1; "hold": v stays 2 (a2's tag), b1's tag is 3."""
    fl = [{"name": "a", "cost": [1.0], "packets": 2}, {"name": "b", "cost": [1.0], "packets": 1, "start": 5.0}]
    for rule, tag in (("reset", 1.0), ("hold", 3.0)):
        r = ReferenceRouter(link("scfq", fl, scfq_idle=rule, duration=5.5), None)
        r.run()
        assert r.tags.v == tag          # b1 in service at 5.5: v is its tag
        assert both(link("scfq", fl, scfq_idle=rule)) == [(0.0, 1.0, 0, A, 1), (1.0, 2.0, 0, A, 2),
                                                         (5.0, 6.0, 0, B, 1)]


@settings(deadline=None, max_examples=6, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_scfq_idle_rules_order_alike(data):
    """The tags of a busy period differ by one constant between "reset" and "hold" (fq/scfq.py), so
    on the reference's grid of binary-fraction costs and weights (exact arithmetic) the traces are equal."""
    import dataclasses

    sc = data.draw(scenarios(J=2, scheduler="scfq", options=False))
    hold = dataclasses.replace(sc, router=dataclasses.replace(sc.router, options=(("scfq_idle", "hold"),)))
    assert simulate_reference(hold).trace == simulate_reference(sc).trace


@pytest.mark.parametrize("router, match", [
    ({"scheduler": "scfq", "scfq_idle": "never"}, r"router\.scfq_idle = 'never': choose 'reset'"),
    ({"scheduler": "virtual-clock", "total_weight": 0}, r"router\.total_weight = 0: must be a number > 0"),
    ({"scheduler": "virtual-clock", "total_weight": -2.0}, r"router\.total_weight = -2\.0: must be a number > 0"),
    ({"scheduler": "virtual-clock", "total_weight": "all"}, r"router\.total_weight = 'all': must be a number > 0"),
    ({"scheduler": "scfq", "total_weight": 2.0}, r"router\.total_weight: not an option of scheduler"),
])
def test_refusals(router, match):
    from mrfq.router.run import simulate

    sc = flows.from_dict({"resources": ["link"], "router": router, "run": {"duration": 5.0},
                          "flow": [{"name": "a", "cost": [1.0]}]})
    with pytest.raises(ScenarioError, match=match):
        simulate(sc)
