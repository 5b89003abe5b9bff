"""The fluid cluster allocations at scale (analysis/cluster/drfh.py, analysis/cluster/hdrf.py) against the
reference implementations of tests/cluster_reference.py, and the gate's bounds on trees and sizes."""

import json

import numpy as np
import pytest
from cluster_reference import drfh_reference, static_hdrf_reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrfq.analysis.cli import main
from mrfq.analysis.cluster import drfh as drfh_mod
from mrfq.analysis.cluster.drfh import drfh, server_types
from mrfq.analysis.cluster.hdrf import static_hdrf
from mrfq.analysis.cluster.simcheck import fluid_allocation
from mrfq.flows.cluster import MAX_DEPTH, cluster_from_dict, cluster_preset_names, load_cluster_preset
from mrfq.flows.errors import MrfqError, ScenarioError
from mrfq.fq.cluster.state import Tree

pytestmark = pytest.mark.nojit
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def drfh_instances(draw):
    R = draw(st.integers(1, 3))
    S = draw(st.integers(1, 4))
    U = draw(st.integers(1, 4))
    C = np.array(draw(st.lists(st.lists(st.integers(0, 4), min_size=R, max_size=R), min_size=S, max_size=S)), float)
    if draw(st.booleans()):
        C = np.vstack([C, C[: draw(st.integers(1, S))]])  # identical servers
    D = np.array(draw(st.lists(st.lists(st.integers(0, 4), min_size=R, max_size=R), min_size=U, max_size=U)), float)
    D[D.max(axis=1) == 0, 0] = 1.0
    if C[:, 0].sum() == 0:
        C[0, 0] = 1.0
    for r in range(R):
        if C[:, r].sum() == 0:
            D[:, r] = 0.0
    D[D.max(axis=1) == 0, 0] = 1.0
    W = np.array(draw(st.lists(st.integers(1, 3), min_size=U, max_size=U)), float)
    M = np.array(draw(st.lists(st.one_of(st.just(np.inf), st.integers(0, 5).map(float)), min_size=U, max_size=U)))
    return C, D, W, M


@SETTINGS
@given(drfh_instances(), st.sampled_from(["maxmin", "none"]))
def test_drfh_equals_the_per_server_reference(inst, refine):
    C, D, W, M = inst
    tasks, G, _, level = drfh_reference(C, D, W, M, refine=refine)
    a = drfh(C, D, W, M, refine=refine)
    np.testing.assert_allclose(a.tasks, tasks, rtol=1e-7, atol=1e-9)
    assert a.level == pytest.approx(level, rel=1e-8, abs=1e-12)
    # the even split is a per-server allocation: every server's capacity holds, the sums are the types'
    T = C.sum(axis=0)
    used = a.bundle.sum(axis=0)
    assert np.all(used <= C * (1 + 1e-9) + 1e-12 * T)
    np.testing.assert_allclose(a.g.sum(axis=1), a.G, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.add.reduceat(a.g[:, np.argsort(a.server_type, kind="stable")],
                                               np.r_[0, np.cumsum(a.type_count)[:-1]], axis=1), a.g_type,
                               rtol=1e-12, atol=1e-15)


def test_drfh_types_with_counts_equal_the_expanded_servers():
    C = np.array([[1.0, 0.5], [0.5, 1.0], [1.0, 0.5]])
    count = np.array([3, 2, 4])
    D = np.array([[0.2, 0.3], [0.5, 0.1], [0.1, 0.3]])
    a = drfh(C, D, count=count, per_server=False)
    b = drfh(np.repeat(C, count, axis=0), D)
    np.testing.assert_allclose(a.tasks, b.tasks, rtol=1e-9)
    assert a.g is None and a.bundle is None and a.g_type.shape == (3, 2)
    np.testing.assert_array_equal(a.type_count, [7, 2])
    np.testing.assert_array_equal(b.server_type, [0, 0, 0, 1, 1, 0, 0, 0, 0])
    cap, cnt, st_ = server_types([[2, 2], [1, 1], [2, 2]], [1, 5, 2])
    np.testing.assert_array_equal(cap, [[2, 2], [1, 1]])
    np.testing.assert_array_equal(cnt, [3, 5])
    np.testing.assert_array_equal(st_, [0, 1, 1, 1, 1, 1, 0, 0])


def test_drfh_table_one_mix_is_one_block_per_type():
    """[DRFH] Table I's ten server types (counts as in the paper), 50 users: ten types, per-type tasks only."""
    mix = [(6732, .5, .5), (3863, .5, .25), (1001, .5, .75), (795, 1, 1), (126, .25, .25), (52, .5, .12),
           (5, .5, .03), (5, .5, .97), (3, 1, .5), (1, .5, .06)]
    C = np.array([[c, m] for _, c, m in mix])
    n = np.array([k for k, _, _ in mix])
    rng = np.random.default_rng(3)
    D = rng.uniform(0.001, 0.01, size=(50, 2))
    a = drfh(C, D, count=n, per_server=False)
    assert a.g_type.shape == (50, 10)
    # every type's capacity holds, a resource of the pool is full, the (unweighted) shares are equal
    use = a.g_type[:, :, None] * (D / a.dstar[:, None])[:, None, :]
    assert np.all(use.sum(axis=0) <= C * n[:, None] * (1 + 1e-9))
    assert np.max(use.sum(axis=(0, 1)) / (C * n[:, None]).sum(axis=0)) == pytest.approx(1.0, rel=1e-7)
    np.testing.assert_allclose(a.G, a.G[0], rtol=1e-7)
    # the same mix at 1/200 of the size against the per-server reference
    small = -(-n // 200)
    tasks, *_ = drfh_reference(np.repeat(C, small, axis=0), D[:4])
    np.testing.assert_allclose(drfh(C, D[:4], count=small).tasks, tasks, rtol=1e-7)


def test_drfh_refuses_an_lp_too_large(monkeypatch):
    monkeypatch.setattr(drfh_mod, "MAX_COLUMNS", 11)
    with pytest.raises(MrfqError, match=r"^capacity: 4 distinct server types x 3 users = 12 DRFH columns; at most 11"):
        drfh(np.eye(4) + 1, np.ones((3, 4)))


@st.composite
def trees(draw, levels=2):
    """A random tree: internal nodes at most ``levels`` deep, users under any of them, integer weights."""
    ni = draw(st.integers(0, 3))
    parent = [-1] + [draw(st.integers(0, min(i, levels - 1))) for i in range(ni)]
    users = draw(st.lists(st.integers(0, ni), min_size=1, max_size=5))
    used = set(parent[1:]) | set(users)
    users += [i for i in range(1, ni + 1) if i not in used]
    par = np.array(parent + users)
    N = par.shape[0]
    w = np.array([1.0] + draw(st.lists(st.integers(1, 3), min_size=N - 1, max_size=N - 1)), float)
    return Tree(parent=par, weight=w, leaf=np.arange(ni + 1, N))


@SETTINGS
@given(trees(), st.integers(1, 3), st.data())
def test_static_hdrf_equals_the_bisection_reference(tree, R, data):
    U = tree.leaf.shape[0]
    D = np.array(data.draw(st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]), min_size=R, max_size=R),
                                    min_size=U, max_size=U)))
    D[D.max(axis=1) == 0, 0] = 1.0
    C = np.array([data.draw(st.lists(st.integers(1, 9), min_size=R, max_size=R))], float)
    M = np.array(data.draw(st.lists(st.one_of(st.just(np.inf), st.integers(0, 4).map(float)),
                                    min_size=U, max_size=U)))
    ref = static_hdrf_reference(C, D, tree, M)
    new = static_hdrf(C, D, tree, M)
    np.testing.assert_allclose(new.share, ref.share, rtol=1e-9, atol=1e-12)
    assert new.saturated == ref.saturated


@pytest.mark.parametrize("name", cluster_preset_names())
def test_presets_equal_the_references(name):
    sc = load_cluster_preset(name)
    tree = Tree(*sc.tree_arrays())
    tasks, *_ = drfh_reference(sc.capacity(), sc.demand(), sc.weights())
    np.testing.assert_allclose(fluid_allocation(sc, "drfh").tasks, tasks, rtol=1e-7, atol=1e-9)
    ref = static_hdrf_reference(sc.capacity(), sc.demand(), tree)
    np.testing.assert_allclose(fluid_allocation(sc, "h-drf").tasks, ref.tasks, rtol=1e-9, atol=1e-12)


def test_deep_chains_and_a_six_level_tree():
    """A chain of k nodes above two users changes nothing (each node has one child): DRF of the two users,
    at any depth; a 6-level binary tree of 32 users equals its collapsed weights when every user demands
    the same vector (one resource pool, shares split down the tree by weight)."""
    D = np.array([[1.0, 4.0], [3.0, 1.0]])  # [DRF] §4: 3 and 2 tasks of <9 CPU, 18 GB>
    for k in (2, 4, 8, 40):
        parent = [-1] + list(range(k)) + [k, k]
        tree = Tree(parent=np.array(parent), weight=np.ones(k + 3), leaf=np.array([k + 1, k + 2]))
        np.testing.assert_allclose(static_hdrf([[9.0, 18.0]], D, tree).tasks, [3.0, 2.0], rtol=1e-9)
    parent, weight, level = [-1], [1.0], [0]
    for depth in range(1, 6):
        for p in [i for i, lv in enumerate(level) if lv == depth - 1]:
            for j in (1, 2):
                parent.append(p)
                weight.append(float(j + depth % 2))
                level.append(depth)
    internal = len(parent)
    last = [i for i, lv in enumerate(level) if lv == 5]
    leaves = []
    for p in last:
        parent.append(p)
        weight.append(1.0)
        leaves.append(len(parent) - 1)
    tree = Tree(parent=np.array(parent), weight=np.array(weight), leaf=np.array(leaves))
    U = len(leaves)
    r = static_hdrf([[10.0, 10.0]], np.tile([1.0, 0.5], (U, 1)), tree)
    flat = np.ones(len(parent))
    for n in range(1, len(parent)):
        p = parent[n]
        flat[n] = flat[p] * weight[n] / sum(weight[c] for c in range(1, len(parent)) if parent[c] == p)
    assert internal == 63 and U == 32
    np.testing.assert_allclose(r.share, flat[leaves], rtol=1e-9)


def _scenario(depth: int) -> dict:
    nodes = [{"name": f"n{i}", "parent": "root" if i == 0 else f"n{i - 1}"} for i in range(depth)]
    return {"resources": ["cpu"], "server": [{"capacity": [4.0]}], "node": nodes[::-1],
            "user": [{"name": "a", "demand": [1.0], "parent": f"n{depth - 1}"}]}


def test_tree_depth_is_bounded_at_the_gate():
    sc = cluster_from_dict(_scenario(MAX_DEPTH - 1))  # users at MAX_DEPTH edges below the root
    assert max(len(sc.nodes), 0) == MAX_DEPTH - 1
    with pytest.raises(ScenarioError, match=rf"^node\[0\] \('n{MAX_DEPTH - 1}'\): {MAX_DEPTH} levels below the root; "
                                            rf"the tree may be at most {MAX_DEPTH} levels deep"):
        cluster_from_dict(_scenario(MAX_DEPTH))
    with pytest.raises(ScenarioError, match=r"^node\[\d+\]\.parent = 'n\d+': the tree has a cycle through"):
        d = _scenario(3)
        d["node"][-1]["parent"] = "n2"  # n0 under n2: n0 -> n2 -> n1 -> n0
        cluster_from_dict(d)
    d = _scenario(10_000)  # at the node limit: refused in one line, fast, no recursion
    with pytest.raises(ScenarioError, match=rf"^node\[\d+\] \('n{MAX_DEPTH - 1}'\): {MAX_DEPTH} levels below"):
        cluster_from_dict(d)


def test_alloc_cli_gives_types_and_the_split_only_when_asked(capsys, tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('resources = ["cpu", "mem"]\n[run]\nduration = 1e9\n'
                 '[[server]]\ncapacity = [1.0, 0.5]\ncount = 20000\n[[server]]\ncapacity = [0.5, 1.0]\ncount = 3\n'
                 '[[server]]\ncapacity = [1.0, 0.5]\ncount = 7\n'
                 '[[user]]\nname = "a"\ndemand = [0.2, 0.3]\n[[user]]\nname = "b"\ndemand = [0.5, 0.1]\n')
    assert main(["alloc", str(p), "--objective", "drfh", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["objectives"]["drfh"]
    assert d["server_types"] == [{"capacity": [1.0, 0.5], "count": 20007}, {"capacity": [0.5, 1.0], "count": 3}]
    assert "per_server_tasks" not in d and len(d["per_type_tasks"][0]) == 2
    assert main(["cluster", "alloc", str(p), "--objective", "drfh", "--json", "--per-server"]) == 0
    d2 = json.loads(capsys.readouterr().out)["objectives"]["drfh"]
    assert len(d2["per_server_tasks"][0]) == 20010 and d2["tasks"] == pytest.approx(d["tasks"], rel=1e-9)
    assert np.sum(d2["per_server_tasks"], axis=1) == pytest.approx(d["tasks"], rel=1e-9)


def test_user_and_server_counts_are_bounded_at_the_gate():
    from mrfq.flows.cluster import MAX_SERVERS, MAX_USERS

    base = {"resources": ["cpu"], "server": [{"capacity": [4.0]}]}
    users = [{"name": f"u{i}", "demand": [1.0]} for i in range(MAX_USERS + 1)]
    with pytest.raises(ScenarioError, match=rf"^user: {MAX_USERS + 1:,} tables; at most {MAX_USERS:,}$"):
        cluster_from_dict({**base, "user": users})
    servers = [{"capacity": [4.0], "count": MAX_SERVERS // 2}] * 2 + [{"capacity": [1.0]}]
    with pytest.raises(ScenarioError, match=rf"^server\[\*\]\.count: {MAX_SERVERS + 1:,} servers in all"):
        cluster_from_dict({**base, "server": servers, "user": users[:1]})
