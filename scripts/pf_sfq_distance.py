"""How far is PF-SFQ from proportional fairness, and every scheduler from its objective?
(Documentation: Findings, "PF-SFQ's distance from PF".)

Static backlogged flows (``window`` packets each, ``rtt = 0``), one packet run per point.  The
distance of a run from a fluid allocation is the relative rate error of the worst flow,

    d = max_i |rate_i - phi_i| / phi_i    (in %),

phi the static allocation of the scheduler's objective (``OBJECTIVE``: drf, pf, bmf) for the
flows' cost vectors and weights (:func:`mrfq.analysis.objectives.allocate`).

Default: PF-SFQ's distance from PF against the window for the cases of :data:`CASES`, the
queue statistics behind it (window 30, from a service trace: the time-average queue Q_ij / N,
its standard deviation, and the harmonic mean over packets of Q_ij at tag time, which sets
SFQ's share), and a figure (``analysis.plots.plot_pf_sfq_distance``).

``--sweep N``: N random scenarios (2-3 resources, 2-5 windowed flows, weights 1-3, costs from
{0, 0.05, 0.25, 0.5, 1} with one positive at least per flow; ``--sweep-seed``), every registered
scheduler on each; one CSV row per (scenario, scheduler) and a summary per scheduler.  The
baselines (objective None) are measured against DRF, for reference.

    python scripts/pf_sfq_distance.py --plot docs/_static/pf-sfq-distance.png
    python scripts/pf_sfq_distance.py --sweep 150 --csv docs/_static/pf-sfq-sweep.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import time

import numpy as np

from mrfq.analysis.objectives import allocate
from mrfq.flows.scenario import from_dict
from mrfq.fq.registry import SCHEDULERS
from mrfq.router.run import simulate

RESOURCES = ("cpu", "link", "mem")
COSTS = (0.0, 0.05, 0.25, 0.5, 1.0)

#: name -> (costs, weights).  three-flow: PF saturates both resources, PF-SFQ's queues settle into a
#: limit cycle; two-flow: the ``oracle-rates`` preset's flows, PF saturates one resource;
#: five-flow: weighted, PF saturates both (``--sweep 150``, scenario 59); mixed-sizes: packets 20
#: times apart in size, a discreteness effect that fades with the window (``--sweep 150``, scenario 29)
CASES = {
    "three-flow": ([[1.0, 0.5], [0.5, 1.0], [0.5, 0.5]], [1, 1, 1]),
    "two-flow": ([[2 / 3, 1.0], [1.0, 0.5]], [1, 1]),
    "five-flow": ([[0.25, 0.0], [0.5, 0.25], [0.0, 0.5], [0.25, 1.0], [0.05, 0.05]], [2, 1, 3, 3, 2]),
    "mixed-sizes": ([[1.0, 1.0], [0.05, 0.05]], [2, 3]),
}


def scenario(costs, weights, scheduler: str, window: int, duration: float, warmup: float, seed: int):
    J = len(costs[0])
    return from_dict({
        "resources": list(RESOURCES[:J]),
        "router": {"scheduler": scheduler, "window": int(window)},
        "run": {"duration": float(duration), "warmup": float(warmup), "seed": int(seed)},
        "flow": [{"name": f"f{i}", "cost": [float(x) for x in c], "weight": float(w)}
                 for i, (c, w) in enumerate(zip(costs, weights))],
    })


def distance(rates, phi) -> tuple[float, int]:
    """(max_i |rate_i - phi_i| / phi_i in %, the worst flow)."""
    e = np.abs(np.asarray(rates) - np.asarray(phi)) / np.asarray(phi)
    return 100.0 * float(e.max()), int(e.argmax())


def queue_stats(result, costs, window: int, warmup: float) -> dict:
    """Queues of every flow at every resource it uses, from the run's service trace (rtt = 0: a
    packet joins the first resource when it enters the router, the next one when it ends there).

    Returns arrays (flows x resources): ``mean`` and ``std`` of Q_ij(t) / N over time after the
    warm-up, ``empty`` the fraction of that time with Q_ij = 0, ``harm`` the harmonic mean over
    packets of Q_ij at tag time (the arriving packet included, as in fq/pf_sfq.py) divided by N,
    ``share`` the measured share of j's time rate_i * s_ij, and the shares the two averages
    predict, ``w_i Q_ij / sum_k w_k Q_kj`` with the time average (``pred_mean``) and with the
    harmonic mean at tag time (``pred_harm``); plus ``series``, (t, Q_ij(t) / N) samples.
    """
    tr, dp = result.trace, result.departures
    A = np.asarray(costs, dtype=float)
    n, J = A.shape
    t_end = 0.98 * min(float(tr.start[-1]), float(dp.time[-1]))
    grid = np.linspace(warmup, t_end, 20000)
    out = {k: np.full((n, J), np.nan) for k in ("mean", "std", "empty", "harm")}
    series = {}
    for i in range(n):
        mi = dp.flow == i
        arrive = dict(zip(dp.seq[mi].tolist(), dp.arrived[mi].tolist()))
        used = [j for j in range(J) if A[i, j] > 0]
        for k, j in enumerate(used):
            mj = (tr.flow == i) & (tr.resource == j)
            if k:
                mp = (tr.flow == i) & (tr.resource == used[k - 1])
                arrive_j = dict(zip(tr.seq[mp].tolist(), tr.end[mp].tolist()))
            else:
                arrive_j = arrive
            ends = dict(zip(tr.seq[mj].tolist(), tr.end[mj].tolist()))
            a = np.sort(np.array([arrive_j[s] for s in ends if s in arrive_j]))
            d = np.sort(np.array(list(ends.values())))
            q = np.searchsorted(a, grid, side="right") - np.searchsorted(d, grid, side="right")
            a_in = a[(a > warmup) & (a < t_end)]
            q_tag = np.searchsorted(a, a_in, side="right") - np.searchsorted(d, a_in, side="right")
            out["mean"][i, j] = q.mean() / window
            out["std"][i, j] = q.std() / window
            out["empty"][i, j] = float(np.mean(q == 0))
            out["harm"][i, j] = 1.0 / np.mean(1.0 / q_tag) / window
            series[(i, j)] = q / window
    w = np.array([f.weight for f in result.scenario.flows], dtype=float)
    rates = np.array([f.rate for f in result.flows])
    out["share"] = rates[:, None] * A
    for k, src in (("pred_mean", "mean"), ("pred_harm", "harm")):
        x = np.nan_to_num(w[:, None] * out[src])
        out[k] = x / x.sum(axis=0)
    out["series"] = (grid, series)
    return out


def pf_sfq_rows(windows, duration: float, warmup: float, seed: int, log=print) -> list[dict]:
    rows = []
    for name, (costs, weights) in CASES.items():
        phi = allocate("pf", costs, weights).phi
        for N in windows:
            r = simulate(scenario(costs, weights, "pf-sfq", N, duration, warmup, seed))
            rates = [f.rate for f in r.flows]
            d, worst = distance(rates, phi)
            signed = 100.0 * (rates[worst] / phi[worst] - 1.0)
            rows.append({"case": name, "window": int(N), "distance": d, "worst_flow": worst, "signed": signed,
                         "rates": rates, "pf": [float(x) for x in phi]})
            log(f"{name:11s} N={N:4d}  d={d:6.2f} %  (flow {worst}: {signed:+.2f} %)  rates "
                + " ".join(f"{x:.4f}" for x in rates) + "  PF " + " ".join(f"{x:.4f}" for x in phi))
    return rows


def mechanism(window: int, duration: float, warmup: float, seed: int, log=print) -> dict:
    """Queue statistics of PF-SFQ on every case at one window; the series of the three-flow case."""
    out = {}
    for name, (costs, weights) in CASES.items():
        al = allocate("pf", costs, weights)
        r = simulate(scenario(costs, weights, "pf-sfq", window, duration, warmup, seed), trace=10**7)
        q = queue_stats(r, costs, window, warmup)
        rates = np.array([f.rate for f in r.flows])
        A = np.asarray(costs, dtype=float)
        w = np.asarray(weights, dtype=float)
        fluid_q = al.prices[None, :] * al.phi[:, None] * A / w[:, None]   # [BR]: Q_ij / N at the PF point
        log(f"\n{name}: PF saturates {list(al.saturated)}, prices mu = {np.round(al.prices, 4).tolist()}, "
            f"measured Q_j / N = {np.round(np.nansum(q['mean'], axis=0), 3).tolist()}")
        log("  flow res   rate/PF-1   Q/N mean  PF's Q/N   std    empty  harm/mean  share  pred(mean)  pred(harm)")
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                if A[i, j] <= 0:
                    continue
                log(f"  {i:4d} {j:3d}   {100 * (rates[i] / al.phi[i] - 1):+7.2f} %   {q['mean'][i, j]:7.3f}  "
                    f"{fluid_q[i, j]:7.3f}  {q['std'][i, j]:6.3f}  {q['empty'][i, j]:6.3f}  "
                    f"{q['harm'][i, j] / q['mean'][i, j]:8.3f}  {q['share'][i, j]:6.3f}  {q['pred_mean'][i, j]:9.3f}  "
                    f"{q['pred_harm'][i, j]:9.3f}")
        out[name] = q
    return out


def random_case(rng: np.random.Generator) -> tuple[list[list[float]], list[int]]:
    J = int(rng.integers(2, 4))
    n = int(rng.integers(2, 6))
    costs = []
    for _ in range(n):
        while True:
            c = [float(x) for x in rng.choice(COSTS, size=J)]
            if max(c) > 0:
                break
        costs.append(c)
    return costs, [int(x) for x in rng.integers(1, 4, size=n)]


def bottlenecks(al) -> int:
    """Resources that bind: for PF those with a positive KKT price (a saturated resource may have price
    0, as the link of the two-flow case), else the saturated ones."""
    if al.prices is not None and al.objective == "pf":
        return int(np.sum(al.prices > 1e-9))
    return len(al.saturated)


def sweep(count: int, rng_seed: int, window: int, duration: float, warmup: float, seed: int,
          schedulers=None, log=print) -> list[dict]:
    rng = np.random.default_rng(rng_seed)
    cases = [random_case(rng) for _ in range(count)]
    rows = []
    for name in schedulers or SCHEDULERS:
        objective = SCHEDULERS[name].objective
        target = objective or "drf"
        t0 = time.perf_counter()
        for k, (costs, weights) in enumerate(cases):
            al = allocate(target, costs, weights)
            r = simulate(scenario(costs, weights, name, window, duration, warmup, seed))
            rates = [f.rate for f in r.flows]
            d, worst = distance(rates, al.phi)
            rows.append({"scenario": k, "scheduler": name, "objective": objective or "", "target": target,
                         "J": len(costs[0]), "n": len(costs), "saturated": len(al.saturated),
                         "bottlenecks": bottlenecks(al), "first_only": int(al.saturated == (0,)),
                         "unique": int(al.unique), "distance": round(d, 4), "worst_flow": worst,
                         "costs": json.dumps(costs), "weights": json.dumps(weights),
                         "rates": json.dumps([round(x, 5) for x in rates]),
                         "fluid": json.dumps([round(float(x), 5) for x in al.phi])})
        log(f"{name}: {count} scenarios in {time.perf_counter() - t0:.0f} s")
    return rows


def summary(rows, within: float = 1.0) -> list[dict]:
    """Per scheduler: scenarios within ``within`` % (all; when one resource binds; two or more; when the
    first resource is the only saturated one), the median and the worst distance and its scenario.
    BMF continua (J = 3, not unique) are left out: the solver's point is one of many."""
    out = []
    for name in dict.fromkeys(r["scheduler"] for r in rows):
        rs = [r for r in rows if r["scheduler"] == name and r["unique"]]
        worst = max(rs, key=lambda r: r["distance"])

        def frac(xs):
            return f"{sum(r['distance'] <= within for r in xs)}/{len(xs)}"

        out.append({"scheduler": name, "objective": rs[0]["objective"] or f"none ({rs[0]['target']})",
                    "within": frac(rs), "one": frac([r for r in rs if r["bottlenecks"] <= 1]),
                    "more": frac([r for r in rs if r["bottlenecks"] >= 2]),
                    "first": frac([r for r in rs if r["first_only"]]),
                    "median": float(np.median([r["distance"] for r in rs])),
                    "worst": worst["distance"], "worst_scenario": worst["scenario"],
                    "worst_case": f"costs {worst['costs']} weights {worst['weights']}",
                    "continua_left_out": sum(1 for r in rows if r["scheduler"] == name and not r["unique"])})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", default="5,10,30,100,300")
    ap.add_argument("--duration", type=float, default=20000.0)
    ap.add_argument("--warmup", type=float, default=2000.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--window", type=int, default=30, help="window of the queue statistics and of the sweep")
    ap.add_argument("--plot", default=None, help="draw the distances (analysis.plots.plot_pf_sfq_distance) into this PNG")
    ap.add_argument("--sweep", type=int, default=0, help="run N random scenarios through every scheduler instead")
    ap.add_argument("--sweep-seed", type=int, default=2015)
    ap.add_argument("--schedulers", default=None, help="comma-separated, for --sweep (default: every one)")
    ap.add_argument("--within", type=float, default=1.0, help="the sweep's tolerance, in %%")
    ap.add_argument("--csv", default=None, help="write the sweep's rows to this file")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    if a.sweep:
        rows = sweep(a.sweep, a.sweep_seed, a.window, a.duration, a.warmup, a.seed,
                     a.schedulers.split(",") if a.schedulers else None)
        if a.csv:
            with open(a.csv, "w", newline="") as f:
                wr = csv.DictWriter(f, fieldnames=list(rows[0]))
                wr.writeheader()
                wr.writerows(rows)
        print(f"\n| scheduler | objective | within {a.within:g} % | one binding resource | two or more | "
              "only the first saturated | median | worst | scenario |")
        print("|---|---|---|---|---|---|---|---|---|")
        for s in summary(rows, a.within):
            print(f"| {s['scheduler']} | {s['objective']} | {s['within']} | {s['one']} | {s['more']} | "
                  f"{s['first']} | {s['median']:.2f} % | {s['worst']:.1f} % | {s['worst_scenario']}: "
                  f"{s['worst_case']} |" + (f" ({s['continua_left_out']} BMF continua left out)"
                                            if s["continua_left_out"] else ""))
    else:
        windows = [int(x) for x in a.windows.split(",")]
        rows = pf_sfq_rows(windows, a.duration, a.warmup, a.seed)
        q = mechanism(a.window, a.duration, a.warmup, a.seed)
        if a.plot:
            from mrfq.analysis.plots import plot_pf_sfq_distance

            grid, series = q["three-flow"]["series"]
            plot_pf_sfq_distance(rows, series={"t": grid, "window": a.window,
                                               "queues": {f"flow {i}, resource {j}": s
                                                          for (i, j), s in series.items() if j == 0}},
                                 title="PF-SFQ against PF, static backlogged flows").savefig(a.plot, dpi=110)
            print(f"figure written to {a.plot}")
    print(f"{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
