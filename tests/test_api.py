"""The Python API (analysis.api): its docstring examples run as doctests, results are plain
records (JSON-ready) and DataFrames, and bad input raises the command line's one-line errors."""

from __future__ import annotations

import doctest
import json
import sys

import pytest

from mrfq.analysis import api
from mrfq.flows.errors import MrfqError


def test_docstring_examples_run():
    """Every example in analysis.api's docstrings (they are the documentation's API reference)."""
    res = doctest.testmod(api, optionflags=doctest.ELLIPSIS, raise_on_error=False)
    assert res.attempted >= 15
    assert res.failed == 0


@pytest.mark.nojit
def test_records_are_plain_json_ready_rows():
    r = api.Records([{"a": float("nan"), "b": [1.0, float("inf")], "c": 2}], raw="x")
    assert r.to_records() == [{"a": None, "b": [1.0, None], "c": 2}]
    json.dumps(r.to_records(), allow_nan=False)
    rows = r.to_records()
    rows[0]["c"] = 99  # copies: the report is unchanged
    assert r[0]["c"] == 2 and len(r) == 1 and r.raw == "x"
    assert "a, b, c" in repr(r)


@pytest.mark.nojit
def test_to_frame_with_and_without_pandas(monkeypatch):
    pd = pytest.importorskip("pandas")
    r = api.Records([{"name": "a", "rate": 0.6}, {"name": "b", "rate": 0.6}])
    df = r.to_frame()
    assert isinstance(df, pd.DataFrame) and list(df.columns) == ["name", "rate"] and df["rate"].sum() == 1.2
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if pandas were not installed
    with pytest.raises(MrfqError, match="pandas is not installed"):
        r.to_frame()


@pytest.mark.nojit
def test_allocate_rows_and_refusals():
    rows = api.allocate([[2 / 3, 1.0], [1.0, 0.5]], "bmf").to_records()
    assert [r["transaction"] for r in rows] == [0, 1]
    assert [r["phi"] for r in rows] == pytest.approx([0.75, 0.5])
    assert rows[0]["usage"] == pytest.approx([0.5, 0.75])
    with pytest.raises(MrfqError, match="objective = 'nope': unknown"):
        api.allocate([[1.0, 1.0]], "nope")


@pytest.mark.nojit
def test_load_accepts_presets_paths_and_dicts(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('resources = ["cpu"]\n[[flow]]\nname = "x"\ncost = [1.0]\n')
    assert api.load(p).flows[0].name == "x"
    assert api.load(str(p), run__seed=7).run.seed == 7
    assert api.load({"resources": ["cpu"], "flow": [{"cost": [1.0]}]}).flows[0].cost == (1.0,)
    assert api.load("oracle-rates").name == "oracle-rates"
    with pytest.raises(MrfqError, match="router.window"):
        api.load("oracle-rates", router__window=0)
    with pytest.raises(MrfqError, match="pass a preset name"):
        api.load(42)
    with pytest.raises(MrfqError, match=r"load: 'nosuch': not a shipped preset and no such file; presets\(\) lists"):
        api.load("nosuch")
    with pytest.raises(MrfqError, match=r"load_cluster: 'nosuch': not a shipped cluster preset and no such file"):
        api.load_cluster("nosuch")


def test_run_report_records_match_the_json_of_mrfq_run():
    from mrfq.analysis.run_report import run_json
    from mrfq.router.run import simulate

    rep = api.run("dynamic-small", scheduler="drfq", duration=60000.0)
    direct = run_json(simulate(api.load("dynamic-small"), scheduler="drfq", duration=60000.0))
    assert rep.classes.to_records() == direct["classes"]  # same seed, same result
    recs = rep.to_records()
    assert [r["kind"] for r in recs] == ["class"] * len(direct["classes"])
    assert all(r["gamma"] is None or r["ci"][0] <= r["gamma"] <= r["ci"][1] for r in recs)
    assert rep.summary["scheduler"] == "drfq" and rep.summary["services"] > 0


def test_cluster_entry_points_refuse_unknown_names():
    with pytest.raises(MrfqError, match="objective = 'x': unknown"):
        api.cluster_allocate("drf-nsdi", "x")
    with pytest.raises(MrfqError, match="allocator = 'x': unknown"):
        api.cluster_simulate("drf-nsdi", allocator="x")
    with pytest.raises(MrfqError, match="method = 'x'"):
        api.fluid("br-unbalanced", 0.5, method="x")
    with pytest.raises(MrfqError, match="load 1 >= 1"):
        api.fluid("br-unbalanced", 1.0)


@pytest.mark.nojit
def test_rows_handed_out_are_copies():
    rows = api.allocate([[0.5, 1.0], [1.0, 0.5]])
    rows[0]["phi"] = 99.0
    for r in rows:
        r["objective"] = "x"
        r["usage"][0] = -1.0
    rows[0:1][0]["phi"] = 98.0
    assert [r["phi"] for r in rows.to_records()] == pytest.approx([2 / 3, 2 / 3])
    assert {r["objective"] for r in rows.to_records()} == {"drf"} and rows[1]["usage"][0] > 0


@pytest.mark.nojit
@pytest.mark.parametrize("call, needle", [
    (lambda: api.allocate([0.5, 1.0]), "costs[0]"),
    (lambda: api.allocate(None), "costs = None: give a list of cost vectors"),
    (lambda: api.allocate([[0.5, -1.0], [1.0, 0.5]]), "costs[0, 1] = -1"),
    (lambda: api.allocate([[0.5, 1.0], [1.0, 0.5]], weights=[1.0]), "weights: has 1 entries"),
    (lambda: api.allocate([[0.5, "x"]]), "costs[0]: 'x' is not a number"),
    (lambda: api.compare("dynamic-small", 0.5), "loads = 0.5: give a list of numbers"),
    (lambda: api.compare("dynamic-small", ["abc"]), "loads: 'abc' is not a number"),
    (lambda: api.compare("dynamic-small", [0.5], workers=0), "workers = 0: must be a whole number in [1, 256]"),
    (lambda: api.compare("dynamic-small", [0.5], flows_per_replication=1), "flows_per_replication = 1: must be a number in [10"),
    (lambda: api.compare("dynamic-small", [0.5], replications=0), "replications = 0: must be a whole number in [1"),
    (lambda: api.compare("dynamic-small", [0.5], max_replications=0), "max_replications = 0"),
    (lambda: api.compare("dynamic-small", [0.5], target=-1), "target = -1: must be a number in (0, 1)"),
    (lambda: api.compare("dynamic-small", [0.5], schedulers="drfq,nope"), "unknown scheduler 'nope'"),
    (lambda: api.scorecard("isolation", intervals="0,100"), "intervals = '0,100': give a list of numbers"),
    (lambda: api.fluid("br-unbalanced", 0.3, seed="x"), "seed = 'x': must be a whole number"),
    (lambda: api.fluid("br-unbalanced", "0.3"), "load = '0.3': must be a number"),
    (lambda: api.fluid("br-unbalanced", 0.3, objectives="drf,nope"), "nope"),
    (lambda: api.load("trace-small", run__duration__x=1), "load: run__duration__x: run.duration is 200.0, not a table"),
    (lambda: api.load("wakeup", flow__0__cost=[1.0, 1.0]),
     "load: flow__0__cost: [[flow]] is an array of tables, which a dotted change cannot reach into"),
    (lambda: api.load("trace-small", class__0__rate=1.0), "load: class__0__rate: [[class]] is an array of tables"),
    (lambda: api.load("wakeup", resources__cpu=1.0), "load: resources__cpu: resources is ['cpu', 'link'], not a table"),
    (lambda: api.load("wakeup", run____seed=1), "load: run____seed: an empty name between '__'"),
    (lambda: api.load("wakeup", run=None), "load: run=None: would reset the whole [run] table to its defaults"),
    (lambda: api.load("wakeup", router=None), "load: router=None: would reset the whole [router] table"),
    (lambda: api.load("wakeup", flow=None), "load: flow=None: would drop every [[flow]] table"),
    (lambda: api.cluster_simulate("drf-nsdi", options=[1, 2]), "options = [1, 2]: give a dict of allocator options"),
    (lambda: api.cluster_simulate("drf-nsdi", options="blocked=stop"), "options = 'blocked=stop': give a dict"),
    (lambda: api.cluster_simulate("drf-nsdi", options={1: "x"}), "options: the key 1 is not a string"),
    (lambda: api.allocate([[1e7, 1.0]]), "costs[0, 0] = 1e+07: out of range; each cost is 0 or in [1e-06, 1e+06]"),
    (lambda: api.allocate([[1.0, 1e-7]]), "costs[0, 1] = 1e-07: out of range"),
    (lambda: api.allocate([[1.0, 1.0]], weights=[1e7]), "weights[0] = 1e+07: out of range; give a number in [1e-06"),
    (lambda: api.allocate([[1.0, 1.0]], weights=[float("nan")]), "weights[0] = nan: must be a finite number > 0"),
    (lambda: api.allocate([[1.0] * 65]), "costs[0]: 65 resources; at most 64"),
    (lambda: api.allocate([[1.0, 1.0]] * 1001), "costs: 1,001 transactions; at most 1,000"),
])
def test_type_slips_are_one_line_errors_naming_the_argument(call, needle):
    with pytest.raises(MrfqError) as e:
        call()
    assert needle in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.nojit
def test_load_changes_that_stay_allowed():
    """Dotted changes of table keys, a table the scenario leaves out, and None for one key (its
    default) still go through the gate."""
    assert api.load("wakeup", run__seed=3, run__duration=2000.0).run.seed == 3
    assert api.load("wakeup", run__seed=None).run.seed == 1
    assert api.load("br-unbalanced", traffic__load=0.4).load == 0.4
    assert api.load("wakeup", router__scheduler="drr", router__quantum=2.0).router.scheduler == "drr"
    assert api.load("wakeup", run={"duration": 500.0}).run.duration == 500.0
    assert [r["phi"] for r in api.allocate([[1e6, 1e-6, 0.0]])] == pytest.approx([1e-6])


@pytest.mark.nojit
def test_cluster_allocate_does_not_apply_the_simulators_launch_bound(tmp_path):
    """A scenario the simulator would refuse (about 1e11 task launches) is a valid allocation input,
    as for mrfq cluster alloc; load_cluster(simulate=False) loads it so, the default refuses it."""
    p = tmp_path / "many.toml"
    p.write_text('resources = ["cpu", "mem"]\n[run]\nduration = 1000.0\n[[server]]\ncapacity = [100000, 100000]\n'
                 '[[user]]\nname = "u1"\ndemand = [1, 1]\nduration = 0.001\n')
    rows = api.cluster_allocate(str(p), "drf").to_records()
    assert rows[0]["user"] == "u1" and rows[0]["tasks"] == pytest.approx(100000.0)
    assert api.load_cluster(str(p), simulate=False).user_names() == ["u1"]
    with pytest.raises(MrfqError, match="task launches"):
        api.load_cluster(str(p))
