"""Does gamma depend on the flow-size law?  (Documentation: Findings, "Flow-size laws".)

For each scheduler, load and size law (geometric, pareto alpha 1.5, deterministic, all of mean
``--mean`` packets) on a two-resource preset, gamma_k is estimated as

    gamma_k(law) = gamma_markov_k + s_k(law) + d_k(law)

* ``gamma_markov_k``: the flow-level Markov model's value (geometric sizes, exact solve);
* ``s_k(law) = E[gamma_fluid_k(law)] - gamma_markov_k``: how the *fluid* model of the
  scheduler's objective reacts to the law, from ``--fluid-reps`` independent fluid-only runs of
  ``--fluid-flows`` flows each (:mod:`analysis.fluid_path`; cheap, no packets);
* ``d_k(law) = E[gamma_packet_k - gamma_fluid_path_k]``: packetisation, from ``--reps`` packet
  runs of ``--flows`` flows, each with the fluid model on the very same arrivals (common random
  numbers, the control variate of ``mrfq compare`` with beta = 1), so the arrival noise cancels.

Both intervals come from independent replications (one ratio estimate per replication, delta
method, Student t, 95 %), never from batches inside a run (heavy-tailed sizes make those
correlated).  Prints one row per (scheduler, load, class, law): gamma / gamma_markov - 1 with
its half-width, and the two parts.

    python scripts/size_laws.py --preset br-unbalanced --loads 0.5,0.8 --reps 6 --flows 1000
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from mrfq import flows
from mrfq.analysis.batch_stats import t_quantile
from mrfq.analysis.compare import fluid_gammas
from mrfq.analysis.fluid_path import fluid_path
from mrfq.fq.registry import SCHEDULERS
from mrfq.router.run import simulate

LAWS = {
    "geometric": lambda m: {"law": "geometric", "mean": m},
    "pareto": lambda m: {"law": "pareto", "alpha": 1.5, "mean": m},
    "deterministic": lambda m: {"law": "deterministic", "packets": int(m)},
}


def with_law(base, law: str, mean: float, load: float, n_flows: float):
    d = flows.to_dict(base.with_load(load))
    for c in d["class"]:
        c.pop("mean_packets", None)
        c.pop("size", None)
        c["size"] = LAWS[law](mean)
    sc = flows.from_dict(d, name=base.name)
    T = n_flows / sum(c.rate for c in sc.classes)
    return sc.replace(**{"run.duration": T, "run.warmup": 0.1 * T, "run.batches": 2})


def ratio_and_halfwidth(y: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """Ratio sum(y)/sum(x) over replications and its 95 % half-width (delta method, t_{R-1})."""
    g = y.sum() / x.sum()
    R = len(y)
    u = (y - g * x) / x.mean()
    return g, t_quantile(0.95, R - 1) * math.sqrt(float((u * u).sum()) / (R * (R - 1)))


def diff_and_halfwidth(y, x, yf, xf) -> tuple[float, float]:
    """(sum y / sum x) - (sum yf / sum xf) over replications, 95 % half-width from the paired residuals."""
    g, gf = y.sum() / x.sum(), yf.sum() / xf.sum()
    R = len(y)
    u = (y - g * x) / x.mean() - (yf - gf * xf) / xf.mean()
    return g - gf, t_quantile(0.95, R - 1) * math.sqrt(float((u * u).sum()) / (R * (R - 1)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="br-unbalanced")
    ap.add_argument("--loads", default="0.5,0.8")
    ap.add_argument("--schedulers", default="drfq,drfq-dovetail,pf-sfq,bmf-wfq")
    ap.add_argument("--laws", default="geometric,pareto,deterministic")
    ap.add_argument("--mean", type=float, default=20000.0)
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--flows", type=float, default=1000.0)
    ap.add_argument("--fluid-reps", type=int, default=40)
    ap.add_argument("--fluid-flows", type=float, default=20000.0)
    ap.add_argument("--json", default=None, help="also write the rows to this file")
    ap.add_argument("--plot", default=None, help="draw the rows (analysis.plots.plot_size_laws) into this PNG")
    a = ap.parse_args(argv)
    base = flows.load_preset(a.preset)
    loads = [float(x) for x in a.loads.split(",")]
    scheds = a.schedulers.split(",")
    laws = a.laws.split(",")
    K = len(base.classes)
    rows = []
    t0 = time.perf_counter()
    services = 0
    for load in loads:
        for law in laws:
            # the fluid model alone under this law: s_k(law), one estimate per objective
            fluid = {}
            for obj in sorted({SCHEDULERS[s].objective for s in scheds}):
                sc = with_law(base, law, a.mean, load, a.fluid_flows)
                per = [fluid_path(sc, obj, 1000 + r, batches=2) for r in range(a.fluid_reps)]
                mk = fluid_gammas(base, obj, load, None)["gamma"]
                fluid[obj] = []
                for k in range(K):
                    y = np.array([sum(p["departed"][k]) for p in per])
                    x = np.array([sum(p["area"][k]) for p in per])
                    g, h = ratio_and_halfwidth(y, x)
                    fluid[obj].append((g - mk[k], h, mk[k]))
            for s in scheds:
                obj = SCHEDULERS[s].objective
                sc = with_law(base, law, a.mean, load, a.flows)
                ys = [[] for _ in range(K)]
                for r in range(a.reps):
                    res = simulate(sc, scheduler=s, seed=1 + r)
                    services += res.services
                    fp = fluid_path(res.scenario, obj, 1 + r, batches=2)
                    for k in range(K):
                        ys[k].append((res.batches["departed"][k].sum(), res.batches["area"][k].sum(),
                                      sum(fp["departed"][k]), sum(fp["area"][k])))
                for k in range(K):
                    y, x, yf, xf = (np.array(v) for v in zip(*ys[k]))
                    d, hd = diff_and_halfwidth(y, x, yf, xf)
                    sk, hs, mk = fluid[obj][k]
                    rel = (sk + d) / mk
                    hrel = math.hypot(hs, hd) / mk
                    row = dict(scheduler=s, load=load, cls=base.classes[k].name, law=law, gamma_markov=mk,
                               rel=rel, rel_halfwidth=hrel, fluid_shift=sk / mk, fluid_halfwidth=hs / mk,
                               packet_minus_fluid=d / mk, packet_halfwidth=hd / mk)
                    rows.append(row)
                    print(f"{s:<14} {load:4.2f} {row['cls']:<3} {law:<13} gamma/markov-1 = {100 * rel:+7.2f}% "
                          f"+- {100 * hrel:5.2f}%   (fluid {100 * sk / mk:+6.2f} +- {100 * hs / mk:4.2f}, "
                          f"packet-fluid {100 * d / mk:+6.2f} +- {100 * hd / mk:4.2f})", flush=True)
    print(f"{services:,} packet services, {time.perf_counter() - t0:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "rows": rows, "services": services}, f, indent=1)
    if a.plot:
        from mrfq.analysis.plots import plot_size_laws

        plot_size_laws(rows, title=f"{a.preset}: gamma against the Markov model, by flow-size law").savefig(a.plot, dpi=110)
        print(f"figure written to {a.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
