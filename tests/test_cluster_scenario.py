"""The cluster scenario gate (flows/cluster.py): field-named one-line errors, presets, job traffic."""

import math

import numpy as np
import pytest

from mrfq.flows.cluster import (
    ALLOCATOR_NAMES,
    backlog_duration,
    backlog_streams,
    cluster_from_dict,
    cluster_preset_names,
    draw_jobs,
    load_cluster,
    load_cluster_preset,
)
from mrfq.flows.errors import ScenarioError
from mrfq.fq.cluster.registry import ALLOCATORS

pytestmark = pytest.mark.nojit


def _base(**extra):
    d = {"resources": ["cpu", "mem"], "server": [{"capacity": [4, 8]}],
         "user": [{"name": "a", "demand": [1, 2]}]}
    d.update(extra)
    return d


def test_allocator_names_match_the_registry():
    assert set(ALLOCATOR_NAMES) == set(ALLOCATORS)


def test_presets_load_and_ship_every_paper_example():
    names = cluster_preset_names()
    for n in ("drf-nsdi", "drfh-two-servers", "hdrf-fig2", "hdrf-fig4", "hdrf-fig5", "hdrf-fig6", "hdrf-fig8",
              "hdrf-collapsed", "cluster-poisson"):
        assert n in names
    for n in names:
        sc = load_cluster_preset(n)
        assert sc.description
        assert sc.capacity().shape[1] == sc.n_resources
    sc = load_cluster_preset("hdrf-fig8")
    assert sc.capacity().shape == (49, 3)
    parent, weight, leaf, names = sc.tree_arrays()
    assert parent.tolist() == [-1, 0, 0, 1, 1, 2, 2]
    assert weight.tolist() == [1, 4, 1, 1, 1, 1, 1]
    assert [names[i] for i in leaf] == ["n1,1", "n1,2", "n2,1", "n2,2"]


@pytest.mark.parametrize("change, message", [
    ({"resources": None}, "resources: missing"),
    ({"resources": ["cpu", "cpu"]}, "names must be distinct"),
    ({"server": []}, "server: missing"),
    ({"server": [{"capacity": [4]}]}, "server[0].capacity has 1 entries: must have 2"),
    ({"server": [{"capacity": [4, -1]}]}, "server[0].capacity[1] = -1: out of range; must be in [0, 1e+12]"),
    ({"server": [{"capacity": [4, 0]}]}, "resource 'mem' has no capacity"),
    ({"server": [{"capacity": [4, 8], "count": 0}]}, "server[0].count = 0: out of range; must be a whole number in [1, 100,000]"),
    ({"user": [{"name": "a", "demand": [0, 0]}]}, "user[0].demand = [0.0, 0.0]: all zero"),
    ({"user": [{"name": "a", "demand": [5, 1]}]}, "user[0].demand = [5.0, 1.0]: one task fits on no server"),
    ({"user": [{"name": "a", "demand": [1, 1], "weight": 0}]}, "user[0].weight = 0: out of range; must be in [1e-09, 1e+12]"),
    ({"user": [{"name": "a", "demand": [1, 1], "parent": "x"}]}, "user[0].parent = 'x': not a [[node]]"),
    ({"user": [{"name": "a", "demand": [1, 1], "duration_law": "pareto"}]}, "user[0].duration_law = 'pareto'"),
    ({"user": [{"name": "a", "demand": [1, 1], "start": 5, "stop": 2}]}, "user[0].stop = 2: must be after start"),
    ({"user": [{"name": "a", "demand": [1, 1], "frobnicate": 1}]}, "user[0]: unknown key 'frobnicate'"),
    ({"user": [{"name": "a", "demand": [1, 1]}, {"name": "a", "demand": [1, 1]}]}, "user[1].name = 'a': already used"),
    ({"node": [{"name": "g", "parent": "h"}, {"name": "h", "parent": "g"}]}, "the tree has a cycle"),
    ({"node": [{"name": "g"}]}, "node[0] ('g'): has no children"),
    ({"run": {"allocator": "fifo"}}, "run.allocator = 'fifo': unknown; choose one of drf,"),
    ({"run": {"duration": 10, "warmup": 10}}, "run.warmup = 10: must be less than run.duration"),
    ({"traffic": {"kind": "poisson"}}, "traffic.rate: missing"),
    ({"traffic": {"kind": "poisson", "rate": 1}}, "user[*].job_share: all zero"),
    ({"traffic": {"kind": "fluid"}}, "traffic.kind = 'fluid': unknown"),
    ({"user": [{"name": "a", "demand": [1, 1], "job_share": 1}]}, "user[0].job_share = 1: only with [traffic] kind"),
    ({"traffic": {"kind": "poisson", "rate": 1},
      "user": [{"name": "a", "demand": [1, 1], "job_share": 1, "backlogged": True}]},
     "user[0].backlogged = true: a backlogged user cannot also receive jobs"),
    ({"traffic": {"kind": "poisson", "rate": 1},
      "user": [{"name": "a", "demand": [1, 1], "job_share": 1, "tasks_per_job": 2.5}]},
     "user[0].tasks_per_job = 2.5: must be whole"),
])
def test_gate_errors_name_the_field(change, message):
    d = _base()
    for k, v in change.items():
        if v is None:
            d.pop(k)
        else:
            d[k] = v
    with pytest.raises(ScenarioError) as e:
        cluster_from_dict(d)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_trace_file_gate_and_jobs(tmp_path):
    (tmp_path / "jobs.csv").write_text("time,user,tasks,duration\n0.5,b,2,1.0\n1.5,b,1,\n")
    d = _base(traffic={"kind": "trace", "trace": "jobs.csv"},
              user=[{"name": "a", "demand": [1, 1], "backlogged": True},
                    {"name": "b", "demand": [1, 1], "duration": 3.0, "duration_law": "fixed"}])
    p = tmp_path / "c.toml"
    p.write_text('resources = ["cpu", "mem"]\n[traffic]\nkind = "trace"\ntrace = "jobs.csv"\n'
                 '[[server]]\ncapacity = [4, 8]\n[[user]]\nname = "a"\ndemand = [1, 1]\nbacklogged = true\n'
                 '[[user]]\nname = "b"\ndemand = [1, 1]\nduration = 3.0\nduration_law = "fixed"\n')
    sc = load_cluster(p)
    jobs = draw_jobs(sc)
    assert jobs.time.tolist() == [0.5, 1.5]
    assert jobs.user.tolist() == [1, 1]
    assert jobs.tasks.tolist() == [2, 1]
    assert jobs.first.tolist() == [0, 2]
    assert jobs.task_duration.tolist() == [1.0, 1.0, 3.0]  # empty duration: the user's law (fixed 3)
    for bad, msg in [("time,user,tasks\n1,zz,1\n", "user = 'zz' is not a [[user]]"),
                     ("time,user,tasks\n2,b,1\n1,b,1\n", "not before the previous row's 2"),
                     ("time,user,tasks\n1,b,0\n", "tasks = '0' must be a whole number >= 1"),
                     ("when,user,tasks\n1,b,1\n", "first line must be the header"),
                     ("time,user,tasks\n1,a,1\n", "has jobs for user 'a', which is backlogged")]:
        (tmp_path / "jobs.csv").write_text(bad)
        with pytest.raises(ScenarioError, match="traffic.trace") as e:
            cluster_from_dict(d, base=tmp_path)
        assert msg in str(e.value)
    with pytest.raises(ScenarioError, match="no such file"):
        cluster_from_dict(dict(d, traffic={"kind": "trace", "trace": "nope.csv"}), base=tmp_path)
    with pytest.raises(ScenarioError, match="no such cluster scenario file"):
        load_cluster(tmp_path / "missing.toml")


def _poisson(seed=3, rate=2.0, share=(1.0, 3.0), T=2000.0):
    return cluster_from_dict(_base(
        run={"duration": T, "seed": seed}, traffic={"kind": "poisson", "rate": rate},
        user=[{"name": "a", "demand": [1, 1], "job_share": share[0], "tasks_per_job": 4, "tasks_law": "geometric",
               "duration": 2.0},
              {"name": "b", "demand": [1, 1], "job_share": share[1], "tasks_per_job": 3, "duration": 0.5,
               "duration_law": "fixed"}]))


def test_poisson_jobs_same_seed_same_jobs_and_separate_streams():
    j1, j2 = draw_jobs(_poisson()), draw_jobs(_poisson())
    for f in ("time", "user", "tasks", "first", "task_duration"):
        assert np.array_equal(getattr(j1, f), getattr(j2, f))
    j3 = draw_jobs(_poisson(seed=4))
    assert not np.array_equal(j1.time, j3.time)
    # changing who gets the jobs does not move the arrival times (separate streams)
    j4 = draw_jobs(_poisson(share=(1.0, 1.0)))
    assert np.array_equal(j1.time, j4.time) and not np.array_equal(j1.user, j4.user)
    # a shorter horizon gives a prefix of the same arrivals
    j5 = draw_jobs(_poisson(), horizon=100.0)
    assert np.array_equal(j5.time, j1.time[:j5.n_jobs])


def test_poisson_jobs_statistics():
    j = draw_jobs(_poisson(T=20000.0))
    K = j.n_jobs
    assert abs(K - 40000) < 4 * math.sqrt(40000)  # Poisson(rate T)
    pb = np.mean(j.user == 1)
    assert abs(pb - 0.75) < 4 * math.sqrt(0.75 * 0.25 / K)
    ta = j.tasks[j.user == 0]
    assert ta.min() >= 1 and abs(ta.mean() - 4) < 4 * math.sqrt(12 / ta.size)  # geometric mean 4, var 12
    assert set(j.tasks[j.user == 1].tolist()) == {3}
    who = np.repeat(j.user, j.tasks)
    da = j.task_duration[who == 0]
    assert abs(da.mean() - 2.0) < 4 * 2.0 / math.sqrt(da.size)
    assert set(j.task_duration[who == 1].tolist()) == {0.5}


def test_backlog_streams_are_per_user_and_reproducible():
    sc = load_cluster_preset("hdrf-fig4")
    first = [[backlog_duration(g, sc.users[u]) for _ in range(5)] for u, g in enumerate(backlog_streams(sc))]
    again = [[backlog_duration(g, sc.users[u]) for _ in range(5)] for u, g in enumerate(backlog_streams(sc))]
    assert first == again
    assert first[0] != first[1] != first[2]
    assert all(x > 0 for row in first for x in row)
