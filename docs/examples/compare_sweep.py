"""A packet-vs-fluid sweep from Python: gamma per class against load, with intervals.

Runs DRFQ and BMF-WFQ on ``br-unbalanced`` at a few loads (the quick configuration), prints the
rows and draws them the way ``mrfq compare --plot`` does.

    python docs/examples/compare_sweep.py [--small] [--out compare_sweep.png]
"""

from __future__ import annotations

import argparse

import mrfq
from mrfq.analysis.compare import plot_comparison


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="two loads, one scheduler, short runs (for the test suite)")
    p.add_argument("--out", default="compare_sweep.png", help="where to save the figure")
    args = p.parse_args(argv)

    if args.small:
        rows = mrfq.compare("dynamic-small", [0.3, 0.6], schedulers=["drfq"], flows_per_replication=100.0,
                            max_replications=2)
    else:
        rows = mrfq.compare("br-unbalanced", [0.2, 0.4, 0.6, 0.8], schedulers=["drfq", "bmf-wfq"], workers=None)
    print(f"{'scheduler':<10}{'load':>6}{'class':>7}{'packet':>10}{'95% CI':>22}{'fluid':>10}")
    for r in rows:
        ci = f"[{r['ci'][0]:.4f}, {r['ci'][1]:.4f}]"
        fl = "-" if r["gamma_fluid"] is None else f"{r['gamma_fluid']:.4f}"
        print(f"{r['scheduler']:<10}{r['load']:>6.2f}{r['class']:>7}{r['gamma_packet']:>10.4f}{ci:>22}{fl:>10}")
    fig = plot_comparison(rows.to_records(), title="packet γ (points) against fluid γ (lines)")
    fig.savefig(args.out, dpi=110)
    print(f"figure written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
