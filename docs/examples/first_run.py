"""First run: two static flows under every packet scheduler, against the fluid allocations.

The scenario ``oracle-rates`` has two backlogged flows with cost vectors (2/3, 1) and (1, 1/2)
(processing time per packet at the CPU and at the link).  DRF gives each 0.6 packets per time
unit; PF and BMF give 0.75 and 0.5.  The script runs the scenario under every scheduler, prints
each flow's rate beside the fluid values, and draws them.

    python docs/examples/first_run.py [--small] [--out first_run.png]
"""

from __future__ import annotations

import argparse

from matplotlib.figure import Figure

import mrfq


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--small", action="store_true", help="a short run (for the test suite)")
    p.add_argument("--out", default="first_run.png", help="where to save the figure")
    args = p.parse_args(argv)

    sc = mrfq.load("oracle-rates", run__duration=3000.0 if args.small else 60000.0)
    costs = [f.cost for f in sc.flows]
    fluid = {o: [r["phi"] for r in mrfq.allocate(costs, o)] for o in ("drf", "pf", "bmf")}
    print(f"{'scheduler':<15}" + "".join(f"{f.name:>9}" for f in sc.flows))
    rates = {}
    for s in mrfq.schedulers():
        r = mrfq.run(sc, scheduler=s)
        rates[s] = [f["rate"] for f in r.flows]
        print(f"{s:<15}" + "".join(f"{x:>9.4f}" for x in rates[s]))
    for o, phi in fluid.items():
        print(f"{'fluid ' + o:<15}" + "".join(f"{x:>9.4f}" for x in phi))

    fig = Figure(figsize=(7, 3.5), layout="constrained")
    ax = fig.subplots()
    names = list(rates)
    for i, f in enumerate(sc.flows):
        ax.bar([k + 0.4 * i for k in range(len(names))], [rates[s][i] for s in names], width=0.4,
               label=f"flow {f.name} {tuple(round(c, 3) for c in f.cost)}")
    for o, style in (("drf", "-"), ("pf", "--")):
        for i, phi in enumerate(fluid[o]):
            ax.axhline(phi, ls=style, lw=0.8, color=f"C{i}", label=f"fluid {o.upper()}, flow {sc.flows[i].name}")
    ax.set_xticks([k + 0.2 for k in range(len(names))], names, rotation=30, ha="right")
    ax.set_ylabel("rate (packets / time unit)")
    ax.legend(fontsize=7, ncols=2)
    fig.savefig(args.out, dpi=110)
    print(f"figure written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
