"""Buffer management of the open-loop flows (router/buffers.py, docs/buffers.md): limits in packets
and bytes, the shared pool with tail drop and longest queue drop, RED and CoDel.

Hand-worked traces, the engine against the SimPy reference packet by packet (traces, drops by
reason, histograms), RED's and CoDel's laws checked on constant-rate overloads, the packet ring's
growth, and the refusals."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mrfq.flows as flows
from mrfq.flows.errors import ScenarioError
from mrfq.router.reference import simulate_reference, trace_tuples
from mrfq.router.run import simulate

REASONS = ("tail", "pool", "push_out", "red", "codel", "fairdrop")


# The one-resource cases below append a resource nobody uses ("spare"), which changes nothing
# (tests/test_metamorphic.py), so that they run on the two-resource loop variants the other tests
# compile (a compilation costs far more than these runs).
def _one(**router):
    """A flow ``a`` at twice the link's rate beside a light ``b`` (CBR, one resource, FIFO)."""
    return {"resources": ["link", "spare"], "router": {"scheduler": "fifo", **router},
            "run": {"duration": 4.6, "seed": 1},
            "flow": [{"name": "a", "cost": [1.0, 0.0], "arrival": {"law": "cbr", "rate": 2.0}},
                     {"name": "b", "cost": [1.0, 0.0], "arrival": {"law": "cbr", "rate": 0.25}}]}


def test_longest_queue_drop_by_hand():
    """Pool of 3 packets, longest queue drop.  a's packets arrive at 0, 0.5, 1, ..., b's at 0 and 4;
    FIFO serves a#1 0-1, b#1 1-2, a#2 2-3, a#3 3-4.  At 1.5, 2.5 and 3.5 the pool is full and a, the
    arriving flow, holds the most: the arrival is dropped (pool).  At 4 b's packet finds the pool full
    (a's packets 5, 7 waiting, 9 just arrived): a holds more, so its oldest waiting packet, a#5 (seq 4),
    is pushed out and b's is taken; FIFO then starts a#7 (seq 5).  At 4.5 a's arrival is dropped again."""
    sc = flows.from_dict(_one(shared_buffer=3, shared_buffer_policy="longest"))
    e = simulate(sc, trace=100)
    ref = simulate_reference(sc, trace=100)
    assert e.trace.rows(["a", "b"], 0) == [(0.0, "a", 1), (1.0, "b", 1), (2.0, "a", 2), (3.0, "a", 3), (4.0, "a", 5)]
    assert trace_tuples(e.trace) == ref.trace
    a, b = e.flows
    assert (a.offered, a.drops, a.packets) == (10, 5, 3) and (b.offered, b.drops, b.packets) == (2, 0, 1)
    assert a.drops_by_reason == {**dict.fromkeys(REASONS, 0), "pool": 4, "push_out": 1}
    assert [f.drops_by_reason for f in ref.flows] == [f.drops_by_reason for f in e.flows]


def test_tail_policy_drops_the_arrival_instead():
    """The same pool with tail drop: b's packet at 4 is dropped (pool), a keeps a#5."""
    e = simulate(flows.from_dict(_one(shared_buffer=3)), trace=100)
    assert e.trace.rows(["a", "b"], 0)[-1] == (4.0, "a", 4)
    assert e.flows[1].drops_by_reason["pool"] == 1 and e.flows[0].drops_by_reason["push_out"] == 0


def test_byte_limit_by_hand():
    """A flow limited to 3000 bytes with 1500-byte packets holds two: of CBR arrivals at 0, 0.5, 1,
    ... served 1 time unit each, the one at 0.5 waits, the one at 1 finds 0.5's packet and the one
    departing at 1 gone (departures first): accepted; every other one is dropped (tail)."""
    d = {"resources": ["link", "spare"], "router": {"scheduler": "fifo"}, "run": {"duration": 10.2, "seed": 1},
         "flow": [{"name": "a", "cost": [0.0, 0.0], "per_byte": [1 / 1500, 0.0], "packet_sizes": [1500],
                   "packet_size_probs": [1.0], "arrival": {"law": "cbr", "rate": 2.0}, "buffer_bytes": 3000}]}
    e = simulate(flows.from_dict(d))
    (a,) = e.flows
    assert a.offered == 21 and a.drops == a.drops_by_reason["tail"] == 9 and a.packets == 10


def _cbr_overload(aqm, rate, duration, warmup, cost=1.0):
    return flows.from_dict({
        "resources": ["link", "spare"], "router": {"scheduler": "fifo", "aqm": aqm},
        "run": {"duration": duration, "warmup": warmup, "seed": 1},
        "flow": [{"name": "a", "cost": [cost, 0.0], "arrival": {"law": "cbr", "rate": rate}, "buffer": "unbounded"}]})


def test_codel_drops_at_its_control_law():
    """CoDel (RFC 8289) on a CBR source at twice the link (a packet every 0.5, service 1, target 5,
    interval 100): the sojourn passes target at the 11th dequeue (t = 10), stays above it for an
    interval, so the first drop is at the dequeue at 110; each later drop k of the dropping state at the
    first dequeue at or after 110 + 100 (1 + 1/sqrt(2) + ... + 1/sqrt(k - 1)): 210, 281, 339, 389, ...
    A dropped head leaves the trace's seqs with a gap at its dequeue."""
    sc = _cbr_overload({"policy": "codel", "target": 5.0, "interval": 100.0}, 2.0, 700.0, 0.0)
    e = simulate(sc, trace=10_000)
    starts, seqs = e.trace.start, e.trace.seq
    gaps = starts[1:][np.diff(seqs) > 1]
    expect, nxt = [], 110.0
    for k in range(1, 12):
        expect.append(math.ceil(nxt))
        nxt += 100.0 / math.sqrt(k)
    expect = [x for x in expect if x < 700.0]
    assert gaps[:len(expect)].tolist() == expect
    assert np.all(np.diff(seqs)[np.diff(seqs) > 1] == 2)  # one drop per such dequeue while the drop rate is low
    assert trace_tuples(e.trace) == simulate_reference(sc, trace=10_000).trace


@pytest.mark.slow
@pytest.mark.parametrize("overload", [1.2, 2.0])
def test_red_follows_its_law_of_the_average_queue(overload, scale):
    """RED (Floyd & Jacobson 1993 with the count; gentle) on a constant-rate overload: the accepted
    rate is the link's, so the drop fraction is 1 - 1/overload; with deterministic arrivals the count
    spreads drops uniformly over 1 .. 1/p_b - 1 arrivals, so that fraction is 2 p_b, and RED's law
    gives the average queue that drops so: min_th + (max_th - min_th) p_b / max_p below max_th, else
    (gentle) max_th (1 + (p_b - max_p) / (1 - max_p)).  The time-average number in the router (Little:
    the mean sojourn over the service time) sits within a packet of it."""
    duration = 2e5 * scale
    sc = _cbr_overload({"policy": "red"}, overload, duration, 2e4 * scale)
    e = simulate(sc)
    (a,) = e.flows
    frac = a.drops / a.offered
    assert frac == pytest.approx(1 - 1 / overload, abs=2e-3)
    assert a.drops_by_reason["red"] == a.drops
    p_b = frac / 2
    min_th, max_th, max_p = 5.0, 15.0, 0.1
    avg = min_th + (max_th - min_th) * p_b / max_p if p_b < max_p else max_th * (1 + (p_b - max_p) / (1 - max_p))
    dh = e.delays
    mean_sojourn = float(dh.dsum[0].sum() / dh.dcnt[0].sum())
    assert mean_sojourn / 1.0 == pytest.approx(avg, abs=1.0), (mean_sojourn, avg)


def test_fairdrop_keeps_each_flow_its_max_min_share():
    """FairDrop on one resource served FIFO, constant-rate flows of loads 1.0, 0.6 and 0.1 (the authors'
    example): the shadow's water level is 0.45, so each keeps min(load, 0.45): 0.45, 0.45 and 0.1, the
    light flow losing nothing; and the engine equals the reference on the first packets."""
    sc = flows.from_dict({
        "resources": ["link", "spare"], "router": {"scheduler": "fifo", "aqm": {"policy": "fairdrop"}},
        "run": {"duration": 20000.0, "warmup": 2000.0, "seed": 1},
        "flow": [{"name": n, "cost": [1.0, 0.0], "arrival": {"law": "cbr", "rate": r}, "buffer": 100}
                 for n, r in (("a", 1.0), ("b", 0.6), ("c", 0.1))]})
    e = simulate(sc)
    assert [f.rate for f in e.flows] == pytest.approx([0.45, 0.45, 0.1], abs=1e-3)
    assert e.flows[2].drops == 0 and e.flows[0].drops == e.flows[0].drops_by_reason["fairdrop"] > 0
    short = sc.replace(**{"run.duration": 300.0, "run.warmup": 0.0})
    assert trace_tuples(simulate(short, trace=500).trace) == simulate_reference(short, trace=500).trace


def _base():
    return {"resources": ["cpu", "link"], "run": {"duration": 150.0, "warmup": 10.0, "seed": 3},
            "flow": [{"name": "v", "cost": [0.05, 0.2], "arrival": {"law": "poisson", "rate": 0.8}, "buffer": 20},
                     {"name": "g", "cost": [0.5, 1.0], "arrival": {"law": "poisson", "rate": 1.2}, "buffer": 30},
                     {"name": "w", "cost": [0.3, 0.3]}]}


MANAGEMENT = {
    "tail": {},
    "pool": {"shared_buffer": 25},
    "longest": {"shared_buffer": 25, "shared_buffer_policy": "longest"},
    "red": {"aqm": {"policy": "red", "min_th": 3, "max_th": 9}},
    "codel": {"aqm": {"policy": "codel", "target": 2, "interval": 10}},
    "bytes": {"shared_buffer_bytes": 30000, "shared_buffer_policy": "longest"},
    "fairdrop": {"aqm": {"policy": "fairdrop", "threshold": 4}},
}


def _scenario(kind, scheduler, placement, sized, seed):
    d = _base()
    d["run"]["seed"] = seed
    d["router"] = {"scheduler": scheduler, **copy.deepcopy(MANAGEMENT[kind])}
    if placement:
        d["router"].update(schedule_at="ingress", stage_buffer=2)
    if sized or kind == "bytes":
        for f in d["flow"][:2]:
            f.update(per_byte=[0.0, 0.001], packet_sizes=[64, 1500], packet_size_probs=[0.5, 0.5])
        d["flow"][0]["buffer_bytes"] = 9000
    return flows.from_dict(d)


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(sorted(MANAGEMENT)),
       scheduler=st.sampled_from(["drfq", "fifo", "drr", "bmf-wfq", "drfq-dovetail", "pf-sfq", "fq-single"]),
       placement=st.booleans(), seed=st.integers(1, 50))
def test_engine_equals_reference(kind, scheduler, placement, seed):
    """Every policy under the schedulers that define drops inside a queue, both placements, packet
    sizes drawn (per-packet costs; the hand-worked cases above run constant costs): the same services,
    drops by reason and delay histograms as the SimPy reference."""
    if scheduler == "fq-single" and placement:
        scheduler = "drr"
    sc = _scenario(kind, scheduler, placement, True, seed)
    e = simulate(sc, trace=600)
    r = simulate_reference(sc, trace=600)
    assert trace_tuples(e.trace) == r.trace
    assert [(f.packets, f.offered, f.drops_by_reason) for f in e.flows] == \
           [(f.packets, f.offered, f.drops_by_reason) for f in r.flows]
    assert np.array_equal(e.delays.hist, r.hist)


def test_mr3_refuses_drops_inside_its_queues():
    for router in ({"shared_buffer": 5, "shared_buffer_policy": "longest"}, {"aqm": {"policy": "codel"}}):
        d = _base()
        d["router"] = {"scheduler": "mr3", **router}
        with pytest.raises(ScenarioError, match="drops packets already waiting in a queue.*mr3"):
            simulate(flows.from_dict(d))
    d = _base()
    d["router"] = {"scheduler": "mr3", "aqm": {"policy": "red"}}
    assert simulate(flows.from_dict(d)).flows[0].packets > 0


def test_a_large_buffer_costs_memory_for_the_packets_held_only():
    """buffer = 10^6 (and unbounded) starts with a ring of RING0 packets that doubles as the queue
    grows: an overload that holds ~6,000 packets grows it to 8,192 (the engine's arrays stay a few MB),
    with the same services as a run whose limit is never reached."""
    def run(buffer):
        return simulate(flows.from_dict({
            "resources": ["link"], "router": {"scheduler": "drfq"}, "run": {"duration": 6000.0, "seed": 2},
            "flow": [{"name": "a", "cost": [1.0], "arrival": {"law": "cbr", "rate": 2.0}, "buffer": buffer},
                     {"name": "b", "cost": [1.0], "arrival": {"law": "poisson", "rate": 0.1}, "buffer": 50}]}),
            trace=50)
    big, unb = run(10**6), run("unbounded")
    assert big.flows[0].drops == unb.flows[0].drops == 0
    assert trace_tuples(big.trace) == trace_tuples(unb.trace)
    assert big.state_bytes < 16 * 2**20, big.state_bytes


BAD = [
    ({"shared_buffer": 0}, "router.shared_buffer = 0: out of range"),
    ({"shared_buffer": 10, "shared_buffer_policy": "random"}, "router.shared_buffer_policy = 'random': choose"),
    ({"shared_buffer_policy": "longest"}, "router.shared_buffer_policy: there is no shared pool"),
    ({"aqm": {"policy": "blue"}}, "router.aqm.policy = 'blue': unknown; choose one of red, codel, fairdrop"),
    ({"aqm": {"policy": "fairdrop", "theta": 1.5}}, "router.aqm.theta = 1.5: out of range"),
    ({"aqm": {"min_th": 5}}, "router.aqm.policy: missing"),
    ({"aqm": {"policy": "red", "min_th": 20, "max_th": 10}}, "min_th must be below max_th"),
    ({"aqm": {"policy": "red", "max_p": 2}}, "router.aqm.max_p = 2: out of range"),
    ({"aqm": {"policy": "red", "limit": 2}}, "router.aqm: unknown key 'limit'"),
    ({"aqm": {"policy": "codel", "target": 100, "interval": 100}}, "router.aqm.target = 100: must be below interval"),
    ({"aqm": "red"}, "router.aqm = 'red': must be a table"),
    ({"shared_buffer_bytes": 1000}, "router.shared_buffer_bytes: flow[0]'s packets have no size"),
]


@pytest.mark.nojit
@pytest.mark.parametrize("router,message", BAD)
def test_bad_buffer_settings_are_one_line_refusals(router, message):
    d = _base()
    d["router"] = router
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        flows.from_dict(d)


@pytest.mark.nojit
def test_byte_limits_refused_where_they_cannot_hold_a_packet():
    d = _base()
    d["flow"][0].update(per_byte=[0.0, 0.001], packet_sizes=[64, 1500], packet_size_probs=[0.5, 0.5], buffer_bytes=1000)
    with pytest.raises(ScenarioError, match=r"flow\[0\].buffer_bytes = 1000: smaller than flow\[0\]'s largest packet"):
        flows.from_dict(d)
    d = _base()
    d["flow"][0]["buffer_bytes"] = 1e6
    with pytest.raises(ScenarioError, match=r"flow\[0\].buffer_bytes: flow\[0\]'s packets have no size"):
        flows.from_dict(d)
    d = _base()
    d["flow"][2]["buffer_bytes"] = 1e6
    with pytest.raises(ScenarioError, match=r"flow\[2\].buffer_bytes: only for an open-loop or TCP flow"):
        flows.from_dict(d)
    d = _base()
    d["flow"] = d["flow"][2:]
    d["router"] = {"aqm": {"policy": "red"}}
    with pytest.raises(ScenarioError, match="router.aqm: no open-loop or TCP flow to manage"):
        flows.from_dict(d)
