"""WFQ / PGPS with the exact GPS virtual time (fq/wfq.py): hand-computed traces on one link, the
finish tags against a fluid GPS simulated in the test, WFQ against SFQ (fq-single) where their
definitions differ.

The engine-vs-SimPy cross-check on random scenarios and the metamorphic checks pick it up from the
registry (tests/test_reference.py, tests/test_metamorphic.py).
"""

from __future__ import annotations

import pytest

from mrfq import flows
from mrfq.fq import wfq
from mrfq.router.reference import ReferenceRouter, simulate_reference, trace_tuples

pytestmark = pytest.mark.nojit
A, B, C = 0, 1, 2   # flow ids


def link(scheduler, fl, window=4, duration=20.0, **router):
    return flows.from_dict({"resources": ["link"], "router": {"scheduler": scheduler, "window": window, **router},
                            "run": {"duration": duration}, "flow": fl})


def traced(tmp_path, rows, fl, duration=30.0):
    """One link, trace-driven flows ``fl`` (arrival law "trace"), packet arrivals ``rows`` =
    (time, flow name, size in bytes); a flow's cost is per_byte = 1/1024 time units a byte."""
    (tmp_path / "p.csv").write_text("time,flow,size\n" + "".join(f"{t},{f},{s}\n" for t, f, s in rows))
    fl = [{"cost": [0.0], "per_byte": [1 / 1024], "arrival": {"law": "trace"}, **f} for f in fl]
    return flows.from_dict({"resources": ["link"], "router": {"scheduler": "wfq"}, "traffic": {"packet_trace": "p.csv"},
                            "run": {"duration": duration}, "flow": fl}, base_dir=tmp_path)


def both(sc):
    """The service trace (start, end, resource, flow, seq), the engine's and the reference's, equal."""
    from mrfq.router.run import simulate

    ref = simulate_reference(sc).trace
    assert trace_tuples(simulate(sc, trace=500).trace) == ref
    return ref


def tags(sc, monkeypatch):
    """The reference run's finish tags at the WFQ resource, {(flow id, seq): F}, and its trace."""
    got = {}
    arrive = wfq.Reference.arrive

    def recording(self, p, j, t):
        arrive(self, p, j, t)
        got[(p.flow.uid, p.seq)] = p.tag["key"]

    monkeypatch.setattr(wfq.Reference, "arrive", recording)
    r = ReferenceRouter(sc, None)
    r.run()
    return got


def test_a_flow_in_service_stays_in_gps(tmp_path):
    """Equal weights, every packet 1 time unit (1024 B): A at 0 and 0.125, B at 0.25.

    GPS: A alone from 0, dV/dt = 1.  A1: S = 0, F = 1.  At 0.125 V = 0.125 and A is still
    GPS-backlogged (F_A = 1 > V: A1 is in service, not waiting): A2 = max(1, 0.125) + 1 = 2.
    At 0.25 V = 0.25: B1 = 1.25.  At 1 the heads are A2 (2) and B1 (1.25): A, B, A.  A WFQ that
    took a flow with nothing waiting for idle (A2 tagged from V, 1.125 < 1.25) would serve A, A, B."""
    sc = traced(tmp_path, [(0.0, "a", 1024), (0.125, "a", 1024), (0.25, "b", 1024)],
                [{"name": "a"}, {"name": "b"}])
    assert both(sc) == [(0.0, 1.0, 0, A, 1), (1.0, 2.0, 0, B, 1), (2.0, 3.0, 0, A, 2)]


def test_trace_by_hand_gps_departures_change_the_slope(monkeypatch):
    """a: s = 1, w = 1, 1 packet from 0; b: s = 2, w = 1, 1 packet from 0; c: s = 1, w = 2, 1
    packet from 2.5 (window 4).

    0    V = 0; a1 F = 1, b1 F = 2; B = {a, b}, W = 2.            a1 [0, 1]
    1    b1 [1, 3].  GPS: V = 1 at t = 2 (a leaves GPS; its packet left the link at 1),
         then W = 1: V(2.5) = 1.5.
    2.5  c1 = 1.5 + 1/2 = 2; B = {b, c}, W = 3.
    3    c1 [3, 4].
    A V kept from the packet queue (a gone at 1: W = 1 from 1) would be 2 at 2.5: c1 = 2.5."""
    fl = [{"name": "a", "cost": [1.0], "packets": 1}, {"name": "b", "cost": [2.0], "packets": 1},
          {"name": "c", "cost": [1.0], "weight": 2.0, "packets": 1, "start": 2.5}]
    sc = link("wfq", fl)
    assert both(sc) == [(0.0, 1.0, 0, A, 1), (1.0, 3.0, 0, B, 1), (3.0, 4.0, 0, C, 1)]
    assert tags(sc, monkeypatch) == {(A, 1): 1.0, (B, 1): 2.0, (C, 1): 2.0}


def fluid_gps(arrivals, weights):
    """The fluid GPS system on a link of rate 1, simulated directly (not from tags): ``arrivals``
    = [(time, flow, work)] in time order.  Each backlogged flow (fluid work left) is served at rate
    w_i / sum of backlogged weights, its packets in order.  Returns {(flow, k): (finish time,
    V at it)} with V(t) = the integral of 1 / (sum of backlogged weights), V constant when idle."""
    left = {f: [] for f in weights}              # per flow: [work left, k] of its packets in order
    count = {f: 0 for f in weights}
    out = {}
    t, V, i = 0.0, 0.0, 0
    while i < len(arrivals) or any(left.values()):
        busy = [f for f in weights if left[f]]
        if not busy:
            t = arrivals[i][0]
        else:
            W = sum(weights[f] for f in busy)
            dt = min(left[f][0][0] * W / weights[f] for f in busy)     # the next fluid departure
            if i < len(arrivals) and arrivals[i][0] - t < dt:
                dt = arrivals[i][0] - t
            for f in busy:
                left[f][0][0] -= dt * weights[f] / W
            t, V = t + dt, V + dt / W
            for f in busy:
                if left[f][0][0] <= 1e-12:
                    out[(f, left[f].pop(0)[1])] = (t, V)
        while i < len(arrivals) and arrivals[i][0] <= t:
            _, f, work = arrivals[i]
            count[f] += 1
            left[f].append([work, count[f]])
            i += 1
    return out


def test_finish_tags_are_the_gps_virtual_finish_times(tmp_path, monkeypatch):
    """Three trace-driven flows of weights 1, 2, 1/2 on one link, packets of 0.5, 1, 1.5 time units
    arriving at chosen times (the GPS system goes idle once): each WFQ finish tag is V at the
    packet's GPS finish, and each service starts the waiting packet that finishes first in GPS."""
    rows = [(0.0, "a", 1024), (0.0, "b", 512), (0.25, "c", 1536), (0.5, "a", 512), (1.0, "b", 1536),
            (1.25, "b", 512), (2.0, "c", 512), (2.5, "a", 1024), (3.0, "b", 1024), (12.0, "a", 512),
            (12.25, "c", 1024), (12.5, "b", 512)]
    weights = {A: 1.0, B: 2.0, C: 0.5}
    sc = traced(tmp_path, rows, [{"name": "a", "weight": 1.0}, {"name": "b", "weight": 2.0},
                                 {"name": "c", "weight": 0.5}])
    ids = {"a": A, "b": B, "c": C}
    gps = fluid_gps([(t, ids[f], s / 1024) for t, f, s in rows], weights)
    got = tags(sc, monkeypatch)
    assert set(got) == set(gps)
    for key, f in got.items():
        assert f == pytest.approx(gps[key][1], rel=1e-12, abs=1e-12), key
    trace = both(sc)
    assert len(trace) == len(rows)
    arrived = {}
    seen = {f: 0 for f in weights}
    for t, f, _ in rows:
        seen[ids[f]] += 1
        arrived[(ids[f], seen[ids[f]])] = t
    served = set()
    for start, _, _, f, k in trace:       # PGPS: the first to finish in GPS among those waiting
        waiting = [p for p in gps if p not in served and arrived[p] <= start]
        assert (f, k) == min(waiting, key=lambda p: (gps[p][0], p[0]))
        served.add((f, k))


def test_gps_idle_holds_v(monkeypatch):
    """a: 2 packets of 1 from 0 (GPS idle from 2); b: 1 packet at 5.  V holds at 2 across the
    idle period: b1's tag is 2 + 1 = 3."""
    fl = [{"name": "a", "cost": [1.0], "packets": 2}, {"name": "b", "cost": [1.0], "packets": 1, "start": 5.0}]
    sc = link("wfq", fl)
    assert both(sc) == [(0.0, 1.0, 0, A, 1), (1.0, 2.0, 0, A, 2), (5.0, 6.0, 0, B, 1)]
    assert tags(sc, monkeypatch) == {(A, 1): 1.0, (A, 2): 2.0, (B, 1): 3.0}


@pytest.mark.parametrize("fl, wfq_order, sfq_order", [
    # equal weights, a's packets 4 times b's: finish tags a 2, 4; b 0.5, 1, 1.5, 2; start tags a 0, 2; b 0, ..., 1.5
    ([{"name": "a", "cost": [2.0], "packets": 2}, {"name": "b", "cost": [0.5], "packets": 4}],
     [(0.0, B), (0.5, B), (1.0, B), (1.5, A), (3.5, B), (4.0, A)],
     [(0.0, A), (2.0, B), (2.5, B), (3.0, B), (3.5, B), (4.0, A)]),
    # equal packets, b's weight 4: finish tags a 1, 2; b 1/4, ..., 1; start tags a 0, 1; b 0, ..., 3/4
    ([{"name": "a", "cost": [1.0], "packets": 2}, {"name": "b", "cost": [1.0], "weight": 4.0, "packets": 4}],
     [(0.0, B), (1.0, B), (2.0, B), (3.0, A), (4.0, B), (5.0, A)],
     [(0.0, A), (1.0, B), (2.0, B), (3.0, B), (4.0, B), (5.0, A)]),
])
def test_wfq_against_sfq(fl, wfq_order, sfq_order):
    """Both flows backlogged from 0 on one link (window 4).  SFQ (fq-single) serves by start tag:
    the first packets tie at 0 and a (the smaller id) goes first.  WFQ serves by finish tag: the
    small packets, or the heavy flow's, first; a's first packet goes when its finish tag ties b's
    (a first again).  Past the first packets the orders agree."""
    assert [(r[0], r[3]) for r in both(link("wfq", fl))] == wfq_order
    assert [(r[0], r[3]) for r in both(link("fq-single", fl))] == sfq_order


def test_departed_flows_stay_in_gps_until_v_passes_their_tags():
    """Poisson flows come and go (table rows reused): engine and reference agree, and a flow that
    has left the router but not the GPS system keeps its weight in V's slope (fq/wfq.py)."""
    sc = flows.from_dict({
        "resources": ["link"], "router": {"scheduler": "wfq", "window": 2},
        "run": {"duration": 40.0, "seed": 3, "max_flows": 100},
        "flow": [{"name": "long", "cost": [1.0], "packets": 30}],
        "class": [{"name": "k", "cost": [0.5], "weight": 0.5, "rate": 0.5, "mean_packets": 2.0}]})
    assert len(both(sc)) > 30


def test_a_reused_row_before_its_flow_reaches_the_wfq_resource():
    """Two resources, WFQ at r1, Poisson flows that reach r1 after r0 or skip r0: a new flow takes the
    row of one still in GPS and its first packet reaches r1 later; meanwhile the old flow's entry
    moves in the table and must not be handed to the new flow (engine against reference)."""
    from mrfq.router.run import simulate

    sc = flows.from_dict({
        "resources": ["r0", "r1"], "router": {"scheduler": "wfq", "window": 1, "fq_resource": "r1"},
        "run": {"duration": 20.0, "seed": 0, "max_flows": 100},
        "flow": [{"name": "f1", "cost": [0.0, 0.0], "per_byte": [0.0, 1 / 1024], "packet_sizes": [1024],
                  "weight": 0.5},
                 {"name": "f2", "cost": [0.0, 0.25], "weight": 0.5},
                 {"name": "f3", "cost": [0.25, 0.0], "weight": 0.5},
                 {"name": "f4", "cost": [0.0, 0.25], "weight": 1.0}],
        "class": [{"name": "c1", "cost": [0.0, 1.5], "weight": 2.0, "rate": 0.3, "mean_packets": 1.0}]})
    ref = simulate_reference(sc).trace
    assert trace_tuples(simulate(sc, trace=5000, packet_costs=True).trace) == ref


def test_refuses_an_unknown_resource():
    from mrfq.flows.errors import ScenarioError
    from mrfq.router.run import simulate

    with pytest.raises(ScenarioError, match=r"router\.fq_resource = 'cpu': must be one of"):
        simulate(link("wfq", [{"name": "a", "cost": [1.0]}], fq_resource="cpu"))
