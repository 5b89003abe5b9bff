"""The token-bucket shaper of an open-loop source (flows.traffic.TokenBucket, ``shaper = {rate, burst}``):
against a packet-by-packet token count, the leaky-bucket envelope, a hand-computed trace on the engine
and the SimPy reference, the arrivals of unshaped flows untouched, and the refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrfq import flows
from mrfq.analysis.cli import main
from mrfq.flows.errors import ScenarioError
from mrfq.flows.traffic import PacketStream, TokenBucket


def token_count(a, rate, burst):
    """The oracle: a token bucket counted packet by packet (full at the first arrival, capped at burst)."""
    tokens, t_tok, d_prev, out = burst, a[0] if len(a) else 0.0, -math.inf, []
    for x in a:
        t0 = max(x, d_prev)
        tokens = min(burst, tokens + rate * (t0 - t_tok))
        t_tok = t0
        if tokens >= 1.0:
            d, tokens = t0, tokens - 1.0
        else:
            d, tokens = t0 + (1.0 - tokens) / rate, 0.0
            t_tok = d
        out.append(d)
        d_prev = d
    return np.array(out)


@st.composite
def arrivals(draw):
    n = draw(st.integers(1, 80))
    gaps = draw(st.lists(st.floats(0.0, 5.0), min_size=n, max_size=n))
    return 2.0 + np.cumsum(np.array(gaps)) - gaps[0]


@pytest.mark.nojit
@settings(deadline=None, max_examples=60)
@given(a=arrivals(), rate=st.sampled_from([0.25, 1.0, 3.0]), burst=st.sampled_from([1.0, 2.0, 3.5, 10.0]),
       chunks=st.lists(st.integers(1, 9), min_size=1, max_size=20))
def test_closed_form_against_a_token_count_and_the_envelope(a, rate, burst, chunks):
    whole = TokenBucket(rate, burst).shape(a)
    assert whole == pytest.approx(token_count(list(a), rate, burst), rel=1e-12, abs=1e-9)
    # in blocks of any sizes: the same bits
    tb, parts, i = TokenBucket(rate, burst), [], 0
    for c in chunks * (len(a) // max(1, sum(chunks)) + 1):
        if i >= len(a):
            break
        parts.append(tb.shape(a[i:i + c]))
        i += c
    assert np.array_equal(np.concatenate(parts), whole)
    # in order, never before the arrival, and at most burst + rate (t - s) packets in any [s, t]
    assert np.all(np.diff(whole) >= 0) and np.all(whole >= a)
    for i in range(len(whole)):
        k = np.arange(i, len(whole))
        assert np.all(k - i + 1 <= burst + rate * (whole[k] - whole[i]) + 1e-9)


def link(shaper=None, rate=2.0, packets=8, duration=20.0, extra=()):
    f = {"name": "s", "cost": [0.01], "packets": packets, "arrival": {"law": "cbr", "rate": rate}}
    if shaper is not None:
        f["shaper"] = shaper
    return flows.from_dict({"resources": ["link"], "router": {"scheduler": "fifo"}, "run": {"duration": duration},
                            "flow": [f, *extra]})


def test_a_cbr_source_through_a_bucket_by_hand():
    """CBR at 2 from 0 (0, 0.5, 1, ...) into rate 1, depth 3: tokens 3, 2.5, 2, 1.5, 1 before each of
    the first five packets (each takes one, half a token comes back in between), then 0.5 at 2.5: the
    sixth leaves at 3, and from then on one a time unit: 0, 0.5, 1, 1.5, 2, 3, 4, 5."""
    from mrfq.router.reference import simulate_reference, trace_tuples
    from mrfq.router.run import simulate

    sc = link({"rate": 1.0, "burst": 3})
    ref = simulate_reference(sc).trace
    assert trace_tuples(simulate(sc, trace=100).trace) == ref
    assert [r[0] for r in ref] == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0]


@pytest.mark.nojit
def test_unshaped_flows_keep_their_arrivals():
    other = {"name": "p", "cost": [0.01], "arrival": {"law": "poisson", "rate": 3.0}}
    plain, shaped = link(extra=(other,)), link({"rate": 0.5, "burst": 2}, extra=(other,))
    t0, f0, _ = PacketStream(plain).until(20.0)
    t1, f1, _ = PacketStream(shaped).until(20.0)
    assert np.array_equal(t0[f0 == 1], t1[f1 == 1])
    assert len(t1[f1 == 0]) == 8 and np.all(t1[f1 == 0] >= t0[f0 == 0])


@pytest.mark.nojit
def test_round_trip_and_the_offered_rate():
    sc = link({"rate": 0.5, "burst": 2})
    assert sc.flows[0].shaper == (0.5, 2.0) and sc.flows[0].offered_rate == 0.5
    assert flows.from_dict(flows.scenario.to_dict(sc)).flows[0].shaper == (0.5, 2.0)
    assert link({"rate": 5.0, "burst": 2}).flows[0].offered_rate == 2.0


@pytest.mark.nojit
@pytest.mark.parametrize("flow, match", [
    ({"cost": [1.0], "shaper": {"rate": 1.0, "burst": 2}}, r"flow\[0\].shaper: only for an open-loop flow"),
    ({"cost": [1.0], "arrival": {"law": "cbr", "rate": 1.0}, "shaper": {"rate": 1.0}},
     r"flow\[0\].shaper.burst: missing"),
    ({"cost": [1.0], "arrival": {"law": "cbr", "rate": 1.0}, "shaper": {"rate": 0.0, "burst": 2}},
     r"flow\[0\].shaper.rate"),
    ({"cost": [1.0], "arrival": {"law": "cbr", "rate": 1.0}, "shaper": {"rate": 1.0, "burst": 0.5}},
     r"flow\[0\].shaper.burst"),
    ({"cost": [1.0], "arrival": {"law": "cbr", "rate": 1.0}, "shaper": {"rate": 1.0, "burst": 2, "depth": 3}},
     r"flow\[0\].shaper"),
    ({"cost": [1.0], "arrival": {"law": "cbr", "rate": 1.0}, "shaper": 3}, r"flow\[0\].shaper = 3: must be a table"),
])
def test_refusals(flow, match):
    with pytest.raises(ScenarioError, match=match) as e:
        flows.from_dict({"resources": ["link"], "run": {"duration": 10.0}, "flow": [flow]})
    assert "\n" not in str(e.value)


@pytest.mark.nojit
def test_a_trace_flow_takes_no_shaper(tmp_path, capsys):
    (tmp_path / "p.csv").write_text("time,flow\n0.5,t\n")
    (tmp_path / "s.toml").write_text(
        'resources = ["link"]\n[run]\nduration = 5.0\n[traffic]\npacket_trace = "p.csv"\n'
        '[[flow]]\nname = "t"\ncost = [1.0]\narrival = {law = "trace"}\nshaper = {rate = 1.0, burst = 2}\n')
    assert main(["run", str(tmp_path / "s.toml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "flow[0].shaper: not for a trace-driven flow" in err[0]
