"""TCP-like flows (router/transport.py, docs/transport.md): the engine against the SimPy reference packet by
packet, hand-checked windows, and the scenario gate's refusals."""

from __future__ import annotations

import json
import math
import tomllib

import numpy as np
import pytest

from mrfq.flows.errors import MrfqError
from mrfq.flows.scenario import from_dict
from mrfq.router.reference import simulate_reference, trace_tuples
from mrfq.router.run import simulate


def _scenario(flows, scheduler="drfq", duration=1500.0, warmup=100.0, router=None, seed=3, resources=("cpu", "link")):
    return from_dict({"resources": list(resources), "router": {"scheduler": scheduler, **(router or {})},
                      "run": {"duration": duration, "warmup": warmup, "seed": seed}, "flow": flows})


def _agree(sc, **kw):
    """The engine and the SimPy reference: the same service trace, departures, drops and TCP counts."""
    e = simulate(sc, trace=10**7, cwnd_series=True, **kw)
    r = simulate_reference(sc, trace=None, **kw)
    assert trace_tuples(e.trace) == r.trace
    cs = e.cwnd_series
    for i, f in enumerate(r.flows):  # every change of every window, at the same instants
        m = cs.flow == i
        assert list(zip(cs.time[m].tolist(), cs.cwnd[m].tolist(), cs.ssthresh[m].tolist())) == (f.cwnd_log or [])
    for a, b in zip(e.flows, r.flows):
        assert (a.name, a.packets, a.drops, a.offered, a.drops_by_reason) == \
            (b.name, b.packets, b.drops, b.offered, b.drops_by_reason)
        assert a.transport == b.transport
    return e


RENO = {"cc": "reno", "rtt": 20.0}
CUBIC = {"cc": "cubic", "rtt": 40.0, "cubic_c": 0.01}


@pytest.mark.parametrize("scheduler", ["drfq", "fifo", "drr", "bmf-wfq"])
def test_engine_equals_reference_two_tcp_flows(scheduler):
    sc = _scenario([{"name": "a", "cost": [0.5, 1.0], "transport": RENO, "buffer": 15},
                    {"name": "b", "cost": [1.0, 0.25], "transport": CUBIC, "buffer": 25}], scheduler)
    e = _agree(sc)
    assert all(f.transport["retransmissions"] > 0 for f in e.flows)  # losses happened and were repaired


def test_engine_equals_reference_tcp_beside_windowed_and_open_loop_flows():
    sc = _scenario([{"name": "tcp", "cost": [0.5, 1.0], "transport": {**RENO, "initial_window": 3}, "buffer": 10},
                    {"name": "win", "cost": [0.25, 0.5]},
                    {"name": "voip", "cost": [0.1, 0.2], "arrival": {"law": "poisson", "rate": 0.2}, "buffer": 50,
                     "start": 3.0}],
                   router={"rtt": 5.0})
    _agree(sc)


@pytest.mark.parametrize("aqm", [{"policy": "red", "min_th": 3, "max_th": 12},
                                 {"policy": "codel", "target": 2, "interval": 40}])
@pytest.mark.parametrize("ecn", [False, True])
def test_engine_equals_reference_under_an_aqm(aqm, ecn):
    # the queue an AQM manages is the flow's at its first resource: the CPU is the bottleneck here
    sc = _scenario([{"name": "a", "cost": [1.0, 0.2], "transport": {**RENO, "ecn": ecn}, "buffer": 60},
                    {"name": "b", "cost": [1.0, 0.2], "transport": {**CUBIC, "ecn": ecn}, "buffer": 60}],
                   "fifo", router={"aqm": aqm})
    e = _agree(sc)
    marks = sum(f.transport["marks"] for f in e.flows)
    drops = sum(f.drops_by_reason[aqm["policy"]] for f in e.flows)
    if ecn:
        assert marks > 0 and drops == 0  # the AQM marks instead of dropping
    else:
        assert marks == 0 and drops > 0


def test_engine_equals_reference_with_random_loss_and_timeouts():
    sc = _scenario([{"name": "a", "cost": [0.2, 1.0], "transport": {**RENO, "min_rto": 30.0}, "loss": 0.05,
                     "buffer": "unbounded"}], "fifo", duration=4000.0)
    e = _agree(sc)
    t = e.flows[0].transport
    assert t["random_losses"] > 0 and t["timeouts"] > 0


def test_engine_equals_reference_shared_pool_longest():
    sc = _scenario([{"name": "a", "cost": [1.0, 0.2], "transport": {**RENO, "rtt": 5.0}, "buffer": 100},
                    {"name": "b", "cost": [1.0, 0.2], "transport": {**CUBIC, "rtt": 80.0}, "buffer": 100}],
                   "drr", router={"shared_buffer": 20, "shared_buffer_policy": "longest"})
    e = _agree(sc)
    assert sum(f.drops_by_reason["push_out"] for f in e.flows) > 0


def test_slow_start_doubles_the_window_each_round_trip():
    """One Reno flow, no loss, a fast router: the window grows by one per ACK (RFC 5681 (2)): after the
    initial window's ACKs return (one rtt), 2 IW packets are out; its sends by time k rtt are
    IW (2^(k+1) - 1) while below max_window."""
    sc = _scenario([{"name": "a", "cost": [0.001, 0.001], "transport": {"cc": "reno", "rtt": 10.0, "initial_window": 2,
                                                                    "max_window": 64},
                     "buffer": "unbounded"}], "fifo", duration=35.0, warmup=0.0)
    e = simulate(sc, trace=10**6)
    starts = sorted(e.trace.start[e.trace.resource == 0])
    assert [sum(1 for s in starts if s < k * 10.0 + 5.0) for k in (1, 2, 3)] == [2 * 3, 2 * 7, 2 * 15]


def test_a_packet_dropped_is_repaired_by_fast_retransmit():
    """Buffer 4 on a link of rate 1 with rtt 10: the slow-start burst overflows it, the losses are
    found by duplicate ACKs (no timeout) and every packet is delivered once: goodput = rate."""
    sc = _scenario([{"name": "a", "cost": [0.01, 1.0], "transport": {"cc": "reno", "rtt": 10.0}, "buffer": 4}],
                   "fifo", duration=3000.0, warmup=500.0)
    e = _agree(sc)
    t = e.flows[0].transport
    assert t["timeouts"] == 0 and t["retransmissions"] > 0
    assert math.isclose(t["goodput"], e.flows[0].rate, rel_tol=0.02)


@pytest.mark.parametrize("flow, msg", [
    ({"transport": {"cc": "vegas", "rtt": 1}}, "flow[0].transport.cc = 'vegas': unknown"),
    ({"transport": {"cc": "reno", "rtt": 0}}, "flow[0].transport.rtt = 0"),
    ({"transport": {"cc": "reno"}}, "flow[0].transport.rtt: missing"),
    ({"transport": {"cc": "reno", "rtt": 1, "initial_window": 0}}, "flow[0].transport.initial_window = 0"),
    ({"transport": {"cc": "reno", "rtt": 1}, "loss": 1.0}, "flow[0].loss = 1"),
    ({"transport": {"cc": "reno", "rtt": 1}, "loss": -0.1}, "flow[0].loss = -0.1"),
    ({"loss": 0.1}, "flow[0].loss: only for a TCP flow"),
    ({"transport": {"cc": "reno", "rtt": 1, "ecn": True}}, "flow[0].transport.ecn = true: no AQM marks"),
    ({"transport": {"cc": "reno", "rtt": 1}, "arrival": {"law": "poisson", "rate": 1}}, "flow[0].transport: a TCP"),
    ({"transport": {"cc": "reno", "rtt": 1}, "packets": 10}, "flow[0].packets: a TCP flow here is backlogged"),
])
@pytest.mark.nojit
def test_bad_transport_is_refused_naming_the_field(flow, msg):
    with pytest.raises(MrfqError) as e:
        _scenario([{"name": "a", "cost": [1.0, 1.0], **flow}])
    assert str(e.value).startswith(msg), str(e.value)


@pytest.mark.nojit
def test_tcp_on_a_class_is_refused():
    with pytest.raises(MrfqError, match=r"^class\[0\]\.transport: TCP senders are for \[\[flow\]\] tables only"):
        from_dict({"resources": ["cpu"], "class": [{"cost": [1.0], "rate": 0.1, "transport": {"cc": "reno"}}]})


SCENARIO_TOML = """resources = ["cpu", "link"]
[run]
duration = 600
warmup = 50
[[flow]]
name = "a"
cost = [0.5, 1.0]
transport = {cc = "reno", rtt = 20}
buffer = 20
[[flow]]
name = "w"
cost = [1.0, 0.25]
"""


def test_cli_reports_tcp_flows_and_writes_the_window_series(tmp_path, capsys):
    from mrfq.analysis.cli import main

    sc_path = tmp_path / "tcp.toml"
    sc_path.write_text(SCENARIO_TOML)
    out = tmp_path / "cwnd.csv"
    assert main(["run", str(sc_path), "--cwnd-series", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    a = d["flows"][0]
    assert a["goodput"] == a["transport"]["goodput"] and "transport" not in d["flows"][1]
    rt = a["transport"]["round_trip"]
    assert rt["mean"] == pytest.approx(20.0 + a["delay"]["mean"])
    rows = out.read_text().splitlines()
    assert rows[0] == "time,flow,cwnd,ssthresh" and rows[1] == "0.0,a,10.0,1000.0"
    e = simulate(from_dict({**tomllib.loads(SCENARIO_TOML), "name": "tcp"}), cwnd_series=True)
    assert len(rows) - 1 == len(e.cwnd_series.time)
    # sampled: the window in force at 0, 100, ..., 600
    assert main(["run", str(sc_path), "--cwnd-series", str(out), "--cwnd-width", "100"]) == 0
    text = capsys.readouterr().out
    assert "tcp " in text and "goodput" in text
    rows = [r.split(",") for r in out.read_text().splitlines()[1:]]
    assert [float(r[0]) for r in rows] == [0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0]
    cs = e.cwnd_series
    for t, _, c, s in rows:
        i = int(np.searchsorted(cs.time, float(t), side="right")) - 1
        assert (float(c), float(s)) == (cs.cwnd[i], cs.ssthresh[i])


@pytest.mark.nojit
def test_cli_refuses_a_window_series_without_tcp_flows(tmp_path, capsys):
    from mrfq.analysis.cli import main

    sc_path = tmp_path / "win.toml"
    sc_path.write_text('resources = ["cpu"]\n[[flow]]\ncost = [1.0]\n')
    assert main(["run", str(sc_path), "--cwnd-series", str(tmp_path / "c.csv")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("mrfq: error: --cwnd-series: the scenario has no TCP flow; give a [[flow]] a transport = "
                           '{cc = "reno", rtt = ...}')
    assert not (tmp_path / "c.csv").exists()


def test_api_run_gives_goodput_and_the_window_series():
    from mrfq.analysis import api

    r = api.run({**tomllib.loads(SCENARIO_TOML), "name": "tcp"}, cwnd_series=True)
    a = r.flows[0]
    assert a["goodput"] > 0 and a["transport"]["retransmissions"] >= 0
    w = r.windows.to_records()
    assert w[0] == {"time": 0.0, "flow": "a", "cwnd": 10.0, "ssthresh": 1000.0} and len(w) == len(r.raw.cwnd_series.time)
