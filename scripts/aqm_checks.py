"""RED, CoDel and FairDrop against their laws on constant-rate overloads (docs/buffers.md; the same
checks as tests/test_buffers.py, at full size).

    python scripts/aqm_checks.py

Prints three tables: RED's drop fraction, the p_b it implies and the average queue RED's law gives
for it, against the time-average number in the router; CoDel's first drops against its control law;
FairDrop's rates against the shadow's max-min shares.
"""

from __future__ import annotations

import math

import numpy as np

import mrfq.flows as flows
from mrfq.router.run import simulate


def red() -> None:
    print("| overload | drop fraction | 1 - 1/overload | p_b = fraction / 2 | RED's avg for p_b | packets in the router |")
    print("|---|---|---|---|---|---|")
    for overload in (1.1, 1.2, 1.5, 2.0):
        sc = flows.from_dict({
            "resources": ["link"], "router": {"scheduler": "fifo", "aqm": {"policy": "red"}},
            "run": {"duration": 1e6, "warmup": 1e5, "seed": 1},
            "flow": [{"name": "a", "cost": [1.0], "arrival": {"law": "cbr", "rate": overload}, "buffer": "unbounded"}]})
        e = simulate(sc)
        (a,) = e.flows
        frac = a.drops / a.offered
        p_b = frac / 2
        avg = 5 + 10 * p_b / 0.1 if p_b < 0.1 else 15 * (1 + (p_b - 0.1) / 0.9)
        dh = e.delays
        inside = float(dh.dsum[0].sum() / dh.dcnt[0].sum())  # Little: sojourn / service time
        print(f"| {overload:g} | {frac:.5f} | {1 - 1 / overload:.5f} | {p_b:.5f} | {avg:.3f} | {inside:.3f} |")


def codel() -> None:
    sc = flows.from_dict({
        "resources": ["link"], "router": {"scheduler": "fifo", "aqm": {"policy": "codel", "target": 5.0,
                                                                          "interval": 100.0}},
        "run": {"duration": 2000.0, "seed": 1},
        "flow": [{"name": "a", "cost": [1.0], "arrival": {"law": "cbr", "rate": 2.0}, "buffer": "unbounded"}]})
    e = simulate(sc, trace=100_000)
    seqs, starts = e.trace.seq, e.trace.start
    drops = starts[1:][np.diff(seqs) > 1]
    law, nxt = [], 110.0
    for k in range(1, len(drops) + 1):
        law.append(math.ceil(nxt))
        nxt += 100.0 / math.sqrt(k)
    print("\n| drop k | CoDel in mrfq (dequeue instant) | control law: first dequeue >= 110 + 100 sum_{i<k} 1/sqrt(i) |")
    print("|---|---|---|")
    for k, (x, y) in enumerate(zip(drops[:12], law[:12]), 1):
        print(f"| {k} | {x:g} | {y:g} |")
    (a,) = e.flows
    print(f"\ndrop fraction over 2000 time units: {a.drops / a.offered:.4f}")


def fairdrop() -> None:
    sc = flows.from_dict({
        "resources": ["link"], "router": {"scheduler": "fifo", "aqm": {"policy": "fairdrop"}},
        "run": {"duration": 1e5, "warmup": 1e4, "seed": 1},
        "flow": [{"name": n, "cost": [1.0], "arrival": {"law": "cbr", "rate": r}, "buffer": 100}
                 for n, r in (("a", 1.0), ("b", 0.6), ("c", 0.1))]})
    e = simulate(sc)
    print("\n| flow | load | rate | max-min share (water level 0.45) | drops (fairdrop) |")
    print("|---|---|---|---|---|")
    for f, load in zip(e.flows, (1.0, 0.6, 0.1)):
        print(f"| {f.name} | {load:g} | {f.rate:.4f} | {min(load, 0.45):g} | {f.drops_by_reason['fairdrop']:,} |")


if __name__ == "__main__":
    red()
    codel()
    fairdrop()
