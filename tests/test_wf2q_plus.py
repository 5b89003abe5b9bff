"""WF²Q+ (fq/wf2q_plus.py): hand-computed traces on one link, the eligibility that sets it apart from
WFQ, the virtual time of a newly backlogged flow, and its options.

The engine-vs-SimPy cross-check on random scenarios and the metamorphic checks pick it up from the
registry (tests/test_reference.py, tests/test_metamorphic.py).
"""

from __future__ import annotations

import pytest

from mrfq import flows
from mrfq.flows.errors import ScenarioError
from test_classic_fq import both

pytestmark = pytest.mark.nojit


def link(scheduler, fl, window=12, duration=40.0, **router):
    return flows.from_dict({"resources": ["link"], "router": {"scheduler": scheduler, "window": window, **router},
                            "run": {"duration": duration}, "flow": fl})


#: [WF2Q]'s example: flow A of weight 10 sends 11 packets, ten flows of weight 1 one packet each,
#: all at 0, every packet 1 time unit on the link
BURST = [{"name": "A", "cost": [1.0], "weight": 10.0, "packets": 11}] + [
    {"name": n, "cost": [1.0], "weight": 1.0, "packets": 1} for n in "BCDEFGHIJK"]


def test_wf2q_plus_interleaves_where_wfq_sends_a_burst():
    """W = 10 + 10 = 20, so A reserves half the link (L / r = 2) and each other flow 1/20 (L / r = 20).

    WF2Q+: A_k gets S = 2 (k - 1), F = 2 k (S = F of its predecessor); the others S = 0, F = 20.
      0  V = 0: eligible (S <= 0) A1 (F 2) and B..K (F 20): A1 [0, 1].
      1  V = 1: A2 (S 2) is not eligible; B..K are, all F = 20: B (smaller id) [1, 2].
      2  V = 2: A2 (S 2, F 4) is: A2 [2, 3].  3: V = 3, A3 has S = 4: C [3, 4] ...
    so A's packets go at even instants and the light flows' at odd ones; A11 (S = 20) at 20.
    WFQ serves the smallest finish tag whatever its start: A1..A10 (F = 2..20; A10 ties the light
    flows' 20 and has the smaller id) [0, 10], then B..K [10, 20], A11 [20, 21]: a light flow
    waits 10 packets where GPS would have served it by 20, and A runs 10 packets ahead of GPS."""
    wf2q = [(r[0], r[3]) for r in both(link("wf2q-plus", BURST))]
    assert wf2q == [(float(t), 0 if t % 2 == 0 or t == 20 else (t + 1) // 2) for t in range(21)]
    wfq = [(r[0], r[3]) for r in both(link("wfq", BURST))]
    assert wfq == [(float(t), 0) for t in range(10)] + [(float(10 + i), 1 + i) for i in range(10)] + [(20.0, 0)]


def test_against_the_fluid_gps_system():
    """[WF2Q]'s point, on the burst example: GPS (rates 1/2 for A, 1/20 for each light flow while all are
    backlogged) starts A's packet k at 2 (k - 1) and ends it at 2 k (k <= 10; A11 runs alone over
    [20, 21]), and each light packet over [0, 20].  WF2Q+ never starts a packet before GPS does, and
    ends each within one packet time of GPS's end; WFQ ends each within one packet time too, but
    starts A's packets up to 9 time units before GPS (A10 at 9 against 18): the burst that
    [WF2Q]'s worst-case fairness index measures."""
    gps = {(0, k): (2.0 * (k - 1), 2.0 * k) for k in range(1, 11)}
    gps[(0, 11)] = (20.0, 21.0)
    gps.update({(f, 1): (0.0, 20.0) for f in range(1, 11)})
    ahead = {}
    for name in ("wf2q-plus", "wfq"):
        rows = both(link(name, BURST))
        assert all(end <= gps[f, k][1] + 1.0 for _, end, _, f, k in rows)
        ahead[name] = max(gps[f, k][0] - start for start, _, _, f, k in rows)
    assert ahead["wf2q-plus"] == 0.0 and ahead["wfq"] == 9.0


def test_a_newly_backlogged_flow_starts_from_the_work_done():
    """a (w 1, s = 1, 4 packets at 0) alone, b (w 1, s = 1, 1 packet) from 2.5; W = 2, L / r = 2.

    a: S = 0, 2, 4, 6; F = 2, 4, 6, 8.  0: V = 0, a1 [0, 1]; 1: V = 1 < a2's S = 2, but a2 is the
    only head: V = max(1, 2) = 2, a2 [1, 2]; 2: V = 3 < 4: V = 4, a3 [2, 3].
    2.5: b arrives with a3 in service since 2 (V = 4 at that choice): V(2.5) = 4 + 0.5 = 4.5,
    b1 S = 4.5, F = 6.5.  3: V = 5; a4 (S 6) is not eligible, b1 is: b1 [3, 4]; a4 [4, 5]."""
    fl = [{"name": "a", "cost": [1.0], "packets": 4}, {"name": "b", "cost": [1.0], "packets": 1, "start": 2.5}]
    assert [(r[0], r[3], r[4]) for r in both(link("wf2q-plus", fl, window=4))] == [
        (0.0, 0, 1), (1.0, 0, 2), (2.0, 0, 3), (3.0, 1, 1), (4.0, 0, 4)]


def test_work_conserving_on_a_second_resource():
    """On [cpu, link] with the link fair-queued by WF2Q+ (the default fq_resource), the link never
    idles while packets wait: every service there starts when the previous one ends or a packet
    arrives (no head is ever left with none eligible)."""
    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"scheduler": "wf2q-plus", "window": 5},
                          "run": {"duration": 60.0},
                          "flow": [{"name": "a", "cost": [0.25, 1.0], "weight": 3.0},
                                   {"name": "b", "cost": [0.5, 0.5]}, {"name": "c", "cost": [0.125, 2.0]}]})
    trace = both(sc)
    link_rows = [r for r in trace if r[2] == 1]
    assert all(b[0] == a[1] for a, b in zip(link_rows, link_rows[1:]))


@pytest.mark.parametrize("router, match", [
    ({"total_weight": 0.0}, r"router.total_weight = 0.0: must be a number > 0"),
    ({"fq_resource": "disk"}, r"router.fq_resource = 'disk': must be one of the resources"),
])
def test_refusals(router, match):
    from mrfq.router.run import simulate

    with pytest.raises(ScenarioError, match=match):
        simulate(link("wf2q-plus", BURST[:2], **router))
