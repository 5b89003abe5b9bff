"""Metamorphic checks, every registered scheduler: changes of units and of labels that must not
change the schedule.

On random static scenarios (two resources, windowed flows, costs and weights on a grid where
ties happen, start times, finite flows, an rtt):

* doubling every time (every cost, the rtt, the start times, the run's length, DRR's quantum)
  doubles every service's start and end and changes nothing else;
* doubling every weight (halving DRR's quantum, which counts per unit of weight) changes nothing;
* a resource nobody uses, before, between or after the others, changes nothing.

Powers of two scale binary floating point exactly, so each is a whole-trace equality (the engine
for the first two, on the loop variants tests/test_reference.py compiles; the third on the
engine and on the SimPy reference, both of which run the scenario without the unused resource).  Reordering the ``[[flow]]`` tables is not in this list: the
event order breaks ties by flow id (docs/schedulers.md, 'Event order and ties'), so it permutes
the results only up to ties.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrfq import flows
from mrfq.router.reference import simulate_reference, trace_tuples
from test_reference import SCHEDULER_NAMES

COSTS = (0.0, 0.125, 0.25, 0.5, 1.0, 1.5)
TRACE = 5000


@st.composite
def static_scenarios(draw, scheduler):
    fl = []
    for i in range(draw(st.integers(2, 4))):
        cost = draw(st.lists(st.sampled_from(COSTS), min_size=2, max_size=2).filter(lambda c: max(c) > 0))
        fl.append({"name": f"f{i}", "cost": cost, "weight": draw(st.sampled_from((0.5, 1.0, 2.0, 3.0))),
                   "start": draw(st.sampled_from((0.0, 0.0, 0.5, 2.25))),
                   "packets": draw(st.sampled_from((0, 0, 0, 4, 9)))})
    router = {"scheduler": scheduler, "window": draw(st.integers(1, 5)),
              "rtt": draw(st.sampled_from((0.0, 0.0, 0.375)))}
    if scheduler == "drr":
        router["quantum"] = draw(st.sampled_from((0.25, 1.0, 1.5)))
    if scheduler == "mr3":
        router["progress"] = draw(st.integers(0, 3))
    return {"resources": ["cpu", "link"], "router": router,
            "run": {"duration": 60.0, "warmup": 0.0, "seed": draw(st.integers(0, 1000))}, "flow": fl}


def _engine_trace(d):
    from mrfq.router.run import simulate

    r = simulate(flows.from_dict(d), trace=TRACE)
    assert r.trace.start.shape[0] < TRACE
    return trace_tuples(r.trace)


def _scaled_times(d, c):
    d = {**d, "router": dict(d["router"]), "run": dict(d["run"]), "flow": [dict(f) for f in d["flow"]]}
    for f in d["flow"]:
        f["cost"] = [c * x for x in f["cost"]]
        f["start"] = c * f["start"]
    d["router"]["rtt"] = c * d["router"]["rtt"]
    if "quantum" in d["router"]:
        d["router"]["quantum"] = c * d["router"]["quantum"]
    d["run"]["duration"] = c * d["run"]["duration"]
    return d


@pytest.mark.parametrize("scheduler", SCHEDULER_NAMES)
@settings(deadline=None, max_examples=4, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_doubling_every_time_doubles_every_service(scheduler, data):
    d = data.draw(static_scenarios(scheduler))
    base = _engine_trace(d)
    assert base
    assert _engine_trace(_scaled_times(d, 2.0)) == [(2 * a, 2 * b, j, u, k) for a, b, j, u, k in base]


@pytest.mark.parametrize("scheduler", SCHEDULER_NAMES)
@settings(deadline=None, max_examples=4, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_doubling_every_weight_changes_nothing(scheduler, data):
    d = data.draw(static_scenarios(scheduler))
    w = {**d, "router": dict(d["router"]), "flow": [{**f, "weight": 2 * f["weight"]} for f in d["flow"]]}
    if "quantum" in w["router"]:
        w["router"]["quantum"] = d["router"]["quantum"] / 2
    assert _engine_trace(w) == _engine_trace(d)


def _with_unused(d, pos):
    """``d`` with a resource nobody uses inserted at position ``pos``."""
    return {**d, "resources": d["resources"][:pos] + ["nic"] + d["resources"][pos:],
            "flow": [{**f, "cost": f["cost"][:pos] + [0.0] + f["cost"][pos:]} for f in d["flow"]]}


def _shifted(trace, pos):
    return [(a, b, j + (j >= pos), u, k) for a, b, j, u, k in trace]


@pytest.mark.nojit
@pytest.mark.parametrize("scheduler", SCHEDULER_NAMES)
@settings(deadline=None, max_examples=4, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_an_unused_resource_changes_nothing(scheduler, data):
    """Before, between or after the others (the reference; the engine below)."""
    d = data.draw(static_scenarios(scheduler))
    pos = data.draw(st.integers(0, 2))
    base = simulate_reference(flows.from_dict(d), trace=TRACE).trace
    assert simulate_reference(flows.from_dict(_with_unused(d, pos)), trace=TRACE).trace == _shifted(base, pos)


@pytest.mark.parametrize("scheduler", SCHEDULER_NAMES)
@settings(deadline=None, max_examples=3, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_an_unused_resource_changes_nothing_in_the_engine(scheduler, data):
    """The engine runs the scenario without it (the same loop variant), and reports it idle."""
    from mrfq.router.run import simulate

    d = data.draw(static_scenarios(scheduler))
    pos = data.draw(st.integers(0, 2))
    wide = simulate(flows.from_dict(_with_unused(d, pos)), trace=TRACE)
    assert trace_tuples(wide.trace) == _shifted(_engine_trace(d), pos)
    assert [r.name for r in wide.resources] == _with_unused(d, pos)["resources"]
    assert wide.resources[pos].services == 0 and wide.resources[pos].utilization == 0.0
    assert wide.delays.hist.shape[1] == 4 and not wide.delays.hist[:, pos].any()


# ---- long-run rates: flow order, zero costs, the objective -------------------------------------
#: costs of the rate checks (the grid of docs/findings/pf-sfq-distance.md's sweep)
RATE_COSTS = (0.0, 0.05, 0.25, 0.5, 1.0)
#: reversing the [[flow]] tables changes the flow ids, hence which flow wins a tie
#: (docs/schedulers.md, 'Event order and ties'): rates move by at most this much (relative), except
#: under mr3, whose rounds visit the flows in the order they joined the active list (flows joining at
#: one instant by dominant service, then flow id), so where a flow's window does not hold two rounds'
#: packets the order of a round's turns decides how long they wait at the later resources: up to 8.6 %
#: over 120 random scenarios (docs/schedulers.md, mr3)
REORDER_RTOL = {"mr3": 0.1}
REORDER_RTOL_DEFAULT = 0.06


@st.composite
def rate_scenarios(draw, scheduler, duration=4000.0):
    fl = []
    for i in range(draw(st.integers(2, 4))):
        cost = draw(st.lists(st.sampled_from(RATE_COSTS), min_size=2, max_size=2).filter(lambda c: max(c) > 0))
        fl.append({"name": f"f{i}", "cost": cost, "weight": float(draw(st.integers(1, 3)))})
    return {"resources": ["cpu", "link"], "router": {"scheduler": scheduler, "window": 30},
            "run": {"duration": duration, "warmup": duration / 10, "seed": draw(st.integers(0, 1000))}, "flow": fl}


def _rates(d):
    """The flows' rates, from the loop variant the other tests of each scheduler compile (the
    delays recorded: the variant without them is another compilation, checked in
    tests/test_packet_delay.py and tests/test_rfb.py, where the outputs are compared)."""
    from mrfq.router.run import simulate

    return np.array([f.rate for f in simulate(flows.from_dict(d)).flows])


@pytest.mark.parametrize("scheduler", SCHEDULER_NAMES)
@settings(deadline=None, max_examples=4, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_reordering_the_flow_tables_permutes_the_rates(scheduler, data):
    d = data.draw(rate_scenarios(scheduler))
    rev = {**d, "flow": d["flow"][::-1]}
    rtol = REORDER_RTOL.get(scheduler, REORDER_RTOL_DEFAULT)
    assert _rates(rev)[::-1] == pytest.approx(_rates(d), rel=rtol, abs=2.0 / d["run"]["duration"])


#: where a cost of 0 (the packet skips the resource) is the limit of small costs: the schedulers that
#: order each resource by that resource's own use (a packet costing 1e-6 there gets a tag that barely
#: grows and passes at once) and mr3 (its rounds count the dominant service).  FIFO, fq-single and drr
#: at their FIFO resources, and memoryless and dovetailing DRFQ, whose one tag orders every resource,
#: make a packet that costs 1e-6 at a busy resource wait there like any other: a real effect of
#: queueing, not a limit (docs/schedulers.md, 'Zero costs')
ZERO_COST_RTOL = {"bmf-wfq": 0.01, "mr3": 0.01, "pf-sfq": 0.2}


@pytest.mark.parametrize("scheduler", sorted(ZERO_COST_RTOL))
@settings(deadline=None, max_examples=4, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_cost_of_zero_is_the_limit_of_small_costs(scheduler, data):
    from hypothesis import assume

    d = data.draw(rate_scenarios(scheduler).filter(lambda d: any(0.0 in f["cost"] for f in d["flow"])))
    if scheduler == "mr3":
        from mrfq.analysis.allocations import drf

        # where a flow's packets of one round, two rounds in flight, fit its window: otherwise a first
        # resource that costs 1e-6 makes a pipeline the window cannot fill, and one that costs 0 (nobody
        # uses it: removed) does not (docs/schedulers.md, mr3, 'a flow that needs more than its window')
        a = np.array([f["cost"] for f in d["flow"]])
        w = np.array([f["weight"] for f in d["flow"]])
        d_i = a.max(axis=1) / w
        assume(d_i.max() / d_i.min() * 2 <= d["router"]["window"])
        # and where weighted DRF itself does not jump: a flow that costs 1e-6 at a saturated resource is
        # held by it, one that costs 0 is not, and MR3's rounds follow DRF on both sides
        # (docs/schedulers.md, 'Zero costs')
        small_a = np.where(a > 0, a, 1e-6)
        assume(np.allclose(drf(a, w).phi, drf(small_a, w).phi, rtol=1e-3))
    small = {**d, "flow": [{**f, "cost": [c if c > 0 else 1e-6 for c in f["cost"]]} for f in d["flow"]]}
    assert _rates(small) == pytest.approx(_rates(d), rel=ZERO_COST_RTOL[scheduler], abs=2.0 / d["run"]["duration"])


#: scheduler -> (objective, where its documentation claims it: "always", or "first" when the
#: objective saturates the first resource some flow uses and no other), tolerance (relative)
#: (mr3: also where a flow's packets of one round, progress = 2 rounds in flight, fit its window)
OBJECTIVE_CLAIMS = {"drfq": ("drf", "first", 0.01), "drfq-dovetail": ("drf", "first", 0.01),
                    "mr3": ("drf", "first", 0.01), "bmf-wfq": ("bmf", "always", 0.01)}


@pytest.mark.parametrize("scheduler", sorted(OBJECTIVE_CLAIMS))
@settings(deadline=None, max_examples=4, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_rates_reach_the_objective_where_the_documentation_claims_it(scheduler, data):
    from hypothesis import assume

    from mrfq.analysis import allocations

    objective, where, rtol = OBJECTIVE_CLAIMS[scheduler]
    d = data.draw(rate_scenarios(scheduler, duration=8000.0))
    a = np.array([f["cost"] for f in d["flow"]])
    w = np.array([f["weight"] for f in d["flow"]])
    alloc = getattr(allocations, objective)(a, w)
    if where == "first":
        first = min(j for j in range(a.shape[1]) if a[:, j].any())
        assume(alloc.saturated == (first,))
    if scheduler == "mr3":   # a round's packets of a flow, times the rounds in flight, fit its window
        d_i = a.max(axis=1) / w
        assume(d_i.max() / d_i.min() * 2 <= d["router"]["window"])
    assert _rates(d) == pytest.approx(alloc.phi, rel=rtol)
