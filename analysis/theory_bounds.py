"""Published delay and fairness bounds of fair schedulers, and their measured counterparts.

Plain Python over a run's exact records (``simulate(sc, trace=N)``: the service trace and the
departures), outside the compiled loop.  The bounds and their sources are in
``docs/findings/theory-checks.md``; ``tests/test_theory_bounds.py`` checks mrfq's schedulers
against them and FIFO against them the other way.

Units: capacity 1 at every resource, so a packet's length over the capacity is its processing
time ``s`` (time units); a flow's reserved rate ``r_f`` is its weight's share of the capacity.
"""

from __future__ import annotations

import numpy as np


def sfq_delay_bounds(arrivals, costs, rate: float, others_max: float) -> np.ndarray:
    """[SFQ] Goyal, Vin, Cheng (delay guarantee; docs/findings/theory-checks.md): the latest
    departure of each packet of flow f on one server of capacity 1 shared by flows whose reserved
    rates sum to at most 1, minus the packet's arrival:

        L(p_f^j) <= EAT(p_f^j) + sum_{n != f} l_n^max / C + l_f^j / C,
        EAT(p_f^j) = max(A(p_f^j), EAT(p_f^{j-1}) + l_f^{j-1} / r_f),   EAT(p_f^0) = A(p_f^0).

    ``arrivals`` and ``costs``: the flow's packets in arrival order (time units); ``rate``: r_f
    (its weight over the sum of the weights); ``others_max``: ``sum_{n != f} l_n^max / C``.
    Returns the bound on each packet's sojourn, ``EAT - A + others_max + l_f^j``."""
    a = np.asarray(arrivals, dtype=np.float64)
    s = np.asarray(costs, dtype=np.float64)
    eat = np.empty_like(a)
    for k in range(len(a)):
        eat[k] = a[k] if k == 0 else max(a[k], eat[k - 1] + s[k - 1] / rate)
    return eat - a + others_max + s


def drr_latency(quanta, f: int) -> float:
    """[LR] Stiliadis & Varghese's latency of deficit round robin on a link of capacity 1:
    ``(3 F - 2 phi_f) / C`` with ``F = sum_j phi_j`` the frame (the sum of the quanta) and
    ``phi_f`` flow f's quantum, valid when every quantum is at least its flow's largest packet."""
    q = np.asarray(quanta, dtype=np.float64)
    return float(3.0 * q.sum() - 2.0 * q[f])


def cumulative_service(trace, flow: int, resource: int):
    """Flow ``flow``'s cumulative service at ``resource`` as a piecewise-linear function: its
    knots (the starts and ends of its services there) and the service received by each knot.
    A resource serves one packet at a time, so the flow's services there do not overlap."""
    m = (np.asarray(trace.flow) == flow) & (np.asarray(trace.resource) == resource)
    st = np.asarray(trace.start, dtype=np.float64)[m]
    en = np.asarray(trace.end, dtype=np.float64)[m]
    x = np.empty(2 * len(st))
    x[0::2], x[1::2] = st, en
    y = np.zeros(2 * len(st))
    done = np.concatenate(([0.0], np.cumsum(en - st)))
    y[0::2], y[1::2] = done[:-1], done[1:]
    return x, y


def scheduled_service(trace, flow: int, weight: float, first: int = 0):
    """Flow ``flow``'s *scheduled* dominant service, a step function: each of its packets adds its
    dominant service ``max_j s_pj / w`` (read from the trace) at the instant it begins service at
    the scheduling resource ``first``.  Returns the jump times and the cumulative values after them."""
    fl = np.asarray(trace.flow)
    m = fl == flow
    seq = np.asarray(trace.seq)[m]
    dur = (np.asarray(trace.end, dtype=np.float64) - np.asarray(trace.start, dtype=np.float64))[m]
    dom = {}
    for k, d in zip(seq.tolist(), dur.tolist()):
        dom[k] = max(dom.get(k, 0.0), d)
    at = m & (np.asarray(trace.resource) == first)
    t = np.asarray(trace.start, dtype=np.float64)[at]
    inc = np.array([dom[k] for k in np.asarray(trace.seq)[at].tolist()]) / weight
    return t, np.cumsum(inc)


def _step(x, t, y):
    """The right-continuous step function (jumps ``t``, values ``y`` after them) at ``x``."""
    i = np.searchsorted(t, x, side="right")
    return np.where(i > 0, y[np.maximum(i - 1, 0)], 0.0)


def relative_fairness(trace, flows, dominant, weights, t0: float, t1: float, measure: str = "dominant") -> dict:
    """The relative fairness (docs/relative-fairness.md) per pair of ``flows``, all backlogged on ``[t0, t1]``:
    ``{(i, m): max |S_i(u, v)/w_i - S_m(u, v)/w_m|}`` over ``t0 <= u < v <= t1``.

    ``measure="dominant"``: ``S_i(u, v)`` is flow i's service (processing time) at its dominant
    resource ``dominant[i]`` during ``[u, v]``.  ``D(t) = S_i(t0, t)/w_i - S_m(t0, t)/w_m`` is then
    piecewise linear with knots at the two flows' service starts and ends, so the largest
    difference over intervals is ``max D - min D`` over those knots and the ends.
    ``measure="scheduled"``: ``S_i`` counts each packet's dominant service when it begins service at
    the first resource (the scheduling point of a round robin like MR3's), a step function:
    ``max D - min D`` over the jumps and ``t0``."""
    if measure not in ("dominant", "scheduled"):
        raise ValueError(f"measure = {measure!r}: must be 'dominant' or 'scheduled'")
    if measure == "dominant":
        cs = {i: cumulative_service(trace, i, dominant[i]) for i in flows}
    else:
        cs = {i: scheduled_service(trace, i, weights[i]) for i in flows}
    out = {}
    for a_i, i in enumerate(flows):
        for m in flows[a_i + 1:]:
            knots = np.concatenate((cs[i][0], cs[m][0], [t0, t1]))
            knots = np.sort(knots[(knots >= t0) & (knots <= t1)])
            if measure == "dominant":
                d = np.interp(knots, *cs[i]) / weights[i] - np.interp(knots, *cs[m]) / weights[m]
            else:
                d = _step(knots, *cs[i]) - _step(knots, *cs[m])
            out[(i, m)] = float(d.max() - d.min())
    return out


# ---------------------------------------------------------------------------
# the scenarios the checks run (tests/test_theory_bounds.py, scripts/theory_checks.py)
SIZES = {"packet_sizes": [200.0, 1000.0], "packet_size_probs": [0.5, 0.5]}
#: one resource: three greedy flows of 0.2 or 1.0 time units a packet, and a CBR flow of weight 2
#: (reserved rate r_f = 2/5) sending 0.3-unit packets at 1.3 a time unit (0.39 of the capacity)
CBR_COST, CBR_WEIGHT, CBR_RATE, GREEDY, GREEDY_MAX = 0.3, 2.0, 1.3, 3, 1.0


def one_resource(scheduler: str, duration: float, *, rate: float = CBR_RATE, weight: float = CBR_WEIGHT,
                 seed: int = 1) -> dict:
    """The scenario of the single-resource delay checks, as a scenario dict."""
    return {"resources": ["link"], "router": {"scheduler": scheduler},
            "run": {"duration": duration, "seed": seed},
            "flow": [{"name": "g", "count": GREEDY, "cost": [0.0], "per_byte": [1 / 1000], **SIZES},
                     {"name": "v", "cost": [CBR_COST], "weight": weight, "arrival": {"law": "cbr", "rate": rate},
                      "buffer": 4096}]}


#: the leaky-bucket flow of the PGPS / WF2Q+ delay checks: Poisson at 1.5 packets a time unit through
#: a token bucket of rate 1.2 and depth 4, 0.3-unit packets, weight 2 (reserved share 2/5 beside the
#: three greedy flows: 1.33 packets a time unit, above the bucket's rate)
LB_RATE, LB_BURST, LB_SOURCE = 1.2, 4.0, 1.5


def leaky_bucket(scheduler: str, duration: float, seed: int = 1) -> dict:
    """:func:`one_resource` with the CBR flow replaced by a Poisson source through a token-bucket
    shaper (``shaper = {rate, burst}``): at most ``burst + rate t`` packets reach the link in any
    interval of length t, the (sigma, rho) input of [PG]'s and [BZ]'s delay bounds."""
    d = one_resource(scheduler, duration, seed=seed)
    d["flow"][1] = {"name": "v", "cost": [CBR_COST], "weight": CBR_WEIGHT,
                    "arrival": {"law": "poisson", "rate": LB_SOURCE},
                    "shaper": {"rate": LB_RATE, "burst": LB_BURST}, "buffer": 4096}
    return d


def pgps_bound() -> float:
    """[PG] Theorem 1 with the GPS bound of a (sigma, rho) flow, ``rho <= g``: every packet of the
    leaky-bucket flow leaves PGPS within ``sigma / g + L_max / C`` of its arrival, with ``sigma`` =
    the burst's work (burst x its packet time), ``g`` its reserved share of the capacity and
    ``L_max`` the largest packet's time on the link; [BZ] give WF2Q+ the same bound."""
    g = CBR_WEIGHT / (CBR_WEIGHT + GREEDY)
    assert LB_RATE * CBR_COST <= g, "the bound needs rho <= g"
    return LB_BURST * CBR_COST / g + GREEDY_MAX


def pgps_check(scheduler: str, duration: float, trace: int = 2_000_000, seed: int = 1) -> dict:
    """Every sojourn of :func:`leaky_bucket`'s shaped flow against :func:`pgps_bound`."""
    _, soj, _ = cbr_sojourns(leaky_bucket(scheduler, duration, seed), trace)
    bound = pgps_bound()
    return {"packets": len(soj), "max": float(soj.max()), "bound": bound, "within": bool(np.all(soj <= bound + 1e-9))}


def cbr_sojourns(scenario: dict, trace: int):
    """Run ``scenario`` and return the CBR flow's (last static flow's) packets that left: their
    arrivals and exact sojourns in arrival order, and the run."""
    from mrfq import flows
    from mrfq.router.run import simulate

    r = simulate(flows.from_dict(scenario), trace=trace)
    d = r.departures
    f = len(r.flows) - 1
    m = np.asarray(d.flow) == f
    order = np.argsort(np.asarray(d.seq)[m], kind="stable")
    arr = np.asarray(d.arrived)[m][order]
    soj = (np.asarray(d.time) - np.asarray(d.arrived))[m][order]
    seq = np.asarray(d.seq)[m][order]
    if len(seq) and not np.array_equal(seq, np.arange(seq[0], seq[0] + len(seq))):
        raise AssertionError("the CBR flow's departures are not its first packets in order")
    return arr, soj, r


def sfq_check(scheduler: str, duration: float, trace: int = 2_000_000) -> dict:
    """[SFQ]'s delay guarantee on :func:`one_resource`: every CBR packet's sojourn against its
    bound ``EAT - A + sum_{n != f} l_n^max + l_f``, with ``r_f = w_f / sum w``."""
    arr, soj, r = cbr_sojourns(one_resource(scheduler, duration), trace)
    rate = CBR_WEIGHT / (CBR_WEIGHT + GREEDY)
    bound = sfq_delay_bounds(arr, np.full(len(arr), CBR_COST), rate, GREEDY * GREEDY_MAX)
    return {"packets": len(soj), "max": float(soj.max()), "bound": float(bound.max()),
            "within": bool(np.all(soj <= bound + 1e-9)), "dmax": float(r.delays.dmax[len(r.flows) - 1])}


def drr_lr_check(scheduler: str, duration: float, trace: int = 2_000_000) -> dict:
    """DRR as a latency-rate server on :func:`one_resource`: quanta ``phi_j = Q w_j`` (the default
    ``Q = 1``, at least every flow's largest packet), frame ``F = sum_j phi_j``, the CBR flow's rate
    ``rho_f = phi_f / F`` at least its arrival rate, its arrivals within ``sigma + rho_f t`` with
    ``sigma`` one packet: every sojourn at most ``sigma / rho_f + (3 F - 2 phi_f) / C``."""
    arr, soj, _ = cbr_sojourns(one_resource(scheduler, duration), trace)
    quanta = [1.0] * GREEDY + [CBR_WEIGHT]
    rho = CBR_WEIGHT / sum(quanta)
    bound = CBR_COST / rho + drr_latency(quanta, GREEDY)
    return {"packets": len(soj), "max": float(soj.max()), "bound": bound, "within": bool(np.all(soj <= bound))}


#: the sparse CBR flow of the direct DRR bound: weight 1, one packet every 7 time units
SPARSE_RATE = 1.0 / 7.0


def drr_sparse_check(scheduler: str, duration: float, trace: int = 2_000_000) -> dict:
    """DRR, a CBR flow whose packet has always left before the next arrives (every sojourn below
    the period ``1/rate``): a packet finds its flow's queue empty and joins the tail of the active
    list; before its turn at most the packet in service (at most ``l_f^max`` if it is the flow's
    own) and one turn of every other flow, each sending at most ``phi_j + DC_j < phi_j + l_j^max``
    ([DRR] Lemma 1: a deficit left after a turn is below the largest packet); then its own
    ``l_f``: ``D <= l_f^max + sum_{j != f} (phi_j + l_j^max) + l_f``."""
    arr, soj, _ = cbr_sojourns(one_resource(scheduler, duration, rate=SPARSE_RATE, weight=1.0), trace)
    bound = CBR_COST + GREEDY * (1.0 + GREEDY_MAX) + CBR_COST
    return {"packets": len(soj), "max": float(soj.max()), "bound": bound, "within": bool(np.all(soj <= bound)),
            "period": 1.0 / SPARSE_RATE}


#: flow c's cost a byte (CPU, link) in each variant of :func:`two_resources`, and its dominant resource
C_VARIANTS = {"balanced": ((1 / 2000, 1 / 2000), 0), "cpu-bottleneck": ((1 / 2000, 1 / 2500), 0),
              "link-bottleneck": ((1 / 2500, 1 / 2000), 1)}


def two_resources(scheduler: str, duration: float, *, variant: str = "balanced", weights=(1.0, 1.0, 1.0),
                  seed: int = 1, router: dict | None = None) -> dict:
    """Three greedy flows (window 30) on a CPU and a link, packets of 200 or 1000 bytes: ``a``
    CPU-heavy (1/1000 and 1/2000 time units a byte), ``b`` link-heavy (the mirror), ``c`` lighter
    (:data:`C_VARIANTS`).  DRF (equal dominant service ``d``) loads the CPU and the link with
    ``balanced``: 2.5 d and 2.5 d (both bottlenecks; c's two costs are equal, its dominant
    resource counted as the CPU); ``cpu-bottleneck``: 2.5 d and 2.3 d; ``link-bottleneck``: 2.3 d
    and 2.5 d.  Weights (1, 2, 1) on ``balanced`` leave the link the only bottleneck (CPU at 6/7).
    ``router``: more ``[router]`` settings (``{"virtual_time": "in-service"}``)."""
    c = C_VARIANTS[variant][0]
    cost = ([1 / 1000, 1 / 2000], [1 / 2000, 1 / 1000], list(c))
    return {"resources": ["cpu", "link"], "router": {"scheduler": scheduler, **(router or {})},
            "run": {"duration": duration, "seed": seed},
            "flow": [{"name": n, "cost": [0.0, 0.0], "per_byte": pb, "weight": w, **SIZES}
                     for n, pb, w in zip("abc", cost, weights)]}


def fairness_check(scheduler: str, duration: float, *, variant: str = "balanced", weights=(1.0, 1.0, 1.0),
                   warmup: float = 100.0, seed: int = 1, router: dict | None = None, trace: int = 2_000_000) -> dict:
    """Relative fairness on :func:`two_resources` over ``[warmup, end]`` (windows full: every flow
    backlogged at the first resource), in units of ``L = max_i L_i / w_i`` (``L_i`` flow i's
    largest dominant service): the largest over pairs of the dominant service at the dominant
    resource (against [DRFQ]'s two maximal packets, ``2 L``; per pair with the same dominant
    resource, against SFQ's ``L_i / w_i + L_m / w_m``) and of the scheduled dominant service
    (against [ERR]'s round-robin bound ``3 L``, MR3's scheduling point)."""
    from mrfq import flows
    from mrfq.router.run import simulate

    sc = two_resources(scheduler, duration, variant=variant, weights=weights, seed=seed, router=router)
    r = simulate(flows.from_dict(sc), trace=trace)
    tr = r.trace
    t1 = float(tr.start[-1])
    w = dict(enumerate(weights))
    li = [1000.0 * max(f["per_byte"]) / f["weight"] for f in sc["flow"]]
    L = max(li)
    dominant = {0: 0, 1: 1, 2: C_VARIANTS[variant][1]}
    dom = relative_fairness(tr, [0, 1, 2], dominant, w, warmup, t1)
    sch = relative_fairness(tr, [0, 1, 2], dominant, w, warmup, t1, measure="scheduled")
    same = {p: (v, li[p[0]] + li[p[1]]) for p, v in dom.items() if dominant[p[0]] == dominant[p[1]]}
    return {"L": L, "until": t1, "pairs": dom, "same_resource_pairs": same,
            "dominant": max(dom.values()) / L, "drfq_bound": 2.0,
            "scheduled": max(sch.values()) / L, "err_bound": 3.0}
