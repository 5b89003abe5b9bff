"""Published delay and fairness bounds against mrfq's schedulers, and FIFO against the same bounds.

The bounds, their sources and the measured values are in ``docs/findings/theory-checks.md``;
``analysis/theory_bounds.py`` holds the scenarios and the measures (exact: the sojourns from the
departure list, the services from the service trace).  First the measures by hand, then:

* [SFQ] Goyal, Vin & Cheng's delay guarantee for a rate-conforming CBR flow on one resource
  (``fq-single``, ``bmf-wfq``, and ``drfq``, which is SFQ on one resource);
* deficit round robin: the latency-rate bound with Stiliadis & Varghese's DRR latency, and the
  direct bound from [DRR]'s deficit lemma for a sparse flow;
* relative fairness of three greedy flows on two resources: [DRFQ]'s SFQ-form bound
  ``L_i/w_i + L_m/w_m`` of dominant service and [ERR]'s round-robin bound ``3 L`` of MR3's
  scheduled dominant service;
* FIFO on the same packets exceeding every one of them many times over;
* the known limit of DRFQ's virtual time: with a resource that is not a bottleneck its fairness
  degrades to FIFO's (docs/schedulers.md, 'drfq'), while MR3 keeps its bound.

``MRFQ_TEST_SCALE`` scales the runs' length.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from mrfq.analysis import theory_bounds as tb
from conftest import scaled

pytestmark = pytest.mark.nojit
DELAY_RUN = scaled(20_000.0, 3000.0)
FAIR_RUN = scaled(4000.0, 1000.0)


# ---------------------------------------------------------------------------
# the measures by hand
def test_sfq_delay_bounds_by_hand():
    """r_f = 0.5, packets of 1 at 0, 0.5, 5: EAT 0, 2 (the second is early), 5 (late: its arrival)."""
    b = tb.sfq_delay_bounds([0.0, 0.5, 5.0], [1.0, 1.0, 1.0], 0.5, 3.0)
    assert b.tolist() == [4.0, 1.5 + 4.0, 4.0]


def test_drr_latency_by_hand():
    assert tb.drr_latency([1.0, 1.0, 1.0, 2.0], 3) == 3 * 5.0 - 2 * 2.0


def trace(rows):
    s, e, j, u, k = (np.array(x) for x in zip(*rows))
    return SimpleNamespace(start=s, end=e, resource=j, flow=u, seq=k)


def test_relative_fairness_by_hand():
    """Flow 0 (dominant resource 0) served there on [0, 2] and [3, 4]; flow 1 (dominant resource 1)
    on [2, 2.5] and [4, 4.5] at resource 0, then on [2.5, 3.5] and [4.5, 6.5] at resource 1.
    D(t) = S_0 - S_1 is 0, 2, 2, 1.5, 1.5, 2, 2, 0 at t = 0, 2, 2.5, 3, 3.5, 4, 4.5, 6.5: the largest
    difference over intervals is 2, over [2, 3] 0.5.  Flow 1 at weight 2: S_1 / 2, D peaks at 2.5
    at t = 4.  Scheduled (each packet's dominant service at its start at resource 0): flow 0 jumps
    2 at 0 and 1 at 3, flow 1 jumps 1 at 2 and 2 at 4: D = 2, 1, 2, 0 after them, range 2."""
    tr = trace([(0.0, 2.0, 0, 0, 1), (2.0, 2.5, 0, 1, 1), (2.5, 3.5, 1, 1, 1), (3.0, 4.0, 0, 0, 2),
                (4.0, 4.5, 0, 1, 2), (4.5, 6.5, 1, 1, 2)])
    dom, w = {0: 0, 1: 1}, {0: 1.0, 1: 1.0}
    assert tb.relative_fairness(tr, [0, 1], dom, w, 0.0, 6.5) == {(0, 1): 2.0}
    assert tb.relative_fairness(tr, [0, 1], dom, w, 2.0, 3.0) == {(0, 1): 0.5}
    assert tb.relative_fairness(tr, [0, 1], dom, {0: 1.0, 1: 2.0}, 0.0, 6.5) == {(0, 1): 2.5}
    assert tb.relative_fairness(tr, [0, 1], dom, w, 0.0, 6.5, measure="scheduled") == {(0, 1): 2.0}
    with pytest.raises(ValueError, match="measure = 'x'"):
        tb.relative_fairness(tr, [0, 1], dom, w, 0.0, 6.5, measure="x")


# ---------------------------------------------------------------------------
# [SFQ]: the delay of a rate-conforming flow on one resource
@pytest.mark.parametrize("scheduler", ["fq-single", "bmf-wfq", "drfq"])
def test_sfq_delay_bound_never_exceeded(scheduler):
    c = tb.sfq_check(scheduler, DELAY_RUN)
    assert c["packets"] > 0.9 * tb.CBR_RATE * DELAY_RUN
    assert c["within"], c
    assert c["max"] == c["dmax"]        # the run's recorded maximum is the exact one
    assert c["bound"] == pytest.approx(3 * 1.0 + 0.3)   # every packet conforms: EAT = A


def test_fifo_exceeds_the_sfq_bound():
    c = tb.sfq_check("fifo", DELAY_RUN)
    assert not c["within"] and c["max"] > 10 * c["bound"], c


# ---------------------------------------------------------------------------
# deficit round robin
@pytest.mark.parametrize("scheduler", ["wfq", "wf2q-plus"])
def test_pgps_delay_bound_for_a_leaky_bucket_flow(scheduler):
    """[PG] / [BZ]: a (sigma, rho) flow (a shaped Poisson source) with rho below its reserved rate leaves
    within sigma / g + L_max: 4 x 0.3 / 0.4 + 1 = 4 time units, under WFQ and WF2Q+, for every packet."""
    assert tb.pgps_bound() == pytest.approx(4.0)
    c = tb.pgps_check(scheduler, DELAY_RUN)
    assert c["packets"] > 1000 and c["within"], c


def test_fifo_exceeds_the_pgps_bound():
    f = tb.pgps_check("fifo", DELAY_RUN)
    assert not f["within"] and f["max"] > 5 * f["bound"], f


def test_drr_latency_rate_bound_never_exceeded():
    c = tb.drr_lr_check("drr", DELAY_RUN)
    assert c["bound"] == pytest.approx(0.3 / 0.4 + 3 * 5.0 - 2 * 2.0)
    assert c["within"], c
    f = tb.drr_lr_check("fifo", DELAY_RUN)
    assert not f["within"] and f["max"] > 5 * f["bound"], f


def test_drr_deficit_bound_for_a_sparse_flow():
    c = tb.drr_sparse_check("drr", DELAY_RUN)
    assert c["max"] < c["period"]      # the precondition: each packet leaves before the next arrives
    assert c["within"], c
    f = tb.drr_sparse_check("fifo", DELAY_RUN)
    assert not f["within"] and f["max"] > 5 * f["bound"], f


# ---------------------------------------------------------------------------
# relative fairness on two resources
DRFQS = [("drfq", None), ("drfq", {"virtual_time": "in-service"}), ("drfq-dovetail", None)]


@pytest.mark.parametrize("variant", ["balanced", "cpu-bottleneck"])
@pytest.mark.parametrize("scheduler,router", DRFQS, ids=["drfq", "drfq-in-service", "drfq-dovetail"])
def test_drfq_fairness_bound_when_the_first_resource_is_a_bottleneck(scheduler, router, variant):
    c = tb.fairness_check(scheduler, FAIR_RUN, variant=variant, router=router)
    assert c["dominant"] <= c["drfq_bound"], c
    for pair, (measured, bound) in c["same_resource_pairs"].items():
        assert measured <= bound * (1 + 1e-9), (pair, c)


@pytest.mark.parametrize("variant,weights", [("balanced", (1.0, 1.0, 1.0)), ("link-bottleneck", (1.0, 1.0, 1.0)),
                                             ("balanced", (1.0, 2.0, 1.0))])
def test_mr3_round_robin_bound(variant, weights):
    """Rounds (global, or paced per last resource, the default: every flow here leaves at the link)
    meet [ERR]'s 3 L exactly.  Per-flow progress (progress_scope = "flow") passes over a flow whose
    own turns have not left, which ERR's proof does not allow: up to 3.2 L measured (8 seeds, 1200
    and 4000 time units, docs/findings/theory-checks.md), held here to 3.5 L."""
    for scope in ("resource", "round"):
        c = tb.fairness_check("mr3", FAIR_RUN, variant=variant, weights=weights, router={"progress_scope": scope})
        assert c["scheduled"] <= c["err_bound"] * (1 + 1e-9), c
    c = tb.fairness_check("mr3", FAIR_RUN, variant=variant, weights=weights, router={"progress_scope": "flow"})
    assert c["scheduled"] <= 3.5, c


def test_fifo_exceeds_the_fairness_bounds():
    c = tb.fairness_check("fifo", FAIR_RUN)
    assert c["dominant"] > 20 * c["drfq_bound"] and c["scheduled"] > 20 * c["err_bound"], c


@pytest.mark.parametrize("variant,weights", [("link-bottleneck", (1.0, 1.0, 1.0)), ("balanced", (1.0, 2.0, 1.0))])
@pytest.mark.parametrize("scheduler,router", DRFQS, ids=["drfq", "drfq-in-service", "drfq-dovetail"])
def test_drfq_fairness_degrades_when_the_first_resource_is_not_a_bottleneck(scheduler, router, variant, weights):
    """The link alone a bottleneck, the CPU at 0.92 or 6/7: the CPU starts every packet promptly,
    the virtual time runs ahead of the link's backlog and the link's order tends to FIFO's
    (docs/schedulers.md, 'drfq'): the dominant services drift apart with the length of the interval,
    far beyond the bound that holds when the first resource is a bottleneck, with either virtual
    time ([BR]'s largest start tag begun, [DRFQ]'s largest in service)."""
    c = tb.fairness_check(scheduler, FAIR_RUN, variant=variant, weights=weights, router=router)
    assert c["dominant"] > 20 * c["drfq_bound"], c
