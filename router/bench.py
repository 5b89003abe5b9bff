"""Speed benchmark: the numba engine against the plain-C yardstick, on identical workloads.

``mrfq bench`` (or ``python scripts/bench.py``) runs each workload through
mrfq and through ``../shared/bench/limit/mrfq_ref.c`` (compiled here with
``gcc -O2``, the yardstick's own flags), and prints services per second by
process CPU time and by wall clock — the median of several repetitions after
one untimed warm-up run — and the ratio mrfq / C.  It also times the SimPy
reference model on a small workload, the first call with compilation (fresh
numba cache), and peak memory at two run lengths.  It prints figures; it never
fails on timing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import flows
from flows.errors import MrfqError

VECTORS = ((1.0, 0.2), (0.2, 1.0), (1.0, 1.0))


@dataclass(frozen=True)
class Workload:
    name: str
    scheduler: str  # mrfq name
    c_sched: str    # yardstick name
    mode: str       # static | dynamic
    flows: int = 3


WORKLOADS = [
    Workload("3 static, drfq", "drfq", "drfq", "static", 3),
    Workload("3 static, sfq (bmf-wfq)", "bmf-wfq", "sfq", "static", 3),
    Workload("dynamic rho=0.8, drfq", "drfq", "drfq", "dynamic"),
    Workload("dynamic rho=0.8, sfq (bmf-wfq)", "bmf-wfq", "sfq", "dynamic"),
    Workload("30 static, drfq", "drfq", "drfq", "static", 30),
    Workload("300 static, drfq", "drfq", "drfq", "static", 300),
    Workload("3000 static, drfq", "drfq", "drfq", "static", 3000),
    Workload("10000 static, drfq", "drfq", "drfq", "static", 10000),
]


def scenario_for(w: Workload, services: int) -> flows.Scenario:
    d: dict = {"name": w.name, "resources": ["cpu", "link"],
               "router": {"scheduler": w.scheduler, "window": 30},
               "run": {"duration": 1e300, "warmup": 0.0, "seed": 1, "max_services": int(services)}}
    if w.mode == "static":
        d["flow"] = [{"name": f"f{i}", "cost": list(VECTORS[i % 3])} for i in range(w.flows)]
    else:
        d["traffic"] = {"load": 0.8}
        d["class"] = [{"name": f"c{k}", "cost": list(v), "share": 1, "mean_packets": 20000}
                      for k, v in enumerate(VECTORS)]
    return flows.from_dict(d)


def run_mrfq(w: Workload, services: int, reps: int) -> dict:
    from router.run import simulate

    sc = scenario_for(w, services)
    simulate(sc.replace(**{"run.max_services": min(services, 100000)}))  # warm-up (compile, caches)
    cpu, wall, n = [], [], 0
    for _ in range(reps):
        r = simulate(sc)
        cpu.append(r.services / r.cpu_seconds / 1e6)
        wall.append(r.services / r.wall_seconds / 1e6)
        n = r.services
    return {"cpu": statistics.median(cpu), "wall": statistics.median(wall), "services": n}


def build_c(source: Path) -> Path | None:
    cc = shutil.which(os.environ.get("CC", "gcc")) or shutil.which("cc")
    if cc is None or not source.exists():
        return None
    out = Path(tempfile.gettempdir()) / f"mrfq_ref_{os.getuid()}"
    if not out.exists() or out.stat().st_mtime < source.stat().st_mtime:
        subprocess.run([cc, "-std=c11", "-O2", "-o", str(out), str(source), "-lm"], check=True,
                       capture_output=True)
    return out


def run_c(binary: Path, w: Workload, services: int, reps: int) -> dict:
    args = [str(binary), "-s", w.c_sched, "-m", w.mode, "-n", str(int(services))]
    if w.mode == "static":
        args += ["-F", str(w.flows)]
    subprocess.run(args[:-1] + [str(min(services, 100000))], check=True, capture_output=True)
    cpu, wall = [], []
    for _ in range(reps):
        line = subprocess.run(args, check=True, capture_output=True, text=True).stdout.splitlines()[0]
        kv = dict(re.findall(r"(\w+)=([^\s]+)", line))
        cpu.append(float(kv["Msvc_per_cpu_s"]))
        wall.append(float(kv["Msvc_per_s"]))
    return {"cpu": statistics.median(cpu), "wall": statistics.median(wall)}


def time_reference(services: int) -> dict | None:
    """Services per second of the SimPy reference vs the engine on the same small workload."""
    try:
        from router.reference import simulate_reference
    except ImportError:
        return None
    from router.run import simulate

    sc = scenario_for(WORKLOADS[0], services)
    sc = sc.replace(**{"run.max_services": 0, "run.duration": services / 2.2})
    t0 = time.process_time()
    ref = simulate_reference(sc)
    t_ref = time.process_time() - t0
    r = simulate(sc)
    n_ref = getattr(ref, "services", r.services)
    return {"reference_msvc_per_cpu_s": n_ref / t_ref / 1e6, "mrfq_msvc_per_cpu_s": r.services / r.cpu_seconds / 1e6,
            "services": int(n_ref)}


def first_call_seconds() -> dict:
    """Wall time of a fresh process's first run, with an empty and with a warm numba cache."""
    code = ("import time; t=time.perf_counter(); import flows; from router.run import simulate; "
            "simulate(flows.load_preset('oracle-rates'), duration=2000.0); print(time.perf_counter()-t)")
    out = {}
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d, MRFQ_NUMBA_CACHE="1")
        for label in ("cold_cache_s", "warm_cache_s"):
            p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            out[label] = float(p.stdout.strip().splitlines()[-1])
    return out


def peak_memory_kb(services_list: list[int]) -> dict:
    code = ("import resource, sys, flows; from router.bench import WORKLOADS, scenario_for; "
            "from router.run import simulate; simulate(scenario_for(WORKLOADS[2], int(sys.argv[1]))); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = {}
    for n in services_list:
        p = subprocess.run([sys.executable, "-c", code, str(n)], capture_output=True, text=True, check=True)
        out[n] = int(p.stdout.strip().splitlines()[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="mrfq bench", description=__doc__.splitlines()[0])
    add_arguments(ap)
    try:
        return run(ap.parse_args(argv))
    except MrfqError as e:
        print(f"mrfq bench: error: {e}", file=sys.stderr)
        return 2


def add_arguments(ap) -> None:
    ap.add_argument("--quick", action="store_true", help="shorter workloads, fewer repetitions")
    ap.add_argument("--json", action="store_true", help="print one JSON object {rows: [...]}")
    ap.add_argument("--services", type=float, help="services per timed run (default 2e7; quick 2e6)")
    ap.add_argument("--reps", type=int, help="timed repetitions per workload (default 5; quick 3)")
    ap.add_argument("--c-source", default=None, help="path of mrfq_ref.c (default ../shared/bench/limit)")
    ap.add_argument("--only", help="run only workloads whose name contains this text")
    ap.add_argument("--no-extras", action="store_true", help="skip the SimPy, first-call and memory rows")


def run(args) -> int:
    services = int(args.services or (2e6 if args.quick else 2e7))
    reps = args.reps or (3 if args.quick else 5)
    if services < 1000 or reps < 1:
        raise MrfqError("--services must be >= 1000 and --reps >= 1")
    root = Path(__file__).resolve().parent.parent
    src = Path(args.c_source) if args.c_source else root.parent / "shared" / "bench" / "limit" / "mrfq_ref.c"
    binary = None
    c_note = ""
    try:
        binary = build_c(src)
        if binary is None:
            c_note = (f"C yardstick skipped: no C compiler found" if src.exists()
                      else f"C yardstick skipped: {src} not found (give --c-source)")
    except subprocess.CalledProcessError as e:
        c_note = f"C yardstick skipped: compiling {src} failed ({e.stderr.decode()[:200]})"
    rows = []
    for w in WORKLOADS:
        if args.only and args.only not in w.name:
            continue
        m = run_mrfq(w, services, reps)
        c = run_c(binary, w, services, reps) if binary else None
        row = {"workload": w.name, "services": m["services"], "mrfq_msvc_per_cpu_s": m["cpu"],
               "mrfq_msvc_per_wall_s": m["wall"],
               "c_msvc_per_cpu_s": c["cpu"] if c else None, "c_msvc_per_wall_s": c["wall"] if c else None,
               "ratio": m["cpu"] / c["cpu"] if c else None}
        rows.append(row)
        if not args.json:
            if len(rows) == 1:
                print(f"{'workload':<32} {'mrfq Msvc/cpu-s':>15} {'mrfq Msvc/wall-s':>16} {'C Msvc/cpu-s':>13} "
                      f"{'ratio':>6}")
            cc = f"{row['c_msvc_per_cpu_s']:13.1f}" if c else f"{'-':>13}"
            ra = f"{row['ratio']:6.2f}" if c else f"{'-':>6}"
            print(f"{w.name:<32} {m['cpu']:15.1f} {m['wall']:16.1f} {cc} {ra}", flush=True)
    out = {"rows": rows, "services_per_run": services, "repetitions": reps}
    if c_note:
        out["note"] = c_note
    if not args.no_extras:
        ref = time_reference(20000 if args.quick else 100000)
        if ref:
            out["simpy_reference"] = ref
        out["first_call"] = first_call_seconds()
        out["peak_rss_kb"] = peak_memory_kb([int(1e6), int(1e7)] if args.quick else [int(1e7), int(1e8)])
    if args.json:
        print(json.dumps(out))
        return 0
    if c_note:
        print(c_note)
    print(f"(median of {reps} runs of {services:,} services each after a warm-up run; ratio = mrfq / C by CPU time)")
    if "simpy_reference" in out:
        s = out["simpy_reference"]
        print(f"SimPy reference model: {s['reference_msvc_per_cpu_s'] * 1e3:.1f} k services/cpu-s on 3 static flows "
              f"({s['services']:,} services); the numba engine is {s['mrfq_msvc_per_cpu_s'] / s['reference_msvc_per_cpu_s']:,.0f}x faster")
    if "first_call" in out:
        f = out["first_call"]
        print(f"first run in a fresh process, including import: {f['cold_cache_s']:.1f} s with an empty numba cache "
              f"(compilation), {f['warm_cache_s']:.1f} s with a warm cache")
    if "peak_rss_kb" in out:
        print("peak memory, dynamic workload: " + ", ".join(f"{n:,} services: {kb / 1024:.0f} MiB"
                                                            for n, kb in out["peak_rss_kb"].items()))
    return 0
