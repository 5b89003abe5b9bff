"""The benchmark's statistics and workload construction (router.bench); no timing is asserted."""

from __future__ import annotations

import math

import pytest

from router import bench


@pytest.mark.nojit
def test_spread_of_pair_ratios():
    sp = bench._spread([0.5, 0.7, 0.6, 0.9, 0.4])
    assert sp["ratio"] == 0.6
    assert (sp["ratio_low"], sp["ratio_high"]) == (0.4, 0.9)
    # inclusive quartiles of 0.4, 0.5, 0.6, 0.7, 0.9
    assert sp["ratio_q1"] == pytest.approx(0.5) and sp["ratio_q3"] == pytest.approx(0.7)
    one = bench._spread([0.8])
    assert one["ratio"] == one["ratio_low"] == one["ratio_high"] == one["ratio_q1"] == one["ratio_q3"] == 0.8


@pytest.mark.nojit
def test_rtt_for_littles_law():
    # mean 60 packets, window 30: E[ceil(s/30)] = 1 / (1 - (59/60)^30); lambda L = 3 * 0.8 / 2.2
    rounds = 1 / (1 - (59 / 60) ** 30) - 1
    lam = 3 * 0.8 / 2.2 / 60
    assert bench.rtt_for(100_000) == pytest.approx(100_000 / (lam * rounds), rel=1e-12)
    # doubling the target doubles the rtt
    assert bench.rtt_for(200_000) == pytest.approx(2 * bench.rtt_for(100_000), rel=1e-12)


@pytest.mark.nojit
def test_workloads_and_scenarios():
    names = [w.name for w in bench.WORKLOADS]
    assert len(names) == len(set(names))
    big = {w.flows for w in bench.WORKLOADS if w.mode == "static" and w.isolated}
    assert big == {100_000, 1_000_000}
    w = next(w for w in bench.WORKLOADS if w.mode == "rtt")
    assert w.c_sched == ""  # mrfq only: the yardstick has no rtt
    sc = bench.scenario_for(w, 1000)
    assert sc.router.rtt == pytest.approx(bench.rtt_for(w.flows))
    assert sc.run.duration == pytest.approx(6 * sc.router.rtt) and sc.run.warmup == pytest.approx(2 * sc.router.rtt)
    assert bench.scenario_for(bench.WORKLOADS[4], 1000).n_static == 30


@pytest.mark.nojit
def test_log_flows_table():
    rows = [{"workload": "3 static, drfq", "flows": 3, "mrfq_msvc_per_cpu_s": 50.0},
            {"workload": "dynamic rho=0.8, drfq", "flows": None, "mrfq_msvc_per_cpu_s": 40.0},
            {"workload": "300 static, drfq", "flows": 300, "mrfq_msvc_per_cpu_s": 25.0}]
    t = bench.log_flows_table(rows)
    assert [f for f, _, _ in t] == [3, 300]
    assert t[1][1] == pytest.approx(40.0) and t[1][2] == pytest.approx(40.0 / math.log(300))


def test_run_pairs_without_c(tmp_path):
    row = bench.run_pairs(bench.WORKLOADS[0], 5000, 2, None)
    assert row["pairs"] == 2 and row["ratio"] is None and row["c_msvc_per_cpu_s"] is None
    assert row["services"] >= 5000 and row["mrfq_msvc_per_cpu_s"] > 0


@pytest.mark.nojit
def test_own_rss_is_the_childs_own():
    """A child exec'd from this (large) process inherits its RSS high-water mark on Linux; one
    forked by the small shell of own_rss does not."""
    import subprocess
    import sys

    import numpy as np

    ballast = np.ones(200 * 2**20 // 8)  # 200 MiB resident in this process
    code = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    kb = int(subprocess.run(bench.own_rss([sys.executable, "-c", code]), capture_output=True, text=True,
                            check=True).stdout)
    assert ballast.sum() > 0
    assert kb < 100 * 1024  # a bare interpreter: tens of MiB, not the 200 MiB ballast
