"""Jain's index and the max/min ratio of the windowed flows' normalised dominant shares
(analysis/fairness_index.py): the formula on hand-computed values, and where the scorecard, `mrfq
run --json` and the API report them."""

import json

import pytest

from mrfq.analysis.cli import main
from mrfq.analysis.fairness_index import fairness_indices


@pytest.mark.nojit
@pytest.mark.parametrize("x, jain, ratio", [
    ([0.3, 0.3, 0.3], 1.0, 1.0),
    ([1.0, 0.0, 0.0], 1 / 3, None),          # one flow has everything: 1/n, and max/min infinite
    ([1.0, 2.0], 9 / 10, 2.0),               # (1 + 2)^2 / (2 (1 + 4))
    ([0.75, 0.5], 1.5625 / 1.625, 1.5),
    ([], None, None),
])
def test_the_formula(x, jain, ratio):
    ix = fairness_indices(x)
    assert ix["flows"] == len(x)
    assert (ix["jain"] is None) if jain is None else ix["jain"] == pytest.approx(jain, rel=1e-12)
    assert (ix["max_min_ratio"] is None) if ratio is None else ix["max_min_ratio"] == pytest.approx(ratio, rel=1e-12)


def _strict(text):
    def refuse(c):
        raise ValueError(c)
    return json.loads(text, parse_constant=refuse)


def test_scorecard_reports_them_per_run_and_per_interval(capsys):
    """oracle-rates: a = (2/3, 1), b = (1, 1/2), dominant costs 1 and 1, weights 1.  DRF gives 0.6 / 0.6
    (Jain 1, max/min 1); BMF gives 0.75 / 0.5, which bmf-wfq reaches: x = (0.75, 0.5), Jain
    1.5625 / 1.625 = 0.9615, max/min 1.5."""
    assert main(["scorecard", "--preset", "oracle-rates", "--schedulers", "drfq,bmf-wfq", "--duration", "6000",
                 "--intervals", "1000,3500,6000", "--json"]) == 0
    d = _strict(capsys.readouterr().out)
    by = {s["scheduler"]: s for s in d["schedulers"]}
    assert by["drfq"]["jain"] == pytest.approx(1.0, abs=1e-3)
    assert by["drfq"]["max_min_ratio"] == pytest.approx(1.0, abs=3e-3)
    assert by["bmf-wfq"]["jain"] == pytest.approx(1.5625 / 1.625, rel=2e-3)
    assert by["bmf-wfq"]["max_min_ratio"] == pytest.approx(1.5, rel=3e-3)
    for s in d["schedulers"]:   # the same function on the rows the scorecard printed
        x = [r["dominant_rate"] for r in d["flows"] if r["scheduler"] == s["scheduler"]]
        assert s["jain"] == pytest.approx(fairness_indices(x)["jain"], rel=1e-12)
        assert s["flows"] == 2
    iv = d["interval_fairness"]
    assert [(r["scheduler"], r["start"], r["end"]) for r in iv] == [
        ("drfq", 1000.0, 3500.0), ("drfq", 3500.0, 6000.0), ("bmf-wfq", 1000.0, 3500.0), ("bmf-wfq", 3500.0, 6000.0)]
    for r in iv:
        x = [q["dominant_share"] for q in d["intervals"]
             if (q["scheduler"], q["start"], q["end"]) == (r["scheduler"], r["start"], r["end"])]
        assert r["jain"] == pytest.approx(fairness_indices(x)["jain"], rel=1e-12)
    assert all(r["jain"] > 0.999 for r in iv if r["scheduler"] == "drfq")
    assert all(r["jain"] < 0.97 for r in iv if r["scheduler"] == "bmf-wfq")


def test_run_json_and_table(capsys):
    assert main(["run", "--preset", "oracle-rates", "--scheduler", "bmf-wfq", "--duration", "6000", "--json"]) == 0
    f = _strict(capsys.readouterr().out)["fairness"]
    assert f["flows"] == 2 and f["jain"] == pytest.approx(1.5625 / 1.625, rel=2e-3)
    assert main(["run", "--preset", "oracle-rates", "--scheduler", "bmf-wfq", "--duration", "6000"]) == 0
    assert "fairness index: Jain 0.96" in capsys.readouterr().out


def test_open_loop_flows_do_not_count(capsys):
    """isolation: two greedy flows and a light Poisson one; only the greedy pair is counted."""
    assert main(["run", "--preset", "isolation", "--duration", "3000", "--json"]) == 0
    d = _strict(capsys.readouterr().out)
    assert d["fairness"]["flows"] == 2 and len(d["flows"]) == 3
    assert d["fairness"]["jain"] == pytest.approx(1.0, abs=1e-3)   # DRFQ: the two greedy flows at DRF
