"""Packet vs fluid: the control variate's arrival path, and packet gamma against the Markov model."""

import json

import numpy as np
import pytest

from mrfq import flows
from mrfq.analysis.batch_stats import ratio_ci
from mrfq.analysis.fluid_path import arrival_path, fluid_path
from mrfq.analysis.cli import main
from mrfq.router.run import simulate
from conftest import scaled


def small(load=0.5, mean=400.0, flows_per_run=600.0, preset="br-unbalanced"):
    d = flows.to_dict(flows.load_preset(preset).with_load(load))
    for c in d["class"]:
        c["mean_packets"] = mean
    sc = flows.from_dict(d, name=preset)
    T = flows_per_run / sum(c.rate for c in sc.classes)
    return sc.replace(**{"run.duration": T, "run.warmup": 0.1 * T, "run.batches": 10})


def test_arrival_path_is_exactly_the_engines():
    sc = small()
    for seed in (1, 5):
        r = simulate(sc, scheduler="fifo", seed=seed, trace=10**6)
        times, classes, sizes = arrival_path(sc, seed, sc.run.duration)
        assert len(times) == r.flows_started
        assert r.arrivals.time.tolist() == times.tolist()
        assert r.arrivals.klass.tolist() == classes.tolist()
        assert r.arrivals.packets.tolist() == sizes.tolist()


def test_fluid_path_single_class_is_processor_sharing():
    # one class on one resource at unit speed: the fluid model is work-conserving, so the packets it
    # served by T are the packets that arrived minus the workload left at T (Lindley's recursion on
    # the same arrival path): an independent, exact oracle
    sc = flows.from_dict({"resources": ["link"], "run": {"duration": 5e4, "warmup": 0.0, "batches": 4},
                          "class": [{"cost": [1.0], "rate": 0.006, "mean_packets": 100}]})
    fp = fluid_path(sc, "drf", 3, batches=4)
    times, classes, sizes = arrival_path(sc, 3, 5e4)
    work, t_prev = 0.0, 0.0
    for t, L in zip(times, sizes):
        work = max(0.0, work - (t - t_prev)) + L
        t_prev = t
    work = max(0.0, work - (5e4 - t_prev))
    served = sum(fp["departed"][0])
    assert served == pytest.approx(sizes.sum() - work, rel=1e-9)


@pytest.mark.parametrize("scheduler,objective", [("bmf-wfq", "bmf"), ("drfq", "drf"), ("pf-sfq", "pf")])
def test_packet_path_tracks_fluid_path(scheduler, objective):
    """With long flows (mean 400 packets, window 30) the packet system fed a given arrival path
    gives nearly the fluid model's gamma on the same path ([BR] Fig. 3)."""
    sc = small(load=0.6)
    r = simulate(sc, scheduler=scheduler, seed=2)
    fp = fluid_path(sc, objective, 2, batches=10)
    for k in range(3):
        gp = ratio_ci(r.batches["departed"][k], r.batches["area"][k])[0]
        gf = ratio_ci(np.array(fp["departed"][k]), np.array(fp["area"][k]))[0]
        assert gp == pytest.approx(gf, rel=0.05), (k, gp, gf)


@pytest.mark.slow
def test_compare_packet_gamma_matches_markov(tmp_path, capsys):
    """The README's comparison at reduced size: BMF-WFQ and DRFQ on br-unbalanced at 0.3 and 0.6,
    packet gamma (control variate) within 1 % of the exact Markov gamma for every class."""
    db = tmp_path / "r.sqlite"
    code = main(["compare", "--preset", "br-unbalanced", "--quick", "--loads", "0.3,0.6", "--schedulers",
                 "bmf-wfq,drfq", "--flows", str(int(scaled(400, 150))), "--results", str(db), "--json",
                 "--workers", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert len(rows) == 2 * 2 * 3
    for r in rows:
        assert r["estimator"] == "3 control variates"  # the DRF, PF and BMF fluid paths
        assert abs(r["rel_error"]) < 0.01, r
        # the plain estimate against the Markov value (not against its own interval): within
        # four of its half-widths (|z| < 4 for 12 rows fails by chance with probability ~1e-3)
        half_raw = (r["ci_raw"][1] - r["ci_raw"][0]) / 2
        assert abs(r["gamma_raw"] - r["gamma_fluid"]) < 4 * half_raw, r


def test_compare_cli_bad_inputs(capsys, tmp_path):
    for argv, needle in [
        (["compare", "--preset", "br-unbalanced", "--loads", "0.5:1.2:0.1"], "--loads"),
        (["compare", "--preset", "br-unbalanced", "--schedulers", "drfq,nope"], "nope"),
        (["compare", "--preset", "oracle-rates"], "compare needs"),
        (["compare", "--preset", "br-unbalanced", "--replications", "0"], "--replications"),
        (["compare", "--preset", "br-unbalanced", "--plot", str(tmp_path / "no" / "f.png")], "--plot"),
        (["results", str(tmp_path / "none.sqlite")], "no such results file"),
    ]:
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 2 and needle in err and err.count("\n") == 1, (argv, err)


def _payload(departed, area, cv=None):
    K = 1
    return {"departed": [list(departed)], "area": [list(area)], "completed": [5] * K, "cv": cv}


@pytest.mark.nojit
def test_pooled_multiple_controls_by_hand():
    """Packet batch sums that are an exact linear combination of two controls: the regression
    recovers beta = (0.3, 0.7), the residuals vanish (zero-width interval) and the estimate is
    gamma_packet - 0.3 (g1 - m1) - 0.7 (g2 - m2), the controls' offsets from their known means."""
    from mrfq.analysis.compare import pooled

    rng = np.random.default_rng(3)
    B = 12
    ones = np.ones(B)
    f1 = rng.normal(1.0, 0.1, B)
    f2 = rng.normal(2.0, 0.3, B)
    y = 0.5 + 0.3 * (f1 - f1.mean()) + 0.7 * (f2 - f2.mean())
    payloads = [_payload(y[:6], ones[:6]), _payload(y[6:], ones[6:])]
    c1 = [{"departed": [list(f1[:6])], "area": [[1.0] * 6]}, {"departed": [list(f1[6:])], "area": [[1.0] * 6]}]
    c2 = [{"departed": [list(f2[:6])], "area": [[1.0] * 6]}, {"departed": [list(f2[6:])], "area": [[1.0] * 6]}]
    m1, m2 = {"gamma": [0.95], "halfwidth": None}, {"gamma": [2.1], "halfwidth": None}
    st = pooled(payloads, 0, 0.95, None, [(m1, c1), (m2, c2)])
    assert st["estimator"] == "2 control variates"
    assert st["beta"] == pytest.approx([0.3, 0.7], rel=1e-9)
    want = 0.5 - 0.3 * (f1.mean() - 0.95) - 0.7 * (f2.mean() - 2.1)
    assert st["gamma"] == pytest.approx(want, rel=1e-12)
    assert st["packet_halfwidth"] == pytest.approx(0.0, abs=1e-12)
    assert st["raw"] == pytest.approx(0.5, rel=1e-12)
    # a Markov value from a simulation adds |beta_i| times its half-width
    m2s = {"gamma": [2.1], "halfwidth": [0.01]}
    st = pooled(payloads, 0, 0.95, None, [(m1, c1), (m2s, c2)])
    assert st["ci"][1] - st["gamma"] == pytest.approx(0.7 * 0.01, rel=1e-9)


@pytest.mark.nojit
def test_pooled_controls_that_do_not_track_leave_the_estimate_consistent():
    """Controls independent of the packet batches: beta ~ 0, the estimate stays near the raw
    ratio and the interval is no narrower than the raw one by more than the t-quantile change."""
    from mrfq.analysis.compare import pooled

    rng = np.random.default_rng(11)
    B = 40
    y = rng.normal(1.0, 0.05, B)
    x = np.ones(B)
    f = rng.normal(1.0, 0.05, B)
    payloads = [_payload(y, x)]
    st = pooled(payloads, 0, 0.95, None, [({"gamma": [1.0]}, [{"departed": [list(f)], "area": [list(x)]}])])
    raw_h = (st["raw_ci"][1] - st["raw_ci"][0]) / 2
    h = (st["ci"][1] - st["ci"][0]) / 2
    assert abs(st["beta"][0]) < 0.5
    assert abs(st["gamma"] - st["raw"]) < raw_h
    assert 0.8 * raw_h < h < 1.2 * raw_h


@pytest.mark.nojit
def test_pooled_interval_covers_when_the_controls_are_far_off_their_means():
    """Two replications of 10 batches whose control is shifted per replication (as a short run
    near saturation is: its fluid gamma 10-100 % off the Markov value), the packet batches
    ``beta`` times the control plus noise: the estimate's error is mostly ``(beta_hat - beta)``
    times the shift, which ``s^2 / B`` alone leaves out (coverage about 75 % here); with the
    estimated-beta term the 95 % interval covers the truth 95 % of the time (exact for this
    normal linear model)."""
    from mrfq.analysis.compare import pooled

    rng = np.random.default_rng(2024)
    trials, hits, g_true, m_true, beta = 2000, 0, 0.5, 1.0, 0.9
    for _ in range(trials):
        pay, ctl = [], []
        for _r in range(2):
            f = m_true + rng.normal(0.0, 0.2) + rng.normal(0.0, 0.02, 10)
            y = g_true + beta * (f - m_true) + rng.normal(0.0, 0.01, 10)
            pay.append(_payload(y, np.ones(10)))
            ctl.append({"departed": [list(f)], "area": [[1.0] * 10]})
        st = pooled(pay, 0, 0.95, None, [({"gamma": [m_true]}, ctl)])
        hits += st["ci"][0] <= g_true <= st["ci"][1]
    assert 0.93 * trials <= hits <= 0.97 * trials, hits / trials


@pytest.mark.nojit
def test_plot_comparison_y_axis_holds_every_panels_points():
    """The panels share one y axis; a point above the first panel's data (drfq-dovetail's
    class 2 runs far above its DRF line) must not be clipped."""
    from mrfq.analysis.compare import plot_comparison

    def row(s, c, load, g, gf):
        return {"scheduler": s, "class": c, "load": load, "gamma_packet": g, "ci": [g - 0.01, g + 0.01],
                "gamma_fluid": gf}

    rows = [row("drfq", "c1", 0.2, 0.80, 0.80), row("drfq", "c1", 0.8, 0.20, 0.20),
            row("drfq-dovetail", "c1", 0.2, 0.95, 0.80), row("drfq-dovetail", "c1", 0.8, 0.59, 0.20)]
    fig = plot_comparison(rows)
    for ax in fig.axes:
        lo, hi = ax.get_ylim()
        assert lo == 0.0 and hi >= 0.96
