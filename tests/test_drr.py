"""DRR (fq/drr.py): a hand-computed trace, long-run rates, the quantum, bad options.

The engine-vs-SimPy cross-check with default options is in test_reference.py (it enumerates the
registry); here the same check runs with the DRR options drawn too.
"""

import numpy as np
import pytest
from conftest import SCALE
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reference import check_engine_equals_reference, scenarios

from mrfq import flows
from mrfq.flows.errors import ScenarioError
from mrfq.analysis.cli import main
from mrfq.router.reference import simulate_reference
from mrfq.router.run import simulate


def two_flows(window=2, duration=12.0, **router):
    """f1 s = (1/4, 1), f2 s = (1/4, 1/2): the CPU is fast, the link is the bottleneck."""
    return flows.from_dict({"resources": ["cpu", "link"], "router": {"scheduler": "drr", "window": window, **router},
                            "run": {"duration": duration},
                            "flow": [{"name": "f1", "cost": [0.25, 1.0]}, {"name": "f2", "cost": [0.25, 0.5]}]})


def rows(sc, resource, n):
    names = [f.name for f in sc.flows]
    eng = simulate(sc, trace=500).trace.rows(names, resource=resource)[:n]
    ref = simulate_reference(sc, trace=500).rows(resource, names)[:n]
    assert eng == ref
    return eng


@pytest.mark.nojit
def test_drr_trace_by_hand():
    """Quantum 1 on the link, window 2, CPU FIFO (keys = arrival times, ties by flow id).

    CPU: f1p1 [0, .25], f1p2 [.25, .5], f2p1 [.5, .75], f2p2 [.75, 1].
    Link (tokens in the order flows join the active list's tail; DC = deficit):
      .25  f1p1 arrives, f1 joins (token 0) and is visited: DC = 0 + 1 - 1 = 0; f1p2 is still at
           the CPU, so f1's queue is empty: f1 leaves, DC = 0.                     link f1p1 [.25, 1.25]
      .5   f1p2 arrives: f1 joins again (token 1);  .75 f2p1 arrives: f2 joins (token 2);
      1    f2p2 arrives behind f2p1 (not a head);  1.25 f1p1 leaves, f1p3 admitted: CPU [1.25, 1.5]
      1.25 visit f1 (token 1): DC = 1 - 1 = 0, queue empty: leaves.            link f1p2 [1.25, 2.25]
      1.5  f1p3 arrives: f1 joins (token 3)
      2.25 visit f2 (token 2): DC = 1 - .5 = .5; f2p2 (.5) fits: the turn goes on.  f2p1 [2.25, 2.75]
      2.75 f2p2: DC = 0, f2's queue empty: f2 leaves.                          link f2p2 [2.75, 3.25]
      3    f2p3 arrives: f2 joins (token 4)
      3.25 visit f1 (token 3): DC = 0; f1p4 (cost 1) waits and does not fit: f1 to the tail (token 5,
           DC kept = 0).                                                       link f1p3 [3.25, 4.25]
      4.25 visit f2: f2p3, then f2p4 fits (.5 <= .5): f2p3 [4.25, 4.75], f2p4 [4.75, 5.25]
      5.25 f1p4 [5.25, 6.25], then f2's two packets, then f1's: one link unit each, the DRF rates.
    """
    sc = two_flows(quantum=1.0)
    assert rows(sc, 0, 13) == [
        (0.0, "f1", 1), (0.25, "f1", 2), (0.5, "f2", 1), (0.75, "f2", 2), (1.25, "f1", 3), (2.25, "f1", 4),
        (2.75, "f2", 3), (3.25, "f2", 4), (4.25, "f1", 5), (4.75, "f2", 5), (5.25, "f2", 6), (6.25, "f1", 6),
        (6.75, "f2", 7)]
    assert rows(sc, 1, 10) == [
        (0.25, "f1", 1), (1.25, "f1", 2), (2.25, "f2", 1), (2.75, "f2", 2), (3.25, "f1", 3), (4.25, "f2", 3),
        (4.75, "f2", 4), (5.25, "f1", 4), (6.25, "f2", 5), (6.75, "f2", 6)]


@pytest.mark.nojit
def test_drr_on_the_cpu_with_fifo_link():
    # the same flows with DRR on the CPU: every CPU packet costs 1/4 <= Q, so each turn sends as
    # many as fit; the link is FIFO.  At 0 the CPU holds f1p1 (token 0), f2p1 (token 1):
    # f1's turn: DC = 1 - .25 = .75, f1p2 fits -> f1p1 [0, .25], f1p2 [.25, .5], then f1's queue
    # is empty (f1p3 waits for f1p1 to leave the link): DC = 0.  f2 likewise: [.5, .75], [.75, 1].
    sc = two_flows(quantum=1.0, fq_resource="cpu")
    assert rows(sc, 0, 4) == [(0.0, "f1", 1), (0.25, "f1", 2), (0.5, "f2", 1), (0.75, "f2", 2)]
    # link FIFO by arrival time: f1p1 (.25), f1p2 (.5), f2p1 (.75), f2p2 (1)
    assert rows(sc, 1, 4) == [(0.25, "f1", 1), (1.25, "f1", 2), (2.25, "f2", 1), (2.75, "f2", 2)]


def test_drr_long_run_rates_quantum_covers_packets():
    """Link the only bottleneck: DRR with Q >= every link cost shares link time equally, the
    DRF = BMF rates (0.5, 1.0); FIFO would give (2/3, 2/3)."""
    sc = two_flows(window=30, duration=20000.0, quantum=1.0).replace(**{"run.warmup": 1000.0})
    got = [f.rate for f in simulate(sc).flows]
    assert got == pytest.approx([0.5, 1.0], rel=2e-3)
    # weights scale the quantum: w = (1, 3) on one resource gives rates in proportion 1 : 3
    # (a resource nobody uses appended: the two-resource loop other tests compile; it changes nothing)
    sc = flows.from_dict({"resources": ["link", "spare"], "router": {"scheduler": "drr", "window": 10, "quantum": 1.0},
                          "run": {"duration": 20000.0, "warmup": 500.0},
                          "flow": [{"cost": [1.0, 0.0], "weight": 1.0}, {"cost": [1.0, 0.0], "weight": 3.0}]})
    got = [f.rate for f in simulate(sc).flows]
    assert got == pytest.approx([0.25, 0.75], rel=5e-3)


def test_drr_quantum_below_packet_cost_is_not_drr():
    """The documented limit (fq/drr.py): with Q w < s the missing quanta are credited at the visit,
    so every visit sends one packet: packet round robin on the link, equal packet rates (2/3, 2/3),
    not DRR's (0.5, 1.0).  This pins the behaviour the module docstring states."""
    sc = two_flows(window=30, duration=20000.0, quantum=0.25).replace(**{"run.warmup": 1000.0})
    got = [f.rate for f in simulate(sc).flows]
    assert got == pytest.approx([2 / 3, 2 / 3], rel=2e-3)


@settings(deadline=None, max_examples=max(5, int(20 * SCALE)))
@given(sc=scenarios(J=2, scheduler="drr"), quantum=st.sampled_from((0.25, 0.5, 1.0, 1.5, 3.0)))
def test_engine_equals_reference_with_drr_options(sc, quantum):
    check_engine_equals_reference(sc.replace(**{"router.scheduler": "drr", "router.quantum": quantum}))


@pytest.mark.nojit
@pytest.mark.parametrize("value, needle", [
    (0.0, "router.quantum = 0.0: must be a number > 0"),
    (-1.0, "router.quantum = -1.0: must be a number > 0"),
    ("big", "router.quantum = 'big': must be a number > 0"),
    (True, "router.quantum = True: must be a number > 0"),
])
def test_drr_bad_quantum(value, needle):
    with pytest.raises(ScenarioError, match=needle) as e:
        simulate(two_flows(quantum=value))
    assert "\n" not in str(e.value)


@pytest.mark.nojit
def test_drr_bad_quantum_cli_exit_2(tmp_path, capsys):
    path = tmp_path / "q.toml"
    path.write_text('resources = ["cpu", "link"]\n[router]\nscheduler = "drr"\nquantum = -2\n'
                    '[run]\nduration = 10.0\n[[flow]]\ncost = [1.0, 1.0]\n')
    code = main(["run", str(path)])
    _, err = capsys.readouterr()
    assert code == 2 and "router.quantum = -2" in err and err.count("\n") == 1, err


@pytest.mark.nojit
def test_drr_bad_resource_and_foreign_option():
    with pytest.raises(ScenarioError, match=r"router.fq_resource = 'disk': must be one of"):
        simulate(two_flows(fq_resource="disk"))
    with pytest.raises(ScenarioError, match=r"router.progress: not an option of scheduler 'drr'"):
        simulate(two_flows(progress=2))
    assert np.isfinite(simulate(two_flows(quantum=2)).flows[0].rate)   # an integer quantum is fine


@pytest.mark.nojit
@pytest.mark.parametrize("scheduler", ["drr", "fq-single"])
def test_an_unused_resource_appended_changes_nothing(scheduler):
    """``router.fq_resource`` defaults to the last resource some flow uses: appending a resource nobody
    uses (``nic``) leaves the service trace as it was (the SimPy reference; the engine equals it).
    Naming the unused resource is refused: fair-queueing it would order nothing."""
    from mrfq.router.reference import simulate_reference

    def scenario(extra):
        return flows.from_dict({
            "resources": ["cpu", "link"] + extra, "router": {"scheduler": scheduler, "window": 4},
            "run": {"duration": 120.0, "seed": 3},
            "flow": [{"name": "a", "cost": [0.25, 1.0] + [0.0] * len(extra)},
                     {"name": "b", "cost": [0.5, 0.5] + [0.0] * len(extra), "weight": 2.0},
                     {"name": "c", "cost": [0.125, 0.75] + [0.0] * len(extra)}]})

    base = simulate_reference(scenario([]), trace=5000)
    wider = simulate_reference(scenario(["nic"]), trace=5000)
    assert wider.trace == base.trace and len(base.trace) > 100
    with pytest.raises(ScenarioError, match=r"router.fq_resource = 'nic': no flow or class uses that resource"):
        scenario(["nic"]).replace(**{"router.fq_resource": "nic"})
