"""Hierarchical DRFQ (router/hdrfq.py) against static H-DRF on random two-group trees.

    python scripts/cluster_hdrfq_trees.py [--trees 30] [--seed 5] [--plot FILE.png]

Each tree: a root with two groups (weights 1 and 1 or 2), two flows per group, every flow on both
resources with integer costs 1..4 normalised to a dominant cost of 1.  Prints, per charging rule
(router.hdrfq.INCREMENTS), the worst and median relative gap of the packet rates to the fluid
static H-DRF rates of the same tree.
"""

from __future__ import annotations

import argparse

import numpy as np

from mrfq.analysis.cluster.hdrf import static_hdrf
from mrfq.fq.cluster.state import Tree
from mrfq.router.hdrfq import INCREMENTS, simulate_hdrfq


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", type=int, default=30)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--plot", default=None, help="draw the distribution of the gaps over the trees (PNG)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    gaps: dict[str, list[float]] = {inc: [] for inc in INCREMENTS}
    for _ in range(args.trees):
        c = rng.integers(1, 5, size=(4, 2)).astype(float)
        c /= c.max(axis=1, keepdims=True)
        tree = Tree(np.array([-1, 0, 0, 1, 1, 2, 2]), np.array([1.0, 1, rng.choice([1.0, 2.0]), 1, 1, 1, 1]),
                    np.arange(3, 7))
        fluid = static_hdrf([[1.0, 1.0]], c, tree).tasks
        for inc in INCREMENTS:
            r = simulate_hdrfq(c, tree, duration=2000.0, warmup=200.0, increment=inc)
            gaps[inc].append(float(np.max(np.abs(r / fluid - 1))))
    print(f"{args.trees} random two-group trees, relative gap of packet rates to static H-DRF")
    for inc, g in gaps.items():
        print(f"  increment={inc:<14} worst {max(g):6.1%}   median {np.median(g):6.1%}")
    if args.plot:
        from mrfq.analysis.cluster.plot import plot_gap_distribution

        fig = plot_gap_distribution(gaps, title=f"hierarchical DRFQ on {args.trees} random two-group trees")
        fig.savefig(args.plot, dpi=110)
        print(f"figure written to {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
