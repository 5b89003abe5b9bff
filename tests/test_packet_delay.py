"""Open-loop packet sources, tail drop and per-packet delays (docs/packet-sources-and-delay.md).

The gate first (one-line errors, exit 2), then the sources (common random numbers, chunking,
their laws), the histograms (the bucket bound, quantiles against numpy's), the engine against
the SimPy reference (whole departure lists with sojourns, histograms bit for bit), the report
(`mrfq run` table, ``--json``, ``--delays``) and queueing theory nobody tuned: M/D/1 and M/G/1
Pollaczek-Khinchine mean sojourns, and no wait at a faster deterministic second server.

``MRFQ_TEST_SCALE`` scales the theory runs' length.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrfq import flows
from mrfq.analysis.cli import main
from mrfq.analysis.delay_stats import quantile
from conftest import scaled
from mrfq.fq.registry import SCHEDULERS
from mrfq.flows import traffic
from mrfq.flows.traffic import PacketStream
from mrfq.router import delays
from mrfq.router.reference import simulate_reference, trace_tuples

pytestmark = pytest.mark.nojit
SCHEDULER_NAMES = tuple(SCHEDULERS)

BASE = 'resources = ["cpu", "link"]\n[run]\nduration = 100.0\n[[flow]]\nname = "g"\ncost = [1.0, 0.5]\n'
VOIP = '[[flow]]\nname = "v"\ncost = [0.05, 0.2]\n'


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------
# the gate
BAD = [
    (VOIP + 'arrival = {law = "poisson", rate = -0.5}\n', "flow[1].arrival.rate = -0.5: out of range"),
    (VOIP + 'arrival = {law = "poisson", rate = 0}\n', "flow[1].arrival.rate = 0: out of range"),
    (VOIP + 'arrival = {law = "onoff", rate = 1.0, on = 0.0, off = 2.0}\n', "flow[1].arrival.on = 0.0: out of range"),
    (VOIP + 'arrival = {law = "onoff", rate = 1.0, on = 1.0, off = -2.0}\n', "flow[1].arrival.off = -2.0: out of range"),
    (VOIP + 'arrival = {law = "onoff", rate = 1.0, on = 1.0}\n', "flow[1].arrival.off: missing"),
    (VOIP + 'arrival = {law = "pareto", rate = 1.0}\n', "flow[1].arrival.law = 'pareto': unknown; choose one of"),
    (VOIP + 'arrival = {rate = 1.0}\n', "flow[1].arrival.law: missing; choose one of poisson, cbr, onoff, trace"),
    (VOIP + 'arrival = {law = "cbr", rate = 1.0, on = 2.0}\n', "flow[1].arrival: unknown key 'on'"),
    (VOIP + 'arrival = {law = "cbr", rate = 1.0}\nbuffer = 0\n', "flow[1].buffer = 0: out of range"),
    (VOIP + 'arrival = {law = "cbr", rate = 1.0}\nbuffer = 2000000\n', "flow[1].buffer = 2000000: out of range"),
    (VOIP + 'arrival = {law = "cbr", rate = 1.0}\nbuffer = "all"\n', "flow[1].buffer = 'all': must be a whole number"),
    (VOIP + 'buffer = 10\n', "flow[1].buffer: only for an open-loop or TCP flow"),
    (VOIP + 'arrival = "poisson"\n', "flow[1].arrival = 'poisson': must be a table"),
    (VOIP + 'arrival = {law = "trace"}\n', "flow[1].arrival.law = 'trace': the scenario has no [traffic] packet_trace"),
    (VOIP + 'arrival = {law = "cbr", rate = 1e12}\n', "flow[1].arrival.rate = 1e+12: more than one packet per"),
]


@pytest.mark.parametrize("text,needle", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_sources_one_line_exit_2(capsys, tmp_path, text, needle):
    p = tmp_path / "s.toml"
    p.write_text(BASE + text)
    code, out, err = run_cli(capsys, "run", str(p))
    assert code == 2 and needle in err and err.count("\n") == 1 and "Traceback" not in err, err
    assert out == ""


TRACES = [
    ("time,flow\n1.0,v\n2.0,nobody\n", "line 3: flow = 'nobody': unknown; the scenario's static flows are g, v"),
    ("time,flow\n1.0,g\n", "line 2: flow = 'g': not trace-driven"),
    ("time,flow\n2.0,v\n1.0,v\n", "line 3: time = 1.0: decreases"),
    ("time,flow\n-1,v\n", "line 2: time = -1: must be a finite number >= 0"),
    ("time,flow\nx,v\n", "line 2: time = 'x': must be a number"),
    ("time,flow\n1.0,v,3\n", "line 2: 3 fields: must be 2"),
    ("when,flow\n", "line 1: header ['when', 'flow']: must be exactly 'time,flow' or 'time,flow,size'"),
    ("", "p.csv: empty; its first line must be the header 'time,flow' or 'time,flow,size'"),
    ("time,flow,size\n1.0,v,-4\n", "line 2: size = '-4': must be a finite number of bytes >= 0"),
    ("time,flow,size\n1.0,v,40\n", "flow[1]: the packet trace gives sizes, so this flow needs per_byte"),
]


@pytest.mark.parametrize("rows,needle", TRACES, ids=[f"trace{i}" for i in range(len(TRACES))])
def test_bad_packet_traces_name_the_line(capsys, tmp_path, rows, needle):
    (tmp_path / "p.csv").write_text(rows)
    p = tmp_path / "s.toml"
    p.write_text(BASE.replace("[[flow]]", '[traffic]\npacket_trace = "p.csv"\n[[flow]]', 1)
                 + VOIP + 'arrival = {law = "trace"}\n')
    code, out, err = run_cli(capsys, "run", str(p))
    assert code == 2 and "traffic.packet_trace" in err or "flow[1]" in err, err
    assert needle in err and err.count("\n") == 1, err


def test_sized_trace_packets_must_visit_the_same_resources(tmp_path):
    (tmp_path / "p.csv").write_text("time,flow,size\n1.0,v,100\n2.0,v,0\n")
    d = {"resources": ["cpu", "link"], "traffic": {"packet_trace": "p.csv"},
         "flow": [{"name": "v", "cost": [0.5, 0.0], "per_byte": [0.0, 0.001], "arrival": {"law": "trace"}}]}
    with pytest.raises(flows.ScenarioError, match=r"line 3: size = 0: flow\[0\]'s packet would cost \[0.5, 0.0\]"):
        flows.from_dict(d, base_dir=tmp_path)


# ---------------------------------------------------------------------------
# the sources
def open_loop(**run):
    return flows.from_dict({
        "resources": ["cpu"], "run": {"duration": 1000.0, **run},
        "flow": [{"name": "p", "cost": [0.1], "arrival": {"law": "poisson", "rate": 2.0}},
                 {"name": "c", "cost": [0.1], "arrival": {"law": "cbr", "rate": 0.75}, "start": 3.0, "packets": 40},
                 {"name": "o", "cost": [0.1], "count": 2, "arrival": {"law": "onoff", "rate": 4.0, "on": 2.0, "off": 6.0}},
                 {"name": "g", "cost": [0.1]}]})


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_packet_stream_does_not_depend_on_chunking(n):
    whole = PacketStream(open_loop()).until(800.0)
    s = PacketStream(open_loop())
    parts = [s.take(n) for _ in range(len(whole[0]) // n + 1)]
    got = [np.concatenate([p[i] for p in parts]) for i in range(3)]
    k = len(whole[0])
    assert all(np.array_equal(a[:k], b) for a, b in zip(got, whole))


@pytest.mark.parametrize("first, step", [(1, 1), (1024, 1), (3, 1000)])
def test_packet_stream_does_not_depend_on_block_sizes(monkeypatch, first, step):
    """A source's blocks (they double from FIRST_BLOCK) and the merge's horizon moves
    (PER_SOURCE_STEP arrivals per source) decide only how the work is split, never the arrivals."""
    whole = PacketStream(open_loop()).until(800.0)
    monkeypatch.setattr(traffic, "FIRST_BLOCK", first)
    monkeypatch.setattr(traffic, "PER_SOURCE_STEP", step)
    got = PacketStream(open_loop()).until(800.0)
    assert all(np.array_equal(a, b) for a, b in zip(got, whole))


def test_many_sources_are_visited_a_bounded_number_of_times(monkeypatch):
    """The merge visits every open-loop source at each move of its horizon; the moves bring in about
    PER_SOURCE_STEP arrivals per source, so n sources cost O(arrivals), not O(n x arrivals)."""
    n = 2000
    sc = flows.from_dict({"resources": ["cpu"], "run": {"duration": 100.0},
                          "flow": [{"name": "p", "count": n, "cost": [0.1], "arrival": {"law": "poisson", "rate": 0.005}}]})
    calls = [0]
    until = traffic._Source.until

    def counted(self, H):
        calls[0] += 1
        return until(self, H)

    monkeypatch.setattr(traffic._Source, "until", counted)
    s = PacketStream(sc)
    got = sum(len(s.take(4096)[0]) for _ in range(100))   # 409,600 arrivals, about 205 per source
    assert got == 409_600
    moves = got / (traffic.PER_SOURCE_STEP * n)
    assert calls[0] <= n * (moves + 3), (calls[0], n, moves)


def test_packet_stream_laws():
    t, f, _ = PacketStream(open_loop()).until(1e6)
    assert np.all(np.diff(t) >= 0)
    assert all(np.all(np.diff(f[t == x]) > 0) for x in np.unique(t)[:200])   # one instant: by flow id
    cbr = t[f == 1]
    assert cbr.tolist() == [3.0 + k / 0.75 for k in range(40)]                   # first at start, exact gaps
    assert abs(len(t[f == 0]) / 1e6 / 2.0 - 1) < 0.01                           # Poisson: rate 2
    for fid in (2, 3):                                                            # on-off: mean rate 4 x 2 / 8
        assert abs(len(t[f == fid]) / 1e6 / 1.0 - 1) < 0.05
    assert not np.array_equal(t[f == 2][:50], t[f == 3][:50])                   # each flow its own streams


def test_sources_are_common_random_numbers():
    """The same packets whatever the scheduler, and a flow's arrivals do not depend on the others."""
    a = PacketStream(open_loop()).until(500.0)
    b = PacketStream(open_loop().replace(**{"router.scheduler": "fifo"})).until(500.0)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    sc = open_loop()
    alone = flows.from_dict({**flows.to_dict(sc), "flow": flows.to_dict(sc)["flow"][:1]})
    t, f, _ = PacketStream(alone).until(500.0)
    assert np.array_equal(t, a[0][a[1] == 0])


# ---------------------------------------------------------------------------
# the histograms
@settings(deadline=None, max_examples=300)
@given(x=st.floats(min_value=2.0 ** -10, max_value=1e6, allow_nan=False))
def test_bucket_holds_the_value_within_the_bound(x):
    base, NB = delays.layout(0.25, 1e6)   # resolved from 0.25 x 2^-8 = 2^-10 to 1e6
    lo, hi = delays.bucket_edges(base, NB)
    i = delays.bucket_py(x, base, NB)
    assert 0 < i < NB - 1
    assert lo[i] <= x < hi[i]
    assert abs(0.5 * (lo[i] + hi[i]) - x) <= delays.REL_ERROR * x
    assert delays.bucket(x, base, NB) == i   # the engine's (jitted) bucket


def test_zero_and_tiny_values_go_to_bucket_zero():
    base, NB = delays.layout(1.0, 100.0)
    assert delays.bucket_py(0.0, base, NB) == 0
    assert delays.bucket_py(2.0 ** -9, base, NB) == 0
    assert delays.bucket_py(2.0 ** -8, base, NB) == 1
    assert delays.bucket_py(1e300, base, NB) == NB - 1


def test_quantiles_within_one_percent_of_numpy():
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.exponential(3.0, 20000), rng.lognormal(2.0, 1.5, 20000)])
    base, NB = delays.layout(0.01, 1e6)
    lo, hi = delays.bucket_edges(base, NB)
    counts = np.bincount([delays.bucket_py(v, base, NB) for v in x], minlength=NB)
    for q in (0.5, 0.9, 0.99, 0.999):
        exact = np.quantile(x, q, method="inverted_cdf")
        assert abs(quantile(counts, lo, hi, q, x.max()) / exact - 1) <= 0.01


# ---------------------------------------------------------------------------
# the engine against the reference: whole departure lists, sojourns included
def check(sc):
    from mrfq.router.run import simulate

    eng = simulate(sc, trace=100_000)
    ref = simulate_reference(sc)
    assert trace_tuples(eng.trace) == ref.trace
    assert eng.departures.rows() == ref.departures
    assert [(f.packets, f.drops, f.offered, f.completion_time) for f in eng.flows] == \
           [(f.packets, f.drops, f.offered, f.completion_time) for f in ref.flows]
    dh = eng.delays
    assert np.array_equal(dh.hist, ref.hist) and np.array_equal(dh.dmax, ref.dmax)
    assert np.array_equal(dh.dsum, ref.dsum) and np.array_equal(dh.dcnt, ref.dcnt)
    assert eng.rfb == ref.rfb
    lean = simulate(sc)
    assert lean.delays == dh and list(lean.flows) == list(eng.flows) and lean.rfb == eng.rfb
    return eng


@st.composite
def open_scenarios(draw):
    J = 2  # the loops test_lean_loop.py compiles too (compile time dominates the suite)
    costs = (0.0, 0.25, 0.5, 1.0)

    def cost():
        return draw(st.lists(st.sampled_from(costs), min_size=J, max_size=J).filter(lambda c: max(c) > 0))

    fl = []
    for i in range(draw(st.integers(1, 4))):
        f = {"name": f"f{i}", "cost": cost(), "weight": draw(st.sampled_from((0.5, 1.0, 2.0))),
             "start": draw(st.sampled_from((0.0, 0.5, 2.25))), "packets": draw(st.sampled_from((0, 0, 3, 11))),
             "count": draw(st.sampled_from((1, 1, 2)))}
        law = draw(st.sampled_from(("window", "poisson", "cbr", "onoff")))
        if law != "window":
            f["arrival"] = {"law": law, "rate": draw(st.sampled_from((0.25, 0.5, 1.0, 2.0)))}
            if law == "onoff":
                f["arrival"].update(on=draw(st.sampled_from((0.5, 2.0))), off=draw(st.sampled_from((0.5, 4.0))))
            f["buffer"] = draw(st.sampled_from((1, 2, 5, 40)))
        if draw(st.booleans()) and draw(st.booleans()):
            f["per_byte"] = [1 / 1024] * J
            f["packet_sizes"] = [256, 1024]
        fl.append(f)
    d = {"resources": [f"r{j}" for j in range(J)],
         "router": {"scheduler": draw(st.sampled_from(SCHEDULER_NAMES)),
                    "window": draw(st.integers(1, 4))},
         "run": {"duration": draw(st.sampled_from((20.0, 45.5))), "warmup": draw(st.sampled_from((0.0, 3.0))),
                 "seed": draw(st.integers(0, 2**20)), "batches": 4},
         "flow": fl}
    if draw(st.booleans()):
        d["class"] = [{"name": "k", "cost": cost(), "rate": 0.2, "mean_packets": 3.0}]
        d["run"]["max_flows"] = 100
    return flows.from_dict(d)


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(sc=open_scenarios())
def test_engine_equals_reference_with_open_loop_sources(sc):
    check(sc)


def test_engine_equals_reference_on_a_sized_packet_trace(tmp_path):
    (tmp_path / "p.csv").write_text("time,flow,size\n0.5,v,100\n0.5,v,1500\n0.75,w.1,64\n1.0,v,1500\n"
                                    "1.0,w.0,700\n3.25,v,64\n3.25,w.1,1500\n")
    sc = flows.from_dict({
        "resources": ["cpu", "link"], "router": {"scheduler": "bmf-wfq", "window": 3},
        "run": {"duration": 60.0, "warmup": 0.5}, "traffic": {"packet_trace": "p.csv"},
        "flow": [{"name": "v", "cost": [0.25, 0.0], "per_byte": [0.0, 1 / 1000], "arrival": {"law": "trace"},
                  "buffer": 2, "packets": 4},
                 {"name": "w", "cost": [0.5, 0.5], "per_byte": [0.0, 1 / 1000], "count": 2, "arrival": {"law": "trace"}},
                 {"name": "p", "cost": [0.25, 0.5], "arrival": {"law": "poisson", "rate": 0.5}, "buffer": 3},
                 {"name": "g", "cost": [1.0, 0.25]}]}, base_dir=tmp_path)
    r = check(sc)
    v = r.flows[0]
    # offered and drops count arrivals from warm-up on (t >= 0.5): the two rows at 0.5, 1.0 (dropped), 3.25
    assert v.drops == 1 and v.offered == 4 and v.packets == 3 and v.completion_time == 10.578
    # v's link times are its sizes / 1000: 0.1 then 1.5 (its third packet found the buffer full)
    assert [round(b - a, 9) for a, b, j, u, _ in trace_tuples(r.trace) if u == 0 and j == 1] == [0.1, 1.5, 0.064]


def test_drops_by_hand():
    """One resource, cost 1, CBR every 0.25 from 0, buffer 2: packet k arrives at k / 4; the one in
    service and one waiting fill the buffer: arrivals at 0 (served [0, 1]), 0.25 (waits, served
    [1, 2]), 0.5 and 0.75 dropped, 1.0 (the departure at 1.0 comes first: joins behind 0.25), 1.25
    to 1.75 dropped, 2.0 accepted, ...: 12 of the 41 arrivals in [0, 10] accepted, all 41 offered
    (no warm-up: the arrival at 0 counts), 29 dropped; departures at 1, 2, ..., 10."""
    sc = flows.from_dict({"resources": ["r"], "run": {"duration": 10.0},
                          "flow": [{"name": "c", "cost": [1.0], "arrival": {"law": "cbr", "rate": 4.0},
                                    "buffer": 2}]})
    r = check(sc)
    f = r.flows[0]
    assert f.offered == 41 and f.packets == 10 and f.drops == 29
    assert r.departures.rows()[:3] == [(1.0, 1.0, 0, 1), (2.0, 1.75, 0, 2), (3.0, 2.0, 0, 3)]


def test_drops_at_time_zero_and_at_warmup_count(tmp_path):
    """Packets that arrive together at 0 with no warm-up, and at exactly the warm-up: one accepted
    (buffer 1, cost 1), the others dropped and counted (arrivals from warm-up on, t >= warmup)."""
    (tmp_path / "p.csv").write_text("time,flow\n0,b\n0,b\n0,b\n10,b\n10,b\n10,b\n")
    d = {"resources": ["r"], "run": {"duration": 20.0}, "traffic": {"packet_trace": "p.csv"},
         "flow": [{"name": "b", "cost": [1.0], "arrival": {"law": "trace"}, "buffer": 1}]}
    f = check(flows.from_dict(d, base_dir=tmp_path)).flows[0]
    assert (f.offered, f.drops, f.packets) == (6, 4, 2)
    d["run"]["warmup"] = 10.0
    f = check(flows.from_dict(d, base_dir=tmp_path)).flows[0]
    assert (f.offered, f.drops, f.packets) == (3, 2, 1)


# ---------------------------------------------------------------------------
# the report
def test_json_delay_and_drops(capsys, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('resources = ["cpu", "link"]\n[run]\nduration = 4000.0\nwarmup = 100.0\n[[flow]]\nname = "g"\n'
                 'cost = [1.0, 0.5]\n[[flow]]\nname = "v"\ncost = [0.05, 0.2]\n'
                 'arrival = {law = "poisson", rate = 0.5}\nbuffer = 3\n'
                 '[[class]]\nname = "k"\ncost = [0.2, 0.2]\nrate = 0.002\nmean_packets = 50\n')
    out_csv = tmp_path / "d.csv"
    code, out, err = run_cli(capsys, "run", str(p), "--json", "--delays", str(out_csv))
    assert code == 0, err
    d = json.loads(out)
    for e in d["flows"] + d["classes"]:
        assert list(e["delay"]) == ["mean", "ci", "p50", "p90", "p99", "p999", "max"]
        x = e["delay"]
        assert x["ci"][0] < x["mean"] < x["ci"][1] and x["p50"] <= x["p90"] <= x["p99"] <= x["p999"] <= x["max"]
    g, v = d["flows"]
    assert g["drops"]["total"] == 0 and g["drop_fraction"] is None
    assert v["drops"]["total"] == v["drops"]["by_reason"]["tail"] > 0 and 0 < v["drop_fraction"] < 1
    rows = out_csv.read_text().splitlines()
    assert rows[0] == "row,kind,measure,lower,upper,count"
    kinds = {tuple(r.split(",")[:3]) for r in rows[1:]}
    assert ("v", "flow", "sojourn") in kinds and ("k", "class", "wait:link") in kinds
    soj_v = sum(int(r.split(",")[5]) for r in rows[1:] if r.startswith("v,flow,sojourn,"))
    assert soj_v == v["packets"]   # every packet that left after warm-up, once
    code, out, err = run_cli(capsys, "run", str(p))
    assert code == 0 and "p999" in out and "drops" in out
    line = [s for s in out.splitlines() if s.startswith("v ")][-1]   # the delay table's
    assert f"{v['drops']['total']:,} (" in line


def test_delays_path_checked_before_running(capsys, tmp_path):
    code, out, err = run_cli(capsys, "run", "--preset", "oracle-rates", "--delays", str(tmp_path / "no" / "d.csv"))
    assert code == 2 and "--delays" in err and err.count("\n") == 1


def test_recording_off_changes_nothing_else():
    from mrfq.router.run import simulate

    sc = open_loop(warmup=10.0).replace(**{"run.duration": 300.0})
    on, off = simulate(sc, trace=10_000), simulate(sc, trace=10_000, record_delays=False)
    assert trace_tuples(on.trace) == trace_tuples(off.trace) and list(on.flows) == list(off.flows)
    assert off.delays.hist.sum() == 0 and on.delays.hist.sum() > 0


def test_many_static_flows_get_one_row_per_table():
    from mrfq.router.run import simulate

    sc = flows.from_dict({"resources": ["r", "spare"], "run": {"duration": 30.0, "warmup": 1.0}, "router": {"window": 1},
                          "flow": [{"name": "a", "cost": [1.0, 0.0], "count": delays.PER_FLOW_MAX},
                                   {"name": "b", "cost": [0.5, 0.0]}]})
    r = simulate(sc)
    assert r.delays.rows == ["a.*", "b"] and not r.delays.per_flow
    assert int(r.delays.hist[:, -1].sum()) == sum(f.packets for f in r.flows)   # the sojourns


# ---------------------------------------------------------------------------
# queueing theory
def md1(scheduler: str, law: dict, per_byte=None) -> dict:
    f = {"name": "p", "cost": [1.0, 0.0], "arrival": law, "buffer": 4096}
    if per_byte is not None:
        f.update(cost=[0.0, 0.0], per_byte=[per_byte[0], 0.0], packet_sizes=per_byte[1], packet_size_probs=per_byte[2])
    # one resource used; "spare", which nobody uses, changes nothing (tests/test_metamorphic.py) and puts the
    # runs on the two-resource loop variants the other tests compile
    return {"resources": ["r", "spare"], "router": {"scheduler": scheduler},
            "run": {"duration": scaled(400_000.0, 40_000.0), "warmup": 1000.0, "batches": 20, "seed": 3},
            "flow": [f]}


def mean_ci(d):
    from mrfq.analysis.run_report import run_json
    from mrfq.router.run import simulate

    r = simulate(flows.from_dict(d))
    (f,) = run_json(r)["flows"]
    assert f["drops"]["total"] == 0
    return f["delay"]


@pytest.mark.parametrize("scheduler", ["fifo", "drfq"])
def test_md1_pollaczek_khinchine(scheduler):
    """One resource, Poisson at 0.7, deterministic cost 1: E[T] = 1 + 0.7 / (2 x 0.3) = 2.1667."""
    lam = 0.7
    d = mean_ci(md1(scheduler, {"law": "poisson", "rate": lam}))
    pk = 1.0 + lam / (2.0 * (1.0 - lam))
    assert d["ci"][0] < pk < d["ci"][1], (pk, d)
    assert d["ci"][1] - d["ci"][0] < 0.1 * pk


def test_mg1_two_point_sizes_pollaczek_khinchine():
    """Service 0.2 or 2.0 (sizes 200 / 2000 bytes at 1/1000 per byte, probabilities 0.6 / 0.4):
    E[S] = 0.92, E[S^2] = 1.624; Poisson at 0.75 (rho = 0.69): E[T] = E[S] + lam E[S^2] / (2 (1 - rho))."""
    lam = 0.75
    d = mean_ci(md1("fifo", {"law": "poisson", "rate": lam}, (1 / 1000, [200.0, 2000.0], [0.6, 0.4])))
    es, es2 = 0.6 * 0.2 + 0.4 * 2.0, 0.6 * 0.04 + 0.4 * 4.0
    pk = es + lam * es2 / (2.0 * (1.0 - lam * es))
    assert d["ci"][0] < pk < d["ci"][1], (pk, d)
    assert d["ci"][1] - d["ci"][0] < 0.1 * pk


def test_no_wait_at_a_faster_deterministic_second_server():
    from mrfq.router.run import simulate

    r = simulate(flows.from_dict({
        "resources": ["cpu", "link"], "router": {"scheduler": "fifo"},
        "run": {"duration": scaled(50_000.0, 5000.0), "warmup": 100.0},
        "flow": [{"name": "p", "cost": [1.0, 0.6], "arrival": {"law": "poisson", "rate": 0.8}}]}), trace=200_000)
    h = r.delays.hist[0]
    assert h[0].sum() == h[1].sum() > 1000
    assert h[0, 1:].sum() > 0          # waits at the cpu
    assert h[1, 1:].sum() == 0   # none at the link
    assert math.isfinite(r.delays.dmax[0])
    # exactly: every packet starts at the link the instant it leaves the cpu
    tr = r.trace
    assert len(tr.start) < 200_000
    cpu_end = {int(k): float(e) for e, j, k in zip(tr.end, tr.resource, tr.seq) if j == 0}
    link = [(int(k), float(a)) for a, j, k in zip(tr.start, tr.resource, tr.seq) if j == 1]
    assert len(link) > 1000 and all(a == cpu_end[k] for k, a in link)


def test_reference_reaches_an_instant_no_single_delay_lands_on():
    """From now = 2.6449363498179213 no float64 delay d gives now + d == 7.070507394597397 (the sum
    rounds past it on both sides); the reference's clock must still stop there exactly, as the
    engine's does (an open-loop packet arriving then)."""
    import simpy

    from mrfq.router.reference import _delay_to, _until

    now, t = 2.6449363498179213, 7.070507394597397
    assert now + _delay_to(now, t) != t
    env = simpy.Environment(initial_time=now)
    seen = []

    def proc():
        yield from _until(env, t)
        seen.append(env.now)

    env.process(proc())
    env.run()
    assert seen == [t]


@pytest.mark.nojit
def test_mean_interval_needs_two_batches_with_departures():
    """Batch means: with every departure in one batch the residuals are all 0, which is no evidence
    of a zero spread: the interval is undefined (null), the mean is still given."""
    from mrfq.analysis.batch_stats import ratio_ci

    m, lo, hi = ratio_ci(np.array([0.0, 0.66, 0.0, 0.0]), np.array([0.0, 5.0, 0.0, 0.0]))
    assert m == pytest.approx(0.132) and math.isnan(lo) and math.isnan(hi)
    m, lo, hi = ratio_ci(np.array([0.3, 0.36, 0.0, 0.0]), np.array([2.0, 3.0, 0.0, 0.0]))
    assert lo < m < hi


def test_json_interval_is_null_when_one_batch_holds_every_departure(capsys, tmp_path):
    (tmp_path / "p.csv").write_text("time,flow\n1,v\n1.5,v\n2,v\n2.5,v\n3,v\n")
    p = tmp_path / "s.toml"
    p.write_text('resources = ["cpu", "link"]\n[run]\nduration = 100.0\n[traffic]\npacket_trace = "p.csv"\n'
                 '[[flow]]\nname = "v"\ncost = [0.05, 0.1]\narrival = {law = "trace"}\n'
                 '[[flow]]\nname = "g"\ncost = [0.5, 0.2]\n')
    code, out, err = run_cli(capsys, "run", str(p), "--json")
    assert code == 0, err
    v = json.loads(out)["flows"][0]
    assert v["packets"] == 5 and v["delay"]["mean"] > 0 and v["delay"]["ci"] == [None, None]


@pytest.mark.nojit
def test_a_source_that_floods_its_bottleneck_gets_a_warning():
    """An open-loop flow offering >= 100 times what its busiest resource serves: one line naming it
    (mrfq run and mrfq scorecard print it on stderr); 99 times is no warning."""
    def sc(rate):
        return flows.from_dict({"resources": ["cpu", "link"], "run": {"duration": 20.0},
                                "flow": [{"name": "flood", "cost": [0.01, 0.5], "arrival": {"law": "cbr", "rate": rate}},
                                         {"name": "g", "cost": [0.5, 0.5]}]})
    (line,) = sc(200.0).overload_warnings()
    assert line == ("flow[0] 'flood': offers 100 times what 'link' can serve (arrival rate 200 x cost 0.5); nearly "
                    "every packet is dropped, and the run spends its time on the drops")
    assert sc(198.0).overload_warnings() == []


def test_t_quantiles_from_the_table_are_scipys_own():
    """analysis/t_table.py (scripts/t_table.py) holds scipy.special.stdtrit's results bit for bit, and
    t_quantile reads them for the tabled confidences and falls back on scipy beyond them."""
    from scipy.special import stdtrit

    from mrfq.analysis.batch_stats import t_quantile
    from mrfq.analysis.t_table import MAX_DOF, T_QUANTILES

    assert set(T_QUANTILES) == {0.9, 0.95, 0.99}
    for c, row in T_QUANTILES.items():
        assert len(row) == MAX_DOF
        for dof in range(1, MAX_DOF + 1):
            assert t_quantile(c, dof) == row[dof - 1] == float(stdtrit(dof, 0.5 + c / 2.0))
    for c, dof in ((0.95, MAX_DOF + 1), (0.8, 19), (0.95, 500)):
        assert t_quantile(c, dof) == float(stdtrit(dof, 0.5 + c / 2.0))
