"""TCP flows against published results (docs/findings/tcp-checks.md; scripts/tcp_checks.py prints the
page's tables): run lengths scaled by MRFQ_TEST_SCALE, at least half the page's (the engine runs each in
about a second; the warm-ups outlast slow start's losses)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import scaled

from mrfq.analysis import allocations as al
from mrfq.analysis.tcp_models import mathis, padhye, sawtooth_utilisation
from mrfq.flows.errors import MrfqError

_spec = importlib.util.spec_from_file_location("tcp_checks", Path(__file__).resolve().parents[1] / "scripts" / "tcp_checks.py")
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)
random_loss, bottleneck, rtt_bias, multi_resource, COSTS = (checks.random_loss, checks.bottleneck, checks.rtt_bias,
                                                            checks.multi_resource, checks.COSTS)


@pytest.mark.nojit
def test_closed_forms_by_hand():
    # Mathis: sqrt(3/2) / (RTT sqrt(p)); p = 0.01, RTT = 10: 1.2247
    assert math.isclose(mathis(0.01, 10.0), math.sqrt(1.5) / (10.0 * 0.1))
    # Padhye eq. (33), p = 0.01, RTT = 10, T0 = 20: 1 / (10 sqrt(0.02/3) + 20 * 3 sqrt(0.03/8) * 0.01 * 1.0032)
    x = 10.0 * math.sqrt(0.02 / 3.0) + 20.0 * 3.0 * math.sqrt(0.03 / 8.0) * 0.01 * (1.0 + 32e-4)
    assert math.isclose(padhye(0.01, 10.0, 20.0), 1.0 / x)
    assert padhye(0.01, 10.0, 20.0, w_max=5.0) == 0.5  # the receiver's window binds
    # the sawtooth: b = 1 keeps the link busy; b = 0.1: (3/4) 1.21 / (0.9 + 0.21)
    assert sawtooth_utilisation(100, 100) == 1.0
    assert math.isclose(sawtooth_utilisation(10, 100), 0.75 * 1.21 / 1.11)
    with pytest.raises(MrfqError, match="p = 0"):
        mathis(0.0, 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.001, 0.003, 0.01])
def test_reno_goodput_under_random_loss_matches_mathis_and_padhye(p):
    g, _, m, pd = random_loss(p, duration=scaled(2e5, 1e5))
    assert abs(g / pd - 1.0) < 0.10
    if p < 0.01:  # where timeouts are negligible
        assert abs(g / m - 1.0) < 0.10


@pytest.mark.slow
def test_a_bdp_buffer_keeps_the_link_busy_and_a_tenth_follows_the_sawtooth():
    u, _ = bottleneck(100, duration=scaled(1e6, 5e5))
    assert u >= 0.97
    u, pred = bottleneck(10, duration=scaled(1e6, 5e5))
    assert abs(u - pred) < 0.02


@pytest.mark.slow
def test_fifo_favours_the_short_rtt_and_fair_queueing_evens_it():
    d = scaled(5e5, 2.5e5)
    (short, long), _ = rtt_bias("fifo", {"shared_buffer": 100}, "unbounded", duration=d)
    assert short > 1.8 * long
    for sched in ("fq-single", "drr"):
        (short, long), u = rtt_bias(sched, {}, 100, duration=d)
        assert abs(short / long - 1.0) < 0.1 and u > 0.99


@pytest.mark.slow
def test_tcp_keeps_mr3_at_drf_and_bmf_wfq_near_bmf():
    A = np.array(COSTS)
    g, _, w = multi_resource("mr3", 60, duration=scaled(2e5, 1e5))
    assert np.allclose(g, al.drf(A).phi, rtol=0.05)
    g, _, w = multi_resource("bmf-wfq", 60, duration=scaled(2e5, 1e5))
    assert np.allclose(g, al.bmf(A).phi, rtol=0.08)
    assert np.allclose(w, al.bmf(A).phi, rtol=0.01)  # (fixed windows: BMF)


@pytest.mark.slow
def test_tcp_mix_scorecard_mr3_gives_drf_and_protects_the_voip_flow():
    from mrfq.analysis.scorecard import format_scorecard, scorecard
    from mrfq.flows.scenario import load_preset

    sc = load_preset("tcp-mix").replace(**{"run.duration": scaled(2e5, 8e4)})
    res = scorecard(sc, ["mr3", "fifo"])
    rows = {(r["scheduler"], r["flow"]): r for r in res.rows}
    for f in ("reno-cpu", "reno-link", "cubic-link"):
        assert abs(rows["mr3", f]["goodput_over_share"] - 1.0) < 0.01
        assert rows["mr3", f]["source"].startswith("tcp-")
    assert rows["mr3", "voip"]["p99"] < 10.0 < rows["fifo", "voip"]["p99"]  # ms: MR3 isolates it, FIFO does not
    text = format_scorecard(res)
    assert "tcp flow" in text and "good/sh" in text
