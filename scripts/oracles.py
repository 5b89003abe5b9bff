#!/usr/bin/env python3
"""Long-run packet rates of every scheduler on the public static oracles (docs/allocators.md,
'Public oracles'; docs/schedulers.md, 'Hand-checked traces'),
beside the fluid DRF, PF and BMF allocations.

    python scripts/oracles.py            # prints one table
"""

import numpy as np

from mrfq import flows
from mrfq.analysis.allocations import bmf, drf, pf
from mrfq.fq import SCHEDULERS
from mrfq.router.run import simulate

PRESETS = ["oracle-rates", "oracle-two-flows", "oracle-three-flows"]
EXTRA = {"idle-cpu (0.2,1),(0.1,0.5)": {
    "resources": ["cpu", "link"], "router": {"window": 30}, "run": {"duration": 60000.0, "warmup": 2000.0},
    "flow": [{"name": "a", "cost": [0.2, 1.0]}, {"name": "b", "cost": [0.1, 0.5]}]}}


def fmt(v):
    return "(" + ", ".join(f"{x:.4f}" for x in v) + ")"


def main():
    cases = [(n, flows.load_preset(n)) for n in PRESETS]
    cases += [(n, flows.from_dict(d, name=n)) for n, d in EXTRA.items()]
    for name, sc in cases:
        a = np.array([f.mean_cost() for f in sc.flows])
        print(f"{name}: costs {', '.join(fmt(r) for r in a)}, window {sc.router.window}, "
              f"duration {sc.run.duration:g} (warm-up {sc.run.warmup:g})")
        print(f"  fluid  DRF {fmt(drf(a).phi)}  PF {fmt(pf(a).phi)}  BMF {fmt(bmf(a).phi)}")
        for s in SCHEDULERS:
            for vt in (("started", "in-service") if s == "drfq" else ("started",)):
                r = simulate(sc, scheduler=s, virtual_time=vt)
                label = s + (f" ({vt})" if s == "drfq" else "")
                print(f"  {label:<22} {fmt([f.rate for f in r.flows])}")
        print()


if __name__ == "__main__":
    main()
