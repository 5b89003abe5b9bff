"""``count`` on a [[flow]] table: n identical static flows from one table (so
a 10^6-flow scenario is three tables, not 10^6 Python objects).  A counted table must run
exactly as the same flows written out one table each, in the engine and in the SimPy
reference, and its flows are named ``name.0``, ``name.1``, ..."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mrfq import flows
from mrfq.flows.errors import MrfqError
from mrfq.flows.scenario import MAX_STATIC_FLOWS, to_dict
from mrfq.router.reference import simulate_reference, trace_tuples
from mrfq.router.run import simulate

BASE = {"resources": ["cpu", "link"], "router": {"scheduler": "drfq", "window": 3},
        "run": {"duration": 400.0, "warmup": 40.0, "seed": 5}}
SIZED = {"cost": [0.25, 0.5], "per_byte": [0.0, 1 / 1024], "packet_sizes": [256, 1024]}


def counted(scheduler="drfq") -> dict:
    return {**BASE, "router": {**BASE["router"], "scheduler": scheduler},
            "flow": [{"name": "a", "cost": [1.0, 0.5], "count": 3, "weight": 2.0},
                     {"name": "b", "cost": [0.5, 1.0], "start": 7.5, "packets": 40},
                     {"name": "c", **SIZED, "count": 2, "start": 3.0}],
            "class": [{"name": "k", "cost": [0.5, 0.5], "rate": 0.004, "mean_packets": 20}]}


def written_out(d: dict) -> dict:
    out = []
    for f in d["flow"]:
        n = f.get("count", 1)
        g = {k: v for k, v in f.items() if k != "count"}
        out += [{**g, "name": f"{f['name']}.{i}"} for i in range(n)] if n > 1 else [g]
    return {**d, "flow": out}


@pytest.mark.parametrize("scheduler", ["drfq", "drfq-dovetail", "pf-sfq", "bmf-wfq", "drr", "mr3"])
def test_counted_table_runs_as_the_flows_written_out(scheduler):
    a = flows.from_dict(counted(scheduler))
    b = flows.from_dict(written_out(counted(scheduler)))
    assert a.n_static == b.n_static == 6 and len(a.flows) == 3
    ra, rb = simulate(a, trace=5000), simulate(b, trace=5000)
    assert list(ra.flows) == list(rb.flows)   # names, rates, packets, completion times, bit for bit
    assert [f.name for f in ra.flows] == ["a.0", "a.1", "a.2", "b", "c.0", "c.1"]
    assert trace_tuples(ra.trace) == trace_tuples(rb.trace)
    assert ra.services == rb.services and ra.t_end == rb.t_end
    assert [(c.arrived, c.completed) for c in ra.classes] == [(c.arrived, c.completed) for c in rb.classes]
    assert ra.flows[2].rate == pytest.approx(ra.flows[0].rate, rel=0.2)  # the three a's share alike


def test_counted_table_engine_equals_reference():
    sc = flows.from_dict(counted())
    eng = simulate(sc, trace=100_000)
    ref = simulate_reference(sc)
    assert trace_tuples(eng.trace) == ref.trace
    assert [(f.name, f.packets, f.completion_time) for f in eng.flows] == \
           [(f.name, f.packets, f.completion_time) for f in ref.flows]


def test_flow_results_are_columns():
    r = simulate(flows.from_dict(counted()))
    fl = r.flows
    assert len(fl) == 6 and isinstance(fl.rate, np.ndarray)
    assert fl[-1] == fl[5] and fl[1:3] == [fl[1], fl[2]]
    assert [f.rate for f in fl] == fl.rate.tolist()
    assert fl[3].completion_time is not None and fl[3].packets <= 40   # b: 40 packets, finishes
    with pytest.raises(IndexError):
        fl[6]
    names = [f["name"] for f in r.to_json()["flows"]]
    assert names == ["a.0", "a.1", "a.2", "b", "c.0", "c.1"]


def test_count_validation_and_round_trip():
    sc = flows.from_dict(counted())
    assert to_dict(sc)["flow"][0]["count"] == 3 and "count" not in to_dict(sc)["flow"][1]
    assert flows.from_dict(to_dict(sc)) == sc
    # count = 1 is the default: the digest of a scenario that does not use it is unchanged
    plain = {**BASE, "flow": [{"name": "x", "cost": [1.0, 1.0]}]}
    assert flows.from_dict(plain).digest() == flows.from_dict(
        {**plain, "flow": [{"name": "x", "cost": [1.0, 1.0], "count": 1}]}).digest()
    for bad, msg in [(0, "flow[0].count"), (-2, "flow[0].count"), (1.5, "flow[0].count"),
                     ("3", "flow[0].count"), (MAX_STATIC_FLOWS + 1, "flow[0].count")]:
        with pytest.raises(MrfqError, match=msg.replace("[", r"\[").replace("]", r"\]")):
            flows.from_dict({**BASE, "flow": [{"name": "x", "cost": [1.0, 1.0], "count": bad}]})
    with pytest.raises(MrfqError, match=r"flow\[\*\]\.count: 10,000,001 static flows"):
        flows.from_dict({**BASE, "flow": [{"name": "x", "cost": [1.0, 1.0], "count": MAX_STATIC_FLOWS},
                                          {"name": "y", "cost": [1.0, 1.0]}]})
    with pytest.raises(MrfqError, match=r"flow\[1\]\.name = 'a\.2': also the name of flow 2 of 'a'"):
        flows.from_dict({**BASE, "flow": [{"name": "a", "cost": [1.0, 1.0], "count": 3},
                                          {"name": "a.2", "cost": [1.0, 1.0]}]})
    # a.3 is not one of a's three names: allowed
    assert flows.from_dict({**BASE, "flow": [{"name": "a", "cost": [1.0, 1.0], "count": 3},
                                             {"name": "a.3", "cost": [1.0, 1.0]}]}).n_static == 4


def test_a_million_flows_is_three_tables():
    """The benchmark's 10^6-flow scenario: three [[flow]] tables; the static arrays are built
    with numpy (no Python object per flow) and a run is a few seconds."""
    from mrfq.router.bench import WORKLOADS, scenario_for

    w = next(w for w in WORKLOADS if w.mode == "static" and w.flows == 1_000_000)
    sc = scenario_for(w, 3_000_000)
    assert len(sc.flows) == 3 and sc.n_static == 1_000_000
    assert [f.count for f in sc.flows] == [333_334, 333_333, 333_333]
    r = simulate(sc)
    # round-robin ids, as the C program's flow i % 3: the last id is table f0's last flow
    assert sc.run.flow_order == "round-robin" and (sc.static_spec()[:6] == [0, 1, 2, 0, 1, 2]).all()
    assert len(r.flows) == 1_000_000 and r.flows[999_999].name == "f0.333333"
    assert r.flows[999_998].name == "f2.333332"
    assert int(r.flows.packets.sum()) > 0


def test_cli_run_summarises_a_counted_table(tmp_path, capsys):
    from mrfq.analysis.cli import main

    p = tmp_path / "s.json"
    p.write_text(json.dumps(counted()))
    toml = tmp_path / "s.toml"
    lines = ['resources = ["cpu", "link"]', "[router]", 'scheduler = "drfq"', "window = 3",
             "[run]", "duration = 400.0", "warmup = 40.0", "seed = 5",
             "[[flow]]", 'name = "a"', "cost = [1.0, 0.5]", "count = 3",
             "[[flow]]", 'name = "b"', "cost = [0.5, 1.0]"]
    toml.write_text("\n".join(lines) + "\n")
    assert main(["run", str(toml)]) == 0
    out = capsys.readouterr().out
    assert "\na.*" in out and "\nb " in out and "name.*: a [[flow]] table with count > 1" in out
    assert main(["run", str(toml), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [f["name"] for f in d["flows"]] == ["a.0", "a.1", "a.2", "b"]


def round_robin_written_out(d: dict) -> dict:
    """The same flows as one table each, in round-robin id order."""
    tables = [[{**{k: v for k, v in f.items() if k != "count"},
                "name": f"{f['name']}.{i}" if f.get("count", 1) > 1 else f["name"]} for i in range(f.get("count", 1))]
              for f in d["flow"]]
    out = [t[r] for r in range(max(map(len, tables))) for t in tables if r < len(t)]
    return {**d, "flow": out}


@pytest.mark.parametrize("scheduler", ["drfq", "bmf-wfq", "pf-sfq"])
def test_round_robin_ids_run_as_the_flows_written_out_in_that_order(scheduler):
    d = counted(scheduler)
    d["run"] = {**d["run"], "flow_order": "round-robin"}
    a = flows.from_dict(d)
    b = flows.from_dict(round_robin_written_out({k: v for k, v in d.items()}))
    assert [f.name for f in flows.from_dict(d).flows] == ["a", "b", "c"]
    want = ["a.0", "b", "c.0", "a.1", "c.1", "a.2"]   # counts 3, 1, 2
    assert a.static_flow_names() == want == [f.name for f in b.flows]
    ra, rb = simulate(a, trace=5000), simulate(b, trace=5000)
    assert [f.name for f in ra.flows] == want
    assert list(ra.flows) == list(rb.flows) and trace_tuples(ra.trace) == trace_tuples(rb.trace)
    # the order of ids is a different schedule from the table order (ties break by id)
    rt = simulate(flows.from_dict(counted(scheduler)), trace=5000)
    assert sorted(f.name for f in rt.flows) == sorted(want)


def test_round_robin_engine_equals_reference_and_cli(tmp_path, capsys):
    d = counted()
    d["run"] = {**d["run"], "flow_order": "round-robin"}
    sc = flows.from_dict(d)
    eng = simulate(sc, trace=100_000)
    ref = simulate_reference(sc)
    assert trace_tuples(eng.trace) == ref.trace
    assert [(f.name, f.packets, f.completion_time) for f in eng.flows] == \
           [(f.name, f.packets, f.completion_time) for f in ref.flows]
    assert to_dict(sc)["run"]["flow_order"] == "round-robin" and flows.from_dict(to_dict(sc)) == sc
    assert "flow_order" not in to_dict(flows.from_dict(counted()))["run"]   # the default is not written
    from mrfq.analysis.cli_run import format_run
    out = format_run(eng)
    a_line = next(ln for ln in out.splitlines() if ln.startswith("a.*"))
    ids = [i for i, f in enumerate(eng.flows) if f.name.startswith("a.")]
    assert ids == [0, 3, 5]
    assert f"{eng.flows.rate[ids].mean():.5f}" in a_line
    with pytest.raises(MrfqError, match=r"run\.flow_order = 'random'"):
        flows.from_dict({**d, "run": {**d["run"], "flow_order": "random"}})
