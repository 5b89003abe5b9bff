"""MR3 against weighted DRF on random static scenarios, and what reversing the flow tables moves.

    python scripts/mr3_sweep.py [--scenarios N] [--seed S]

Each scenario: two resources (cpu, link), 2-4 windowed flows (window 30), costs from
{0, 0.05, 0.25, 0.5, 1} (not both 0), weights 1-3, duration 8000, warm-up 800, run by ``mr3``
under four settings (progress scope / join order).  Per setting it prints how many runs are within
1 % of weighted DRF (all; one saturated resource where each flow's window holds two rounds'
packets, i.e. 2 max_i d_i / min_i d_i <= 30 with d_i the weighted dominant cost; two saturated
resources) and the largest relative change of a rate when the ``[[flow]]`` tables are reversed
(docs/schedulers.md, 'mr3').  About a minute.
"""
from __future__ import annotations

import argparse

import numpy as np

from mrfq import flows
from mrfq.analysis import allocations
from mrfq.router.run import simulate

GRID = (0.0, 0.05, 0.25, 0.5, 1.0)
SETTINGS = (("resource", "dominant"), ("resource", "arrival"), ("round", "dominant"), ("flow", "dominant"))
WINDOW = 30


def rates(d: dict) -> np.ndarray:
    return np.array([f.rate for f in simulate(flows.from_dict(d), record_delays=False).flows])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", type=int, default=120)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    for _ in range(args.scenarios):
        fl = []
        for i in range(int(rng.integers(2, 5))):
            while True:
                c = [float(rng.choice(GRID)), float(rng.choice(GRID))]
                if max(c) > 0:
                    break
            fl.append({"name": f"f{i}", "cost": c, "weight": float(rng.integers(1, 4))})
        a = np.array([f["cost"] for f in fl])
        w = np.array([f["weight"] for f in fl])
        alloc = allocations.drf(a, w)
        d_i = a.max(axis=1) / w
        row = {"saturated": len(alloc.saturated), "fits": 2 * d_i.max() / d_i.min() <= WINDOW}
        for scope, order in SETTINGS:
            d = {"resources": ["cpu", "link"],
                 "router": {"scheduler": "mr3", "window": WINDOW, "progress_scope": scope, "join_order": order},
                 "run": {"duration": 8000.0, "warmup": 800.0, "seed": 1}, "flow": fl}
            r1 = rates(d)
            r2 = rates({**d, "flow": fl[::-1]})[::-1]
            row[scope, order] = (float(np.max(np.abs(r1 / alloc.phi - 1))), float(np.max(np.abs(r2 / r1 - 1))))
        rows.append(row)
    one = [r for r in rows if r["saturated"] == 1 and r["fits"]]
    two = [r for r in rows if r["saturated"] == 2]
    print(f"{len(rows)} scenarios ({len(one)} with one saturated resource and the window condition, {len(two)} "
          f"with two saturated): runs within 1 % of weighted DRF, and reversing the [[flow]] tables")
    print(f"{'scope / join order':<22}{'all':>6}{'one':>6}{'two':>6}{'rev max':>10}{'rev >1%':>9}{'rev max, one':>14}")
    for key in SETTINGS:
        def within(sub, key=key):
            return sum(r[key][0] <= 0.01 for r in sub)
        rev = [r[key][1] for r in rows]
        rev_one = max((r[key][1] for r in one), default=0.0)
        print(f"{key[0] + ' / ' + key[1]:<22}{within(rows):>6}{within(one):>6}{within(two):>6}"
              f"{100 * max(rev):>9.2f}%{sum(x > 0.01 for x in rev):>9}{100 * rev_one:>13.3f}%")


if __name__ == "__main__":
    main()
