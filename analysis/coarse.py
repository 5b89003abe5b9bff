"""A coarse-packet copy of a point: the control variate of a scheduler that follows no fluid model.

The fluid paths (:mod:`analysis.fluid_path`) are exact-mean controls for a
scheduler that realises a fluid objective.  Dovetailing DRFQ realises none: on
br-unbalanced at 0.9 its class-2 rate per batch follows the BMF fluid path
on the same flows (within a few per cent) for most of a run, and for
stretches of it drops to the DRF path's (in 5 of 32 replications: e.g. 0.045
against BMF's 0.126 and DRF's 0.034 in one batch, after which the class-2
flows pile up and the gap outlives the batch).  Those stretches carry the
variance of gamma_2 (documentation, "Packet vs fluid"), and no linear combination of
fluid paths sees them; the *same scheduler* fed the same flows in fewer,
larger packets does:

    coarse scenario = the point's scenario with every class's mean size divided
    by ``m`` (``m = floor(min mean_packets / COARSE_PACKETS)``), every per-packet
    cost (and per-byte cost) multiplied by ``m`` and the window ``max(COARSE_WINDOW,
    ceil(window / m))``.

Work per flow, arrival rates and hence the arrival times and classes are those
of the point; sizes are coupled through the same uniform (:mod:`flows.traffic`
draws a geometric size by inversion of one uniform, so the coarse flow is the
fine flow's size divided by about ``m``).  It runs about ``m`` times fewer packet
services.  On br-unbalanced at 0.9 (2000 flows, m = 100, window 3) the
coarse gamma_2 of drfq-dovetail has correlation 0.9998 with the fine one over
32 seeds, at 18 ms a replication against 2.2 s.

Its mean is not known, so it is *estimated* by independent replications of
the coarse point (seeds disjoint from the fine ones, :func:`level0_seed`),
themselves corrected by the fluid paths of the fine scenario on their seeds
(exact Markov means).  That is a two-level (multilevel, Giles 2008) estimator,
or a control variate with an estimated mean: for a fixed ``beta`` it is
unbiased whatever the two models' relation, and the estimated mean's own
half-width enters the interval as ``|beta|`` times it, independent of the fine
level (Law & Kelton §11.3; the same rule as a simulated Markov value in
:func:`analysis.compare.pooled`).
"""

from __future__ import annotations

import math
import os

import numpy as np


#: coarse flows have about this many packets on average
COARSE_PACKETS = 200
#: smallest window of the coarse copy (window 1 forbids a flow to use two resources at once: the
#: correlation with the fine system drops from 0.9998 to 0.97 on br-unbalanced at 0.9)
COARSE_WINDOW = 3
#: level-0 replications run per task (the per-call overhead of a worker is amortised)
CHUNK = 32
#: tells level-0 seeds apart from any other use of SeedSequence([seed, i, ...]) ("coarse" in ASCII)
SEED_TAG = 0x636F61727365


def coarse_factor(sc) -> int:
    """``m`` for this scenario, or 0 when there is no coarse copy: not every class's sizes are
    geometric Poisson arrivals, static flows are present, or the flows are already short
    (``m < 2``)."""
    if not sc.classes or sc.flows or not sc.geometric_sizes:
        return 0
    m = int(math.floor(min(c.mean_packets for c in sc.classes) / COARSE_PACKETS))
    return m if m >= 2 else 0


def coarse_dict(d: dict, m: int) -> dict:
    """The coarse copy of scenario dict ``d`` (see the module docstring)."""
    out = {**d, "router": dict(d["router"]), "class": [dict(c) for c in d["class"]]}
    for c in out["class"]:
        c["mean_packets"] = c["mean_packets"] / m
        c["cost"] = [v * m for v in c["cost"]]
        if c.get("per_byte") is not None:
            c["per_byte"] = [v * m for v in c["per_byte"]]
    out["router"]["window"] = max(COARSE_WINDOW, -(-int(d["router"]["window"]) // m))
    return out


def level0_seed(seed: int, i: int) -> int:
    """The seed of level-0 replication ``i`` of a sweep seeded ``seed``: 62 bits of
    ``SeedSequence([seed, i, SEED_TAG])``, so the level-0 runs are independent of the fine ones
    (seeds ``seed + r``, small) and of the level-0 runs of a sweep with another seed (seed and
    seed + 100 would share most of them if level-0 seeds were ``shift + seed + i``)."""
    return int(np.random.SeedSequence([seed, i, SEED_TAG]).generate_state(1, np.uint64)[0] >> np.uint64(2))


def coarse_run(coarse: dict, name: str, seed: int) -> dict:
    """Batch sums of one coarse replication (``departed``, ``area`` per class and batch; flows
    ``completed`` per class)."""
    from mrfq import flows
    from mrfq.router.run import simulate

    r = simulate(flows.from_dict(coarse, name=name), seed=seed, record_delays=False)  # no delays needed
    return {"departed": r.batches["departed"].tolist(), "area": r.batches["area"].tolist(),
            "completed": [c.completed for c in r.classes], "services": int(r.services)}


def one_batch(payload: dict) -> dict:
    """``payload`` with each class's batch sums added up into one batch (the replication's sums)."""
    out = dict(payload)
    for f in ("departed", "area"):
        out[f] = [[float(sum(row))] for row in payload[f]]
    return out


def _level0_chunk(task) -> tuple[int, list]:
    """Replications ``seeds`` of the coarse point, each with the fine scenario's fluid paths, as
    one batch per replication (:func:`one_batch`)."""
    from mrfq.analysis.fluid_path import fluid_path
    from mrfq import flows

    idx, coarse, fine, name, objectives_, seeds = task
    sc = flows.from_dict(fine, name=name)
    out = []
    for s in seeds:
        out.append((one_batch(coarse_run(coarse, name, s)),
                    {o: one_batch(fluid_path(sc, o, s, batches=sc.run.batches)) for o in objectives_}))
    return idx, out


def level0(coarse: dict, fine: dict, name: str, objectives_: list[str], seeds: list[int],
           workers: int = 1) -> list:
    """``[(coarse payload, {objective: fluid path of the fine scenario})]`` for ``seeds``, in order,
    each summed over its batches: the level-0 estimate treats replications, which are
    independent, as its samples, not batches, which are not (at load 0.9 a batch of drfq-dovetail
    carries an excursion on into the next: with batches the standard error of 64 replications
    came out at 3.0 % where the spread of 8 such estimates was 7.1 %).  Chunks of :data:`CHUNK`
    seeds run in ``workers`` forked processes (the result does not depend on the number of
    workers)."""
    tasks = [(i, coarse, fine, name, list(objectives_), seeds[a:a + CHUNK])
             for i, a in enumerate(range(0, len(seeds), CHUNK))]
    n = min(workers or os.cpu_count() or 1, len(tasks))
    if n <= 1:
        parts = dict(_level0_chunk(t) for t in tasks)
    else:
        from mrfq.analysis.sweep import fork_imap_unordered

        parts = dict(fork_imap_unordered(_level0_chunk, tasks, n))
    return [x for i in range(len(tasks)) for x in parts[i]]


def needed(n: int, h: float, goal: float, cap: int) -> int:
    """Level-0 replications for half-width ``goal`` when ``n`` gave ``h`` (a half-width shrinks like
    ``1/sqrt(n)``; 20 % margin, at least one more chunk, at most ``cap``)."""
    if not math.isfinite(h) or not goal > 0:
        return min(cap, 2 * n)
    if h <= goal:
        return n
    return int(min(cap, max(n + CHUNK, math.ceil(1.2 * n * (h / goal) ** 2))))


#: a level-0 replication's cost in packet services: its coarse run's services times this (the
#: fluid paths of three objectives on its arrivals cost about a third of a coarse run on
#: br-unbalanced at 0.9, 5 ms against 17 ms); a deterministic proxy, so that the stopping rule's
#: choices, hence the results, do not depend on the machine's speed
LEVEL0_COST = 1.3
