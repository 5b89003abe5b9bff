"""MR3 (fq/mr3.py): hand-computed traces, the progress control, long-run rates against DRF.

The engine-vs-SimPy cross-check with default options is in test_reference.py (it enumerates the
registry); here the same check runs with the progress-control lag drawn too.
"""

import json

import numpy as np
import pytest
from conftest import SCALE
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reference import check_engine_equals_reference, scenarios

from mrfq import flows
from mrfq.analysis.allocations import drf
from mrfq.analysis.cli import main
from mrfq.flows.errors import ScenarioError
from mrfq.router.reference import simulate_reference
from mrfq.router.run import simulate


def rows(sc, resource, n):
    names = [f.name for f in sc.flows]
    eng = simulate(sc, trace=500).trace.rows(names, resource=resource)[:n]
    ref = simulate_reference(sc, trace=500).rows(resource, names)[:n]
    assert eng == ref
    return eng


def link_bound(progress=None, scope=None, join_order="arrival"):
    """f1 s = (1/2, 1) (d = 1), f2 s = (1/4, 1/2) (d = 1/2), window 3: the link is the bottleneck.
    ``join_order = "arrival"``: flows that join at one instant line up in flow order (f1 first)."""
    router = {"scheduler": "mr3", "window": 3}
    if join_order is not None:
        router["join_order"] = join_order
    if progress is not None:
        router["progress"] = progress
    if scope is not None:
        router["progress_scope"] = scope
    return flows.from_dict({"resources": ["cpu", "link"], "router": router, "run": {"duration": 12.0},
                            "flow": [{"name": "f1", "cost": [0.5, 1.0]}, {"name": "f2", "cost": [0.25, 0.5]}]})


@pytest.mark.nojit
def test_mr3_trace_by_hand_flows_joining_at_one_instant_line_up_by_dominant_service():
    """The default ``join_order = "dominant"``: f1 (d = 1) and f2 (d = 1/2) join at 0; f2 goes first
    although listed second.  A token is the join instant's number plus 0.5 d / (1 + d); a decision at
    the CPU closes an instant.  Rounds paced with L = 2, as in the round-progress trace below.
      0    instant 0: f2 (0.167), f1 (0.25).  Round 1, MaxEC(0) = 0.  f2: B = 0 -> f2p1 (B = -.5):
           EC2 = .5, f2 to the tail (1.167).                                   CPU f2p1 [0, .25]
      .25  f1: B = 0 -> f1p1, EC1 = 1 (2.25).                   CPU f1p1 [.25, .75], link f2p1 [.25, .75]
      .75  f2p1 leaves, f2p4 admitted.  Round 2 (f2's 1.167 >= 1), MaxEC(1) = 1: f2: B = 1 - .5 = .5
           -> f2p2 (B = 0), f2p3 (B = -.5): EC2 = .5 (3.167).   CPU f2p2 [.75, 1], f2p3 [1, 1.25]
      1.25 f1 (2.25 < 3: round 2): B = 0 -> f1p2, EC1 = 1 (4.25).             CPU f1p2 [1.25, 1.75]
      1.75 f1p1 leaves the link: round 1 is out; round 3, MaxEC(2) = 1: f2: B = .5 -> f2p4, nothing
           more waiting: leaves, EC2 = 0.                                       CPU f2p4 [1.75, 2]
           link (FIFO): f2p2 [1.75, 2.25], f2p3 [2.25, 2.75], f1p2 [2.75, 3.75], f2p4, f1p3 [4.25, 5.25]
      2    f1 (4.25 < 5): B = 0 -> f1p3 (5.25).                                 CPU f1p3 [2, 2.5]
      2.25 f2p5 admitted: f2 joins (6.167).
      2.5  round 4 needs round 2 off the link: f1p2 leaves at 3.75; the CPU idles until then.
      3.75 round 4, MaxEC(3) = 1: f1: B = 0 -> f1p4.                             CPU f1p4 [3.75, 4.25]
      4.25 f2 (6.167 < 7: round 4): B = 1 - 0 -> f2p5, f2p6 (admitted at 2.75), f2p7 (admitted at 4.25),
           nothing more: leaves.                            CPU f2p5 [4.25, 4.5], f2p6, f2p7 [4.75, 5]
      5    round 5 needs round 3 (f2p4, f1p3) off the link: at 5.25.             CPU f1p5 [5.25, 5.75]
    """
    sc = link_bound(join_order="dominant")
    assert rows(sc, 0, 12) == [
        (0.0, "f2", 1), (0.25, "f1", 1), (0.75, "f2", 2), (1.0, "f2", 3), (1.25, "f1", 2), (1.75, "f2", 4),
        (2.0, "f1", 3), (3.75, "f1", 4), (4.25, "f2", 5), (4.5, "f2", 6), (4.75, "f2", 7), (5.25, "f1", 5)]
    assert rows(sc, 1, 7) == [
        (0.25, "f2", 1), (0.75, "f1", 1), (1.75, "f2", 2), (2.25, "f2", 3), (2.75, "f1", 2), (3.75, "f2", 4),
        (4.25, "f1", 3)]
    assert rows(link_bound(join_order=None), 0, 12) == rows(sc, 0, 12)     # the default


@pytest.mark.nojit
def test_mr3_trace_by_hand_per_flow_progress():
    """Per-flow progress control (progress_scope = "flow"), L = 2 (auto: two resources): a flow begins its turn n once its packets of turns
    1..n - 2 have left the link; a flow that may not is passed over, keeping its token.

    Tokens in the order flows join the CPU's active list; B = balance, EC = excess counter,
    MaxEC(k-1) = largest EC left by round k - 1; d = dominant service of a packet.  Up to 1.5 as
    in the round-progress trace below: f1's turns 1, 2 (f1p1, f1p2), f2's turns 1, 2 (f2p1; f2p2,
    f2p3), rounds 1 and 2.
      1.75 f1 (token 4), turn 3: its turn 1 (f1p1) left at 1.5: it may.  Round 3, MaxEC(2) = 1:
           B = 1 - 1 = 0 -> f1p3, EC1 = 1 (token 5).                        CPU f1p3 [1.75, 2.25]
           (under round progress the CPU idles here: f2p1, of round 1, is still on the link)
      2    f2p1 leaves the link; f2p4 admitted, f2 joins (token 6).         link f1p2 [2, 3]
      2.25 f1 (token 5), turn 4, needs turns 1-2 (f1p1, f1p2) off the link: f1p2 is not: passed
           over.  f2 (token 6), turn 3, needs its turn 1 (f2p1): left.  Round 4, MaxEC(3) = 1:
           B = 1 - 0 -> f2p4, nothing more waiting: leaves.                  CPU f2p4 [2.25, 2.5]
      2.5  f1 still may not; f2 has nothing at the CPU: the CPU idles.
      3    f1p2 leaves: f1 may (token 5 < round 4's end: round 4 goes on).  B = 1 - 1 = 0 -> f1p4,
           EC1 = 1 (token 7).                                                CPU f1p4 [3, 3.5]
           link: f2p2 [3, 3.5], f2p3 [3.5, 4] (FIFO: they came before f1p3)
      3.5  f2p5 admitted (token 8).  f1, turn 5, needs f1p3 off the link; f2, turn 4, needs
           f2p2, f2p3: neither may.  The CPU idles.
      4    f2p3 leaves: f2 may.  Round 5, MaxEC(4) = 1: B = 1 -> f2p5 (B = .5), f2p6 waits (f2p6
           admitted at 4): f2p6 (B = 0), nothing more: leaves.   CPU f2p5 [4, 4.25], f2p6 [4.25, 4.5]
           link f1p3 [4, 5]
      5    f1p3 leaves: f1 may.  B = 1 - 1 = 0 -> f1p5.                       CPU f1p5 [5, 5.5]
    """
    sc = link_bound(scope="flow")
    assert rows(sc, 0, 11) == [
        (0.0, "f1", 1), (0.5, "f2", 1), (0.75, "f1", 2), (1.25, "f2", 2), (1.5, "f2", 3), (1.75, "f1", 3),
        (2.25, "f2", 4), (3.0, "f1", 4), (4.0, "f2", 5), (4.25, "f2", 6), (5.0, "f1", 5)]
    assert rows(sc, 1, 7) == [
        (0.5, "f1", 1), (1.5, "f2", 1), (2.0, "f1", 2), (3.0, "f2", 2), (3.5, "f2", 3), (4.0, "f1", 3), (5.0, "f2", 4)]


@pytest.mark.nojit
def test_mr3_trace_by_hand_round_progress():
    """Round progress control, L = 2 (auto: two resources): round k starts on the CPU once round
    k - 2 has left the link.  Both flows leave the router at the link, so the default, rounds paced
    per last resource, is this trace too.

    Tokens in the order flows join the CPU's active list; B = balance, EC = excess counter,
    MaxEC(k-1) = largest EC left by round k - 1; d = dominant service of a packet.
      0    round 1 = {f1 (token 0), f2 (token 1)}, MaxEC(0) = 0.  f1: B = 0 - 0 = 0, f1p1 (d = 1)
           -> B = -1: turn over, EC1 = 1, f1 to the tail (token 2).          CPU f1p1 [0, .5]
      .5   f2: B = 0, f2p1 (d = .5) -> B = -.5: EC2 = .5 (token 3).         CPU f2p1 [.5, .75]
           link f1p1 [.5, 1.5]
      .75  round 2 = {f1, f2}, MaxEC(1) = 1; needs round 0: free.  f1: B = 1 - 1 = 0 -> one
           packet, EC1 = 1 (token 4).                                       CPU f1p2 [.75, 1.25]
      1.25 f2: B = 1 - .5 = .5 -> f2p2, B = 0 >= 0, f2p3 waits: the turn goes on.  CPU f2p2 [1.25, 1.5]
      1.5  f2p3: B = -.5, f2 has nothing more at the CPU: leaves, EC2 = 0.   CPU f2p3 [1.5, 1.75]
           link: f1p1 leaves (round 1: 1 of 2 done); f2p1 [1.5, 2]
      1.75 round 3 would start (f1, token 4) but round 1 has not left the link: the CPU idles
      2    f2p1 leaves: round 1 done; f2p4 admitted, f2 joins (token 5).  Round 3 = {f1, f2},
           MaxEC(2) = 1: f1 one packet (EC1 = 1, token 6).                  CPU f1p3 [2, 2.5]
           link f1p2 [2, 3]
      2.5  f2: B = 1 - 0 = 1 -> f2p4, nothing more waiting: leaves.           CPU f2p4 [2.5, 2.75]
      2.75 round 4 needs round 2 (f1p2, f2p2, f2p3) off the link: at 3, 3.5, 4.  Link: f2p2 [3, 3.5],
           f2p3 [3.5, 4], f1p3 [4, 5].  At 4 round 4 = {f1 (token 6), f2 (token 7, joined at 3.5)}:
           f1p4 [4, 4.5], f2p5 [4.5, 4.75], f2p6 [4.75, 5].
      5    round 5 needs round 3 (f1p3, f2p4): f2p4 is on the link [5, 5.5]: round 5 at 5.5:
           f1p5 [5.5, 6], f2p7 [6, 6.25]; link f1p4 [5.5, 6.5], f2p5 [6.5, 7], f2p6 [7, 7.5],
           round 6 at 7.5: f1p6.  From then on, per round, f1 sends one packet and f2 two: one
           link unit each, the DRF rates (0.5, 1.0), and the link never idles.
    """
    assert rows(link_bound(), 0, 13) == rows(link_bound(scope="round"), 0, 13)
    sc = link_bound(scope="round")
    assert rows(sc, 0, 13) == [
        (0.0, "f1", 1), (0.5, "f2", 1), (0.75, "f1", 2), (1.25, "f2", 2), (1.5, "f2", 3), (2.0, "f1", 3),
        (2.5, "f2", 4), (4.0, "f1", 4), (4.5, "f2", 5), (4.75, "f2", 6), (5.5, "f1", 5), (6.0, "f2", 7),
        (7.5, "f1", 6)]
    assert rows(sc, 1, 11) == [
        (0.5, "f1", 1), (1.5, "f2", 1), (2.0, "f1", 2), (3.0, "f2", 2), (3.5, "f2", 3), (4.0, "f1", 3),
        (5.0, "f2", 4), (5.5, "f1", 4), (6.5, "f2", 5), (7.0, "f2", 6), (7.5, "f1", 5)]


@pytest.mark.nojit
def test_mr3_trace_by_hand_without_progress_control():
    """progress = 0: the same flows; up to 1.5 as above, then the CPU starts round 3 at once.

      1.75 round 3 = {f1 (token 4)}: f2 left at 1.5 and has not come back; MaxEC(2) = 1:
           f1: B = 1 - 1 = 0 -> f1p3, f1p4 waits: EC1 = 1 (token 5).           CPU f1p3 [1.75, 2.25]
      2    f2p4 admitted: f2 joins (token 6)
      2.25 round 4 = {f1, f2}, MaxEC(3) = 1: f1p4, f1 has nothing more waiting: leaves.
                                                                              CPU f1p4 [2.25, 2.75]
      2.75 f2: B = 1 - 0 -> f2p4, leaves.                                      CPU f2p4 [2.75, 3]
    """
    sc = link_bound(progress=0)
    assert rows(sc, 0, 9) == [
        (0.0, "f1", 1), (0.5, "f2", 1), (0.75, "f1", 2), (1.25, "f2", 2), (1.5, "f2", 3), (1.75, "f1", 3),
        (2.25, "f1", 4), (2.75, "f2", 4), (3.0, "f1", 5)]


@pytest.mark.nojit
def test_mr3_equal_dominant_costs_give_the_spec_drfq_trace():
    """The flows (1, 1/2) and (1/2, 1), window 2, of docs/schedulers.md, 'Hand-checked traces':
    both packets have d = 1, so every MR3 turn sends one packet and the rounds alternate f1, f2 -
    the memoryless DRFQ trace there (round 3 at 3 needs round 1 off the link: f1p1 left at 1.5,
    f2p1 at 2.5)."""
    sc = flows.load_preset("oracle-drfq-trace").replace(**{"router.scheduler": "mr3"})
    assert rows(sc, 0, 5) == [(0.0, "f1", 1), (1.0, "f2", 1), (1.5, "f1", 2), (2.5, "f2", 2), (3.0, "f1", 3)]
    assert rows(sc, 1, 4) == [(1.0, "f1", 1), (1.5, "f2", 1), (2.5, "f1", 2), (3.0, "f2", 2)]


SPEC_1_4 = {
    "two flows": [[0.5, 1.0], [1.0, 0.5]],
    "three flows": [[0.5, 1.0], [1.0, 0.5], [1.0, 0.5]],
    "three resources": [[1.0, 1.0, 1.0], [1.0, 0.5, 0.75], [0.5, 1.0, 0.75]],
    "one resource": [[1.0]] * 4,
    "oracle-rates": [[2 / 3, 1.0], [1.0, 0.5]],
}


def static_rates(a, duration, **router):
    J = len(a[0])
    sc = flows.from_dict({"resources": [f"r{j}" for j in range(J)],
                          "router": {"scheduler": "mr3", "window": 30, **router},
                          "run": {"duration": duration, "warmup": duration / 20},
                          "flow": [{"cost": c} for c in a]})
    r = simulate(sc)
    return np.array([f.rate for f in r.flows]), [x.utilization for x in r.resources]


@pytest.mark.parametrize("case", list(SPEC_1_4))
def test_mr3_long_run_rates_are_drf_on_spec_1_4(case):
    """Static backlogged flows, window 30, default progress control: MR3's rates equal the DRF
    allocation (analysis.allocations.drf) on every public oracle (docs/allocators.md) and on oracle-rates."""
    a = SPEC_1_4[case]
    got, _ = static_rates(a, 10000.0)
    assert np.allclose(got, drf(np.array(a)).phi, rtol=3e-3), (got, drf(np.array(a)).phi)


def test_progress_control_is_what_keeps_drf_when_the_first_resource_is_idle():
    """The idle-CPU probe, (0.2, 1) and (0.1, 0.5): the link is the only bottleneck, DRF = (0.5, 1.0).
    With progress control MR3 realises it; without (progress = 0) the CPU runs rounds ahead, the
    link's FIFO queue decides, and the rates degrade to FIFO's equal packet rates (2/3, 2/3) -
    the same failure as memoryless DRFQ's virtual time (docs/schedulers.md, 'drfq')."""
    a = [[0.2, 1.0], [0.1, 0.5]]
    got, util = static_rates(a, 20000.0)
    assert np.allclose(got, [0.5, 1.0], rtol=3e-3)
    assert util[1] == pytest.approx(1.0, abs=2e-3)
    got, _ = static_rates(a, 20000.0, progress=0)
    assert np.allclose(got, [2 / 3, 2 / 3], rtol=3e-3)


def test_progress_one_round_leaves_the_bottleneck_idle():
    """Round progress with L = 1 (each round waits for the previous one to leave the link) is not
    work-conserving: on the two-flow public oracle neither resource is saturated, unlike with the
    default lag 2.  Per flow, L = 1 holds only a flow's own next turn: the other flow's turn fills
    the gap, both resources saturate and the rates are DRF's 2/3; a flow alone idles the CPU
    while its turn drains (half the link's rate for one packet per turn)."""
    a = SPEC_1_4["two flows"]
    for scope in ("round", "resource"):
        got, util = static_rates(a, 10000.0, progress=1, progress_scope=scope)
        assert max(util) < 0.9 and np.all(got < 0.6), (got, util)
        got, util = static_rates(a, 10000.0, progress=2, progress_scope=scope)
        assert min(util) == pytest.approx(1.0, abs=2e-3)
    got, util = static_rates(a, 10000.0, progress=1, progress_scope="flow")
    assert min(util) == pytest.approx(1.0, abs=2e-3) and np.allclose(got, [2 / 3, 2 / 3], rtol=2e-3)
    got, util = static_rates([[1.0, 1.0]], 10000.0, progress=1, progress_scope="flow")
    assert got[0] == pytest.approx(0.5, rel=2e-3)


@settings(deadline=None, max_examples=max(5, int(25 * SCALE)))
@given(sc=st.sampled_from((2, 2, 3)).flatmap(lambda J: scenarios(J=J, scheduler="mr3")),
       progress=st.sampled_from(("auto", 0, 1, 2, 3)), scope=st.sampled_from(("resource", "round", "flow")))
def test_engine_equals_reference_with_mr3_options(sc, progress, scope):
    check_engine_equals_reference(sc.replace(**{"router.scheduler": "mr3", "router.progress": progress,
                                                "router.progress_scope": scope}))


def ordered_rates(a, weights, scope, reverse, progress="auto", join_order="dominant"):
    """Long-run rates (window 30, duration 20000, warm-up 2000) in the flows' own order, with the
    [[flow]] tables listed as given or reversed."""
    idx = list(range(len(a)))[::-1] if reverse else list(range(len(a)))
    sc = flows.from_dict({"resources": [f"r{j}" for j in range(len(a[0]))],
                          "router": {"scheduler": "mr3", "window": 30, "progress_scope": scope, "progress": progress,
                                     "join_order": join_order},
                          "run": {"duration": 20000.0, "warmup": 2000.0},
                          "flow": [{"name": f"f{i}", "cost": a[i], "weight": weights[i]} for i in idx]})
    got = {f.name: f.rate for f in simulate(sc).flows}
    return np.array([got[f"f{i}"] for i in range(len(a))])


@pytest.mark.parametrize("a, weights, drf_rates, round_rates", [
    # x = (0.05, 1), y = (0.25, 0), z = (0.05, 1): y skips the saturated link
    ([[0.05, 1.0], [0.25, 0.0], [0.05, 1.0]], [1, 1, 1], [0.5, 3.8, 0.5], ([0.5, 2.0, 0.5], [0.5, 2.0, 0.5])),
    # three resources, b weight 2: the rounds' result depends on the order of the tables
    ([[0.25, 0.05, 0.5], [1.0, 1.0, 0.5]], [1, 2], [0.8, 0.8], ([0.727272, 0.727272], [2 / 3, 2 / 3])),
])
def test_rounds_paced_per_last_resource_reach_drf_where_global_rounds_do_not(a, weights, drf_rates, round_rates):
    """Rounds paced per last resource (the default, with L = the resources up to it) and per-flow
    progress give weighted DRF in either order of the [[flow]] tables; global rounds with L = 2 hold
    a flow that skips the last resource to the rounds' pace there, and on three resources depend on
    the order (docs/schedulers.md, 'mr3')."""
    assert np.allclose(drf(np.array(a), np.array(weights, float)).phi, drf_rates, rtol=1e-9)
    for reverse in (False, True):
        assert np.allclose(ordered_rates(a, weights, "resource", reverse), drf_rates, rtol=2e-3)
        assert np.allclose(ordered_rates(a, weights, "flow", reverse), drf_rates, rtol=2e-3)
        assert np.allclose(ordered_rates(a, weights, "round", reverse, progress=2), round_rates[reverse], rtol=2e-3)


def test_a_flow_that_needs_more_than_its_window():
    """b = (0.05, 1) and a = (0.05, 0.05), window 30: DRF is 0.5 / 10 (a sends about 20 packets a
    turn, two rounds in the router exceed its window).  With the flows joining in the order listed
    (``join_order = "arrival"``), rounds (global, or per last resource: both flows leave at the link)
    give 0.571 / 8.57 with b listed first, as b's packet goes ahead of a's at the link's FIFO, and DRF
    with a first; lined up by dominant service (the default) a goes first in either order: DRF.
    Per-flow progress gives 0.571 / 8.57 in every case."""
    a = [[0.05, 1.0], [0.05, 0.05]]
    for reverse in (False, True):
        for join_order in ("dominant", "arrival"):
            assert np.allclose(ordered_rates(a, [1, 1], "flow", reverse, join_order=join_order), [4 / 7, 60 / 7],
                               rtol=2e-3)
    for scope in ("resource", "round"):
        assert np.allclose(ordered_rates(a, [1, 1], scope, False, join_order="arrival"), [4 / 7, 60 / 7], rtol=2e-3)
        assert np.allclose(ordered_rates(a, [1, 1], scope, True, join_order="arrival"), [0.5, 10.0], rtol=2e-3)
        for reverse in (False, True):
            assert np.allclose(ordered_rates(a, [1, 1], scope, reverse), [0.5, 10.0], rtol=2e-3)


@pytest.mark.nojit
@pytest.mark.parametrize("value", ["size", 0, True])
def test_mr3_bad_join_order(value):
    router = {"scheduler": "mr3", "join_order": value}
    with pytest.raises(ScenarioError, match=r"router.join_order = .*: choose 'dominant' .* or 'arrival'"):
        simulate(flows.from_dict({"resources": ["cpu", "link"], "router": router, "run": {"duration": 1.0},
                                  "flow": [{"name": "f", "cost": [1, 1]}]}))


@pytest.mark.nojit
def test_mr3_bad_progress_scope():
    with pytest.raises(ScenarioError, match=r"router.progress_scope = 'turn': choose 'resource' .*, 'round' .* or 'flow'"):
        simulate(link_bound(scope="turn"))


@pytest.mark.nojit
@pytest.mark.parametrize("value", [-1, 8, 1.5, "on", True])
def test_mr3_bad_progress(value):
    with pytest.raises(ScenarioError, match=r"router.progress = .*: must be 'auto' or an integer 0..7") as e:
        simulate(link_bound(progress=value))
    assert "\n" not in str(e.value)


@pytest.mark.nojit
def test_mr3_refuses_drr_options():
    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"scheduler": "mr3", "quantum": 1.0},
                          "run": {"duration": 5.0}, "flow": [{"cost": [1.0, 1.0]}]})
    with pytest.raises(ScenarioError, match=r"router.quantum: not an option of scheduler 'mr3'"):
        simulate(sc)


@pytest.mark.nojit
def test_other_schedulers_options_do_not_apply_under_a_scheduler_override():
    """A scenario of MR3 with its progress option runs under drfq when a sweep or --scheduler
    overrides the scheduler (the option is MR3's, like virtual_time is DRFQ's), with the same
    result as the scenario without it; its own scheduler still refuses a foreign option."""
    d = {"resources": ["cpu", "link"], "router": {"scheduler": "mr3", "progress": 3},
         "run": {"duration": 50.0}, "flow": [{"cost": [1.0, 0.5]}, {"cost": [0.5, 1.0]}]}
    plain = {**d, "router": {"scheduler": "drfq"}}
    a = simulate(flows.from_dict(d), scheduler="drfq", trace=10_000)
    b = simulate(flows.from_dict(plain), trace=10_000)
    assert np.array_equal(a.trace.start, b.trace.start) and np.array_equal(a.trace.flow, b.trace.flow)
    with pytest.raises(ScenarioError, match=r"router.progress: not an option of scheduler 'drfq'"):
        simulate(flows.from_dict({**d, "router": {"scheduler": "drfq", "progress": 3}}))


@pytest.mark.nojit
def test_cli_scheduler_override_leaves_mr3_options_unused(tmp_path, capsys):
    path = tmp_path / "m.toml"
    path.write_text('resources = ["cpu", "link"]\n[router]\nscheduler = "mr3"\nprogress = 3\n'
                    '[run]\nduration = 20.0\n[[flow]]\ncost = [1.0, 0.5]\n')
    assert main(["run", str(path), "--scheduler", "drfq", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scheduler"] == "drfq"


@pytest.mark.parametrize("costs, weights, drf", [
    ([(1.0, 1.0), (0.0, 1.0)], [1, 1], [0.5, 0.5]),
    ([(0.0, 1.0), (0.0, 0.5)], [1, 1], [0.5, 1.0]),
    ([(1.0, 0.25), (1.0, 1.0), (0.0, 1.0)], [1, 2, 1], [4 / 13, 8 / 13, 4 / 13]),
])
def test_a_zero_cost_at_the_first_resource_takes_its_turn_in_the_rounds(costs, weights, drf):
    """A flow that costs nothing at the cpu passes it in zero time in MR3's rounds (it used to bypass
    them and take the link: 0.0625 / 0.9375 in the first case), so a cost of 0 is the limit of small
    costs: weighted DRF, as with a cpu cost of 0.01."""
    from mrfq.router.run import simulate

    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"scheduler": "mr3", "window": 30},
                          "run": {"duration": 20000.0, "warmup": 2000.0},
                          "flow": [{"name": f"f{i}", "cost": list(c), "weight": w}
                                   for i, (c, w) in enumerate(zip(costs, weights))]})
    r = simulate(sc, trace=50)
    assert list(r.flows.rate) == pytest.approx(drf, rel=2e-3)
    zero = [k for k, c in enumerate(costs) if c[0] == 0.0]
    if len(zero) < len(costs):
        assert any(j == 0 and s == e and u in zero for s, e, j, u in
                   zip(r.trace.start, r.trace.end, r.trace.resource, r.trace.flow))  # zero-length turns at the cpu
    else:   # nobody uses the cpu: it is removed before the run (the rounds run at the link), reported idle
        assert r.resources[0].services == 0 and r.resources[0].utilization == 0.0
        assert set(r.trace.resource.tolist()) == {1}
