"""The Python API (analysis.api): its docstring examples run as doctests, results are plain
records (JSON-ready) and DataFrames, and bad input raises the command line's one-line errors."""

from __future__ import annotations

import doctest
import json
import sys

import pytest

from analysis import api
from flows.errors import MrfqError


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


def test_run_report_records_match_the_json_of_mrfq_run():
    from analysis.run_report import run_json
    from router.run import simulate

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
