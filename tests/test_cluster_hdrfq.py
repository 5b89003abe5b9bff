"""Hierarchical DRFQ, the packet-level experiment (router/hdrfq.py), against the fluid static H-DRF."""

import numpy as np
import pytest

from mrfq.analysis.cluster.hdrf import static_hdrf
from mrfq.fq.cluster.state import Tree
from mrfq.router.hdrfq import simulate_hdrfq

pytestmark = pytest.mark.nojit


def _flat(n):
    return Tree(np.array([-1] + [0] * n), np.ones(n + 1), np.arange(1, n + 1))


def _two_groups():  # n1 with one flow; n2 with two flows (the Fig. 4 / Fig. 6 shape)
    return Tree(np.array([-1, 0, 0, 1, 2, 2]), np.ones(6), np.arange(3, 6))


def _fluid(cost, tree):
    return static_hdrf([[1.0] * len(cost[0])], cost, tree).tasks


def test_flat_tree_is_drfq_rates():
    # the long-run rates of docs/schedulers.md, 'Hand-checked traces': (2/3, 1) and (1, 1/2) give DRF 0.6 / 0.6
    r = simulate_hdrfq([[2 / 3, 1], [1, 0.5]], _flat(2), duration=3000.0, warmup=300.0)
    assert r == pytest.approx([0.6, 0.6], rel=2e-3)
    # per-resource increments are per-resource fair sharing: BMF-WFQ's 0.75 / 0.5
    r = simulate_hdrfq([[2 / 3, 1], [1, 0.5]], _flat(2), duration=3000.0, warmup=300.0, increment="resource")
    assert r == pytest.approx([0.75, 0.5], rel=2e-3)


@pytest.mark.parametrize("cost, tree", [
    ([[1, 0], [1, 0], [0, 1]], _two_groups()),                      # [H-DRF] Fig. 4
    ([[1, 1], [1, 0], [0, 1]], _two_groups()),                      # §3.2 (collapsed example)
    ([[1, 2 / 3], [1, 1], [1 / 3, 1]], _two_groups()),              # Fig. 6
    ([[1, 0], [1, 0], [1, 0], [0, 1], [0, 1]],                      # Fig. 5
     Tree(np.array([-1, 0, 0, 0, 0, 1, 2, 3, 3, 4]), np.ones(10), np.arange(5, 10))),
])
def test_paper_trees_realise_static_hdrf(cost, tree):
    r = simulate_hdrfq(cost, tree, duration=3000.0, warmup=300.0)
    assert r == pytest.approx(_fluid(cost, tree), rel=3e-3)


def test_dovetailing_siblings_are_charged_additively_not_as_hdrf():
    """n1,1 <1, 1>; n2,1 <1, 0.1>, n2,2 <0.1, 1>.  Static H-DRF counts n2 by the max over resources
    of its children's summed usage (1.1 t): n1 1/2, n2,x 5/11.  H-SFQ charging dominant costs counts
    n2 by the SUM of its children's dominant costs: phi_1 = phi_21 + phi_22, CPU 2x + x + 0.1x = 1,
    so n1 2/3.1 and n2,x 1/3.1: the measured packet rates, off H-DRF by +29 % / -29 %."""
    cost = [[1, 1], [1, 0.1], [0.1, 1]]
    fl = _fluid(cost, _two_groups())
    assert fl == pytest.approx([0.5, 5 / 11, 5 / 11])
    r = simulate_hdrfq(cost, _two_groups(), duration=3000.0, warmup=300.0)
    assert r == pytest.approx([2 / 3.1, 1 / 3.1, 1 / 3.1], rel=3e-3)


def test_node_dominant_charge_fixes_dovetailing_but_starves_like_naive_hdrf():
    """Charging each node the packet's time on the node's own dominant resource realises H-DRF for
    dovetailing siblings, but in Fig. 4 n2's dominant resource is the GPU (n2,2 holds all of it), so
    n2,1's CPU packets cost n2 nothing at the CPU and n1,1 starves: the packet analogue of naive
    H-DRF's starvation (§3.3), which H-DRF's two fixes address at task level."""
    cost = [[1, 1], [1, 0.1], [0.1, 1]]
    r = simulate_hdrfq(cost, _two_groups(), duration=3000.0, warmup=300.0, increment="node-dominant")
    assert r == pytest.approx([0.5, 5 / 11, 5 / 11], rel=3e-3)
    r = simulate_hdrfq([[1, 0], [1, 0], [0, 1]], _two_groups(), duration=3000.0, warmup=300.0,
                       increment="node-dominant")
    assert r.tolist() == pytest.approx([0.0, 1.0, 1.0], abs=2e-3)


def test_random_trees_script_runs(capsys):
    import runpy
    from pathlib import Path

    mod = runpy.run_path(str(Path(__file__).resolve().parents[1] / "scripts" / "cluster_hdrfq_trees.py"))
    assert mod["main"](["--trees", "2"]) == 0
    assert "increment=node-dominant" in capsys.readouterr().out


def test_gap_distribution_plot_has_one_step_line_per_rule():
    from mrfq.analysis.cluster.plot import plot_gap_distribution

    fig = plot_gap_distribution({"dominant": [0.002, 0.2, 0.01], "per-resource": [0.3, 1.02]})
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == ["dominant (median 1.0 %)", "per-resource (median 66.0 %)"]
    assert list(ax.lines[0].get_xdata()) == pytest.approx([0.2, 1.0, 20.0])
    assert list(ax.lines[0].get_ydata()) == pytest.approx([1 / 3, 2 / 3, 1.0])
