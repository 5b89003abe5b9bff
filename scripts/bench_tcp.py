"""Speed of TCP flows against fixed windows on the same router, interleaved: CPU ns per service.

    python scripts/bench_tcp.py [--reps N] [--services N] [--flows N] [--processes P]

Both workloads are the ``mrfq bench`` rows' CPU-then-link router under ``drfq`` with N static flows
(default 30) whose costs cycle through the bench's class vectors (router.bench.VECTORS): once as
windowed flows (window 30, ``router.rtt`` = R) and once as Reno flows (``transport = {cc = "reno",
rtt = R}``, a buffer of 60 packets each, so that they lose packets and recover), R = 200 time units
(about the router's time to serve 30 windows of 30 packets: both keep the router busy).  Every loop is
compiled and run once before timing; then each repetition runs both in turn (interleaved, so a burst
of load on the machine lands on both), with the delays and the fairness bound recorded, as ``mrfq run``
does (``--no-record``: neither, as the packet-vs-fluid sweeps run).  It prints the
minimum and median CPU ns per service of each, and the median of the per-repetition ratios of the TCP
flows' service rate to the windowed flows'; it never fails on timing (docs/performance.md).

The same loop's speed varies by 15-20 % from one process to the next (where its machine code and
stack land), more than most changes to the TCP code: ``--processes P`` runs the whole measurement in
P fresh processes, one after another, and prints each one's ratio and their median.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from mrfq.router.bench import TCP_RTT as RTT
from mrfq.router.bench import tcp_scenario as scenario
from mrfq.router.run import simulate


def ns_per_service(sc, record: bool = True) -> tuple[float, int]:
    r = simulate(sc, timed_from=1, record_delays=record)
    return r.loop_cpu_seconds / r.loop_services * 1e9, r.services


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--services", type=int, default=2_000_000)
    ap.add_argument("--flows", type=int, default=30)
    ap.add_argument("--no-record", action="store_true",
                    help="run the loops without recording (no delays, no fairness bound), as the sweeps do")
    ap.add_argument("--processes", type=int, default=1,
                    help="run the measurement in this many fresh processes and print the median of their ratios")
    args = ap.parse_args()
    if args.processes > 1:
        child = [sys.executable, __file__, "--reps", str(args.reps), "--services", str(args.services), "--flows",
                 str(args.flows)] + (["--no-record"] if args.no_record else [])
        ratios = []
        for p in range(args.processes):
            out = subprocess.run(child, capture_output=True, text=True, check=True).stdout
            print(f"process {p + 1}:\n" + out.rstrip())
            ratios.append(float(out.rsplit("fixed windows': ", 1)[1].split()[0]))
        print(f"TCP (reno) service rate / fixed windows' over {args.processes} processes: "
              f"{', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}")
        return
    sc = {"windows": scenario(args.flows, args.services, False), "reno": scenario(args.flows, args.services, True)}
    rec = not args.no_record
    for s in sc.values():   # compile (or load) both loops first
        simulate(s.replace(**{"run.max_services": 10_000}), record_delays=rec)
    t = {k: [] for k in sc}
    for _ in range(args.reps):
        for k, s in sc.items():
            t[k].append(ns_per_service(s, rec)[0])
    print(f"{args.flows} static flows, drfq, rtt {RTT:g}, {args.services:,} services, {args.reps} interleaved "
          f"repetitions, {'delays and fairness bound recorded' if rec else 'no recording'}: CPU ns per service "
          "(min / median)")
    for k in sc:
        print(f"  {k:8s} {min(t[k]):7.1f} / {statistics.median(t[k]):7.1f} ns")
    ratio = statistics.median(a / b for a, b in zip(t["windows"], t["reno"]))
    print(f"TCP (reno) service rate / fixed windows': {ratio:.3f} (median of the per-repetition ratios)")


if __name__ == "__main__":
    main()
