"""The benchmark's statistics and workload construction (router.bench); no timing is asserted."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mrfq.router import bench


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
    dyn = bench.scenario_for(bench.WORKLOADS[2], 100_000)
    assert dyn.arrival_trace is not None and dyn.router.window == bench.C_WINDOW
    assert [tuple(c.cost) for c in dyn.classes] == list(bench.VECTORS)
    assert int(dyn.arrival_trace.sizes.sum()) >= 100_000


@pytest.mark.nojit
def test_yardstick_generator_reference_vectors():
    """xoshiro256** from state (1, 2, 3, 4) and splitmix64 from 0: the published test vectors."""
    x = bench.Xoshiro256ss(0)
    x.s = [1, 2, 3, 4]
    assert [x.next() for _ in range(6)] == [11520, 0, 1509978240, 1215971899390074240, 1216172134540287360,
                                            607988272756665600]
    assert bench._splitmix64(0) == (0x9E3779B97F4A7C15, 0xE220A8397B1DCDAF)


@pytest.mark.nojit
def test_c_dynamic_arrivals_are_the_yardsticks():
    t, k, n = bench.c_dynamic_arrivals(20_000_000)
    assert sum(n) >= 20_000_000 > sum(n[:-1])
    assert all(b > a for a, b in zip(t, t[1:])) and set(k) == {0, 1, 2} and min(n) >= 1
    assert (t[0], k[0], n[0]) == (22252.26642448314, 1, 17071)
    # `mrfq_ref -s sfq -m dynamic -n 2e7` printed sim_time=9.68111e+06 flows_arrived=503
    assert sum(x <= 9.68111e6 for x in t) == 503
    assert bench.c_dynamic_arrivals(20_000_000) == (t, k, n)


def test_dynamic_rows_run_the_yardsticks_workload():
    """On the C's arrivals mrfq holds the flows the C holds.  `mrfq_ref -s drfq|sfq -m dynamic -n 2e6
    -S 1 -L 20000 -r 0.8 -W 30` printed sim_time=1.05793e+06 flows_arrived=42 flows_done=41, and
    mean_active=2.325 max_active=6 (drfq), mean_active=2.252 max_active=6 (sfq)."""
    from mrfq.router.run import simulate

    for w, mean in ((bench.WORKLOADS[2], 2.325), (bench.WORKLOADS[3], 2.252)):
        assert w.mode == "dynamic"
        r = simulate(bench.scenario_for(w, 2_000_000))
        assert r.services == 2_000_000 and f"{r.t_end:.5e}" == "1.05793e+06"
        assert r.flows_started == 42 and r.max_active_flows == 6
        assert round(sum(c.mean_flows for c in r.classes), 3) == mean


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
    # the same engine with the delays off, interleaved: its rate and the ratio per repetition
    assert row["off_msvc_per_cpu_s"] > 0 and row["on_off_low"] <= row["on_off"] <= row["on_off_high"]
    assert row["delay_kb"] > 0
    assert f"{row['on_off']:5.2f} [" in bench._row_text(row)


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


def _counted(n: int, scheduler: str = "drfq", services: int = 20_000):
    from mrfq import flows

    return flows.from_dict({"resources": ["cpu", "link"], "router": {"window": 30, "scheduler": scheduler},
                            "run": {"duration": 1e10, "max_services": services},
                            "flow": [{"name": "f", "count": n, "cost": [1, 0.2]},
                                     {"name": "g", "count": n, "cost": [0.2, 1]}]})


@pytest.mark.nojit
def test_timed_from_times_the_loop_after_the_setup_and_changes_nothing_else():
    """``timed_from`` ends the first loop call early and times the rest: the run is the same bit for
    bit (the loop resumes where it stopped), and the timed services are those after the split."""
    import numpy as np

    from mrfq.router.run import simulate

    sc = _counted(40, "bmf-wfq", 5_000)
    plain = simulate(sc)
    assert plain.loop_services == plain.services and 0.0 < plain.loop_cpu_seconds <= plain.cpu_seconds
    for split in (1, 1234, 4_999):
        r = simulate(sc, timed_from=split)
        assert (r.services, r.t_end) == (plain.services, plain.t_end)
        assert np.array_equal(r.flows.packets, plain.flows.packets)
        assert np.array_equal(r.flows.rate, plain.flows.rate)
        # the first call stops at the first instant with at least `split` services (an instant
        # may complete one service per resource)
        assert plain.services - split - 1 <= r.loop_services <= plain.services - split
        assert 0.0 < r.loop_cpu_seconds <= r.cpu_seconds
    assert simulate(sc, timed_from=5_000).loop_services == 0  # nothing after the split
    with pytest.raises(Exception, match="timed_from"):
        simulate(sc, timed_from=-1)


@pytest.mark.nojit
def test_state_bytes_per_static_flow():
    """The engine's arrays per static flow (drfq, J = 2, window 30: a 32-slot ring): the 456-byte
    row of the README's layout table (ints 64, floats 48, queue records 32, tags 256, heaps 32,
    free list 8, admissions 8, scheduler 8), the static completion time (8) and the two flow
    id arrays of Traffic (16): 480 bytes; plus, for the delays, each packet record's J + 1 = 3 times
    (its arrival, then its join time or wait at each resource: 32 slots x 24 bytes), the row's
    histogram offset (8, and 8 in Traffic.hist_row), the open-loop arrival and drop counts (16) and,
    for the relative fairness bound, the flow's dominant resource (8), and its packet ring's place
    (first record and mask, 16: an open-loop flow's ring grows, router.state.grow_ring): 1304 bytes.  Both runs have more than router.delays.PER_FLOW_MAX static flows, so their
    histograms are per [[flow]] table, the same size.  The C yardstick holds 704 (its 192-byte
    flow, 32 ring entries of 16) and records no delays."""
    from mrfq.router.run import simulate

    small, large = (simulate(_counted(n, services=100)).state_bytes for n in (205, 705))
    assert (large - small) / 1000 == 480 + 32 * 24 + 8 + 8 + 16 + 8 + 16


def _yardstick_source():
    src = Path(bench.__file__).resolve().parent.parent.parent / "shared" / "bench" / "limit" / "mrfq_ref.c"
    if not src.is_file() or shutil.which("gcc") is None or shutil.which("patch") is None:
        pytest.skip("needs ../shared/bench/limit/mrfq_ref.c, gcc and patch")
    return src


def _c_run(binary, *args):
    out = subprocess.run([str(binary), *args], check=True, capture_output=True, text=True).stdout
    return dict(re.findall(r"(\w+)=([^\s]+)", out.splitlines()[0]))


def test_yardstick_patched_to_record_delays_serves_the_same_packets_and_measures_mrfqs_sojourns():
    """``--c-delays``: the patched yardstick serves exactly the packets the plain one does (its
    ``sig``), records one sojourn per departure, and its mean sojourn is mrfq's on the same workload."""
    from mrfq.router.run import simulate

    src = _yardstick_source()
    plain, rec = bench.build_c(src), bench.build_c(src, delays=True)
    assert plain != rec
    for args in (["-s", "drfq", "-m", "static", "-n", "200000", "-F", "3"],
                 ["-s", "sfq", "-m", "dynamic", "-n", "200000", "-S", str(bench.C_SEED), "-L", str(bench.C_MEAN_PACKETS),
                  "-r", str(bench.C_LOAD), "-W", str(bench.C_WINDOW)]):
        a, b = _c_run(plain, *args), _c_run(rec, *args)
        assert a["sig"] == b["sig"] and "rec_sojourns" not in a
        # two resources: every departure was served twice, the packets still inside at most once
        # (a window of 30 per flow in the router: 3 flows, or at most 6 in the dynamic run)
        gap = int(b["services"]) - 2 * int(b["rec_sojourns"])
        assert 0 <= gap <= 6 * bench.C_WINDOW
    r = simulate(bench.scenario_for(bench.WORKLOADS[0], 200_000))
    mean = float(r.delays.dsum.sum() / r.delays.dcnt.sum())
    c = _c_run(rec, "-s", "drfq", "-m", "static", "-n", "200000", "-F", "3")
    assert float(c["rec_mean"]) == pytest.approx(mean, rel=2e-3)

def test_yardstick_patch_that_does_not_apply(tmp_path, capsys):
    """A yardstick the patch does not fit: the bench says so in one line and times the plain binary
    only; a program that is not the yardstick at all is a one-line error."""
    src = _yardstick_source()
    other = tmp_path / "mrfq_ref.c"
    other.write_text(src.read_text().replace("inject(", "inject_packet("))  # the same program, renamed
    with pytest.raises(subprocess.CalledProcessError):
        bench.build_c(other, delays=True)
    assert bench.build_c(tmp_path / "absent.c", delays=True) is None
    args = ["--c-source", str(other), "--c-delays", "--only", "3 static, drfq", "--services", "1000", "--reps", "1",
            "--no-extras"]
    assert bench.main(args) == 0
    out = capsys.readouterr().out
    assert "C with the delays skipped: yardstick_delays.patch does not apply to" in out
    assert "its on/off" not in out and "C+d" not in out
    other.write_text("int main(void) { return 0; }\n")
    assert bench.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mrfq bench: error: --c-source: ") and "no summary line" in err and "\n" not in err


def test_run_pairs_with_the_yardstick_recording_delays():
    src = _yardstick_source()
    row = bench.run_pairs(bench.WORKLOADS[0], 20_000, 2, bench.build_c(src), binary_delays=bench.build_c(src, delays=True))
    assert row["c_delays_msvc_per_cpu_s"] > 0 and row["c_on_off_low"] <= row["c_on_off"] <= row["c_on_off_high"]
    assert row["ratio_delays_low"] <= row["ratio_delays"] <= row["ratio_delays_high"]
    assert "its on/off" in bench._row_text(row)
