"""H-DRF ([H-DRF] Bhattacharya et al., SoCC 2013): the paper's examples with the paper's numbers.

Static H-DRF (fluid, analysis/cluster/hdrf.py) and the discrete mechanisms (fq/cluster/hdrf.py):
dynamic H-DRF with both fixes, each fix alone, naive H-DRF and the collapsed hierarchy.
"Churn" replays the online situation of §3.3: tasks finish one at a time and the mechanism
refills the cluster.
"""

from functools import partial

import numpy as np
import pytest
from conftest import scaled
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mrfq.analysis.cluster.hdrf import guarantees, static_hdrf
from mrfq.analysis.cluster.objectives import CLUSTER_OBJECTIVES
from mrfq.flows.cluster import load_cluster_preset
from mrfq.fq.cluster import hdrf
from mrfq.fq.cluster.registry import ALLOCATORS, allocate_static
from mrfq.fq.cluster.state import ClusterState, Tree, fill

pytestmark = pytest.mark.nojit


def _tree(sc) -> Tree:
    return Tree(*sc.tree_arrays())


def _state(name, demand=None) -> ClusterState:
    sc = load_cluster_preset(name)
    D = sc.demand() if demand is None else np.array(demand, dtype=np.float64)
    return ClusterState.new(sc.capacity(), D, sc.weights(), tree=_tree(sc))


def _churn(state, pick, rounds=40):
    """Fill, then `rounds` times finish one task of every user in turn, refilling after each."""
    fill(state, pick)
    for _ in range(rounds):
        for u in range(state.n_users):
            on = np.flatnonzero(state.running[u])
            if on.size:
                state.finish(u, int(on[0]))
                fill(state, pick)
    return state.tasks().tolist()


RESCALE_ONLY = partial(hdrf.pick, ignore_blocked=False)
BLOCKED_ONLY = partial(hdrf.pick, rescale=False)


# ---------------------------------------------------------------------------
# Fig. 4: 10 CPUs, 10 GPUs; n1,1 <1,0>, n2,1 <1,0>, n2,2 <0,1>
# ---------------------------------------------------------------------------
def test_fig4_static_allocation_is_5_5_10():
    sc = load_cluster_preset("hdrf-fig4")
    r = static_hdrf(sc.capacity(), sc.demand(), _tree(sc))
    assert r.tasks.tolist() == pytest.approx([5.0, 5.0, 10.0], abs=1e-9)
    assert r.saturated == (0, 1)  # CPU first, then GPU ([H-DRF] §3.1)
    for pick in (hdrf.pick, hdrf.pick_naive):
        s = _state("hdrf-fig4")
        fill(s, pick)
        assert s.tasks().tolist() == [5, 5, 10]


def test_fig4_naive_starves_n21_hdrf_does_not():
    # §3.3: "this will repeat itself until job n2,1 is completely starved and 10 CPUs have been
    # allocated to n1,1 and 10 GPUs to n2,2"
    assert _churn(_state("hdrf-fig4"), hdrf.pick_naive) == [10, 0, 10]
    assert _churn(_state("hdrf-fig4"), hdrf.pick) == [5, 5, 10]
    assert _churn(_state("hdrf-fig4"), RESCALE_ONLY) == [5, 5, 10]  # rescaling alone fixes this one


def test_fig4_eps_variant_defeats_ignoring_blocked_alone():
    # §3.4: with n2,1 asking <1, eps>, ignoring blocked nodes alone starves n2,1; rescaling remedies it
    D = [[1, 0], [1, 0.01], [0, 1]]
    assert _churn(_state("hdrf-fig4", D), BLOCKED_ONLY) == [10, 0, 10]
    assert _churn(_state("hdrf-fig4", D), hdrf.pick) == [5, 5, 9]
    assert _churn(_state("hdrf-fig4", D), partial(hdrf.pick, saturation="exhausted")) == [5, 5, 9]
    # the whole-task reading of "blocked" (saturation="fit") fails this example (documented option)
    assert _churn(_state("hdrf-fig4", D), partial(hdrf.pick, saturation="fit"))[1] < 5
    sc = load_cluster_preset("hdrf-fig4")
    r = static_hdrf(sc.capacity(), D, _tree(sc))
    assert r.share[0] == pytest.approx(1 / (1 + 1 / 1.01), rel=1e-12)  # s + s/1.01 = 1


# ---------------------------------------------------------------------------
# Fig. 5: the hierarchy that breaks rescaling alone
# ---------------------------------------------------------------------------
def test_fig5_static_and_dynamic():
    sc = load_cluster_preset("hdrf-fig5")
    r = static_hdrf(sc.capacity(), sc.demand(), _tree(sc))
    assert r.share.tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3, 1 / 2, 1 / 2], abs=1e-12)
    s = _state("hdrf-fig5")
    fill(s, hdrf.pick)
    assert s.tasks().tolist() == [4, 4, 4, 6, 6]  # 12 CPUs, 12 GPUs
    # "in the final allocation n3,2 gets 2/3 of GPUs, while n4,1 gets only 1/3"
    s = _state("hdrf-fig5")
    fill(s, RESCALE_ONLY)
    assert s.tasks().tolist() == [4, 4, 4, 8, 4]
    assert _churn(_state("hdrf-fig5"), hdrf.pick) == [4, 4, 4, 6, 6]


# ---------------------------------------------------------------------------
# Figs. 6-7: not population monotone
# ---------------------------------------------------------------------------
def test_fig6_7_population_monotonicity_fails():
    sc = load_cluster_preset("hdrf-fig6")
    tree = _tree(sc)
    r = static_hdrf(sc.capacity(), sc.demand(), tree)
    # Fig. 7 left: n1 60 % CPU / 40 % GPU, n2,1 30 % / 30 %, n2,2 10 % / 30 %
    assert r.usage.tolist() == [pytest.approx([0.6, 0.4]), pytest.approx([0.3, 0.3]), pytest.approx([0.1, 0.3])]
    # n2,2 leaves: Fig. 7 right, n1 50 % / 33 %, n2,1 50 % / 50 %
    t2 = Tree(tree.parent[:5], tree.weight[:5], tree.leaf[:2])
    r2 = static_hdrf(sc.capacity(), sc.demand()[:2], t2)
    assert r2.usage.tolist() == [pytest.approx([0.5, 1 / 3]), pytest.approx([0.5, 0.5])]
    assert r2.share[0] < r.share[0]
    s = _state("hdrf-fig6")
    fill(s, hdrf.pick)
    assert s.tasks().tolist() == [20, 30, 10]
    assert _churn(_state("hdrf-fig6"), hdrf.pick) == [20, 30, 10]


# ---------------------------------------------------------------------------
# Fig. 2: sibling sharing, 480 slots
# ---------------------------------------------------------------------------
def test_fig2_sibling_sharing():
    sc = load_cluster_preset("hdrf-fig2")
    tree = _tree(sc)
    assert (guarantees(tree)[tree.leaf] * 480).tolist() == pytest.approx([240, 48, 96, 96])
    r = static_hdrf(sc.capacity(), sc.demand(), tree)
    assert (r.tasks).tolist() == pytest.approx([240, 48, 96, 96], abs=1e-9)
    # n2,3 leaves: its 96 slots go 32 / 64 to n2,1 / n2,2; nothing to n1
    r2 = static_hdrf(sc.capacity(), sc.demand(), tree, tasks_max=[np.inf, np.inf, np.inf, 0])
    assert r2.tasks.tolist() == pytest.approx([240, 80, 160, 0], abs=1e-9)
    s = _state("hdrf-fig2")
    fill(s, hdrf.pick)
    assert s.tasks().tolist() == [240, 48, 96, 96]
    s.pending[3] = 0
    for _ in range(96):
        s.finish(3, 0)
    fill(s, hdrf.pick)
    assert s.tasks().tolist() == [240, 80, 160, 0]


# ---------------------------------------------------------------------------
# §3.2: collapsed hierarchies break the share guarantee of internal nodes that dovetail
# ---------------------------------------------------------------------------
def test_collapsed_hierarchy_gives_n2_one_third():
    sc = load_cluster_preset("hdrf-collapsed")
    tree = _tree(sc)
    s = _state("hdrf-collapsed")
    assert hdrf.collapsed_weights(s).tolist() == [0.5, 0.25, 0.25]
    fill(s, hdrf.pick_collapsed)
    assert s.tasks().tolist() == [8, 4, 4]  # n1,1 2/3, n2,1 and n2,2 1/3 each (12 CPUs, 12 GPUs)
    n2 = (s.allocation()[1:] / s.total).sum(axis=0).max()
    assert n2 == pytest.approx(1 / 3) and n2 < guarantees(tree)[2]
    r = static_hdrf(sc.capacity(), sc.demand(), tree)
    assert r.node_share[1:3].tolist() == pytest.approx([0.5, 0.5])
    s = _state("hdrf-collapsed")
    fill(s, hdrf.pick)
    assert s.tasks().tolist() == [6, 6, 6]


def test_fig8_weights_4_to_1():
    # §5.1: n1:n2 = 4:1; n1,1 0.8 of the CPUs, n2,1 and n2,2 0.1 each, n1,2 all GPUs (1.0)
    sc = load_cluster_preset("hdrf-fig8")
    r = static_hdrf(sc.capacity(), sc.demand(), _tree(sc))
    assert r.share.tolist() == pytest.approx([0.8, 1.0, 0.1, 0.1], abs=1e-12)
    s = _state("hdrf-fig8")
    fill(s, hdrf.pick)
    assert s.tasks().tolist() == [156, 196, 20, 20]  # 196 CPUs: 0.796, 0.102, 0.102


# ---------------------------------------------------------------------------
# independent checks
# ---------------------------------------------------------------------------
def test_flat_tree_is_weighted_drf():
    # no internal nodes: static H-DRF = fluid DRF ([DRF] §4 example: 3 and 2 tasks)
    sc = load_cluster_preset("drf-nsdi")
    assert CLUSTER_OBJECTIVES["h-drf"][2](sc.capacity(), sc.demand(), tree=_tree(sc)).tasks.tolist() == \
        pytest.approx([3.0, 2.0])
    s = ClusterState.new(sc.capacity(), sc.demand())
    fill(s, hdrf.pick)
    assert s.tasks().tolist() == [3, 2]


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(1, 2), st.integers(0, 3)),
                min_size=2, max_size=5),
       st.lists(st.sampled_from([1.0, 2.0]), min_size=3, max_size=3))
def test_static_hdrf_matches_algorithm1_with_small_tasks(rows, gw):
    """Independent oracle: [H-DRF] Algorithm 1 run literally with small discrete slivers (naive
    H-DRF from an empty cluster, tasks of 1/200 of the pool) lands within a few slivers of the
    fluid water-filling, on random two-level trees with weights."""
    K = 200.0
    D = np.array([[a, b] for a, b, _, _ in rows], dtype=np.float64)
    D[D.max(axis=1) == 0, 0] = 1.0
    D = D / D.max(axis=1, keepdims=True)  # one sliver = 1/K of the dominant resource
    U = D.shape[0]
    group = [r[3] % 3 for r in rows]  # each user under one of up to three organisations
    used = sorted(set(group))
    node_of = {g: 1 + i for i, g in enumerate(used)}  # internal nodes 1..G, leaves after them
    parent = np.array([-1] + [0] * len(used) + [node_of[g] for g in group])
    weight = np.array([1.0] + [gw[g] for g in used] + [float(r[2]) for r in rows])
    keep = [0] + used
    tree = Tree(parent, weight, np.arange(len(keep), len(keep) + U))
    cap = np.array([[K, K]])
    r = static_hdrf(cap, D, tree)
    s = ClusterState.new(cap, D, tree=tree)
    fill(s, hdrf.pick_naive)
    assert np.all(r.usage.sum(axis=0) <= 1 + 1e-9)
    assert s.dominant_share() == pytest.approx(r.share, abs=4 / K)


def test_free_growth_stretch_matches_algorithm1():
    """A stalled phase (random seed 6305 of the Theorem 2 test).  After phase 1 (resource 2
    saturated) only u1 <3,0,0> grows, under g1 whose dominant resource (1, used by u2 and u3 only)
    sits at 0.486 while g1's CPU is at 0.162: every extra task of u1 leaves g1's dominant share
    where it is, so g1 stays the lowest child and u1 alone takes the rest of resource 0 at one
    value of the root's level.  The water-filling used to stall there ("no leaf stopping"); it must
    match Algorithm 1 run with slivers of 1/400 of the pool."""
    D = np.array([[1, 0, 1], [3, 0, 0], [0, 3, 2], [0, 2, 1], [1, 0, 2]], dtype=np.float64)
    D = D / D.max(axis=1, keepdims=True)
    tree = Tree(np.array([-1, 0, 0, 2, 1, 1, 1, 2]), np.array([1.0, 2, 3, 2, 1, 1, 2, 2]),
                np.arange(3, 8))
    K = 400.0
    cap = np.array([[K, K, K]])
    r = static_hdrf(cap, D, tree)
    assert r.saturated == (2, 0)
    assert r.usage.sum(axis=0)[0] == pytest.approx(1.0)
    assert r.share[1] == pytest.approx(0.162162 + (1 - 0.709459), abs=1e-5)
    s = ClusterState.new(cap, D, tree=tree)
    fill(s, hdrf.pick_naive)
    assert s.dominant_share() == pytest.approx(r.share, abs=4 / K)


def test_registry_entries_and_options():
    assert {"h-drf", "naive-h-drf", "collapsed-h-drf"} <= set(ALLOCATORS)
    s = _state("hdrf-fig5")
    allocate_static("h-drf", s, rescale=True, ignore_blocked=False)
    assert s.tasks().tolist() == [4, 4, 4, 8, 4]
    s = _state("hdrf-fig4")
    allocate_static("naive-h-drf", s)
    assert s.tasks().tolist() == [5, 5, 10]
    s = _state("hdrf-fig4")
    allocate_static("collapsed-h-drf", s, recompute=False)
    assert s.tasks().tolist() == [7, 3, 10]  # weights 0.5 / 0.25 / 0.25 on 10 CPUs: 6.67 / 3.33


def test_three_resources_catch_up_phase_by_hand():
    """g1 (w 1): u0 <1,0,1>, u1 (w 2) <0,2,3>; g2 (w 2): u2 <1,2,1>, u3 (w 2) <1,0,0>, u4 <0,3,0>; 360 each.
    Phase 1: g1 grows 3 mu1 = lam (GPU), g2 2.5 mu2 = 2 lam (CPU); CPU saturates at lam = 3/7:
    u0 1/7, u1 2/7, u2 12/35, u3 24/35, u4 12/35.  Phase 2 (Y = mem, GPU): g2's share over Y is its
    memory, 24/35 < 2 lam = 6/7, so u4 alone grows until memory saturates: u4 = 1 - 4/21 - 12/35."""
    D = np.array([[1.0, 0, 1], [0, 2, 3], [1, 2, 1], [1, 0, 0], [0, 3, 0]])
    tree = Tree(np.array([-1, 0, 0, 1, 1, 2, 2, 2]), np.array([1.0, 1, 2, 1, 2, 1, 2, 1]), np.arange(3, 8))
    r = static_hdrf([[360, 360, 360]], D, tree)
    assert r.share.tolist() == pytest.approx([1 / 7, 2 / 7, 12 / 35, 24 / 35, 1 - 4 / 21 - 12 / 35], abs=1e-12)
    assert r.saturated == (0, 1)
    # dynamic H-DRF, tasks finishing in random order on one pooled server, comes back to it
    s = ClusterState.new([[360, 360, 360]], D, tree=tree)
    fill(s, hdrf.pick)
    rng = np.random.default_rng(0)
    for _ in range(500):
        busy = np.argwhere(s.running > 0)
        u, k = busy[rng.integers(len(busy))]
        s.finish(int(u), int(k))
        fill(s, hdrf.pick)
    assert s.tasks().tolist() == [52, 34, 62, 246, 56]  # 51.4, 34.3, 61.7, 246.9, 56.0


def _random_churn(state, pick, n, seed=0):
    fill(state, pick)
    rng = np.random.default_rng(seed)
    for _ in range(n):
        busy = np.argwhere(state.running > 0)
        u, k = busy[rng.integers(len(busy))]
        state.finish(int(u), int(k))
        fill(state, pick)
    return state


def test_first_fit_drift_on_many_servers():
    """The README finding: the three-resource example on 12 servers of 30, tasks finishing in random
    order.  With First-Fit placement u2's <1,2,1> tasks rarely fit on the fragmented servers but u2
    is not blocked, so rescaling pins g2's share to u2's: g2 looks nearly empty while it holds almost
    all the CPUs, and u0 and u2 lose most of their tasks.  Best-Fit placement stays near static H-DRF
    (51.4, 34.3, 61.7, 246.9, 56.0 tasks)."""
    D = np.array([[1.0, 0, 1], [0, 2, 3], [1, 2, 1], [1, 0, 0], [0, 3, 0]])
    tree = Tree(np.array([-1, 0, 0, 1, 1, 2, 2, 2]), np.array([1.0, 1, 2, 1, 2, 1, 2, 1]), np.arange(3, 8))
    s = _random_churn(ClusterState.new([[30, 30, 30]] * 12, D, tree=tree), hdrf.pick, 750)
    assert s.tasks().tolist() == [13, 76, 15, 332, 59]
    shares, _ = hdrf.node_shares(s)
    g2_plain = (s.allocation()[2:] / s.total).sum(axis=0).max()
    assert shares[2] < 0.05 and g2_plain > 0.95
    b = _random_churn(ClusterState.new([[30, 30, 30]] * 12, D, tree=tree), partial(hdrf.pick, server="best-fit"), 750)
    assert np.all(np.abs(b.tasks() - [51.4, 34.3, 61.7, 246.9, 56.0]) <= 4)


def test_walk_that_stops_wastes_resources():
    """The non-Pareto-efficient variant (blocked="stop"): the walk follows the lowest child with a
    pending task even when nothing below it fits.  Fig. 4: once the CPUs are full n1 is the lowest
    (tie at 0.5 broken to n1), n1,1's task fits nowhere and nothing is launched: 6 of the 10 GPUs
    stay idle, where Algorithm 4's skipping gives n2,2 all 10."""
    for name in ("naive-h-drf", "h-drf"):
        s = _state("hdrf-fig4")
        allocate_static(name, s, blocked="stop")
        assert s.tasks().tolist() == [5, 5, 4]
        assert s.free[0].tolist() == [0.0, 6.0]
    s = _state("hdrf-fig4")
    allocate_static("h-drf", s, blocked="skip")
    assert s.tasks().tolist() == [5, 5, 10]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
@example(371)  # a saturated resource summed to 1 + 1 ulp in the next phase: no level was feasible
@example(6305)  # a free growth stretch (see test_free_growth_stretch_matches_algorithm1)
def test_hierarchical_share_guarantee_theorem2(seed):
    """[H-DRF] Theorem 2 on random trees (2-5 users, 2-3 resources, 1-3 groups, weights): every node's
    dominant share (its subtree's summed usage, max over resources) is at least its hierarchical share
    guarantee (product of w / sum of sibling weights along its path, all users demanding)."""
    rng = np.random.default_rng(seed)
    U, R = int(rng.integers(2, 6)), int(rng.integers(2, 4))
    D = rng.integers(0, 4, size=(U, R)).astype(float)
    D[D.max(axis=1) == 0, 0] = 1.0
    grp = rng.integers(0, int(rng.integers(1, 4)), size=U)
    used = sorted(set(grp.tolist()))
    node = {g: 1 + i for i, g in enumerate(used)}
    parent = np.array([-1] + [0] * len(used) + [node[g] for g in grp.tolist()])
    w = np.concatenate(([1.0], rng.choice([1.0, 2.0, 3.0], size=len(used)), rng.choice([1.0, 2.0], size=U)))
    tree = Tree(parent, w, np.arange(1 + len(used), 1 + len(used) + U))
    r = static_hdrf([[10.0] * R], D, tree)
    assert np.all(r.node_share >= guarantees(tree) - 1e-9)
    assert np.all(r.usage.sum(axis=0) <= 1 + 1e-9)


@pytest.mark.slow
def test_no_leaf_gains_by_misreporting_theorem3():
    """[H-DRF] Theorem 3 (strategy-proofness), checked for single leaves with cluster-a's misreport
    grid search (each demand entry scaled by 0.5 ... 4): Figs. 6 and the §3.2 tree, and random
    two-group trees on two resources.  No lie raises a leaf's true tasks (beyond float noise)."""
    from mrfq.analysis.cluster.objectives import cluster_hdrf
    from mrfq.analysis.cluster.properties import best_misreport

    cases = []
    for name in ("hdrf-fig6", "hdrf-collapsed"):
        sc = load_cluster_preset(name)
        cases.append((sc.capacity(), sc.demand(), _tree(sc)))
    rng = np.random.default_rng(2)
    for _ in range(int(scaled(6, 2))):
        U = int(rng.integers(2, 5))
        D = rng.integers(0, 4, size=(U, 2)).astype(float)
        D[D.max(axis=1) == 0, 0] = 1.0
        grp = rng.integers(0, 2, size=U).tolist()
        used = sorted(set(grp))
        node = {g: 1 + i for i, g in enumerate(used)}
        parent = np.array([-1] + [0] * len(used) + [node[g] for g in grp])
        w = np.concatenate(([1.0], rng.choice([1.0, 2.0], size=len(used)), rng.choice([1.0, 2.0], size=U)))
        cases.append(([[10.0, 10.0]], D, Tree(parent, w, np.arange(1 + len(used), 1 + len(used) + U))))
    for C, D, tree in cases:
        m = best_misreport(lambda c, d, w, tree=tree: cluster_hdrf(c, d, tree=tree).bundle, C, D)
        assert m.gain <= 1 + 1e-9, m
