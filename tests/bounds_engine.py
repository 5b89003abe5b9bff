"""The engine against the SimPy reference on one chunk of loop variants, with bounds checks on.

Not collected by the normal run (the name is not ``test_*.py``): tests/test_indexing.py runs it in
a subprocess with ``NUMBA_BOUNDSCHECK=1``, together with node ids of tests/test_reference.py and
tests/test_traces.py, once per chunk (``MRFQ_BOUNDS_SCHEDULERS``: the schedulers checked at two
resources, ``MRFQ_BOUNDS_J``: the resource counts checked with drfq).  Each generic loop variant
(J, scheduler, costs per flow / per packet) compiles once per chunk, and every scenario of the
chunk runs on it: these tests draw their scenarios per variant, where the property test of
tests/test_reference.py draws J and the scheduler at random (one compilation per variant drawn).
The last test asserts that every variant of the chunk was compiled and run.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrfq import flows
from test_reference import LONG_RTT, check_engine_equals_reference, scenarios

SCHEDULERS = [s for s in os.environ.get("MRFQ_BOUNDS_SCHEDULERS", "").split(",") if s]
RESOURCE_COUNTS = [int(j) for j in os.environ.get("MRFQ_BOUNDS_J", "").split(",") if j]
#: the scheduler checked at the resource counts of MRFQ_BOUNDS_J
J_SCHEDULER = "drfq"

#: LONG_RTT (tests/test_reference.py: up to 90 admissions waiting out a long rtt, the engine's
#: admission ring (64) grows) with a second resource, so that it runs on the two-resource variants
LONG_RTT_2 = flows.from_dict({
    "resources": ["r", "link"], "router": {"scheduler": "drfq", "window": 3, "rtt": 30.0},
    "run": {"duration": 80.0},
    "flow": [{"name": f"f{i}", "cost": [0.25 * (1 + i % 3), 0.125 * (1 + (i + 1) % 3)], "start": 0.25 * (i % 4)}
             for i in range(30)]})


def sized(sc) -> bool:
    return any(x.packet_sizes is not None for x in (*sc.flows, *sc.classes))


def check_both_cost_layouts(sc) -> None:
    """The engine equals the reference with its costs kept per flow and per packet (a scenario with
    packet sizes has only the latter)."""
    check_engine_equals_reference(sc, (None,) if sized(sc) else (None, True))


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@settings(deadline=None, max_examples=5, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_engine_equals_reference_at_two_resources(scheduler, data):
    """The random scenarios of test_reference.test_engine_equals_reference (this scheduler's own
    options drawn from their examples) at J = 2, with both cost layouts."""
    check_both_cost_layouts(data.draw(scenarios(J=2, scheduler=scheduler)))


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_engine_equals_reference_with_many_admissions_waiting(scheduler):
    check_both_cost_layouts(LONG_RTT_2.replace(**{"router.scheduler": scheduler}))


@pytest.mark.parametrize("J", RESOURCE_COUNTS)
@settings(deadline=None, max_examples=5, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_engine_equals_reference_at_other_resource_counts(J, data):
    check_both_cost_layouts(data.draw(scenarios(J=J, scheduler=J_SCHEDULER)))


@pytest.mark.parametrize("J", [J for J in RESOURCE_COUNTS if J == 1])
def test_engine_equals_reference_with_many_admissions_waiting_at_one_resource(J):
    check_both_cost_layouts(LONG_RTT.replace(**{"router.scheduler": J_SCHEDULER}))


def test_every_variant_of_the_chunk_was_checked():
    """Runs last: the generic loop variants (J, scheduler, costs per packet) this chunk compiled."""
    from mrfq.router.loop import _LOOPS

    built = {(k[0], k[1], k[3]) for k in _LOOPS if k[2] is None}
    want = {(2, s, pc) for s in SCHEDULERS for pc in (False, True)} | \
           {(J, J_SCHEDULER, pc) for J in RESOURCE_COUNTS for pc in (False, True)}
    assert want <= built, sorted(want - built)
