"""TCP flows against published results (docs/findings/tcp-checks.md): prints the page's tables.

    python scripts/tcp_checks.py            # full size (about a minute after compiling)
    python scripts/tcp_checks.py --scale 0.5

1. one Reno flow, random loss p, an uncongested path: goodput against Mathis et al. and Padhye et al.;
2. one Reno flow through one bottleneck with a drop-tail buffer: utilisation against the sawtooth;
3. two Reno flows with round-trip times 1 : 4 through one link with exponential service times: FIFO with
   a shared drop-tail pool against fair queueing with per-flow buffers;
4. three TCP flows through the CPU-then-link router under each multi-resource scheduler: goodputs
   against the fixed-window flows' rates and the fluid allocations.
"""

from __future__ import annotations

import argparse

import numpy as np

from mrfq.analysis import allocations as al
from mrfq.analysis.tcp_models import mathis, padhye, sawtooth_utilisation
from mrfq.flows.scenario import from_dict
from mrfq.router.run import simulate


def _run(resources, scheduler, flows, duration, warmup, router=None, seed=1):
    return simulate(from_dict({"resources": list(resources), "router": {"scheduler": scheduler, **(router or {})},
                               "run": {"duration": duration, "warmup": warmup, "seed": seed}, "flow": flows}))


def random_loss(p: float, rtt: float = 10.0, duration: float = 2e5):
    """One Reno flow with random loss p on a link 1000 times faster than it sends: (goodput, timeouts,
    Mathis, Padhye).  The timeout T0 of Padhye's formula is min_rto (2 rtt): the round-trip time
    hardly varies, so RFC 6298's RTO sits at its floor."""
    r = _run(["link"], "fifo", [{"name": "a", "cost": [0.001], "transport": {"cc": "reno", "rtt": rtt}, "loss": p,
                                "buffer": "unbounded"}], duration, duration / 100)
    t = r.flows[0].transport
    R = rtt + 0.001
    return t["goodput"], t["timeouts"], mathis(p, R), padhye(p, R, 2.0 * rtt)


def bottleneck(buffer: int, bdp: float = 100.0, duration: float = 1e6):
    """One Reno flow, a link of rate 1, rtt = bdp: (utilisation, the sawtooth's prediction)."""
    r = _run(["link"], "fifo", [{"name": "a", "cost": [1.0], "transport": {"cc": "reno", "rtt": bdp},
                                "buffer": buffer}], duration, 1e5)  # (warm-up: slow start's losses take ~4e4 to repair)
    return r.resources[0].utilization, sawtooth_utilisation(buffer, bdp)


def rtt_bias(scheduler: str, router: dict, buffer, duration: float = 5e5):
    """Two Reno flows, rtt 25 and 100, exponential service times of mean 1 on one link: their goodputs."""
    flows = [{"name": n, "cost": [1.0], "cost_law": "exponential", "transport": {"cc": "reno", "rtt": rtt},
              "buffer": buffer} for n, rtt in (("short", 25.0), ("long", 100.0))]
    r = _run(["link"], scheduler, flows, duration, 5e4, router)
    return [f.transport["goodput"] for f in r.flows], r.resources[0].utilization


COSTS = [[0.5, 1.0], [1.0, 0.25], [0.25, 0.5]]
RTTS = [20.0, 40.0, 80.0]


def multi_resource(scheduler: str, buffer, duration: float = 2e5):
    """Three flows on the CPU-then-link router: TCP goodputs (Reno, rtt 20/40/80, per-flow ``buffer``) and
    the same flows' rates with fixed windows (30 packets, no rtt)."""
    tcp = [{"name": f"f{i}", "cost": c, "transport": {"cc": "reno", "rtt": rtt}, "buffer": buffer}
           for i, (c, rtt) in enumerate(zip(COSTS, RTTS))]
    win = [{"name": f"f{i}", "cost": c} for i, c in enumerate(COSTS)]
    rt = _run(["cpu", "link"], scheduler, tcp, duration, 5e4)
    rw = _run(["cpu", "link"], scheduler, win, duration, 5e4)
    return ([f.transport["goodput"] for f in rt.flows], sum(f.transport["timeouts"] for f in rt.flows),
            [f.rate for f in rw.flows])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="run lengths times this (default 1; at least 0.5)")
    a = ap.parse_args(argv)
    s = max(a.scale, 0.5)

    print("| p | goodput | timeouts | Mathis | goodput / Mathis | Padhye | goodput / Padhye |")
    print("|---|---|---|---|---|---|---|")
    for p in (0.001, 0.003, 0.01):
        g, to, m, pd = random_loss(p, duration=2e5 * s)
        print(f"| {p} | {g:.4f} | {to} | {m:.4f} | {g / m:.3f} | {pd:.4f} | {g / pd:.3f} |")

    print("\n| buffer / BDP | utilisation | sawtooth |")
    print("|---|---|---|")
    for b in (100, 50, 30, 10):
        u, pred = bottleneck(b, duration=1e6 * s)
        print(f"| {b / 100:g} | {u:.4f} | {pred:.4f} |")

    print("\n| scheduler | buffers | short | long | short / long | utilisation |")
    print("|---|---|---|---|---|---|")
    for sched, router, buf, text in (("fifo", {"shared_buffer": 100}, "unbounded", "shared pool 100"),
                                     ("fifo", {"shared_buffer": 200}, "unbounded", "shared pool 200"),
                                     ("fq-single", {}, 100, "100 per flow"), ("drr", {}, 100, "100 per flow")):
        (g0, g1), u = rtt_bias(sched, router, buf, duration=5e5 * s)
        print(f"| {sched} | {text} | {g0:.4f} | {g1:.4f} | {g0 / g1:.2f} | {u:.4f} |")

    A = np.array(COSTS)
    fluid = {"drf": al.drf(A).phi, "pf": al.pf(A).phi, "bmf": al.bmf(A).phi}
    print("\nfluid: " + "; ".join(f"{k.upper()} " + " / ".join(f"{x:.3f}" for x in v) for k, v in fluid.items()))
    print("\n| scheduler | objective | fixed windows | TCP, buffer 60 | TCP, buffer 200 | timeouts (60, 200) |")
    print("|---|---|---|---|---|---|")
    for sched, obj in (("drfq", "drf"), ("mr3", "drf"), ("pf-sfq", "pf"), ("bmf-wfq", "bmf"), ("drr", None),
                       ("fifo", None)):
        g60, t60, w = multi_resource(sched, 60, duration=2e5 * s)
        g200, t200, _ = multi_resource(sched, 200, duration=2e5 * s)
        f = lambda v: " / ".join(f"{x:.3f}" for x in v)  # noqa: E731
        print(f"| {sched} | {obj.upper() if obj else '-'} | {f(w)} | {f(g60)} | {f(g200)} | {t60}, {t200} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
