"""Bounded dovetailing (``router.dovetail_bound`` = Δ of drfq-dovetail, docs/schedulers.md,
'drfq-dovetail'): hand-computed tags, Δ = 0 is memoryless DRFQ's schedule bit for bit, Δ = inf
today's dovetailing, and the rates move from one to the other as Δ grows."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrfq import flows
from mrfq.flows.errors import ScenarioError
from mrfq.fq import dovetail
from mrfq.router.run import simulate
from test_reference import scenarios


def test_bounded_tags_by_hand():
    """One flow alone (V = 0 throughout), packets (1, 0.5), (0.5, 1), (1, 0.5), weight 1.

    Packet 1: S = (0, 0), F = (1, 0.5), key 0.  Packet 2: unbounded starts (1, 0.5), K = 1;
    Δ = inf keeps them (F = (1.5, 1.5)), Δ = 0.25 lifts the link's to 0.75 (F = (1.5, 1.75)), Δ = 0
    to 1 (F = (1.5, 2)).  Packet 3: K = 1.5, 1.75 and 2, the last memoryless DRFQ's S_3 = F_2 = 2."""
    keys = {}
    for bound in (math.inf, 0.25, 0.0):
        state = {"V": [0.0, 0.0], "F": {}}
        got = [dovetail.twin_admit(state, 0, s, 1.0, bound=bound) for s in ([1.0, 0.5], [0.5, 1.0], [1.0, 0.5])]
        keys[bound] = got
        if bound == 0.25:
            assert state["S"] == {0: 1.5, 1: 1.75}
    assert keys == {math.inf: [0.0, 1.0, 1.5], 0.25: [0.0, 1.0, 1.75], 0.0: [0.0, 1.0, 2.0]}


def _variable_costs():
    """Two flows whose packets alternate between a CPU-heavy and a link-heavy size: dovetailing
    credits the under-used resource, memoryless DRFQ does not."""
    return flows.from_dict({
        "resources": ["cpu", "link"], "router": {"scheduler": "drfq-dovetail", "window": 4},
        "run": {"duration": 200.0, "seed": 3},
        "flow": [{"name": "a", "cost": [0.0, 0.0], "per_byte": [1 / 512, 1 / 1024],
                  "packet_sizes": [256, 1024]},
                 {"name": "b", "cost": [0.25, 0.0], "per_byte": [0.0, 1 / 1024], "packet_sizes": [512, 1536]},
                 {"name": "c", "cost": [0.5, 0.5], "start": 2.5}]})


def test_zero_bound_is_memoryless_and_inf_is_dovetailing():
    sc = _variable_costs()
    memoryless = simulate(sc, scheduler="drfq", trace=10_000).trace.rows()
    dovetailing = simulate(sc, trace=10_000).trace.rows()
    assert memoryless != dovetailing                    # the case separates the two
    assert simulate(sc.replace(**{"router.dovetail_bound": 0.0}), trace=10_000).trace.rows() == memoryless
    assert simulate(sc.replace(**{"router.dovetail_bound": "inf"}), trace=10_000).trace.rows() == dovetailing
    assert simulate(sc.replace(**{"router.dovetail_bound": 1e9}), trace=10_000).trace.rows() == dovetailing


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_zero_bound_equals_memoryless_drfq_on_random_scenarios(data):
    """Δ = 0 against memoryless DRFQ with its default virtual time: the same service trace."""
    sc = data.draw(scenarios(J=2, scheduler="drfq-dovetail", options=False))
    sc = sc.replace(**{"router.dovetail_bound": 0.0, "router.idle_reset": False,
                       "router.virtual_time": "started"})
    a = simulate(sc, trace=100_000)
    b = simulate(sc, scheduler="drfq", trace=100_000)
    assert a.trace.rows() == b.trace.rows()
    assert [f.packets for f in a.flows] == [f.packets for f in b.flows]


def test_rates_move_from_memoryless_to_drf_as_the_bound_grows():
    """The idle-CPU probe (docs/schedulers.md, 'drfq'): (0.2, 1) and (0.1, 0.5), window 30.  Memoryless
    DRFQ gives FIFO's 2/3, 2/3, dovetailing DRF's 0.5 / 1.0; in between the light flow's rate grows
    with Δ (0.682 at 0.5, 0.75 at 5, 0.857 at 10) and reaches DRF at Δ = 30."""
    sc = flows.from_dict({"resources": ["cpu", "link"],
                          "router": {"scheduler": "drfq-dovetail", "window": 30},
                          "run": {"duration": 20000.0, "warmup": 2000.0},
                          "flow": [{"name": "a", "cost": [0.2, 1.0]}, {"name": "b", "cost": [0.1, 0.5]}]})
    light = []
    for bound in (0.0, 0.5, 5.0, 10.0, 30.0):
        r = simulate(sc.replace(**{"router.dovetail_bound": bound}))
        light.append(r.flows[1].rate)
    assert light[0] == pytest.approx(2 / 3, rel=2e-3)
    assert light[-1] == pytest.approx(1.0, rel=2e-3)
    assert all(x < y for x, y in zip(light, light[1:])), light


@pytest.mark.parametrize("bad", [-1.0, "big", True])
def test_bad_bound_is_refused(bad):
    sc = _variable_costs()
    with pytest.raises(ScenarioError, match=r"router\.dovetail_bound"):
        simulate(sc.replace(**{"router.dovetail_bound": bad}))
