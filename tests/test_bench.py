"""The benchmark's statistics and workload construction (router.bench); no timing is asserted."""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import numpy as np
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
    # `yardstick -s sfq -m dynamic -n 2e7` (router/yardstick.c) printed sim_time=9.68111e+06 flows_arrived=503
    assert sum(x <= 9.68111e6 for x in t) == 503
    assert bench.c_dynamic_arrivals(20_000_000) == (t, k, n)


def test_dynamic_rows_run_the_yardsticks_workload():
    """On the C's arrivals mrfq holds the flows the C holds.  `yardstick -s drfq|sfq -m dynamic -n 2e6
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


# ---- the C yardstick (router/yardstick.c, built by bench.build_c) -----------------------------------

#: the C program the bench timed against before mrfq shipped its own, where it was: next to the checkout
#: the checkout holding these tests (mrfq may be installed from a wheel, elsewhere)
REPO = Path(__file__).resolve().parent.parent
SHARED_C = REPO.parent / "shared" / "bench" / "limit" / "mrfq_ref.c"
needs_cc = pytest.mark.skipif(bench.c_compiler() is None, reason="no C compiler (gcc or cc on PATH, or $CC)")
needs_shared = pytest.mark.skipif(not SHARED_C.is_file(), reason=f"{SHARED_C} absent")

FNV_BASIS, FNV_PRIME, M64 = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1
#: the bench's dynamic workload, as CSide passes it
C_DYNAMIC = ["-S", str(bench.C_SEED), "-L", str(bench.C_MEAN_PACKETS), "-r", str(bench.C_LOAD),
             "-W", str(bench.C_WINDOW)]


def _c_run(binary, *args):
    """The summary line's key=value pairs, and the lines after it."""
    out = subprocess.run([str(binary), *map(str, args)], check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    return dict(re.findall(r"(\w+)=([^\s]+)", lines[0])), lines[1:]


def _c_args(w: bench.Workload, services: int) -> list[str]:
    return ["-s", w.c_sched, "-m", w.mode, "-n", str(services)] + (["-F", str(w.flows)] if w.mode == "static"
                                                                   else C_DYNAMIC)


def _fnv(h: int, word: int) -> int:
    for i in range(8):
        h = ((h ^ ((word >> (8 * i)) & 0xFF)) * FNV_PRIME) & M64
    return h


@pytest.mark.nojit
def test_the_yardstick_ships_in_the_package():
    import tomllib

    assert bench.YARDSTICK == Path(bench.__file__).with_name("yardstick.c") and bench.YARDSTICK.is_file()
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "yardstick.c" in data["mrfq.router"]
    text = bench.YARDSTICK.read_text()
    # the recording is a compile-time switch of the shipped file, not a patch to another one
    assert "#ifdef MRFQ_RECORD_DELAYS" in text and "#ifdef MRFQ_TRACE" in text
    assert not list(REPO.glob("router/*.patch"))
    assert not list(bench.YARDSTICK.parent.glob("*.patch"))


@needs_cc
def test_yardstick_builds_once_per_source_and_flags(tmp_path):
    plain, rec, tr = bench.build_c(bench.YARDSTICK), bench.build_c(bench.YARDSTICK, delays=True), \
        bench.build_c(bench.YARDSTICK, trace=True)
    assert len({plain, rec, tr}) == 3 and all(p.is_file() for p in (plain, rec, tr))
    assert bench.build_c(bench.YARDSTICK) == plain  # reused
    copy = tmp_path / "yardstick.c"
    copy.write_text(bench.YARDSTICK.read_text() + "\n/* changed */\n")
    assert bench.build_c(copy) not in (plain, None)  # another source, another binary
    assert bench.build_c(tmp_path / "absent.c") is None
    broken = tmp_path / "broken.c"
    broken.write_text("int main(void) { return }\n")
    with pytest.raises(subprocess.CalledProcessError):
        bench.build_c(broken)


def _engine_services(r) -> list[tuple[float, float, int, int]]:
    """mrfq's services completed by the end of the run, as (start, end, resource, flow), sorted; flows
    numbered by arrival, as the yardstick's -T numbers them."""
    number = ({int(u): i for i, u in enumerate(r.arrivals.flow)} if r.arrivals is not None and len(r.arrivals.flow)
              else None)
    tr = r.trace
    return sorted((float(a), float(b), int(j), number[int(u)] if number else int(u))
                  for a, b, j, u in zip(tr.start, tr.end, tr.resource, tr.flow) if b <= r.t_end)


def _c_services(binary, args, path) -> tuple[dict, list[str], list[tuple[float, float, int, int]]]:
    kv, rest = _c_run(binary, *args, "-T", path)
    rows = [(float.fromhex(a), float.fromhex(b), int(j), int(u)) for a, b, j, u in (x.split() for x in open(path))]
    return kv, rest, sorted(rows)


@needs_cc
def test_yardstick_serves_the_packets_mrfq_serves(tmp_path):
    """The shipped yardstick against mrfq's engine on the bench's own workloads, the C run for exactly
    as many services as mrfq's (mrfq ends at an instant).  The static drfq rows: every service the same
    (start, end, resource, flow), bit for bit.  The two break ties differently (the C: equal tags by
    enqueue number, each resource restarted as soon as its service ends; mrfq: by flow id, the
    instant's starts after all its completions, docs/schedulers.md), so from the first such tie on
    (service 99 of 3 static sfq flows, 18,235 and 20,965 of the dynamic rows) single services
    differ; the work does not: as many services per resource, in the same time to 1e-5, every flow
    within a packet of the other, the same flows arriving and in the system."""
    from mrfq.router.run import simulate

    c = bench.build_c(bench.YARDSTICK, trace=True)
    for w, n in ((bench.WORKLOADS[0], 20_000), (bench.WORKLOADS[4], 20_000)):
        assert w.mode == "static" and w.c_sched == "drfq"
        r = simulate(bench.scenario_for(w, n), trace=n + 1000)
        kv, _, svc = _c_services(c, _c_args(w, r.services), tmp_path / "svc.txt")
        assert int(kv["services"]) == r.services == len(svc) >= n
        assert svc == _engine_services(r)
    for w, n in ((bench.WORKLOADS[1], 200_000), (bench.WORKLOADS[2], 200_000), (bench.WORKLOADS[3], 200_000)):
        r = simulate(bench.scenario_for(w, n), trace=n + 1000)
        kv, rest, svc = _c_services(c, _c_args(w, r.services), tmp_path / "svc.txt")
        mine = _engine_services(r)
        assert int(kv["services"]) == r.services == len(svc) == len(mine)
        assert max(e for _, e, _, _ in svc) == pytest.approx(r.t_end, rel=1e-5)
        for j in range(2):
            assert sum(x[2] == j for x in svc) == sum(x[2] == j for x in mine) == r.resources[j].services
        left_c = {u: sum(1 for x in svc if x[2] == 1 and x[3] == u) for u in {x[3] for x in svc}}
        left_m = {u: sum(1 for x in mine if x[2] == 1 and x[3] == u) for u in {x[3] for x in mine}}
        assert left_c.keys() == left_m.keys() and all(abs(left_c[u] - left_m[u]) <= 1 for u in left_c)
        if w.mode == "dynamic":
            dyn = dict(re.findall(r"(\w+)=([^\s]+)", rest[0]))
            assert int(dyn["flows_arrived"]) == r.flows_started
            assert float(dyn["mean_active"]) == pytest.approx(sum(k.mean_flows for k in r.classes), abs=2e-3)


#: option lists on which the two C programs must agree to the bit (tests/test_bench.py)
C_COMBOS = [["-s", s, "-q", q, *m] for s in ("drfq", "sfq") for q in ("flow", "pkt")
            for m in (["-m", "static", "-F", "3"], ["-m", "static", "-F", "30", "-w", "1,2,3"],
                      ["-m", "dynamic", "-L", "200"])] + [
    ["-s", "drfq", "-q", "naive", "-e", "heap", "-F", "300", "-W", "7"],
    ["-s", "sfq", "-e", "heap", "-m", "dynamic", "-L", "50", "-W", "4", "-r", "0.95"],
    ["-s", "drfq", "-C", "1,0.2,0.5/0.2,1,0.3/1,1,1", "-F", "7"],
    ["-s", "sfq", "-C", "1/0.5/0.25", "-F", "5", "-q", "pkt"],
    ["-s", "drfq", "-m", "dynamic", "-L", "100", "-C", "1,0.2,0.5/0.2,1,0.3/1,1,1", "-e", "heap"],
]
#: the summary's keys that describe the run (not its speed, memory or the program's name)
TRAJECTORY = ("sched", "queue", "events", "mode", "R", "K", "W", "services", "sim_time", "queued_now", "sig", "trace")


@needs_cc
@needs_shared
def test_yardstick_and_the_shared_c_program_run_the_same_trajectories():
    """mrfq's yardstick and the C program next to the checkout (../shared/bench/limit/mrfq_ref.c),
    both built with -DMRFQ_TRACE: the same services in the same order (the per-service hash
    ``trace``), the same end state (``sig``) and the same dynamic-mode lines, whatever the scheduler,
    workload, queue structure, event scheme or number of resources."""
    ours, theirs = bench.build_c(bench.YARDSTICK, trace=True), bench.build_c(SHARED_C, trace=True)
    for args in C_COMBOS:
        a, rest_a = _c_run(ours, *args, "-n", "200000")
        b, rest_b = _c_run(theirs, *args, "-n", "200000")
        assert {k: a.get(k) for k in TRAJECTORY} == {k: b.get(k) for k in TRAJECTORY}, args
        assert rest_a == rest_b, args
        assert a["services"] == "200000" and len(a["trace"]) == 16


@needs_cc
def test_yardstick_variants_run_the_same_trajectory():
    """Every queue structure and event scheme of the shipped yardstick serves the same services in the
    same order (the per-service hash), also without the shared program to compare with."""
    c = bench.build_c(bench.YARDSTICK, trace=True)
    for base in (["-s", "drfq", "-F", "30", "-w", "1,2,3"], ["-s", "sfq", "-m", "dynamic", "-L", "200"]):
        seen = {tuple(_c_run(c, *base, "-q", q, "-e", e, "-n", "100000")[0][k] for k in ("sim_time", "sig", "trace"))
                for q in ("flow", "pkt", "naive") for e in ("scan", "heap")}
        assert len(seen) == 1


def _histogram_hash(d, rows: list[int]) -> int:
    """The yardstick's ``rec_hist`` computed from mrfq's histograms: FNV-1a over every non-empty
    (row, histogram, bucket code, count), ``rows[i]`` mrfq's row of the C's row i."""
    h = FNV_BASIS
    for i, r in enumerate(rows):
        for j in range(d.hist.shape[1]):
            for b in np.nonzero(d.hist[r, j])[0]:
                for word in (i, j, d.base + int(b), int(d.hist[r, j, b])):
                    h = _fnv(h, word)
    return h


@needs_cc
def test_yardstick_recording_delays_records_mrfqs_delays():
    """``-DMRFQ_RECORD_DELAYS`` (``--c-delays``): the same packets as the plain build (its ``sig``),
    and, where both serve the same packets (static drfq), mrfq's very delays: as many sojourns, the
    same largest one, the same count in every bucket of every wait and sojourn histogram (rows per
    static flow up to 256, else per [[flow]] table: the classes), the same mean.  On the dynamic row
    (ties broken otherwise) one sojourn per departure and mrfq's mean to 1e-3."""
    from mrfq.router.run import simulate

    plain, rec = bench.build_c(bench.YARDSTICK), bench.build_c(bench.YARDSTICK, delays=True)
    for w, n in ((bench.WORKLOADS[0], 200_000), (bench.WORKLOADS[4], 200_000), (bench.WORKLOADS[5], 200_000)):
        r = simulate(bench.scenario_for(w, n))
        d = r.delays
        a, _ = _c_run(plain, *_c_args(w, r.services))
        b, _ = _c_run(rec, *_c_args(w, r.services))
        assert a["sig"] == b["sig"] and "rec_sojourns" not in a
        assert int(b["rec_sojourns"]) == int(d.dcnt.sum()) > 0
        assert float(b["rec_max"]) == float(d.dmax.max())
        assert float(b["rec_mean"]) == pytest.approx(float(d.dsum.sum() / d.dcnt.sum()), rel=1e-12)
        rows = [int(x) for x in d.flow_row] if d.per_flow else list(range(3))
        assert d.per_flow == (w.flows <= 256) and len(rows) == min(w.flows, 256 if d.per_flow else 3)
        assert int(b["rec_hist"], 16) == _histogram_hash(d, rows)
    w = bench.WORKLOADS[2]
    r = simulate(bench.scenario_for(w, 200_000))
    a, _ = _c_run(plain, *_c_args(w, r.services))
    b, _ = _c_run(rec, *_c_args(w, r.services))
    assert a["sig"] == b["sig"]
    # two resources: every departure was served twice, the packets still inside at most once
    assert 0 <= int(b["services"]) - 2 * int(b["rec_sojourns"]) <= 6 * bench.C_WINDOW
    mean = float(r.delays.dsum.sum() / r.delays.dcnt.sum())
    assert float(b["rec_mean"]) == pytest.approx(mean, rel=1e-3)


@needs_cc
def test_run_pairs_with_the_yardstick_recording_delays():
    src = bench.YARDSTICK
    row = bench.run_pairs(bench.WORKLOADS[0], 20_000, 2, bench.build_c(src),
                          binary_delays=bench.build_c(src, delays=True))
    assert row["c_msvc_per_cpu_s"] > 0 and row["ratio_low"] <= row["ratio"] <= row["ratio_high"]
    assert row["c_delays_msvc_per_cpu_s"] > 0 and row["c_on_off_low"] <= row["c_on_off"] <= row["c_on_off_high"]
    assert row["ratio_delays_low"] <= row["ratio_delays"] <= row["ratio_delays_high"]
    # like for like: the loop without recording against C; the delays alone against C+d
    assert row["ratio_off_low"] <= row["ratio_off"] <= row["ratio_off_high"]
    assert row["delays_only_msvc_per_cpu_s"] > 0
    assert row["ratio_delays_only_low"] <= row["ratio_delays_only"] <= row["ratio_delays_only_high"]
    text = bench._row_text(row)
    assert "its on/off" in text and f"off/C {row['ratio_off']:.2f}" in text
    assert f"delays only/C+d {row['ratio_delays_only']:.2f}" in text


BENCH_SMALL = ["--only", "3 static, drfq", "--services", "1000", "--reps", "1", "--no-extras"]


def test_bench_without_a_c_compiler_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing to run there
    monkeypatch.delenv("CC", raising=False)
    assert bench.c_compiler() is None
    assert bench.main(BENCH_SMALL + ["--c-delays"]) == 0
    out, err = capsys.readouterr()
    notes = [x for x in out.splitlines() if "C yardstick" in x and "skipped" in x]
    assert notes == ["C yardstick skipped: no C compiler found (gcc or cc on PATH, or $CC)"]
    assert "Traceback" not in out + err and "C+d" not in out
    assert bench.main(BENCH_SMALL + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["note"].startswith("C yardstick skipped: no C compiler")


@needs_cc
def test_bench_with_other_c_sources(tmp_path, capsys):
    """``--c-source``: one that does not compile is left out in one line; one without the recording
    times the plain program only, saying so; a program that is not a yardstick is a one-line error."""
    broken = tmp_path / "broken.c"
    broken.write_text("int main(void) { return }\n")
    assert bench.main(BENCH_SMALL + ["--c-source", str(broken)]) == 0
    out = capsys.readouterr().out
    assert f"C yardstick skipped: compiling {broken} failed (" in out and "Traceback" not in out
    no_rec = tmp_path / "no_rec.c"  # the same program without its recording
    no_rec.write_text(bench.YARDSTICK.read_text().replace("MRFQ_RECORD_DELAYS", "MRFQ_RECORD_NOTHING"))
    assert bench.main(BENCH_SMALL + ["--c-source", str(no_rec), "--c-delays"]) == 0
    out = capsys.readouterr().out
    assert f"C with the delays skipped: {no_rec} records no delays under -DMRFQ_RECORD_DELAYS" in out
    assert "its on/off" not in out and "C+d" not in out
    row = next(x for x in out.splitlines() if x.startswith("3 static, drfq"))
    assert row.split()[5] != "-"  # the plain C's rate
    other = tmp_path / "other.c"
    other.write_text("int main(void) { return 0; }\n")
    assert bench.main(BENCH_SMALL + ["--c-source", str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mrfq bench: error: --c-source: ") and "no summary line" in err and "\n" not in err


def test_the_tcp_row_interleaves_reno_and_fixed_windows(monkeypatch):
    """bench.time_tcp_pair: each loop run once first, then windows and Reno in turn per repetition,
    timed without the setup; CPU ns per service and Reno's rate over the windows' (the simulation
    is replaced by a recorder: nothing is compiled here)."""
    from mrfq.router import run as run_mod

    calls = []

    class Result:
        def __init__(self, ns, n):
            self.loop_cpu_seconds, self.loop_services = ns * n * 1e-9, n

    def fake(sc, timed_from=0, record_delays=True):
        calls.append((sc.name, sc.run.max_services, timed_from, record_delays,
                      {tuple(f.cost) for f in sc.flows}, len(sc.flows)))
        return Result(100.0 if sc.name == "bench-tcp" else 65.0, sc.run.max_services)

    monkeypatch.setattr(run_mod, "simulate", fake)
    out = bench.time_tcp_pair(50_000, 3, n=6)
    assert [c[0] for c in calls] == ["bench-windows", "bench-tcp"] * 4
    assert [c[1] for c in calls[:2]] == [10_000, 10_000] and all(c[1] == 50_000 and c[2] == 1 for c in calls[2:])
    assert all(c[3] for c in calls) and all(c[4] == set(bench.VECTORS) and c[5] == 6 for c in calls)
    assert out["ratio"] == pytest.approx(0.65) and out["ratio_low"] == out["ratio_high"] == pytest.approx(0.65)
    assert out["reno_ns_per_service"] == pytest.approx(100.0) and out["windows_ns_per_service"] == pytest.approx(65.0)
    assert (out["flows"], out["pairs"], out["services"]) == (6, 3, 50_000)
    reno = bench.tcp_scenario(6, 1000, True)
    assert all(f.transport is not None and f.transport.cc == "reno" and f.transport.rtt == bench.TCP_RTT
               for f in reno.flows)
    assert bench.tcp_scenario(6, 1000, False).router.rtt == bench.TCP_RTT
