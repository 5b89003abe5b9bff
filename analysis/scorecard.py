"""The scorecard: every scheduler on the same packets, side by side.

:func:`scorecard` runs one scenario under each scheduler with the scenario's seed, so every
scheduler sees exactly the same flows and packets (common random numbers: the arrivals are drawn
before any scheduler sees them, :mod:`flows.traffic`).  Per scheduler and ``[[flow]]`` table (a
counted table's flows merged, as ``mrfq run``'s delay table does):

* ``rate``: packets per time unit after warm-up (per flow: a counted table's mean), and
  ``dominant_rate`` = ``rate`` x the largest mean per-packet time: the share of its dominant
  resource's time the flow got;
* ``share``: the flow's DRF rate in the fluid model (:func:`analysis.allocations.drf_demands`)
  with every static flow present and each open-loop flow's *demand* (its mean arrival rate) as a
  cap: an open-loop flow's share is ``min(demand, DRF share)``, and the greedy (windowed) flows
  share what the open-loop flows leave; ``dominant_share`` is ``share`` x the largest mean
  per-packet time;
* the sojourn's ``mean`` with its batch-means interval, ``p99`` and ``max``
  (:mod:`analysis.delay_stats`), and ``packet_time``, the flow's own time through the router with
  no wait (the sum of its mean per-packet times): ``p99 / packet_time`` says how many of its own
  packet times its 99th-percentile delay is;
* ``drops`` and ``drop_fraction`` of an open-loop flow;

and per scheduler the relative fairness bound the run reached (``rfb``, in units of the largest
packet's dominant cost over its weight, and ``rfb_pair``, the two flows that reached it:
:mod:`router.rfb`; ``rfb_note`` says why when it is not computed) and the engine's CPU cost per service (``cpu_ns_per_service``: the event loop's CPU
time after its first service over the services it made, as ``mrfq bench`` times it: setup and
compilation left out; a timing, so the one figure that differs between two runs with the same
seed).

With ``intervals`` (edges ``t_0 < t_1 < ...``) each run also records its service trace up to
``t_last`` and every flow's share of its dominant resource's time in every interval (the service
it started there, cut to the interval) and the mean sojourn of its packets that left in it: the
transient after a flow starts, stops or returns.

Plot: :func:`analysis.plots.plot_delay_cdfs` takes :attr:`ScorecardResult.cdfs`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from mrfq.analysis import fairness_index as _fi
from mrfq.analysis.delay_stats import summary
from mrfq.router.state import REASONS
from mrfq.flows.errors import MrfqError

#: most service starts an ``intervals`` run may record (40 bytes each in memory)
MAX_INTERVAL_SERVICES = 10_000_000
#: most intervals
MAX_INTERVALS = 1000


@dataclass
class ScorecardResult:
    """``rows``: one dict per scheduler and [[flow]] table; ``schedulers``: one dict per scheduler
    (its services, CPU seconds and CPU ns per service); ``cdfs``: per scheduler and [[flow]] table,
    the sojourn's empirical distribution function at the upper edges of its non-empty histogram
    buckets (``delay``, ``fraction``); ``intervals``: with interval edges, one dict per scheduler,
    flow and interval; ``runs``: the :class:`router.run.RunResult` of every scheduler."""

    scenario: object
    seed: int
    rows: list[dict]
    schedulers: list[dict]
    cdfs: list[dict]
    intervals: list[dict] = field(default_factory=list)
    runs: dict = field(default_factory=dict, repr=False)
    #: with intervals, per scheduler and interval: Jain's index and the max/min ratio of the windowed
    #: flows' normalised dominant shares there (analysis.fairness_index)
    interval_fairness: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        sc = self.scenario
        return {"scenario": sc.name, "seed": self.seed, "duration": sc.run.duration, "warmup": sc.run.warmup,
                "schedule_at": sc.router.schedule_at,
                "stage_buffer": None if sc.router.stage_buffer is None else list(sc.router.stage_buffer),
                "schedulers": self.schedulers, "flows": self.rows, "intervals": self.intervals,
                "interval_fairness": self.interval_fairness}


def flow_demands(sc) -> list[float]:
    """Per [[flow]] table, each of its flows' demand in packets per time unit: ``inf`` for a windowed
    (greedy) flow, an open-loop law's mean rate, a trace-driven flow's rows per time unit over
    ``[warmup, duration]`` (per flow of the table)."""
    out = []
    table, _ = sc.static_ids()
    span = sc.run.duration - sc.run.warmup
    for k, f in enumerate(sc.flows):
        if not f.open_loop:
            out.append(math.inf)
        elif f.arrival.law == "trace":
            pt = sc.packet_trace
            rows = (table[pt.flows] == k) & (pt.times >= sc.run.warmup) & (pt.times <= sc.run.duration)
            out.append(float(rows.sum()) / f.count / span if span > 0 else math.nan)
        else:
            out.append(float(f.offered_rate))
    return out


def flow_mean_costs(sc) -> list[tuple[float, ...]]:
    """Per [[flow]] table, the mean per-packet time at each resource (a trace-driven flow with a size
    column: over the trace's sizes of its packets)."""
    table, _ = sc.static_ids()
    out = []
    for k, f in enumerate(sc.flows):
        pt = sc.packet_trace
        if (f.open_loop and f.arrival.law == "trace" and pt is not None and pt.sizes is not None
                and f.per_byte is not None and f.packet_sizes is None):
            z = pt.sizes[table[pt.flows] == k]
            m = float(z.mean()) if len(z) else 0.0
            out.append(tuple(c + b * m for c, b in zip(f.cost, f.per_byte)))
        else:
            out.append(tuple(float(x) for x in f.mean_cost()))
    return out


def drf_shares(sc) -> list[float]:
    """Per [[flow]] table, each of its flows' DRF rate (packets per time unit) with every static flow
    present and the open-loop flows capped at their demands (:func:`flow_demands`)."""
    from mrfq.analysis.allocations import drf_demands

    table = sc.static_spec()
    costs, dem = flow_mean_costs(sc), flow_demands(sc)
    w = [sc.flows[k].weight for k in table.tolist()]
    if any(math.isnan(dem[k]) for k in table.tolist()):
        return [math.nan] * len(sc.flows)
    phi = drf_demands([costs[k] for k in table.tolist()], [dem[k] for k in table.tolist()], w).phi
    return [float(phi[table == k].mean()) for k in range(len(sc.flows))]


def _check(sc, schedulers, intervals, option):
    from mrfq.fq.registry import SCHEDULERS

    if sc.classes:
        raise MrfqError(f"scenario {sc.name}: has [[class]] tables; the scorecard compares static [[flow]] tables "
                        "(mrfq compare sweeps classes)")
    if not sc.flows:
        raise MrfqError(f"scenario {sc.name}: no [[flow]] table to score")
    for s in schedulers:
        if s not in SCHEDULERS:
            raise MrfqError(f"{option}: unknown scheduler {s!r}; choose from {', '.join(SCHEDULERS)}")
    if len(set(schedulers)) != len(schedulers):
        raise MrfqError(f"{option}: a scheduler is given twice")
    if not schedulers:
        raise MrfqError(f"{option}: empty; choose from {', '.join(SCHEDULERS)}")
    if intervals is not None:
        e = [float(x) for x in intervals]
        if len(e) < 2 or len(e) > MAX_INTERVALS + 1:
            raise MrfqError(f"--intervals: {len(e)} edge{'s' if len(e) != 1 else ''}; give 2 to {MAX_INTERVALS + 1} increasing times")
        if any(not math.isfinite(x) or x < 0 for x in e) or any(b <= a for a, b in zip(e, e[1:])):
            raise MrfqError("--intervals: the edges must be increasing times >= 0")
        if e[-1] > sc.run.duration:
            raise MrfqError(f"--intervals: the last edge {e[-1]:g} is after the run's end {sc.run.duration:g}; "
                            "lower it or raise --duration")


def _trace_cap(sc, t_end: float) -> int:
    """An upper bound on the service starts before ``t_end``: each resource starts at most one
    service per smallest per-packet time (and one at t = 0)."""
    n = sc.n_resources * (math.floor(t_end / sc.min_packet_time()) + 2)
    if n > MAX_INTERVAL_SERVICES:
        raise MrfqError(f"--intervals: up to {n:,} service starts before {t_end:g} to record; at most "
                        f"{MAX_INTERVAL_SERVICES:,} (lower the last edge)")
    return int(n)


def scorecard(sc, schedulers, *, intervals=None, option: str = "--schedulers") -> ScorecardResult:
    """Run ``sc`` (a validated :class:`flows.scenario.Scenario`) under every scheduler of
    ``schedulers`` with its own seed; see the module docstring.  ``option`` names the list of
    schedulers in error messages."""
    from mrfq.flows.notice import labelled
    from mrfq.router.run import simulate

    schedulers = list(schedulers)
    _check(sc, schedulers, intervals, option)
    own = sc.router.scheduler
    for s in schedulers:  # every scheduler's scenario through the gate before the first run
        if s != own:
            sc.with_overrides(scheduler=s)
    cap = _trace_cap(sc, float(intervals[-1])) if intervals is not None else 0
    costs = flow_mean_costs(sc)
    dem = flow_demands(sc)
    shares = drf_shares(sc)
    table = sc.static_spec()
    conf = sc.run.confidence
    rows, sched_rows, cdfs, iv_rows, runs = [], [], [], [], {}
    from mrfq.analysis.ahead import Ahead  # (process pools: not imported for one run's report)

    # the schedulers' loop variants compiled ahead on the spare cores (analysis.ahead), a run of one service each
    jobs = [functools.partial(simulate, sc, scheduler=s, trace=cap, timed_from=1, max_services=1) for s in schedulers]
    with Ahead(jobs) as ahead:
        for n, s in enumerate(schedulers):
            ahead.claim(n, f"the {s} loop")
            with labelled(f"{s} ({n + 1} of {len(schedulers)})"):  # its progress line on a terminal (flows.notice)
                runs[s] = simulate(sc, scheduler=s, trace=cap, timed_from=1)
    for n, s in enumerate(schedulers):
        r = runs[s]
        sched_rows.append({"scheduler": s, "services": r.services, "cpu_seconds": r.loop_cpu_seconds,
                           "cpu_ns_per_service": (1e9 * r.loop_cpu_seconds / r.loop_services if r.loop_services
                                                  else math.nan),
                           "rfb": r.rfb.value, "rfb_pair": list(r.rfb.pair) if r.rfb.pair else None,
                           "rfb_note": r.rfb.reason,
                           **_fi.fairness_indices(_fi.normalised_dominant_shares(sc, r.flows.rate, costs))})
        dh = r.delays
        lo, hi = dh.edges
        J = dh.hist.shape[1] - 1
        for k, f in enumerate(sc.flows):
            ids = np.flatnonzero(table == k)
            hrows = np.unique(dh.flow_row[ids])
            d = summary(dh.hist[hrows, J].sum(axis=0), lo, hi, float(dh.dmax[hrows].max()),
                        dh.dsum[hrows].sum(axis=0), dh.dcnt[hrows].sum(axis=0), conf)
            name = f.name if f.count == 1 else f"{f.name}.*"
            dom = max(costs[k])
            rate = float(r.flows.rate[ids].mean())
            ptime = float(sum(costs[k]))
            drops, offered = int(r.flows.drops[ids].sum()), int(r.flows.offered[ids].sum())
            rows.append({
                "scheduler": s, "flow": name, "source": f.arrival.law if f.open_loop else (f"tcp-{f.transport.cc}" if f.tcp else "window"),
                "rate": rate, "dominant_rate": rate * dom,
                "demand": dem[k] if f.open_loop else None, "share": shares[k], "dominant_share": shares[k] * dom,
                "rate_over_share": rate / shares[k] if shares[k] > 0 else math.nan,
                "packets": d["packets"], "mean": d["mean"], "ci": d["ci"], "p50": d["p50"], "p99": d["p99"],
                "max": d["max"], "packet_time": ptime, "p99_over_packet_time": d["p99"] / ptime,
                "drops": {"total": drops, "by_reason": dict(zip(REASONS, (int(x) for x in
                                                                           r.flows.drops_by_reason[ids].sum(axis=0))))}
                if f.buffered else None,
                "drop_fraction": drops / offered if f.buffered and offered else None,
                **(_tcp_row(r, ids, shares[k]) if f.tcp else {}),
            })
            counts = dh.hist[hrows, J].sum(axis=0)
            nz = np.flatnonzero(counts)
            n = int(counts.sum())
            cdfs.append({"scheduler": s, "flow": name, "packet_time": ptime,
                         "delay": [float(min(hi[i], d["max"])) for i in nz.tolist()],
                         "fraction": (np.cumsum(counts[nz]) / n).tolist() if n else []})
        if intervals is not None:
            iv_rows.extend(_interval_rows(sc, r, s, [float(x) for x in intervals], costs))
    return ScorecardResult(scenario=sc, seed=sc.run.seed, rows=rows, schedulers=sched_rows, cdfs=cdfs,
                           intervals=iv_rows, runs=runs, interval_fairness=_fi.interval_indices(sc, iv_rows))


def _tcp_row(r, ids, share: float) -> dict:
    """A TCP [[flow]] table's goodput (per flow: a counted table's mean), its ratio to the DRF share, and
    its flows' retransmissions, timeouts and marks in all (docs/transport.md)."""
    t = [r.flows.transport[int(i)] for i in ids]
    g = sum(x["goodput"] for x in t) / len(t)
    return {"goodput": g, "goodput_over_share": g / share if share > 0 else math.nan,
            **{k: sum(x[k] for x in t) for k in ("retransmissions", "timeouts", "marks")}}


def _interval_rows(sc, r, s, edges, costs) -> list[dict]:
    """Per [[flow]] table and interval ``[t_i, t_i+1)`` (the last one closed, like the run's own counts
    that end at its last instant): the share of its dominant resource's time its flows were served
    there (summed over a counted table's flows) and the mean sojourn of the packets that left in it."""
    tr, dep = r.trace, r.departures
    if len(tr.start) >= _trace_cap(sc, edges[-1]) and tr.start[-1] < edges[-1]:
        raise RuntimeError(f"the service trace filled before {edges[-1]:g}: _trace_cap is not an upper bound")
    table = sc.static_spec()
    n_static = len(table)
    fl = tr.flow.astype(np.int64)
    static = fl < n_static
    spec_of = np.full(len(fl), -1, np.int64)
    spec_of[static] = table[fl[static]]
    dfl = dep.flow.astype(np.int64)
    dspec = np.full(len(dfl), -1, np.int64)
    dstatic = dfl < n_static
    dspec[dstatic] = table[dfl[dstatic]]
    soj = dep.time - dep.arrived
    out = []
    for k, f in enumerate(sc.flows):
        dom = int(np.argmax(costs[k]))
        m = (spec_of == k) & (tr.resource == dom)
        st, en = tr.start[m], tr.end[m]
        name = f.name if f.count == 1 else f"{f.name}.*"
        for a, b in zip(edges, edges[1:]):
            busy = float(np.clip(np.minimum(en, b) - np.maximum(st, a), 0.0, None).sum())
            dm = (dspec == k) & (dep.time >= a) & ((dep.time < b) if b < edges[-1] else (dep.time <= b))
            out.append({"scheduler": s, "flow": name, "start": a, "end": b,
                        "dominant_share": busy / (b - a), "departed": int(dm.sum()),
                        "mean_delay": float(soj[dm].mean()) if dm.any() else math.nan})
    return out


def _g(x, fmt: str = ".4g") -> str:
    return "-" if x is None or x != x else format(x, fmt)


def format_scorecard(res: ScorecardResult) -> str:
    """The text table: one line per scheduler and flow, then each scheduler's cost per service
    (and with intervals, each flow's dominant share per interval)."""
    sc = res.scenario
    ci_name = "95% CI" if sc.run.confidence == 0.95 else "CI"
    lines = [f"mrfq scorecard: scenario {sc.name}, seed {res.seed}, {len(res.schedulers)} schedulers on the same "
             f"packets, {sc.run.duration:g} time units (warm-up {sc.run.warmup:g}){sc.router.pipeline_text()}", "",
             f"{'scheduler':<14} {'flow':<12} {'source':<8} {'rate':>8} {'share':>8} {'rate/sh':>7} "
             f"{'mean':>8} {ci_name:>19} {'p99':>8} {'p99/pkt':>7} {'drops':>12}"]
    prev = None
    for r in res.rows:
        if prev is not None and r["scheduler"] != prev:
            lines.append("")
        prev = r["scheduler"]
        ci = f"[{_g(r['ci'][0])}, {_g(r['ci'][1])}]"
        drops = "-" if r["drops"] is None else (
            f"{r['drops']['total']:,} ({_g(100 * r['drop_fraction'], '.3g')}%)" if r["drop_fraction"] is not None
            else f"{r['drops']['total']:,}")
        lines.append(f"{r['scheduler']:<14} {r['flow']:<12} {r['source']:<8} {_g(r['rate'], '.4f'):>8} "
                     f"{_g(r['share'], '.4f'):>8} {_g(r['rate_over_share'], '.3f'):>7} {_g(r['mean']):>8} {ci:>19} "
                     f"{_g(r['p99']):>8} {_g(r['p99_over_packet_time'], '.3g'):>7} {drops:>12}")
    lines += ["",
              "rate = packets per time unit after warm-up (a counted table name.*: per flow); share = the flow's DRF "
              "rate with every flow present and each open-loop flow capped at its mean arrival rate "
              "(min(demand, DRF share)); mean, CI, p99 = sojourn in the router (time units; quantiles within "
              "0.8 %); p99/pkt = p99 over the flow's own packet time (the sum of its per-packet times); drops = "
              "open-loop or TCP packets from warm-up on dropped (their buffer full, the shared pool, the AQM)", ""]
    tcp = [r for r in res.rows if "goodput" in r]
    if tcp:
        lines.append(f"{'scheduler':<14} {'tcp flow':<12} {'source':<10} {'goodput':>8} {'share':>8} {'good/sh':>7} "
                     f"{'retx':>8} {'timeouts':>8} {'marks':>7}")
        prev = None
        for r in tcp:
            if prev is not None and r["scheduler"] != prev:
                lines.append("")
            prev = r["scheduler"]
            lines.append(f"{r['scheduler']:<14} {r['flow']:<12} {r['source']:<10} {_g(r['goodput'], '.4f'):>8} "
                         f"{_g(r['share'], '.4f'):>8} {_g(r['goodput_over_share'], '.3f'):>7} {r['retransmissions']:>8,} "
                         f"{r['timeouts']:>8,} {r['marks']:>7,}")
        lines += ["goodput = packets delivered once per time unit after warm-up (rate counts retransmitted copies "
                  "too); retx, timeouts, marks: from warm-up on (docs/transport.md)", ""]
    lines += [
              f"{'scheduler':<14} {'RFB (L)':>9} {'pair':<17} {'Jain':>7} {'max/min':>8} {'services':>12} {'CPU s':>8} "
              f"{'ns/service':>10}"]
    notes = []
    for s in res.schedulers:
        pair = " / ".join(s["rfb_pair"]) if s["rfb_pair"] else "-"
        if s["rfb"] is None and s["rfb_note"] and s["rfb_note"] not in notes:
            notes.append(s["rfb_note"])
        lines.append(f"{s['scheduler']:<14} {_g(s['rfb']):>9} {pair:<17} {_g(s['jain'], '.4f'):>7} "
                     f"{_fi.ratio_text(s):>8} {s['services']:>12,} {s['cpu_seconds']:>8.3f} "
                     f"{_g(s['cpu_ns_per_service'], '.0f'):>10}")
    lines.append("RFB = the relative fairness bound reached: the largest |S_i/w_i - S_j/w_j| over pairs of static flows "
                 "and intervals after warm-up on which both are backlogged (S: service at the flow's dominant resource), "
                 "in units L of the largest packet's dominant cost over its weight; pair = the flows that reached it"
                 + "".join(f"; RFB {n}" for n in notes))
    lines.append("Jain, max/min = Jain's fairness index and the largest over the smallest of the windowed flows' "
                 "normalised dominant shares (rate x dominant cost / weight; 1 and 1 at weighted DRF)")
    lines.append("ns/service = the event loop's CPU time over its services (setup and compilation left out; a timing, it varies "
                 "from run to run)")
    if res.intervals:
        lines += ["", f"{'scheduler':<14} {'flow':<12} {'interval':>21} {'dom. share':>10} {'departed':>9} "
                      f"{'mean delay':>10}"]
        prev = None
        last = max(r["end"] for r in res.intervals)
        for r in res.intervals:
            if prev is not None and (r["scheduler"], r["flow"]) != prev:
                lines.append("")
            prev = (r["scheduler"], r["flow"])
            iv = f"[{r['start']:g}, {r['end']:g}{']' if r['end'] == last else ')'}"
            lines.append(f"{r['scheduler']:<14} {r['flow']:<12} {iv:>21} {r['dominant_share']:>10.4f} "
                         f"{r['departed']:>9,} {_g(r['mean_delay']):>10}")
        lines.append("dom. share = the flow's service time at its dominant resource in the interval over the "
                     "interval's length; mean delay = mean sojourn of its packets that left in the interval")
        if res.interval_fairness:
            lines += ["", f"{'scheduler':<14} {'interval':>21} {'Jain':>7} {'max/min':>8}"]
            for r in res.interval_fairness:
                iv = f"[{r['start']:g}, {r['end']:g}{']' if r['end'] == last else ')'}"
                lines.append(f"{r['scheduler']:<14} {iv:>21} {_g(r['jain'], '.4f'):>7} {_fi.ratio_text(r):>8}")
            lines.append("Jain, max/min of the windowed flows' dominant shares in the interval over their weights")
    return "\n".join(lines)
