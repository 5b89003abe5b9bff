"""The typed wrapper around the numba engine: validate, convert, run, check, tabulate.

:func:`simulate` is the one entry point: it turns a validated
:class:`flows.Scenario` into contiguous float64/int64 arrays, opens the
scenario's flow-arrival stream (:class:`flows.traffic.ArrivalStream`), runs
:func:`router.engine.simulate_kernel`, checks conservation (admitted = served
+ in system, per resource and for the router) and returns a flat
:class:`RunResult` of counts and raw batch sums (:mod:`analysis.run_report` turns
them into gamma and intervals: the runner does no statistics).

Random streams: the spawn tree of ``SeedSequence(seed)`` is documented in
:mod:`flows.traffic` (child 0 and its three children: inter-arrival times,
classes, sizes; child 1: the key of the counter-based hash that draws
per-packet sizes).  None depends on the scheduler, so two schedulers run with
the same seed see exactly the same flows and packets (common random numbers).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mrfq.flows.errors import MrfqError
from mrfq.flows.scenario import Scenario
from mrfq.flows.traffic import CHUNK, ArrivalStream, PacketStream, aqm_key, cost_key, loss_key
from mrfq.fq.contract import increment_scale
from mrfq.fq.registry import at_ingress, resolve, used_resources
from mrfq.router import delays as _delays, rfb as _rfb
from mrfq.router.state import (
    AQM_CODEL, AQM_FAIRDROP, AQM_NONE, AQM_RED, POOL_LONGEST, POOL_TAIL, REASONS, Buffers, Specs, Traffic, make_buffers,
)


class ConservationError(RuntimeError):
    """The engine lost or invented packets: a bug, never bad input."""


@dataclass(frozen=True)
class FlowResult:
    name: str
    rate: float            # packets per time unit after warm-up
    packets: int           # packets that left the router after warm-up
    completion_time: float | None  # finite flows: time from start to last departure
    drops: int = 0         # open-loop flows: packets from warm-up on (t >= warmup) dropped or pushed out
    offered: int = 0       # open-loop flows: packet arrivals from warm-up on (0 for a windowed flow)
    #: the drops by reason (router.state.REASONS: tail, pool, push_out, red, codel, fairdrop; docs/buffers.md)
    drops_by_reason: dict = field(default_factory=dict)
    #: a TCP flow's sender and receiver from warm-up on (docs/transport.md): goodput (packets delivered
    #: once per time unit), delivered, retransmissions, timeouts, random_losses, mean_cwnd, sends; None
    #: for other flows
    transport: dict | None = None


class FlowResults(Sequence):
    """The static flows' results, a read-only sequence of :class:`FlowResult` in flow-id order,
    kept as columns (10^6 flows cost three arrays, not 10^6 objects); ``rate``, ``packets`` and
    ``completion_time`` (nan: not completed) are the columns themselves."""

    def __init__(self, scenario: Scenario, rate: np.ndarray, packets: np.ndarray, completion_time: np.ndarray,
                 drops: np.ndarray | None = None, offered: np.ndarray | None = None,
                 drops_by_reason: np.ndarray | None = None, transport: dict | None = None):
        self._sc = scenario
        #: flow index -> its TCP counts (FlowResult.transport)
        self.transport = transport or {}
        self._spec, self._index = scenario.static_ids()
        self.rate, self.packets, self.completion_time = rate, packets, completion_time
        z = np.zeros(len(rate), np.int64)
        self.drops = drops if drops is not None else z
        self.offered = offered if offered is not None else z
        #: [flows, len(REASONS)] drops by reason (router.state.REASONS)
        self.drops_by_reason = drops_by_reason if drops_by_reason is not None else np.zeros((len(rate), len(REASONS)),
                                                                                            np.int64)

    def __len__(self) -> int:
        return len(self.rate)

    def name(self, i: int) -> str:
        f = self._sc.flows[int(self._spec[i])]
        return f.name if f.count == 1 else f"{f.name}.{int(self._index[i])}"

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        ct = float(self.completion_time[i])
        return FlowResult(name=self.name(i), rate=float(self.rate[i]), packets=int(self.packets[i]),
                          completion_time=None if math.isnan(ct) else ct, drops=int(self.drops[i]),
                          offered=int(self.offered[i]),
                          drops_by_reason=dict(zip(REASONS, (int(x) for x in self.drops_by_reason[i]))),
                          transport=self.transport.get(i))

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (FlowResults, list)) else NotImplemented

    def __repr__(self) -> str:
        return f"FlowResults({len(self)} flows)"


@dataclass(frozen=True)
class ClassResult:
    """Counts of one class; its gamma and interval come from the batch sums in
    :attr:`RunResult.batches` (:func:`analysis.run_report.class_estimates`)."""

    name: str
    completed: int         # flows completed over the whole run
    arrived: int
    mean_flows: float      # time-average number of flows in the system after warm-up
    throughput: float      # packets per time unit after warm-up


@dataclass(frozen=True)
class ResourceResult:
    name: str
    utilization: float
    services: int


@dataclass(frozen=True)
class Trace:
    """Service starts, in order: start, end, resource index, flow id, packet sequence (1-based)."""

    start: np.ndarray
    end: np.ndarray
    resource: np.ndarray
    flow: np.ndarray
    seq: np.ndarray

    def rows(self, flow_names=None, resource=None):
        """``[(start, flow, seq), ...]`` for one resource (or ``(start, resource, flow, seq)`` for all)."""
        out = []
        for i in range(len(self.start)):
            f = int(self.flow[i])
            name = flow_names[f] if flow_names is not None and f < len(flow_names) else f
            if resource is None:
                out.append((float(self.start[i]), int(self.resource[i]), name, int(self.seq[i])))
            elif self.resource[i] == resource:
                out.append((float(self.start[i]), name, int(self.seq[i])))
        return out


@dataclass(frozen=True)
class FlowArrivals:
    """The flow arrivals the engine consumed, in order: flow id, time, class index, packets."""

    flow: np.ndarray
    time: np.ndarray
    klass: np.ndarray
    packets: np.ndarray

    def rows(self) -> list[tuple[int, float, int, int]]:
        """``[(flow id, time, class, packets), ...]``"""
        return [(int(u), float(t), int(k), int(n)) for u, t, k, n in zip(self.flow, self.time, self.klass,
                                                                         self.packets)]


@dataclass(frozen=True)
class Departures:
    """The first ``trace`` departures from the router, in order: time, the packet's arrival at the
    router (its sojourn is the difference), flow id, packet sequence."""

    time: np.ndarray
    arrived: np.ndarray
    flow: np.ndarray
    seq: np.ndarray

    def rows(self) -> list[tuple[float, float, int, int]]:
        """``[(departure, sojourn, flow id, seq), ...]``"""
        return [(float(t), float(t - a), int(u), int(k)) for t, a, u, k in zip(self.time, self.arrived, self.flow,
                                                                             self.seq)]


@dataclass(frozen=True, eq=False)
class DelayHistograms:
    """The run's delay histograms (router/delays.py), raw: :mod:`analysis.delay_stats` turns them into
    means with intervals and quantiles.  Rows: ``rows`` names (the static flows, or with more than
    ``router.delays.PER_FLOW_MAX`` of them the [[flow]] tables, as ``name.*`` when counted; then
    the classes); per row ``J + 1`` histograms: the wait at each resource, then the sojourn."""

    rows: list[str]
    per_flow: bool                 # static rows are flows (else [[flow]] tables)
    n_static_rows: int
    flow_row: np.ndarray           # [n_static] row of each static flow
    hist: np.ndarray               # [rows, J + 1, NB] counts
    dmax: np.ndarray               # [rows] largest sojourn (exact)
    dsum: np.ndarray               # [rows, B] sojourn sums per batch (by departure)
    dcnt: np.ndarray               # [rows, B] sojourn counts per batch
    base: int                      # bucket layout (router.delays.bucket_edges(base, NB))

    @property
    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        return _delays.bucket_edges(self.base, self.hist.shape[2])

    def __eq__(self, other) -> bool:
        """Equal rows, layout and every count, sum and maximum (bit for bit)."""
        if not isinstance(other, DelayHistograms):
            return NotImplemented
        return (self.rows, self.per_flow, self.n_static_rows, self.base) == \
            (other.rows, other.per_flow, other.n_static_rows, other.base) and all(
                np.array_equal(getattr(self, k), getattr(other, k))
                for k in ("flow_row", "hist", "dmax", "dsum", "dcnt"))

    __hash__ = None

    @property
    def nbytes(self) -> int:
        """Memory of the histograms and their sums (fixed for the run)."""
        return int(self.hist.nbytes + self.dmax.nbytes + self.dsum.nbytes + self.dcnt.nbytes)


@dataclass(frozen=True)
class RelativeFairness:
    """The relative fairness bound the run reached (router/rfb.py): the largest ``|S_i/w_i - S_j/w_j|``
    over every pair of static flows and every interval after warm-up on which both are backlogged,
    ``S`` the service at the flow's dominant resource ([DRFQ], MR3).  ``value`` is in units of
    ``unit``, the largest packet's dominant cost over its flow's weight (time units); ``raw`` in time
    units.  ``pair``: the two flows that reached it; ``flows``: the static flows covered.  When not
    computed, ``value`` is None and ``reason`` says why."""

    value: float | None
    raw: float | None = None
    unit: float | None = None
    pair: tuple[str, str] | None = None
    flows: int = 0
    reason: str | None = None

    def to_json(self) -> dict:
        return {"value": self.value, "raw": self.raw, "unit": self.unit,
                "pair": list(self.pair) if self.pair else None, "flows": self.flows, "reason": self.reason}


def relative_fairness(raw, n_static: int, n_classes: int, name_of, record_delays: bool,
                      record_fairness: bool = True) -> RelativeFairness:
    """The run's :class:`RelativeFairness` from the engine's (or the reference's) ``(largest value,
    pair i, pair j, unit, covered flow ids)``, or why none; ``name_of(i)``: static flow i's name."""
    if raw is None:
        if not record_delays:
            why = "not computed: recording off (record_delays=False)"
        elif not record_fairness:
            why = "not computed: recording off (mrfq run --no-rfb, simulate(..., record_fairness=False))"
        else:
            why = f"not computed: {n_static} static flow{'s' if n_static != 1 else ''} (it needs a pair)"
        return RelativeFairness(None, reason=why)
    best, i, j, unit, cov = raw
    notes = []
    if len(cov) < n_static:
        notes.append(f"over {len(cov)} of the {n_static:,} static flows (more than router.rfb.RFB_MAX = "
                     f"{_rfb.RFB_MAX}: the first of each [[flow]] table in turn)")
    if n_classes:
        notes.append("class flows not covered")
    if i < 0 or unit <= 0.0:
        return RelativeFairness(None, flows=len(cov), reason="not computed: no two static flows backlogged "
                                                             "together after warm-up")
    return RelativeFairness(best / unit, best, unit, (name_of(i), name_of(j)), len(cov),
                            "; ".join(notes) if notes else None)


@dataclass(frozen=True)
class ShareSeries:
    """Each static flow's dominant share in consecutive windows of width ``window`` from time 0
    (router/rfb.py): ``share[k, i]`` is the processing time flow i received at its dominant resource
    in ``[k window, (k + 1) window)`` over the window's width; only whole windows inside the run."""

    window: float
    flows: list[str]
    x: np.ndarray          # [windows + 1, flows] each flow's X = S / w at 0, window, 2 window, ...
    weights: np.ndarray    # [flows]

    @property
    def share(self) -> np.ndarray:
        return np.diff(self.x, axis=0) * self.weights[None, :] / self.window

    def write_csv(self, fh) -> int:
        """``window_start,window_end,flow,share`` to ``fh``, an open text file or a path (written
        atomically), one line per window and flow; returns the number of windows."""
        if isinstance(fh, (str, os.PathLike)):
            from mrfq.flows.cli_args import atomic_writer

            with atomic_writer(fh) as f:
                return self.write_csv(f)
        sh = self.share
        fh.write("window_start,window_end,flow,share\n")
        for k in range(sh.shape[0]):
            a, b = k * self.window, (k + 1) * self.window
            for i, name in enumerate(self.flows):
                fh.write(f"{a!r},{b!r},{name},{float(sh[k, i])!r}\n")
        return int(sh.shape[0])


def _share_series(sc, window, x, cov, specs, J) -> ShareSeries:
    """The :class:`ShareSeries` of the covered flows ``cov`` (flow ids) from the engine's samples."""
    w = np.asarray(_spec_arrays(specs, J).weight)[sc.static_spec()[cov]]
    return ShareSeries(window, _flow_names(sc, cov.tolist()), x, w)


def _flow_names(sc, ids) -> list[str]:
    """The names of the static flows ``ids`` (as Scenario.static_flow_names, without listing them all)."""
    table, index = sc.static_ids()
    fl = sc.flows
    return [fl[int(table[i])].name if fl[int(table[i])].count == 1 else f"{fl[int(table[i])].name}.{int(index[i])}"
            for i in ids]


def share_window_check(window: float, n_static: int, T: float, record_delays: bool) -> None:
    """The one-line error for a share series the run cannot give (router/rfb.py)."""
    if not (math.isfinite(window) and window > 0.0):
        raise MrfqError(f"share window = {window}: must be a positive number of time units")
    if window > T:
        raise MrfqError(f"share window = {window:g}: wider than the run ({T:g} time units), so no whole window; "
                        f"choose at most {T:g}")
    if not record_delays:
        raise MrfqError("share series: needs the recording on (record_delays=True)")
    if n_static < 2:
        raise MrfqError(f"share series: the scenario has {n_static} static flow{'s' if n_static != 1 else ''}; "
                        "it comes with the relative fairness bound, which needs two or more")
    n = n_static if n_static <= _rfb.RFB_MAX else _rfb.RFB_SUBSET
    if (_rfb.windows(T, window) + 1) * n > _rfb.SERIES_MAX:
        raise MrfqError(f"share window = {window}: {_rfb.windows(T, window):,} windows x {n} flows is more "
                        f"than {_rfb.SERIES_MAX:,} samples; choose a window of at least "
                        f"{T * n / _rfb.SERIES_MAX:.6g}")


@dataclass(frozen=True)
class RunResult:
    scenario: Scenario
    scheduler: str
    virtual_time: str
    seed: int
    t_end: float
    services: int
    flows: FlowResults
    classes: list[ClassResult]
    resources: list[ResourceResult]
    wall_seconds: float
    cpu_seconds: float
    compile_seconds: float
    flows_started: int
    max_active_flows: int
    trace: Trace | None = None
    batches: dict = field(default_factory=dict, repr=False)
    arrivals: FlowArrivals | None = None   # with ``trace``: the first ``trace`` flow arrivals
    #: the loop's services after its first ``timed_from`` (all of them with 0), their CPU and wall seconds
    loop_services: int = 0
    loop_cpu_seconds: float = 0.0
    loop_wall_seconds: float = 0.0
    #: bytes of the engine's arrays at the end of the run (flow table, heaps, packet tags, ...)
    state_bytes: int = 0
    delays: DelayHistograms | None = None
    departures: Departures | None = None  # with ``trace``: the first ``trace`` departures
    rfb: RelativeFairness | None = None   # the relative fairness bound reached (router/rfb.py)
    share_series: ShareSeries | None = None  # with ``share_window``: each static flow's dominant share per window
    cwnd_series: "CwndSeries | None" = None   # with ``cwnd_series``: every change of each TCP flow's window

    def to_json(self) -> dict:
        nan = lambda v: None if v is None or (isinstance(v, float) and math.isnan(v)) else v  # noqa: E731
        return {
            "scenario": self.scenario.name,
            "scheduler": self.scheduler,
            "virtual_time": self.virtual_time,
            "seed": self.seed,
            "duration": self.t_end,
            "warmup": self.scenario.run.warmup,
            "flows": [{"name": f.name, "rate": f.rate, "packets": f.packets,
                       "completion_time": nan(f.completion_time),
                       "drops": {"total": f.drops, "by_reason": f.drops_by_reason},
                       "drop_fraction": f.drops / f.offered if f.offered else None,
                       **({"goodput": f.transport["goodput"], "transport": f.transport} if f.transport else {})}
                      for f in self.flows],
            "classes": [{"name": c.name, "completed": c.completed, "arrived": c.arrived,
                         "mean_flows": nan(c.mean_flows), "throughput": nan(c.throughput)} for c in self.classes],
            "resources": [{"name": r.name, "utilization": r.utilization, "services": r.services}
                          for r in self.resources],
            "services": self.services,
            "flows_started": self.flows_started,
            "max_active_flows": self.max_active_flows,
            "wall_seconds": self.wall_seconds,
            "rfb": self.rfb.to_json() if self.rfb is not None else None,
        }


def first_resource(cost, per_byte, J: int, ingress: bool) -> int:
    """Where a flow's queue is (docs/buffers.md): resource 0 under ingress placement, else the first
    resource its packets cost time at."""
    if ingress:
        return 0
    pb = per_byte or (0.0,) * J
    return next(j for j in range(J) if cost[j] > 0.0 or pb[j] > 0.0)


def buffer_setup(sc: Scenario, ingress: bool) -> Buffers:
    """The open-loop flows' buffer management for the engine (router/buffers.py) from the scenario:
    per static flow its limits (packets, bytes), its first resource and RED's packet time (the
    router's ``packet_time``, else the flow's largest mean per-packet time); the shared pool; the AQM
    with its own key (flows.traffic.aqm_key)."""
    J, nF = sc.n_resources, sc.n_static
    spec = sc.static_spec()
    a = sc.router.aqm_params()
    tables = sc.flows
    lim = np.array([math.inf if f.buffer is None else float(f.buffer) for f in tables])[spec]
    lim_bytes = np.array([math.inf if f.buffer_bytes is None else f.buffer_bytes for f in tables])[spec]
    j0 = np.array([first_resource(f.cost, f.per_byte, J, ingress) for f in tables], dtype=np.float64)[spec]
    pt = np.array([a.get("packet_time") or max(f.mean_cost()) for f in tables])[spec]
    r = sc.router
    pool = (math.inf if r.shared_buffer is None else float(r.shared_buffer),
            math.inf if r.shared_buffer_bytes is None else float(r.shared_buffer_bytes),
            POOL_LONGEST if r.shared_buffer_policy == "longest" else POOL_TAIL)
    pol = a.get("policy")
    if pol == "red":
        aqm = (AQM_RED, aqm_key(sc.run.seed), (a["min_th"], a["max_th"], a["max_p"], a["weight"], float(a["gentle"])))
    elif pol == "codel":
        aqm = (AQM_CODEL, aqm_key(sc.run.seed), (a["target"], a["interval"], float(a["maxpacket"])))
    elif pol == "fairdrop":
        aqm = (AQM_FAIRDROP, aqm_key(sc.run.seed), (a["theta"],))
    else:
        aqm = (AQM_NONE, 0, ())
    weight = np.array([f.weight for f in tables])[spec]
    threshold = None
    if pol == "fairdrop":  # threshold packets of the flow's mean work at each resource
        threshold = a["threshold"] * np.array([f.mean_cost() for f in tables], dtype=np.float64).reshape(-1, J)[spec]
    ecn = np.array([1.0 if f.tcp and f.transport.ecn else 0.0 for f in tables])[spec]
    return make_buffers(nF, J, lim=lim, lim_bytes=lim_bytes, j0=j0, red_pt=pt, pool=pool, aqm=aqm, fd_weight=weight,
                        fd_threshold=threshold, ecn=ecn)


@dataclass(frozen=True)
class CwndSeries:
    """Every change of each TCP flow's window (docs/transport.md): time, flow id, cwnd, ssthresh (packets),
    in time order (the flow's window after the event at that time)."""

    time: np.ndarray
    flow: np.ndarray
    cwnd: np.ndarray
    ssthresh: np.ndarray

    def sampled(self, width: float, t_end: float, flows) -> "CwndSeries":
        """Each flow's window at 0, width, 2 width, ... up to t_end (the value in force there), for the
        flows ``flows`` (ids), flow by flow."""
        ts, fs, cs, ss = [], [], [], []
        grid = np.arange(0.0, t_end + width * 0.5, width)
        for f in flows:
            m = self.flow == f
            t, c, s = self.time[m], self.cwnd[m], self.ssthresh[m]
            i = np.searchsorted(t, grid, side="right") - 1
            ok = i >= 0
            ts.append(grid[ok])
            fs.append(np.full(int(ok.sum()), f, np.int64))
            cs.append(c[i[ok]])
            ss.append(s[i[ok]])
        cat = lambda x, d: np.concatenate(x) if x else np.zeros(0, d)  # noqa: E731
        return CwndSeries(cat(ts, float), cat(fs, np.int64), cat(cs, float), cat(ss, float))


def _cwnd_series(tc) -> CwndSeries:
    from mrfq.router import transport as T
    n = int(tc.g[T.G_LOG_N])
    rows = tc.log[:n * T.LOG_WIDTH].reshape(n, T.LOG_WIDTH)
    return CwndSeries(rows[:, 0].copy(), rows[:, 1].astype(np.int64), rows[:, 2].copy(), rows[:, 3].copy())


def tcp_report(tc, rows, t_end: float, span: float, marks) -> dict:
    """Each TCP flow's counts from warm-up on (FlowResult.transport), by static flow id."""
    from mrfq.router import transport as T
    T.finish_area(tc, t_end)
    out = {}
    for k, s in enumerate(rows):
        i, f = tc.i[k * T.NTI:(k + 1) * T.NTI], tc.f[k * T.NTF:(k + 1) * T.NTF]
        out[int(s)] = {"goodput": int(i[T.K_GOODPUT]) / span if span > 0 else math.nan,
                       "delivered": int(i[T.K_GOODPUT]), "retransmissions": int(i[T.K_RETX]),
                       "timeouts": int(i[T.K_TIMEOUTS]), "random_losses": int(i[T.K_LOST]),
                       "mean_cwnd": float(f[T.T_AREA]) / span if span > 0 else math.nan, "sends": int(i[T.K_SENDS]),
                       "marks": int(marks[s])}
    return out


def _spec_arrays(specs, J, module=None, opt=()):
    """The Specs arrays of the scenario's [[flow]] tables then classes; ``module`` and ``opt``, the
    scheduler's, give each row's increment factor (fq.contract.increment_scale; without: 1)."""
    S = len(specs)
    Z = max([1] + [len(s.packet_sizes.sizes) for s in specs if s.packet_sizes is not None])
    cost = np.zeros((max(S, 1), J))
    pb = np.zeros((max(S, 1), J))
    sizes = np.zeros((max(S, 1), Z))
    cdf = np.ones((max(S, 1), Z))
    nz = np.ones(max(S, 1), np.int64)
    w = np.ones(max(S, 1))
    law = np.zeros(max(S, 1), np.int64)
    scale = np.ones(max(S, 1))
    for i, s in enumerate(specs):
        cost[i] = s.cost
        w[i] = s.weight
        if module is not None:
            scale[i] = increment_scale(module, opt, s.weight, getattr(s, "reserved_rate", None))
        law[i] = s.cost_law == "exponential"
        if s.packet_sizes is None and s.per_byte is not None:  # sizes from the packet trace
            pb[i] = s.per_byte
            nz[i] = 0
        elif s.packet_sizes is not None:
            pb[i] = s.per_byte
            n = len(s.packet_sizes.sizes)
            nz[i] = n
            sizes[i, :n] = s.packet_sizes.sizes
            cdf[i, :n] = np.cumsum(s.packet_sizes.probs)
            cdf[i, n - 1] = 1.0
    return Specs(cost=cost, per_byte=pb, sizes=sizes, cdf=cdf, n_sizes=nz, weight=w, law=law, scale=scale)


def simulate(scenario: Scenario, *, scheduler: str | None = None, virtual_time: str | None = None,
             seed: int | None = None, duration: float | None = None, trace: int = 0,
             max_services: int | None = None, specialise: bool = True, arrival_chunk: int = CHUNK,
             packet_costs: bool | None = None, timed_from: int = 0, record_delays: bool = True,
             record_fairness: bool = True, share_window: float = 0.0, cwnd_series: bool = False) -> RunResult:
    """Run one scenario through the numba engine.

    Keyword overrides replace the scenario's own settings (and are validated
    like them).  Under a ``scheduler`` override the scenario's options that the new
    scheduler does not declare are left unused (``fq.registry.resolve``).  ``trace`` bounds the number of service starts recorded.
    ``specialise=False`` runs the generic event loop even where the lean
    variant for default options applies (same results; for tests).  ``arrival_chunk``: flow
    arrivals handed to the engine per chunk (same results for any value; for tests).  With
    ``trace``, :attr:`RunResult.arrivals` lists the first ``trace`` flow arrivals consumed.
    ``packet_costs=True`` keeps costs per packet even when every flow's are constant (same
    results; for tests: the engine picks the per-flow layout then).  ``timed_from`` > 0 also times
    the loop alone after its first that many services (:attr:`RunResult.loop_cpu_seconds`; same
    results): ``timed_from=1`` leaves out the setup, as the C yardstick's clock does (router/bench.py).
    ``record_delays=False`` leaves the delay histograms empty and the relative fairness bound
    (:attr:`RunResult.rfb`, router/rfb.py) not computed; ``record_fairness=False`` skips the latter alone
    (the same services and results otherwise).  ``share_window > 0``: :attr:`RunResult.share_series`,
    each static flow's dominant share in windows of that width (2 to router.rfb.RFB_MAX static flows).
    With ``trace``, :attr:`RunResult.departures` lists the first ``trace`` departures from the router.
    ``cwnd_series``: :attr:`RunResult.cwnd_series`, every change of each TCP flow's window.
    """
    sc = scenario.with_overrides(scheduler=scheduler, virtual_time=virtual_time, seed=seed, duration=duration,
                                 max_services=max_services)
    if arrival_chunk < 1:
        raise MrfqError(f"arrival_chunk = {arrival_chunk}: must be >= 1 (flow arrivals per chunk)")
    if trace < 0:
        raise MrfqError(f"trace = {trace}: must be >= 0 (number of service starts to record)")
    if timed_from < 0:
        raise MrfqError(f"timed_from = {timed_from}: must be >= 0 (services before the timed part; 0 = time all)")

    full = sc
    sc, kept = sc.without_unused_resources()   # a resource nobody uses changes nothing (docs/schedulers.md)
    J = sc.n_resources
    N = sc.router.window
    # under a scheduler override, the options of the scenario's own scheduler do not apply
    overridden = scheduler is not None and scheduler != scenario.router.scheduler
    specs = list(sc.flows) + list(sc.classes)
    info, opt = resolve(sc.router, sc.resources, used=used_resources(specs, J), specs=specs,
                        foreign="ignore" if overridden else "refuse")
    nF = sc.n_static
    K = len(sc.classes)
    # per [[flow]] table, and the table of each static flow: at 10^6 flows of three counted tables
    # two arrays of 10^6 (ids by start, table by id), not four
    static_spec = sc.static_spec()
    ring0 = sc.first_ring
    table_start = np.array([f.start for f in sc.flows] or [0.0], dtype=np.float64)
    traffic = Traffic(
        table_start=table_start,
        table_packets=np.array([f.packets for f in sc.flows] or [0], dtype=np.int64),
        static_order=(np.argsort(table_start[static_spec], kind="stable") if len(set(f.start for f in sc.flows)) > 1
                      else np.arange(nF, dtype=np.int64)) if nF else np.zeros(1, np.int64),  # by (start, id)
        static_spec=static_spec if nF else np.zeros(1, np.int64),
        class_spec=np.arange(len(sc.flows), len(sc.flows) + max(K, 1), dtype=np.int64),
        # an open-loop flow's first packet ring (router.state.grow_ring doubles it as needed); 0: windowed
        table_buffer=np.array([min(f.buffer or ring0, ring0) if f.buffered else 0 for f in sc.flows] or [0],
                              dtype=np.int64),
        hist_row=np.zeros(1, np.int64),
    )
    per_flow = nF <= _delays.PER_FLOW_MAX
    if per_flow:
        hist_rows = (nF, np.arange(max(nF, 1), dtype=np.int64))
        row_names = sc.static_flow_names()
    else:
        hist_rows = (len(sc.flows), static_spec)
        row_names = [f.name if f.count == 1 else f"{f.name}.*" for f in sc.flows]
    min_cost = sc.min_packet_time()
    open_loop = any(f.open_loop for f in sc.flows)
    buffered = any(f.buffered for f in sc.flows)
    transport = None
    if any(f.tcp for f in sc.flows):
        rows = [i for i in range(nF) if sc.flows[int(static_spec[i])].tcp]
        transport = ([(sc.flows[int(static_spec[i])].transport, sc.flows[int(static_spec[i])].loss) for i in rows],
                     rows, [float(table_start[static_spec[i]]) for i in rows], loss_key(sc.run.seed))
    B = sc.run.batches
    T = sc.run.duration
    warmup = sc.run.warmup

    if share_window:
        share_window_check(float(share_window), nF, float(T), record_delays)
        if not record_fairness:
            raise MrfqError("share series: needs record_fairness=True (it comes from the same log)")

    from mrfq.router.engine import simulate_kernel

    w0 = time.perf_counter()
    c0 = time.process_time()
    out, (compile_seconds, compile_cpu) = simulate_kernel(
        info, opt, J, N, rtt=float(sc.router.rtt), T=float(T), warmup=float(warmup), B=B,
        max_services=sc.run.max_services, trace_cap=int(trace), specs=_spec_arrays(specs, J, info.module, opt), traffic=traffic,
        n_static=nF, K=K, arrivals=ArrivalStream(sc), cost_key=cost_key(sc.run.seed), specialise=specialise,
        chunk=int(arrival_chunk), packet_costs=packet_costs, timed_from=int(timed_from),
        packets=PacketStream(sc) if open_loop else None, hist_rows=hist_rows, min_cost=min_cost,
        record_delays=record_delays, record_fairness=record_fairness, share_window=float(share_window),
        ingress=at_ingress(sc.router, info.module, specs), stage_caps=sc.router.stage_caps(J),
        buffers=buffer_setup(sc, at_ingress(sc.router, info.module, specs)) if buffered else None,
        transport=transport, cwnd_log=bool(cwnd_series))
    cpu = time.process_time() - c0 - compile_cpu  # (a compilation's CPU, not its wall time: it may wait)
    wall = time.perf_counter() - w0 - compile_seconds
    t_end, services = out.t_end, out.services
    served_j, admitted_j, in_sys_j = out.served, out.admitted, out.in_system
    st_dep_post, st_done_t = out.static_departed, out.static_done_t
    area, dep_pk, done_pk, done_fct = out.area, out.departed, out.done_packets, out.done_time
    busy_post = out.busy_post

    for j in range(J):
        if admitted_j[j] != served_j[j] + in_sys_j[j] + out.dropped[j]:
            raise ConservationError(
                f"resource {sc.resources[j]!r}: admitted {admitted_j[j]} != served {served_j[j]} "
                f"+ in system {in_sys_j[j]} + dropped unserved {out.dropped[j]}")
    if out.packets_admitted != out.packets_departed + out.in_router + int(out.dropped.sum()):
        raise ConservationError(f"router: admitted {out.packets_admitted} != departed {out.packets_departed} "
                                f"+ inside {out.in_router} + dropped inside {int(out.dropped.sum())}")
    if int(served_j.sum()) != services:
        raise ConservationError(f"services {services} != sum of per-resource services {served_j.sum()}")

    span = float(t_end) - warmup
    dep = st_dep_post[:nF].astype(np.int64)
    flows = FlowResults(sc, dep / span if span > 0 else np.full(nF, math.nan), dep,
                        st_done_t[:nF] - table_start[static_spec], out.drops[:nF], out.offered[:nF],
                        out.drops_by_reason[:nF],
                        tcp_report(out.tcp, transport[1], float(t_end), span, out.marks) if transport is not None else None)
    hs = hist_rows[0]
    nrow = hs + K
    dh = DelayHistograms(rows=list(row_names) + [c.name for c in sc.classes], per_flow=per_flow, n_static_rows=hs,
                         flow_row=hist_rows[1][:nF], hist=out.hist[:nrow], dmax=out.dmax[:nrow],
                         dsum=out.dsum[:nrow], dcnt=out.dcnt[:nrow], base=out.hbase)
    classes = [ClassResult(
        name=c.name, completed=int(out.class_completed[k]), arrived=int(out.class_arrived[k]),
        mean_flows=float(area[k].sum()) / span if span > 0 else math.nan,
        throughput=float(dep_pk[k].sum()) / span if span > 0 else math.nan) for k, c in enumerate(sc.classes)]
    resources = [ResourceResult(name=r, utilization=float(busy_post[j]) / span if span > 0 else math.nan,
                                services=int(served_j[j])) for j, r in enumerate(sc.resources)]
    tr = Trace(out.trace_start, out.trace_end, out.trace_resource, out.trace_flow, out.trace_seq) if trace else None
    result = RunResult(
        scenario=sc, scheduler=sc.router.scheduler, virtual_time=sc.router.virtual_time, seed=sc.run.seed,
        t_end=float(t_end), services=int(services), flows=flows, classes=classes, resources=resources,
        wall_seconds=wall, cpu_seconds=cpu, compile_seconds=compile_seconds, flows_started=out.flows_started,
        max_active_flows=out.max_active_flows, trace=tr,
        arrivals=FlowArrivals(out.arrival_flow, out.arrival_time, out.arrival_class, out.arrival_packets)
        if trace else None,
        batches={"area": area[:K], "departed": dep_pk[:K], "done_n": out.done_n[:K], "done_packets": done_pk[:K],
                 "done_time": done_fct[:K]},
        loop_services=out.loop_services, loop_cpu_seconds=out.loop_cpu, loop_wall_seconds=out.loop_wall,
        state_bytes=out.state_bytes, delays=dh,
        departures=Departures(out.dep_time, out.dep_arrived, out.dep_flow, out.dep_seq) if trace else None,
        rfb=relative_fairness(out.rfb, nF, K, lambda i: _flow_names(sc, [i])[0], record_delays, record_fairness),
        share_series=_share_series(sc, float(share_window), out.share_x, out.rfb[4], specs, J)
        if out.share_x is not None else None,
        cwnd_series=_cwnd_series(out.tcp) if cwnd_series and out.tcp is not None else None,
    )
    return result if sc is full else restore_resources(result, full, kept)


def widen_histograms(hist: np.ndarray | None, J: int, kept) -> np.ndarray | None:
    """``[rows, len(kept) + 1, NB]`` delay histograms (the waits at the resources kept, then the
    sojourn) as ``[rows, J + 1, NB]``: a resource nobody uses gets empty histograms."""
    if hist is None:
        return None
    out = np.zeros((hist.shape[0], J + 1, hist.shape[2]), dtype=hist.dtype)
    out[:, list(kept)] = hist[:, :-1]
    out[:, J] = hist[:, -1]
    return out


def restore_resources(r: RunResult, full: Scenario, kept: tuple[int, ...]) -> RunResult:
    """The result of the scenario without its unused resources (:meth:`Scenario.without_unused_resources`)
    told in ``full``'s resources: ``kept[k]`` is the index in ``full`` of resource ``k``; the others
    report no service (utilisation 0) and empty wait histograms."""
    idle = [ResourceResult(name=name, utilization=0.0 if r.t_end > full.run.warmup else math.nan, services=0)
            for name in full.resources]
    for k, j in enumerate(kept):
        idle[j] = r.resources[k]
    index = np.asarray(kept, dtype=np.int64)
    tr = r.trace
    if tr is not None:
        tr = dataclasses.replace(tr, resource=index[tr.resource].astype(tr.resource.dtype))
    dh = r.delays
    if dh is not None:
        dh = dataclasses.replace(dh, hist=widen_histograms(dh.hist, full.n_resources, kept))
    fl = r.flows
    flows = FlowResults(full, fl.rate, fl.packets, fl.completion_time, fl.drops, fl.offered, fl.drops_by_reason,
                        fl.transport)
    return dataclasses.replace(r, scenario=full, resources=idle, trace=tr, delays=dh, flows=flows)

