"""Packet vs fluid: the control variate's arrival path, and packet gamma against the Markov model."""

import json

import numpy as np
import pytest

import flows
from analysis.batch_stats import ratio_ci
from analysis.fluid_path import arrival_path, fluid_path
from analysis.cli import main
from router.run import simulate
from tests.conftest import scaled


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
        r = simulate(sc, scheduler="fifo", seed=seed)
        times, classes, sizes = arrival_path(sc, seed, sc.run.duration)
        assert len(times) == r.flows_started
        assert [int((classes == k).sum()) for k in range(3)] == [c.arrived for c in r.classes]


def test_fluid_path_single_class_is_processor_sharing():
    # one class on one resource: fluid = M/M/1-PS; the path integral of x equals the work-conserving
    # backlog in flows, and served packets = packets that arrived minus those still present
    sc = flows.from_dict({"resources": ["link"], "run": {"duration": 5e4, "warmup": 0.0, "batches": 4},
                          "class": [{"cost": [1.0], "rate": 0.006, "mean_packets": 100}]})
    fp = fluid_path(sc, "drf", 3, batches=4)
    times, classes, sizes = arrival_path(sc, 3, 5e4)
    served = sum(fp["departed"][0])
    assert served <= sizes.sum() + 1e-6
    # utilisation of the link in the fluid model = served / T ~ offered load 0.6
    assert served / 5e4 == pytest.approx(0.6, rel=0.1)


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
        assert r["estimator"] == "control variate"
        assert abs(r["rel_error"]) < 0.01, r
        assert r["ci_raw"][0] < r["gamma_raw"] < r["ci_raw"][1]


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
