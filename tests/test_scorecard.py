"""``mrfq scorecard``: every scheduler on the same packets (analysis/scorecard.py, analysis/cli_scorecard.py)."""

from __future__ import annotations

import json
import math

import pytest
from conftest import scaled

from mrfq.analysis import api
from mrfq.analysis.allocations import drf, drf_demands
from mrfq.analysis.cli import main
from mrfq.analysis.plots import plot_delay_cdfs
from mrfq.fq.registry import SCHEDULERS

FLOWS = ["cpu-hog", "link-hog", "light"]


def _cli(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.nojit
def test_drf_with_demands_caps_the_open_loop_flow_and_shares_the_rest():
    a = [[1.0, 0.25], [0.25, 1.0], [0.5, 0.5]]
    assert drf_demands(a, [math.inf] * 3).phi.tolist() == pytest.approx(drf(a).phi.tolist())
    phi = drf_demands(a, [math.inf, math.inf, 0.1]).phi
    # the light flow gets its demand; the hogs share the rest: s (1 + 1/4) = 1 - 0.05
    assert phi.tolist() == pytest.approx([0.76, 0.76, 0.1])
    # a demand above the share changes nothing
    assert drf_demands(a, [math.inf, math.inf, 5.0]).phi.tolist() == pytest.approx(drf(a).phi.tolist())


def test_table_has_every_scheduler_and_flow_and_same_seed_gives_the_same_table(capsys):
    argv = ["scorecard", "--preset", "isolation", "--duration", "1500", "--warmup", "100"]
    rc, out, err = _cli(argv, capsys)
    assert rc == 0 and not err
    rows = {tuple(line.split()[:2]) for line in out.splitlines() if len(line.split()) > 2}
    for s in SCHEDULERS:
        for f in FLOWS:
            assert (s, f) in rows, (s, f)
    rc2, out2, _ = _cli(argv, capsys)
    # everything but the timings is identical (the same packets, the same schedules, the same RFB)
    head = "\nscheduler        RFB (L) pair"
    table, per_scheduler = out.split(head)
    assert rc2 == 0 and out2.split(head)[0] == table
    assert "light" in table and "poisson" in table
    rfb_cols = [[line[:42] for line in o.split(head)[1].splitlines()[1:len(SCHEDULERS) + 1]] for o in (out, out2)]
    assert rfb_cols[0] == rfb_cols[1] and {c.split()[0] for c in rfb_cols[0]} == set(SCHEDULERS)


def test_same_seed_same_records_and_another_seed_other_packets():
    a = api.scorecard("isolation", schedulers=["drfq", "fifo"], duration=1500.0)
    b = api.scorecard("isolation", schedulers=["drfq", "fifo"], duration=1500.0)
    assert a.to_records() == b.to_records() and a.cdfs.to_records() == b.cdfs.to_records()
    c = api.scorecard("isolation", schedulers=["drfq", "fifo"], duration=1500.0, seed=2)
    assert c.to_records() != a.to_records()
    # common random numbers: every scheduler saw the light flow's same arrivals
    runs = a.raw.runs
    assert runs["drfq"].flows.offered.tolist() == runs["fifo"].flows.offered.tolist()
    # the relative fairness reached (router/rfb.py): a few packets under drfq, hundreds under fifo
    rfb = {s["scheduler"]: s["rfb"] for s in a.raw.schedulers}
    assert 1 < rfb["drfq"] < 5 and rfb["fifo"] > 100, rfb


@pytest.mark.slow
def test_isolation_finding_light_flow_p99_under_drfq_far_below_fifo():
    card = api.scorecard("isolation", schedulers=["drfq", "drfq-dovetail", "mr3", "fifo"],
                         duration=scaled(50000.0, 5000.0))
    light = {r["scheduler"]: r for r in card.rows if r["flow"] == "light"}
    for s in ("drfq", "drfq-dovetail", "mr3"):
        assert light[s]["p99_over_packet_time"] < 5, (s, light[s])
        assert light[s]["p99"] < light["fifo"]["p99"] / 5
    assert light["fifo"]["p99_over_packet_time"] > 20
    # every flow near its DRF share (the light one at its demand: 20 % of its DRF share)
    for r in card.rows:
        assert r["rate_over_share"] == pytest.approx(1.0, abs=0.05), r
    assert light["drfq"]["share"] == pytest.approx(0.177778)
    assert light["drfq"]["drops"] == {"total": 0, "by_reason": dict.fromkeys(
        ("tail", "pool", "push_out", "red", "codel", "fairdrop"), 0)}


def test_wakeup_intervals_memoryless_vs_dovetailing():
    edges = [1000, 1050, 1100, 2000, 2050]
    card = api.scorecard("wakeup", schedulers=["drfq", "drfq-dovetail"], intervals=edges)
    iv = {(r["scheduler"], r["flow"], r["start"]): r["dominant_share"] for r in card.intervals}
    assert len(card.intervals) == 2 * 3 * (len(edges) - 1)
    # memoryless: the flow that joins at 1000 and the one that was alone get 2/3 each at once
    assert iv["drfq", "late", 1000] == pytest.approx(2 / 3, abs=0.03)
    assert iv["drfq", "early", 1000] == pytest.approx(2 / 3, abs=0.03)
    # dovetailing: the newcomer gets more, the flow that was alone less, in the first intervals
    assert iv["drfq-dovetail", "late", 1000] > 0.75 and iv["drfq-dovetail", "early", 1000] < 0.55
    # the flow that idled over [500, 2000) returns to its DRF share 0.4 at once under drfq
    assert iv["drfq", "returning", 2000] == pytest.approx(0.4, abs=0.03)
    assert iv["drfq", "returning", 1050] == 0.0
    assert iv["drfq-dovetail", "returning", 2000] < 0.38


def test_json_keys(capsys):
    rc, out, _ = _cli(["scorecard", "--preset", "bursty", "--schedulers", "drfq,fifo", "--duration", "2000",
                       "--json"], capsys)
    assert rc == 0
    d = json.loads(out)
    assert set(d) == {"scenario", "seed", "duration", "warmup", "schedule_at", "stage_buffer", "schedulers", "flows",
                      "intervals", "interval_fairness"}
    assert d["schedule_at"] == "every" and d["stage_buffer"] is None
    assert [s["scheduler"] for s in d["schedulers"]] == ["drfq", "fifo"]
    assert set(d["schedulers"][0]) == {"scheduler", "services", "cpu_seconds", "cpu_ns_per_service", "rfb",
                                       "rfb_pair", "rfb_note", "jain", "max_min_ratio", "flows"}
    assert d["schedulers"][0]["cpu_ns_per_service"] > 0
    rfb = {s["scheduler"]: s["rfb"] for s in d["schedulers"]}
    assert 0 < rfb["drfq"] < rfb["fifo"], rfb
    assert d["schedulers"][0]["rfb_note"] is None and len(d["schedulers"][0]["rfb_pair"]) == 2
    assert [(r["scheduler"], r["flow"]) for r in d["flows"]] == [(s, f) for s in ("drfq", "fifo")
                                                                 for f in ("hog", "smooth", "bursty")]
    assert set(d["flows"][0]) >= {"rate", "dominant_rate", "share", "dominant_share", "demand", "rate_over_share",
                                  "mean", "ci", "p50", "p99", "max", "packet_time", "p99_over_packet_time",
                                  "drops", "drop_fraction", "source", "packets"}
    bursty = [r for r in d["flows"] if r["flow"] == "bursty"]
    assert all(r["source"] == "onoff" and r["demand"] == pytest.approx(0.35) for r in bursty)
    assert d["flows"][0]["drops"] is None and d["intervals"] == [] and d["interval_fairness"] == []


@pytest.mark.parametrize("argv, needle", [
    (["--schedulers", "drfq,nope"], "--schedulers: unknown name 'nope'"),
    (["--schedulers", "drfq,drfq"], "--schedulers"),
    (["--schedulers", ""], "--schedulers '': give a comma-separated list"),
    (["--intervals", "5,3"], "--intervals"),
    (["--intervals", "0,100000"], "--intervals"),
    (["--intervals", "0:1000000:0.001"], "--intervals '0:1000000:0.001': 1,000,000,000 intervals; at most 1,000"),
    (["--intervals", "0:1000:1e-320"], "--intervals '0:1000:1e-320': more than 1.8e+308 intervals; at most 1,000"),
])
def test_bad_input_is_one_line_and_exit_2(argv, needle, capsys):
    rc, out, err = _cli(["scorecard", "--preset", "isolation", "--duration", "1500", *argv], capsys)
    assert rc == 2 and not out
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


@pytest.mark.nojit
def test_a_scenario_with_classes_is_refused(capsys):
    rc, _, err = _cli(["scorecard", "--preset", "dynamic-small"], capsys)
    assert rc == 2 and "[[class]]" in err and err.count("\n") == 1


def test_plot_has_one_panel_per_flow(tmp_path, capsys):
    card = api.scorecard("isolation", schedulers=["drfq", "fifo"], duration=1500.0)
    fig = plot_delay_cdfs(card.cdfs)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == FLOWS
    assert all(len(ax.get_lines()) == 2 + 1 for ax in visible)  # one line per scheduler and the packet time
    for c in card.cdfs:
        assert c["fraction"][-1] == pytest.approx(1.0) and c["delay"] == sorted(c["delay"])
    out = tmp_path / "cdf.png"
    rc, text, _ = _cli(["scorecard", "--preset", "isolation", "--schedulers", "drfq", "--duration", "1500",
                        "--plot", str(out)], capsys)
    assert rc == 0 and out.stat().st_size > 10_000 and "figure written to" in text


@pytest.mark.nojit
def test_the_packet_time_line_has_a_style_of_its_own():
    """The reference line of a flow's own packet time is black, thinner and dash-dot-dot, with its own
    legend entry; no scheduler line shares its colour or its dash pattern, however many schedulers."""
    from matplotlib.colors import to_rgba

    scheds = [f"s{m}" for m in range(12)]
    cdfs = [{"scheduler": s, "flow": f, "packet_time": 1.0, "delay": [1.0, 2.0, 4.0], "fraction": [0.2, 0.7, 1.0]}
            for s in scheds for f in ("a", "b")]
    fig = plot_delay_cdfs(cdfs)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["a", "b"]
    for ax in visible:
        ref = [ln for ln in ax.get_lines() if ln.get_label() == "packet time (no wait)"]
        lines = [ln for ln in ax.get_lines() if ln.get_label() in scheds]
        assert len(ref) == 1 and len(lines) == len(scheds)
        r = ref[0]
        assert to_rgba(r.get_color()) == to_rgba("black") and list(r.get_xdata()) == [1.0, 1.0]
        for ln in lines:
            assert to_rgba(ln.get_color()) != to_rgba(r.get_color())
            assert ln._unscaled_dash_pattern != r._unscaled_dash_pattern
            assert ln.get_linewidth() > r.get_linewidth()
    legend = visible[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == scheds + ["packet time (no wait)"]


def test_intervals_account_for_every_departure_and_an_idle_flow_gets_nothing():
    """With no warm-up, the departures counted per interval over [0, duration) are the run's packets
    of each flow; a flow alone and backlogged holds its dominant resource the whole interval."""
    card = api.scorecard("wakeup", schedulers=["drfq"], intervals=[0.0, 700.0, 1000.0, 3000.0])
    run = card.raw.runs["drfq"]
    iv = card.intervals.to_records()
    for k, name in enumerate(["early", "late", "returning"]):
        assert sum(r["departed"] for r in iv if r["flow"] == name) == run.flows[k].packets
    share = {(r["flow"], r["start"]): r["dominant_share"] for r in iv}
    assert share["early", 700.0] == 1.0 and share["late", 700.0] == 0.0 and share["returning", 700.0] == 0.0


def test_a_counted_table_is_one_row_with_per_flow_rate_and_share():
    sc = api.load({"resources": ["cpu", "link"], "router": {"window": 10},
                   "run": {"duration": 2000.0, "warmup": 200.0, "seed": 3},
                   "flow": [{"name": "a", "cost": [1.0, 0.5], "count": 3},
                            {"name": "b", "cost": [0.5, 1.0], "arrival": {"law": "cbr", "rate": 0.2}}]})
    card = api.scorecard(sc, schedulers=["drfq"])
    rows = {r["flow"]: r for r in card.rows}
    assert set(rows) == {"a.*", "b"}
    # b is capped at its demand 0.2 (a tenth of the CPU); the three a flows share the rest: 0.9 / 3 each
    assert rows["b"]["share"] == pytest.approx(0.2) and rows["a.*"]["share"] == pytest.approx(0.3)
    assert rows["a.*"]["rate"] == pytest.approx(0.3, rel=0.02) and rows["b"]["rate"] == pytest.approx(0.2, rel=0.02)
    assert rows["b"]["source"] == "cbr" and rows["a.*"]["drops"] is None and rows["b"]["drops"]["total"] == 0
