"""How much work a packet run is, before it starts: services and open-loop packet arrivals over
``run.duration``, and the seconds they take at the engine's rough speed.

The command line says it in one line on a terminal when a run would take more than
:data:`SAY_AFTER` seconds (``this run: about 5e10 packet arrivals (flow[0] 'cbr'), expect about 7 h;
Ctrl-C stops it``); the gate (:func:`flows.scenario._check_resources`) refuses runs above
``MAX_SERVICES_BOUND`` services or packet arrivals unless ``run.max_services`` is set.  Plain Python
(no numba import).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from mrfq.flows.notice import count_text, duration_text

#: The engine's rough speed, for the estimate only (it never changes what a run does).  Measured on the
#: project's development machine (2 cores, shared, one run at a time): ``mrfq bench --quick --no-extras
#: --max-flows 1000`` gave 12-47 million services per CPU second with the delays recorded (the default:
#: 3, 30 and 300 static flows and a dynamic run, drfq and bmf-wfq), so 2e7; a timed run of one open-loop
#: CBR flow offering 1e9 packets per time unit to a resource that serves 1 (``buffer = 1000``, nearly
#: every packet dropped) handled 1.7-2.4 million packet arrivals per second, so 2e6 (each arrival is an
#: event of the loop, a drop costs about as much as ten services).
SERVICES_PER_SECOND = 2e7
ARRIVALS_PER_SECOND = 2e6
#: estimated seconds above which the command line says the estimate before the run starts
SAY_AFTER = 60.0


class Work(NamedTuple):
    """A run's estimated work: ``services`` (each resource serves at most one packet per smallest time
    there, each [[flow]] at most one per its slowest resource's time, each class its expected packets;
    at most ``run.max_services``)
    and ``arrivals`` (open-loop packet arrivals: rate x duration, fewer when ``run.max_services`` ends the
    run first), ``seconds`` at :data:`SERVICES_PER_SECOND` and :data:`ARRIVALS_PER_SECOND`, and the
    source that brings most of it (``flow[0] 'cbr'``; '' when none stands out)."""

    services: float
    arrivals: float
    seconds: float
    source: str


def _times(s) -> list[tuple[float, ...]]:
    """Per-packet processing times at each resource, one tuple per packet size (mean costs for an
    exponential cost law, whose draws vary around them)."""
    if s.packet_sizes is None:
        return [tuple(s.cost)]
    return [tuple(c + b * z for c, b in zip(s.cost, s.per_byte)) for z in s.packet_sizes.sizes]


def _source(s, ts) -> tuple[int, float]:
    """(resources a packet visits, the smallest time a packet takes at its slowest resource): a
    source's packets leave at most one per that time."""
    visits = max(sum(1 for x in t if x > 0) for t in ts)
    slowest = min(max(t) for t in ts)
    return visits, slowest


def estimate(sc) -> Work:
    """The work of running the validated scenario ``sc`` (:class:`flows.scenario.Scenario`) to
    ``run.duration``; see :class:`Work`."""
    T = float(sc.run.duration)
    J = sc.n_resources
    min_j = [math.inf] * J
    per_source: list[tuple[str, float, float]] = []  # (name, services, arrivals)
    for i, f in enumerate(sc.flows):
        ts = _times(f)
        for t in ts:
            for j, x in enumerate(t):
                if x > 0:
                    min_j[j] = min(min_j[j], x)
        visits, slowest = _source(f, ts)
        span = max(T - f.start, 0.0)
        packets = span / slowest if slowest > 0 else 0.0
        arrivals = 0.0
        if f.open_loop:
            if f.arrival.law == "trace":
                pt = sc.packet_trace
                if pt is not None:
                    table, _ = sc.static_ids()
                    arrivals = float(((table[pt.flows] == i) & (pt.times <= T)).sum()) / f.count
            else:
                arrivals = f.offered_rate * span
            packets = min(packets, arrivals)
        elif f.packets > 0:
            packets = min(packets, float(f.packets))
        per_source.append((f"flow[{i}] {f.name!r}", f.count * packets * visits, f.count * arrivals))
    for k, c in enumerate(sc.classes):
        ts = _times(c)
        for t in ts:
            for j, x in enumerate(t):
                if x > 0:
                    min_j[j] = min(min_j[j], x)
        visits, _ = _source(c, ts)
        at = sc.arrival_trace
        if at is not None:
            keep = (at.classes == k) & (at.times <= T)
            packets = float(at.sizes[keep].sum())
        else:
            packets = c.rate * T * c.size_law.mean
        per_source.append((f"class[{k}] {c.name!r}", packets * visits, 0.0))
    by_resource = sum(T / m for m in min_j if m < math.inf)
    services = min(by_resource, sum(s for _, s, _ in per_source))
    arrivals = sum(a for _, _, a in per_source)
    cap = sc.run.max_services
    if cap > 0 and services > cap:
        # the run ends at its service limit: about that fraction of the duration (and of the arrivals)
        arrivals *= cap / services
        services = float(cap)
    seconds = services / SERVICES_PER_SECOND + arrivals / ARRIVALS_PER_SECOND
    # the source that brings most of the time (services capped like the whole)
    scale = services / max(sum(s for _, s, _ in per_source), 1e-300)
    scale_a = arrivals / max(sum(a for _, _, a in per_source), 1e-300)
    costs = [(s * scale / SERVICES_PER_SECOND + a * scale_a / ARRIVALS_PER_SECOND, name) for name, s, a in per_source]
    top = max(costs, default=(0.0, ""))
    source = top[1] if seconds > 0 and top[0] >= 0.5 * seconds else ""
    return Work(services=services, arrivals=arrivals, seconds=seconds, source=source)


def estimate_line(sc, what: str = "this run", runs: int = 1) -> str | None:
    """The line said before a long run (``runs`` runs of ``sc``: the scorecard's schedulers), or None
    when the estimate is below :data:`SAY_AFTER` seconds."""
    w = estimate(sc)
    total = w.seconds * runs
    if not total > SAY_AFTER:
        return None
    who = f" ({w.source})" if w.source else ""
    parts = []
    if w.arrivals / ARRIVALS_PER_SECOND >= w.services / SERVICES_PER_SECOND:
        parts.append(f"about {count_text(w.arrivals)} packet arrivals{who}")
        if w.services / SERVICES_PER_SECOND >= 0.1 * w.seconds:
            parts.append(f"{count_text(w.services)} services")
    else:
        parts.append(f"about {count_text(w.services)} packet services{who}")
        if w.arrivals / ARRIVALS_PER_SECOND >= 0.1 * w.seconds:
            parts.append(f"{count_text(w.arrivals)} packet arrivals")
    each = " and ".join(parts)
    if runs > 1:
        return f"{what}: {runs} runs of {each} each, expect about {duration_text(total)} in all; Ctrl-C stops it"
    return f"{what}: {each}, expect about {duration_text(total)}; Ctrl-C stops it"
