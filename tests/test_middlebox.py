"""The middlebox as built: where the scheduler sits (``router.schedule_at``) and stage buffers with
back-pressure (``router.stage_buffer``), against hand-worked traces, the SimPy reference and the
two-station tandem with blocking.

Definitions (docs/middlebox.md): under ``schedule_at = "ingress"`` the scheduler orders only the
first resource's queue; every later resource serves first come, first served (ties by flow id);
every packet passes the first resource, in zero time where it costs nothing there.  The stage
buffer in front of resource j > 0 counts the packets waiting for j and those in service before j
that go to j next; a resource starts a packet that goes to j next only while that count is below
``stage_buffer``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SCALE
from mrfq import flows
from mrfq.flows.errors import ScenarioError
from mrfq.fq.registry import SCHEDULERS
from mrfq.router.reference import simulate_reference, trace_tuples
from mrfq.router.run import simulate
from test_reference import check_engine_equals_reference, scenarios

pytestmark = pytest.mark.nojit


def _two(scheduler: str, a, b, *, window: int, duration: float, **router) -> flows.Scenario:
    return flows.from_dict({
        "resources": ["cpu", "link"],
        "router": {"scheduler": scheduler, "window": window, **router},
        "run": {"duration": duration},
        "flow": [{"name": "a", "cost": list(a)}, {"name": "b", "cost": list(b)}]})


def _both(sc):
    """The engine's and the reference's traces, asserted equal; the trace."""
    eng = trace_tuples(simulate(sc, trace=10_000).trace)
    ref = simulate_reference(sc).trace
    assert eng == ref
    return ref


# ---------------------------------------------------------------------------
# hand-worked traces
def test_stage_buffer_of_one_blocks_the_cpu_until_the_link_takes_its_packet():
    """a = b = (1, 2), DRFQ tags a: 0, 2, 4 ..., b: 0, 2, 4 ...; ingress, stage buffer 1.  The cpu
    starts a packet only while nothing waits for the link: at 1, b1 waits until the link starts a1
    (same instant), at 2 a2 is held until 3, when the link starts b1."""
    sc = _two("drfq", (1.0, 2.0), (1.0, 2.0), window=3, duration=9.0, schedule_at="ingress", stage_buffer=1)
    A, B = 0, 1
    assert _both(sc) == [
        (0.0, 1.0, 0, A, 1),
        (1.0, 3.0, 1, A, 1), (1.0, 2.0, 0, B, 1),
        (3.0, 5.0, 1, B, 1), (3.0, 4.0, 0, A, 2),
        (5.0, 7.0, 1, A, 2), (5.0, 6.0, 0, B, 2),
        (7.0, 9.0, 1, B, 2), (7.0, 8.0, 0, A, 3),
        (9.0, 11.0, 1, A, 3), (9.0, 10.0, 0, B, 3),
    ]


def test_unbounded_every_is_the_router_of_the_paper():
    """The same flows with the defaults: the cpu runs ahead until the windows are inside."""
    sc = _two("drfq", (1.0, 2.0), (1.0, 2.0), window=3, duration=5.0)
    assert [r for r in _both(sc) if r[2] == 0] == [
        (0.0, 1.0, 0, 0, 1), (1.0, 2.0, 0, 1, 1), (2.0, 3.0, 0, 0, 2), (3.0, 4.0, 0, 1, 2),
        (4.0, 5.0, 0, 0, 3), (5.0, 6.0, 0, 1, 3)]


def test_a_packet_that_costs_nothing_at_ingress_takes_its_turn_there_in_zero_time():
    """a = (1, 1), b = (0, 1), DRFQ, ingress, stage buffer 1: b's packets pass the cpu in zero time
    when their turn comes (services [t, t] on resource 0), and the link alternates a, b: DRF's
    0.5 / 0.5."""
    sc = _two("drfq", (1.0, 1.0), (0.0, 1.0), window=2, duration=5.0, schedule_at="ingress", stage_buffer=1)
    A, B = 0, 1
    assert _both(sc) == [
        (0.0, 1.0, 0, A, 1),
        (1.0, 2.0, 1, A, 1), (1.0, 1.0, 0, B, 1),
        (2.0, 3.0, 1, B, 1), (2.0, 3.0, 0, A, 2),
        (3.0, 4.0, 1, A, 2), (3.0, 3.0, 0, B, 2),
        (4.0, 5.0, 1, B, 2), (4.0, 5.0, 0, A, 3),
        (5.0, 6.0, 1, A, 3), (5.0, 5.0, 0, B, 3),
    ]
    r = simulate(sc.replace(**{"run.duration": 4000.0, "run.warmup": 100.0}))
    assert [round(f, 3) for f in r.flows.rate] == [0.5, 0.5]


def test_later_resources_serve_first_come_first_served_under_ingress():
    """Every link service in the order the packets reached the link (ties by flow id)."""
    sc = flows.load_preset("middlebox-mix").replace(**{"router.schedule_at": "ingress", "run.duration": 200.0, "run.warmup": 0.0})
    for name in SCHEDULERS:
        res = simulate_reference(sc.replace(**{"router.scheduler": name}))
        ends = {}
        for start, end, j, u, k in res.trace:
            ends[(j, u, k)] = end
        J = sc.n_resources
        for j in range(1, J):
            starts = [(s, u, k) for s, _, jj, u, k in res.trace if jj == j]
            joined = []
            for s, u, k in starts:
                prev = max((ends[(i, u, k)] for i in range(j) if (i, u, k) in ends), default=None)
                joined.append((prev, u))
            assert joined == sorted(joined), (name, j)


# ---------------------------------------------------------------------------
# the engine against the reference, with placement and stage buffers drawn
@st.composite
def pipelines(draw):
    # every scheduler at two resources, drfq also at three (stage buffers in front of two resources):
    # the loop variants tests/test_reference.py compiles (a compilation costs more than the runs)
    sc = draw(scenarios(J=3, scheduler="drfq") if draw(st.integers(0, 3)) == 0 else scenarios(J=2))
    J = sc.n_resources
    changes = {"router.schedule_at": draw(st.sampled_from(("every", "ingress")))}
    if changes["router.schedule_at"] == "ingress" and any(
            o.name == "fq_resource" for o in SCHEDULERS[sc.router.scheduler].options):   # fq-single, drr, scfq, ...
        changes["router.fq_resource"] = sc.resources[sc.used_resources().index(True)]  # the first used
    if J > 1 and draw(st.booleans()):
        changes["router.stage_buffer"] = draw(st.sampled_from((1, 1, 2, 3, [1, "unbounded"], ["unbounded", 2])))
        if isinstance(changes["router.stage_buffer"], list):
            changes["router.stage_buffer"] = (changes["router.stage_buffer"] * J)[:J - 1]
    if draw(st.booleans()):
        changes["flow"] = [{**f, "cost_law": "exponential"} if k == 0 else f
                           for k, f in enumerate(flows.to_dict(sc)["flow"])]
        return flows.from_dict({**flows.to_dict(sc), "flow": changes.pop("flow")}).replace(**changes)
    return sc.replace(**changes)


@settings(max_examples=max(10, int(60 * SCALE)), deadline=None)
@given(sc=pipelines())
def test_engine_equals_reference_with_placement_and_stage_buffers(sc):
    check_engine_equals_reference(sc)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_engine_equals_reference_on_the_weighted_case_under_ingress(scheduler):
    """Three greedy flows, the link the bottleneck, a stage buffer of 2, every scheduler."""
    sc = flows.from_dict({
        "resources": ["cpu", "link"],
        "router": {"scheduler": scheduler, "window": 6, "schedule_at": "ingress", "stage_buffer": 2},
        "run": {"duration": 300.0, "warmup": 20.0},
        "flow": [{"name": "x", "cost": [1.0, 0.25]}, {"name": "y", "cost": [1.0, 1.0], "weight": 2.0},
                 {"name": "z", "cost": [0.0, 1.0]}]})
    check_engine_equals_reference(sc)


# ---------------------------------------------------------------------------
# theory: the two-station tandem with blocking
def tandem_throughput(mu1: float, mu2: float, B: int) -> float:
    """Departures per time unit of a saturated exponential station 1 (rate mu1) feeding station 2
    (rate mu2) through a stage buffer of B under blocking before service: station 1 starts a
    packet only while (packets waiting at 2) + (its own packet) < B.  State (b1, q2, b2): station
    1 busy, packets waiting at 2, station 2 busy; the balance equations solved exactly."""
    states, index = [], {}

    def settle(b1, q2, b2):
        if not b2 and q2:
            q2, b2 = q2 - 1, 1
        if not b1 and q2 < B:
            b1 = 1
        return b1, q2, b2

    todo = [settle(0, 0, 0)]
    edges = []
    while todo:
        x = todo.pop()
        if x in index:
            continue
        index[x] = len(states)
        states.append(x)
        b1, q2, b2 = x
        if b1:
            y = settle(0, q2 + (1 if b2 else 0), 1)
            edges.append((x, y, mu1))
            todo.append(y)
        if b2:
            y = settle(b1, q2 - 1, 1) if q2 else settle(b1, 0, 0)
            edges.append((x, y, mu2))
            todo.append(y)
    n = len(states)
    Q = np.zeros((n, n))
    for x, y, r in edges:
        Q[index[x], index[y]] += r
        Q[index[x], index[x]] -= r
    A = np.vstack([Q.T, np.ones(n)])
    pi = np.linalg.lstsq(A, np.r_[np.zeros(n), 1.0], rcond=None)[0]
    return mu2 * sum(p for p, (_, _, b2) in zip(pi, states) if b2)


def test_tandem_chain_limits():
    """B = 1 by hand: the cycle (1,0,0) -> (1,0,1) -> (0,1,1); B large: min(mu1, mu2)."""
    m1, m2 = 1.0, 1.25
    # balance: pi_a m1 = pi_b m2; pi_b (m1 + m2) = pi_a m1 + pi_c m2; pi_c m2 = pi_b m1
    a, b, c = m2 / m1, 1.0, m1 / m2
    assert tandem_throughput(m1, m2, 1) == pytest.approx(m2 * (b + c) / (a + b + c), rel=1e-12)
    assert tandem_throughput(m1, m2, 200) == pytest.approx(m1, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("B", [1, 2, 3, 4, 6, 8])
def test_tandem_with_blocking_throughput(B):
    """One saturated flow, exponential costs of means 1 / mu1 = 1 at the cpu and 1 / mu2 = 0.8 at
    the link (cost_law = "exponential"), stage buffer B: its rate is the tandem's throughput, within
    four standard errors (batch means)."""
    mu1, mu2 = 1.0, 1.25
    duration = max(20_000.0, 400_000.0 * SCALE)
    sc = flows.from_dict({
        "resources": ["cpu", "link"],
        "router": {"scheduler": "drfq", "window": 64, "schedule_at": "ingress", "stage_buffer": B},
        "run": {"duration": duration, "warmup": 100.0, "seed": 3},
        "flow": [{"name": "a", "cost": [1 / mu1, 1 / mu2], "cost_law": "exponential"}]})
    r = simulate(sc)
    exact = tandem_throughput(mu1, mu2, B)
    rate = r.flows.rate[0]
    # the rate of a saturated tandem: departures are a renewal-like stream; its variance per unit
    # time is at most about the mean rate x (1 + 2 B), a loose bound that keeps the check honest
    se = math.sqrt(rate * (1 + 2 * B) / (duration - 100.0))
    assert abs(rate - exact) < 4 * se, (B, rate, exact, se)
    assert r.resources[0].utilization == pytest.approx(exact / mu1, abs=6 * se / mu1)


# ---------------------------------------------------------------------------
# the gate
def _router(**router):
    return {"resources": ["cpu", "nic", "link"], "router": router, "flow": [{"cost": [1, 1, 1]}]}


@pytest.mark.parametrize("router, message", [
    ({"schedule_at": "egress"}, "router.schedule_at = 'egress': choose 'every'"),
    ({"stage_buffer": 0}, "router.stage_buffer = 0: must be an integer from 1"),
    ({"stage_buffer": -3}, "router.stage_buffer = -3: must be an integer from 1"),
    ({"stage_buffer": 2.5}, "router.stage_buffer = 2.5: must be an integer from 1"),
    ({"stage_buffer": True}, "router.stage_buffer = True: must be an integer from 1"),
    ({"stage_buffer": [1, 2, 3]}, "router.stage_buffer has 3 entries: give one per resource after the first (2: nic, link)"),
    ({"stage_buffer": [1, "none"]}, "router.stage_buffer[1] = 'none': must be an integer from 1"),
    ({"scheduler": "drr", "schedule_at": "ingress", "fq_resource": "link"},
     "router.fq_resource = 'link': under router.schedule_at = 'ingress' only the first resource's queue is scheduled"),
    ({"scheduler": "fq-single", "schedule_at": "ingress", "fq_resource": "nic"},
     "router.fq_resource = 'nic': under router.schedule_at = 'ingress'"),
])
def test_bad_placement_and_stage_buffers_are_one_line(router, message):
    with pytest.raises(ScenarioError) as e:
        sc = flows.from_dict(_router(**router))
        from mrfq.fq.registry import resolve
        resolve(sc.router, sc.resources)
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


def test_stage_buffer_needs_a_second_resource_and_cost_law_is_checked():
    with pytest.raises(ScenarioError, match=r"router.stage_buffer = 4: there is no resource after the first"):
        flows.from_dict({"resources": ["cpu"], "router": {"stage_buffer": 4}, "flow": [{"cost": [1]}]})
    with pytest.raises(ScenarioError, match=r"flow\[0\].cost_law = 'poisson': choose 'fixed'"):
        flows.from_dict({"resources": ["cpu"], "flow": [{"cost": [1], "cost_law": "poisson"}]})


def test_defaults_leave_the_scenario_digest_alone():
    sc = flows.load_preset("oracle-rates")
    assert "schedule_at" not in flows.to_dict(sc)["router"] and "stage_buffer" not in flows.to_dict(sc)["router"]
    sb = sc.replace(**{"router.stage_buffer": 4, "router.schedule_at": "ingress"})
    assert flows.to_dict(sb)["router"]["stage_buffer"] == [4] and sb.digest() != sc.digest()
    assert flows.from_dict(flows.to_dict(sb)) == sb


def test_middlebox_preset_engine_equals_reference():
    """The shipped transmit-ring preset (windows of 1000, a ring of 256), shortened."""
    sc = flows.load_preset("middlebox").replace(**{"run.duration": 600.0, "run.warmup": 50.0})
    assert sc.router.schedule_at == "ingress" and sc.router.stage_buffer == (256,)
    check_engine_equals_reference(sc)


@pytest.mark.parametrize("skipped", ["ignore", "virtual-time"])
def test_dovetail_leaves_v_alone_where_a_packet_passes_ingress_in_zero_time(skipped):
    """Under ingress placement a packet that costs nothing at the first resource passes it in zero
    time; its start there must not move drfq-dovetail's V_0 (under "every" it never reaches it).
    The engine's admission writes a start tag of 0 for a resource the packet skips (its record is
    reused: an unwritten word would hold an earlier packet's tag), and the reference tags only the
    resources a packet uses; a case of the property test above, pinned."""
    sc = flows.from_dict({
        "resources": ["r0", "r1"], "run": {"duration": 20.0, "seed": 0},
        "router": {"scheduler": "drfq-dovetail", "window": 2, "skipped": skipped, "schedule_at": "ingress"},
        "flow": [{"name": "f1", "cost": [0.0, 0.25], "weight": 0.5}, {"name": "f2", "cost": [0.0, 0.25], "weight": 0.5},
                 {"name": "f3", "cost": [0.0, 0.0], "weight": 0.5, "per_byte": [0.0, 1 / 1024], "packet_sizes": [256]},
                 {"name": "f4", "cost": [0.5, 0.0], "weight": 0.5, "per_byte": [0.0, 1 / 1024],
                  "packet_sizes": [256]}]})
    check_engine_equals_reference(sc)
