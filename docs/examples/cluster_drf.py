"""A first cluster: the DRF paper's example, fluid and simulated.

9 CPUs and 18 GB; user A runs tasks of <1 CPU, 4 GB>, user B tasks of <3 CPUs, 1 GB>.  DRF
gives A 3 tasks and B 2 (dominant shares 2/3 each); asset fairness and CEEI give other splits.
The simulator launches tasks one by one and reaches DRF's 3 and 2.

    python docs/examples/cluster_drf.py [--small] [--out cluster_drf.png]
"""

from __future__ import annotations

import argparse

import mrfq
from mrfq.analysis.cluster.plot import plot_shares


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="a short simulation (for the test suite)")
    p.add_argument("--out", default="cluster_drf.png", help="where to save the figure")
    args = p.parse_args(argv)

    sc = mrfq.load_cluster("drf-nsdi")
    for objective in ("drf", "asset", "ceei"):
        rows = mrfq.cluster_allocate(sc, objective)
        print(f"{objective:<6}" + "".join(f"  {r['user']}: {r['tasks']:.3f} tasks (share {r['dominant_share']:.3f})"
                                          for r in rows))
    sim = mrfq.cluster_simulate(sc, allocator="drf", duration=200.0 if args.small else None)
    print("simulated DRF" + "".join(f"  {r['user']}: {r['tasks']:.2f} tasks" for r in sim))
    fig = plot_shares(sim.raw, title="drf-nsdi: dominant shares under DRF")
    fig.savefig(args.out, dpi=110)
    print(f"figure written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
