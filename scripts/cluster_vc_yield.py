#!/usr/bin/env python
"""[VC] §4 on generated instances: heuristic-to-bound ratios of the minimum yield, failure rates,
the MCB variants' degradation from best (Tables 1 and 7), and a plot (Figs. 11 and 15).

Small problems (4 hosts; default 6, 8, 10, 12 jobs) also solve the MILP exactly (HiGHS);
large problems (64 hosts; default 100, 250 jobs) are compared with the LP bound only, and run the
randomised roundings RRND / RRNZ only with --rr-large (their relaxed LP takes minutes there).  The
paper draws 10 (small) and 100 (large) instances per specification; the defaults here are
smaller (--small-instances, --large-instances).  GB / SGB stop after --max-attempts
placement attempts (paper: 500,000).

    python scripts/cluster_vc_yield.py [--small-instances 2 --large-instances 2 --large-jobs 100,250 --out .]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from mrfq.analysis.cluster import vc_yield as vc  # noqa: E402

SHOW = ("MILP", "MCB8", "MCB5", "GR", "SG", "GB", "SGB", "RRND", "RRNZ")
#: [VC] §4.2 reported: average % degradation from best (Table 1 small, Table 7 large)
PAPER_DEG = {"MCB8": (1.06, 0.09), "MCB5": (1.60, 0.25), "MCB6": (1.83, 0.46), "MCB7": (3.91, 1.04),
             "MCB3": (11.76, 4.07), "MCB2": (14.21, 8.68), "MCB1": (14.90, 10.97), "MCB4": (17.32, 14.80)}


def _print_ratios(title, table, slacks, algos):
    print(title)
    print(f"{'algorithm':9} " + " ".join(f"{s:>11.1f}" for s in slacks))
    for a in algos:
        if a not in table:
            continue
        cells = []
        for s in slacks:
            m, f = table[a].get(s, (float("nan"), float("nan")))
            cells.append(f"{m:6.3f}/{100 * f:3.0f}%")
        print(f"{a:9} " + " ".join(f"{c:>11}" for c in cells))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slacks", default="0.1,0.2,0.3,0.5,0.7,0.9")
    ap.add_argument("--small-jobs", default="6,8,10,12")
    ap.add_argument("--large-jobs", default="100,250")
    ap.add_argument("--small-instances", type=int, default=2)
    ap.add_argument("--large-instances", type=int, default=2)
    ap.add_argument("--max-attempts", type=int, default=20_000)
    ap.add_argument("--rr-large", action="store_true",
                    help="also run RRND / RRNZ on large problems (one LP of 2 H J variables each: minutes)")
    ap.add_argument("--out", default=".")
    args = ap.parse_args(argv)
    slacks = [float(x) for x in args.slacks.split(",")]
    os.makedirs(args.out, exist_ok=True)

    small = vc.evaluate(args.seed, 4, [int(x) for x in args.small_jobs.split(",")], slacks,
                        instances=args.small_instances, exact=True, max_attempts=args.max_attempts)
    heur = vc.HEURISTICS if args.rr_large else tuple(h for h in vc.HEURISTICS if not h.startswith("RR"))
    large = vc.evaluate(args.seed + 1, 64, [int(x) for x in args.large_jobs.split(",")], slacks,
                        instances=args.large_instances, heuristics=heur, max_attempts=args.max_attempts)
    print("cells: mean (minimum yield / LP bound) over solved instances / failure rate\n")
    _print_ratios("small problems (4 hosts): ratio to the LP bound", vc.ratio_table(small), slacks, SHOW)
    print()
    _print_ratios("small problems: ratio to the exact MILP optimum", vc.ratio_table(small, "MILP"), slacks,
                  SHOW[1:])
    print()
    _print_ratios("large problems (64 hosts): ratio to the LP bound", vc.ratio_table(large), slacks, SHOW[1:])
    mcbs = [f"MCB{k}" for k in range(1, 9)]
    ds, dl = vc.degradation_from_best(small, mcbs), vc.degradation_from_best(large, mcbs)
    print(f"\n{'MCB':5} {'small avg':>9} {'max':>6} {'paper':>6}   {'large avg':>9} {'max':>6} {'paper':>6}")
    for a in sorted(mcbs, key=lambda a: ds[a][0]):
        print(f"{a:5} {ds[a][0]:9.2f} {ds[a][1]:6.2f} {PAPER_DEG[a][0]:6.2f}   {dl[a][0]:9.2f} {dl[a][1]:6.2f} "
              f"{PAPER_DEG[a][1]:6.2f}")
    t = {}
    for r in small + large:
        if r.algorithm not in ("LP",):
            t.setdefault((r.algorithm, r.hosts), []).append(r.seconds)
    print("\nmean run time per instance (ms): " + ", ".join(
        f"{a}@{h}: {1000 * np.mean(v):.1f}" for (a, h), v in sorted(t.items()) if a in SHOW))

    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, rec, title in ((axs[0], small, "small (4 hosts)"), (axs[1], large, "large (64 hosts)")):
        tab = vc.ratio_table(rec)
        for a in SHOW:
            if a in tab:
                ax.plot(slacks, [tab[a][s][0] for s in slacks], marker="o", label=a, color=f"C{SHOW.index(a)}")
        ax.set_title(f"[VC] Figs. 11/15 flavour: {title}")
        ax.set_xlabel("memory slack")
    axs[0].set_ylabel("minimum yield / LP bound")
    axs[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "vc_yield.png"), dpi=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
