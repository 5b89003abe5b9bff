"""The scenario model: a middlebox, its scheduler and its traffic, validated once.

A scenario is read from TOML (stdlib :mod:`tomllib`) or built from keyword
arguments into frozen dataclasses.  All validation happens here, at one gate,
before any simulation state exists (as in Ciw's ``import_params``); the
engine's kernels never check their inputs.  Every error is a
:class:`~flows.errors.ScenarioError` whose message names the field and what is
allowed.

Units: time in arbitrary *time units*; costs are processing times per packet
at each resource (time units per packet); rates are per time unit.

TOML layout (see ``flows/presets/*.toml`` for complete examples)::

    resources = ["cpu", "link"]          # service order (series)
    [router]
    scheduler = "drfq"                   # a name from fq.SCHEDULERS
    window = 30                          # packets per flow inside the router
    rtt = 0.0                            # admission delay after a departure
    virtual_time = "started"             # drfq only: "started" [BR] or "in-service" [DRFQ]
    fq_resource = "link"                 # fq-single only: the fair-queued resource
    idle_reset = false                   # per-resource SFQ: reset V_j at the end of a busy period
    increment = "cost"                   # per-resource SFQ: "cost" (s_ij) or "packet" (1): a negative control
    [run]
    duration = 6000.0
    warmup = 1000.0
    seed = 1
    max_flows = 0                        # an overload run (class load >= 1): the explicit flow cap
    flow_order = "tables"                # static flow ids: "tables" (a counted table's flows in one
                                         # block) or "round-robin" (flow r of every table, then r + 1)
    [traffic]
    load = 0.8                           # optional: scale class rates from their `share`
    trace = "arrivals.csv"               # optional: arrivals from a CSV (time,class,packets), path
                                         # relative to this file; then no rate/share/size per class
    packet_trace = "packets.csv"         # optional: packet arrivals (time,flow[,size]) of the flows
                                         # with arrival = {law = "trace"}
    [[flow]]                             # a static flow
    name = "a"
    cost = [0.6667, 1.0]
    weight = 1.0
    start = 0.0
    packets = 0                          # 0 = backlogged forever
    count = 1                            # > 1: this many identical flows, named a.0, a.1, ...
    arrival = {law = "poisson", rate = 0.5}  # optional: an open-loop source instead of the window
                                         # (cbr: rate; onoff: rate, on, off; trace: the packet_trace)
    buffer = 1000                        # an open-loop flow's packets inside the router (tail drop)
    [[class]]                            # Poisson flow arrivals, geometric sizes
    name = "c1"
    cost = [0.25, 1.0]
    rate = 1.0e-5                        # or share = 8 with [traffic] load
    mean_packets = 20000                 # geometric sizes; or a law (flows/traffic.py):
    # size = {law = "pareto", alpha = 1.5, mean = 20000}   (also lognormal: sigma, mean;
    #                                                       deterministic: packets; geometric: mean)
    weight = 1.0

Per-packet costs can vary: with ``per_byte = [b_1, ..., b_J]`` and a packet
size distribution ``packet_sizes = [64, 1500]`` (bytes) with
``packet_size_probs = [0.5, 0.5]``, packet k costs ``cost_j + b_j * size_k``
at resource j, the linear per-packet + per-byte profile of middlebox functions
measured in [DRFQ] §2 (forwarding, IPsec, flow monitoring).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources as _res
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from mrfq.flows.traffic import (
    ARRIVAL_LAWS, SIZE_LAWS, ArrivalTrace, PacketLaw, PacketTrace, SizeLaw, read_arrival_trace, read_packet_trace,
)
from mrfq.flows.validate import check_keys as _check_keys
from mrfq.flows.validate import err as _err
from mrfq.flows.validate import number as _num
from mrfq.flows.validate import path_text
from mrfq.flows.validate import name_list as _names
from mrfq.flows.validate import quote as _q
from mrfq.flows.validate import read_toml
from mrfq.flows.validate import whole as _int

#: The scheduler's name and its own options (keys under [router] other than the
#: engine's) are checked against the registry (fq/registry.py: ``resolve``), the one
#: list of schedulers, when a run is set up: flows sits below fq and imports nothing of it.
VIRTUAL_TIMES = ("started", "in-service")
GAMMA_METHODS = ("little", "completions")
INCREMENTS = ("cost", "packet")
#: router.schedule_at: every resource orders its queue by the scheduler ([BR]), or the first only
SCHEDULE_AT = ("every", "ingress")
#: flow.cost_law / class.cost_law: a packet's cost at each resource is the given one ("fixed"), or
#: drawn independently per resource, exponential of that mean ("exponential")
COST_LAWS = ("fixed", "exponential")
#: with exponential costs, delays below this fraction of the smallest mean cost share the lowest
#: histogram bucket (router/delays.py)
EXP_FLOOR = 1e-3


#: Documented limits of the gate (documentation: "What mrfq refuses").  Each bounds what
#: the engine can hold (int64 counters, float64 times, memory) so that a scenario that
#: passes the gate never fails later with an overflow, a numpy allocation error or a hang.
MAX_RESOURCES = 32                # the loop is compiled once per number of resources
MAX_WINDOW = 4096                 # packets per flow inside the router (ring slots per flow row)
MAX_BATCHES = 100_000             # batch means per class
MAX_COUNT = 10**15                # flow.packets, run.max_services: far below 2**63
MAX_SEED = 2**62                  # run.seed (and seed + replication) stays a SQLite/int64 integer
MAX_TIME = 1e15                   # run.duration, run.warmup, flow.start, router.rtt
MAX_MAGNITUDE = 1e12              # costs, per-byte costs, packet sizes, weights, shares, mean sizes
MIN_WEIGHT = 1e-9                 # weights in [MIN_WEIGHT, MAX_MAGNITUDE]
REL_MIN_COST = 1e-12              # a positive per-packet time is >= REL_MIN_COST * the largest one
TIME_RESOLUTION = 1e-12           # the smallest positive per-packet time is >= this * run.duration
MAX_SERVICES_BOUND = 10**11       # runs that could need more services must set run.max_services
MAX_SPECS = 2_000_000            # [[flow]] plus [[class]] tables
MAX_STATIC_FLOWS = 10_000_000    # static flows, counting flow.count (the benchmark runs 10^6)
MAX_SIZES = 1000                  # entries of packet_sizes
MAX_FLOWS_CAP = 2**20             # run.max_flows (concurrent flows of an overload run)
MAX_TABLE_BYTES = 4 * 2**30       # the engine's initial flow table (static flows + 64 rows), as its growth cap
MAX_NAME = 100                    # characters in a flow, class, resource or scenario name
MAX_FILE_BYTES = 10 * 2**20       # a scenario file
MAX_BUFFER = 10**6                # flow.buffer: packets an open-loop flow holds inside the router ("unbounded": none)
DEFAULT_BUFFER = 1000             # flow.buffer when an open-loop flow gives none
RING0 = 1024                      # an open-loop flow's packet ring at first (it doubles as its packets need:
#                                   router.state.grow_ring), so memory follows the packets held, not the limit
OVERLOAD_WARN = 100.0             # an open-loop flow offering this many times its busiest resource: a warning
RING_RECORDS = 2**20              # the open-loop flows' first rings together (fewer records each with many flows)
RING_MIN = 16                     # the smallest first ring
MAX_BYTES = 1e15                  # flow.buffer_bytes, router.shared_buffer_bytes
MAX_POOL = 10**9                  # router.shared_buffer (packets)
POOL_POLICIES = ("tail", "longest")
#: router.aqm's policies and their parameters with defaults (None: the flow's own, see docs/buffers.md)
AQM_PARAMS: dict[str, dict[str, Any]] = {
    "red": {"min_th": 5.0, "max_th": 15.0, "max_p": 0.1, "weight": 0.002, "gentle": True, "packet_time": None},
    "codel": {"target": 5.0, "interval": 100.0, "maxpacket": 1},
    "fairdrop": {"threshold": 10.0, "theta": 1.0},
}
MAX_STAGE_BUFFER = 10**9          # router.stage_buffer: packets in front of a resource after the first
MIN_GAP = 1e-9                    # 1 / rate, on and off are >= MIN_GAP x the largest per-packet time


def _vec(where: str, v: Any, n: int, *, allow_none: bool = False) -> tuple[float, ...]:
    if not isinstance(v, (list, tuple)):
        raise _err(f"{where} = {_q(v)}: must be a list of {n} numbers (one per resource)")
    if len(v) != n:
        raise _err(f"{where} has {len(v)} entries: must have {n}, one per resource")
    return tuple(_num(f"{where}[{j}]", x, lo=0.0, hi=MAX_MAGNITUDE) for j, x in enumerate(v))


@dataclass(frozen=True)
class PacketSizes:
    """Discrete packet-size distribution in bytes (constant when one value)."""

    sizes: tuple[float, ...]
    probs: tuple[float, ...]

    @property
    def mean(self) -> float:
        return float(sum(s * p for s, p in zip(self.sizes, self.probs)))


def _packet_sizes(where: str, d: Mapping[str, Any], J: int) -> tuple[tuple[float, ...], PacketSizes | None]:
    per_byte = d.get("per_byte")
    sizes = d.get("packet_sizes")
    probs = d.get("packet_size_probs")
    if per_byte is None:
        if sizes is not None or probs is not None:
            raise _err(f"{where}: packet_sizes needs per_byte = [...] (cost per byte at each resource)")
        return (0.0,) * J, None
    pb = _vec(f"{where}.per_byte", per_byte, J)
    if sizes is None:
        raise _err(f"{where}: per_byte needs packet_sizes = [...] (bytes)")
    if not isinstance(sizes, (list, tuple)) or not sizes or len(sizes) > MAX_SIZES:
        raise _err(f"{where}.packet_sizes = {_q(sizes)}: must be a non-empty list of at most {MAX_SIZES} "
                   "sizes in bytes")
    sz = tuple(_num(f"{where}.packet_sizes[{i}]", s, lo=0.0, hi=MAX_MAGNITUDE) for i, s in enumerate(sizes))
    if probs is None:
        pr = tuple(1.0 / len(sz) for _ in sz)
    else:
        if not isinstance(probs, (list, tuple)) or len(probs) != len(sz):
            raise _err(f"{where}.packet_size_probs: must be a list of {len(sz)} probabilities, one per size")
        pr = tuple(_num(f"{where}.packet_size_probs[{i}]", p, lo=0.0, hi=1.0) for i, p in enumerate(probs))
        tot = sum(pr)
        if not abs(tot - 1.0) < 1e-9:
            raise _err(f"{where}.packet_size_probs sum to {tot:g}: must sum to 1")
    return pb, PacketSizes(sz, pr)


#: transport.cc: the congestion controls a TCP flow may use
CONGESTION_CONTROLS = ("reno", "cubic")
MAX_TCP_WINDOW = 1 << 16          # transport.max_window, transport.initial_window (packets)


@dataclass(frozen=True)
class Transport:
    """A static flow's TCP-like sender (docs/transport.md): it sends while its packets in flight are
    below its congestion window; each packet's ACK reaches it ``rtt`` after the packet leaves the
    router.  ``cc``: "reno" (RFC 5681, NewReno recovery RFC 6582) or "cubic" (RFC 9438); ``rtt``: the
    round-trip time outside the router (time units); ``initial_window`` (packets); ``ecn``: an AQM
    marks its packets instead of dropping them; ``min_rto``: the retransmission timeout's floor (RFC
    6298; None: twice ``rtt``); ``max_window``: the receiver's window (packets), the most in flight;
    ``cubic_c``: CUBIC's C, packets per time unit cubed (RFC 9438's 0.4 for a time unit of 1 s)."""

    rtt: float
    cc: str = "reno"
    initial_window: int = 10
    ecn: bool = False
    min_rto: float | None = None
    max_window: int = 1000
    cubic_c: float = 0.4

    @property
    def rto_floor(self) -> float:
        return 2.0 * self.rtt if self.min_rto is None else self.min_rto


@dataclass(frozen=True)
class FlowSpec:
    """A static flow: starts at ``start`` and sends ``packets`` (0 = backlogged forever)."""

    name: str
    cost: tuple[float, ...]
    weight: float = 1.0
    start: float = 0.0
    packets: int = 0
    per_byte: tuple[float, ...] | None = None
    packet_sizes: PacketSizes | None = None
    count: int = 1         # this many identical flows (``name.0``, ``name.1``, ... when > 1)
    #: open-loop source (None: a windowed greedy flow, the default) and its buffer (packets inside the router)
    arrival: PacketLaw | None = None
    buffer: int | None = 0  # None: unbounded
    cost_law: str = "fixed"
    #: an open-loop flow's limit in bytes (None: none)
    buffer_bytes: float | None = None
    #: an open-loop flow's token-bucket shaper (rate, burst): packets leave the source no faster
    #: (flows.traffic.TokenBucket); None: none
    shaper: tuple[float, float] | None = None
    #: a TCP-like sender (flows.scenario.Transport; docs/transport.md), or None: a windowed flow or an
    #: open-loop source
    transport: "Transport | None" = None
    #: each packet of a TCP flow lost on its way to the router with this probability (validation only)
    loss: float = 0.0
    #: the share of the fair-queued resource's time the flow reserves (key ``rate``: virtual-clock,
    #: wf2q-plus; fq.contract ``increment_scale``), or None: its weight's share
    reserved_rate: float | None = None

    def mean_cost(self) -> tuple[float, ...]:
        return _mean_cost(self.cost, self.per_byte, self.packet_sizes)

    @property
    def open_loop(self) -> bool:
        return self.arrival is not None

    @property
    def tcp(self) -> bool:
        """A closed-loop TCP-like flow (``transport = {...}``)."""
        return self.transport is not None

    @property
    def buffered(self) -> bool:
        """Its packets pass the buffer management (router/buffers.py): an open-loop source or a TCP flow."""
        return self.arrival is not None or self.transport is not None

    @property
    def offered_rate(self) -> float:
        """An open-loop flow's long-run packets per time unit into the router: its source's mean rate,
        at most its shaper's rate (nan for a trace)."""
        r = self.arrival.mean_rate
        return r if self.shaper is None else min(r, self.shaper[0])

    def flow_names(self) -> list[str]:
        return [self.name] if self.count == 1 else [f"{self.name}.{i}" for i in range(self.count)]


@dataclass(frozen=True)
class ClassSpec:
    """A traffic class: Poisson flow arrivals of ``rate``, sizes of mean ``mean_packets``.

    ``size`` is the flow-size law (:class:`flows.traffic.SizeLaw`); ``None`` means geometric of
    mean ``mean_packets``, the law the flow-level Markov model assumes.  With a non-geometric law
    ``mean_packets`` is that law's mean.
    """

    name: str
    cost: tuple[float, ...]
    rate: float = 0.0
    mean_packets: float = 20000.0
    weight: float = 1.0
    share: float | None = None
    per_byte: tuple[float, ...] | None = None
    packet_sizes: PacketSizes | None = None
    size: SizeLaw | None = None
    cost_law: str = "fixed"

    def mean_cost(self) -> tuple[float, ...]:
        return _mean_cost(self.cost, self.per_byte, self.packet_sizes)

    @property
    def size_law(self) -> SizeLaw:
        """The flow-size law (geometric of mean ``mean_packets`` unless ``size`` says otherwise)."""
        return self.size if self.size is not None else SizeLaw("geometric", self.mean_packets)


def _check_positive(where: str, cost, per_byte, ps) -> None:
    """Every packet must take time somewhere (or a backlogged flow would loop forever at one
    instant), and all packets of a flow must visit the same resources: a packet that skips a
    resource its predecessor uses could overtake it, which the window model (packet k + N
    enters when packet k leaves) and per-flow FIFO order at each resource exclude."""
    sizes = ps.sizes if ps is not None else (0.0,)
    pb = per_byte if ps is not None else (0.0,) * len(cost)
    visits = None
    for z in sizes:
        s = [c + b * z for c, b in zip(cost, pb)]
        if max(s) <= 0:
            extra = f" for packet size {z:g}" if ps is not None else ""
            raise _err(f"{where}.cost = {list(cost)}: every packet needs a positive processing time at "
                       f"some resource{extra}")
        v = tuple(x > 0 for x in s)
        if not all(math.isfinite(x) for x in s):
            raise _err(f"{where}.per_byte: cost + per_byte x size overflows for packet size {z:g}")
        if visits is not None and v != visits:
            raise _err(f"{where}.packet_sizes: packets of size {z:g} and {sizes[0]:g} would visit different "
                       "resources (a zero cost somewhere); give every resource either a positive cost or a "
                       "zero cost for all packet sizes")
        visits = v


def _mean_cost(cost, per_byte, ps) -> tuple[float, ...]:
    if ps is None or per_byte is None:
        return tuple(cost)
    m = ps.mean
    return tuple(c + b * m for c, b in zip(cost, per_byte))


@dataclass(frozen=True)
class RouterConfig:
    scheduler: str = "drfq"
    window: int = 30
    rtt: float = 0.0
    virtual_time: str = "started"
    fq_resource: str | None = None
    idle_reset: bool = False
    increment: str = "cost"
    #: scheduler-specific options (``router.<key>``), as (key, value) pairs; checked by fq.registry.resolve
    options: tuple[tuple[str, Any], ...] = ()
    #: where the scheduler orders packets: at every resource, or at the first only (docs/middlebox.md)
    schedule_at: str = "every"
    #: the stage buffer in front of each resource after the first (packets), or None: unbounded
    stage_buffer: tuple[int | None, ...] | None = None
    #: the open-loop flows' shared buffer pool: packets, bytes (None: none) and what a full pool drops
    #: (docs/buffers.md)
    shared_buffer: int | None = None
    shared_buffer_bytes: float | None = None
    shared_buffer_policy: str = "tail"
    #: active queue management of the open-loop flows' queues: (("policy", name), (parameter, value), ...)
    #: with every parameter given or defaulted, or None (docs/buffers.md)
    aqm: tuple[tuple[str, Any], ...] | None = None

    def aqm_params(self) -> dict[str, Any]:
        """``router.aqm`` as a dict (empty: none)."""
        return dict(self.aqm or ())

    def pipeline_text(self) -> str:
        """``""`` for the router of [BR], else how the scheduler sits and the stage buffers, for
        report headings (``", scheduled at ingress, stage buffer 64"``)."""
        out = ", scheduled at ingress" if self.schedule_at == "ingress" else ""
        if self.stage_buffer is not None:
            b = ["unbounded" if x is None else str(x) for x in self.stage_buffer]
            out += f", stage buffer {b[0]}" if len(set(b)) == 1 else f", stage buffers {'/'.join(b)}"
        return out

    def stage_caps(self, J: int) -> tuple[float, ...] | None:
        """The stage buffer in front of each resource 1..J-1 (``inf``: unbounded), or None when
        every one is unbounded (the router of [BR])."""
        if self.stage_buffer is None:
            return None
        return tuple(math.inf if b is None else float(b) for b in self.stage_buffer)


@dataclass(frozen=True)
class RunConfig:
    duration: float = 6000.0
    warmup: float = 0.0
    seed: int = 1
    batches: int = 20
    confidence: float = 0.95
    gamma_method: str = "little"
    max_services: int = 0
    max_flows: int = 0     # > 0: an explicit cap on flows at once (required for an overload run)
    flow_order: str = "tables"  # static flow ids: by table, or "round-robin" over the tables (FLOW_ORDERS)


@dataclass(frozen=True)
class Scenario:
    """A validated scenario.  Build with :func:`load_scenario`, :func:`load_preset` or :func:`from_dict`."""

    resources: tuple[str, ...]
    router: RouterConfig = field(default_factory=RouterConfig)
    run: RunConfig = field(default_factory=RunConfig)
    flows: tuple[FlowSpec, ...] = ()
    classes: tuple[ClassSpec, ...] = ()
    load: float | None = None
    name: str = "scenario"
    arrival_trace: ArrivalTrace | None = None
    #: packet arrivals of the flows with ``arrival = {law = "trace"}`` (``[traffic] packet_trace``)
    packet_trace: PacketTrace | None = None

    def min_packet_time(self) -> float:
        """The smallest positive per-packet time at any resource (every packet size's, a packet
        trace's sizes included): the delay histograms' scale (router/delays.py)."""
        specs = list(self.flows) + list(self.classes)
        return min(x * (EXP_FLOOR if s.cost_law == "exponential" else 1.0) for i, s in enumerate(specs)
                   for t in _packet_times(s) + (trace_packet_times(self, i) if i < len(self.flows) else [])
                   for x in t if x > 0.0)

    def overload_warnings(self) -> list[str]:
        """One line per open-loop [[flow]] table whose flows each offer at least OVERLOAD_WARN times what
        their busiest resource can serve (arrival rate x mean cost there): nearly all of its packets are
        dropped, and the run spends its time on drops."""
        out = []
        for i, f in enumerate(self.flows):
            if not f.open_loop or f.arrival.law == "trace":
                continue
            cost = f.mean_cost()
            j = max(range(len(cost)), key=lambda k: cost[k])
            offered = f.offered_rate * cost[j]
            if offered >= OVERLOAD_WARN:
                out.append(f"flow[{i}] {f.name!r}: offers {offered:.3g} times what {self.resources[j]!r} can serve "
                           f"(arrival rate {f.offered_rate:g} x cost {cost[j]:g}); nearly every packet is "
                           "dropped, and the run spends its time on the drops")
        return out

    @property
    def first_ring(self) -> int:
        """The packet ring an open-loop flow starts with, at most (its ``buffer`` when smaller): RING0, or
        with many open-loop flows the power of two that keeps their first rings within RING_RECORDS
        records together (at least RING_MIN; each ring doubles as its packets need)."""
        n_open = sum(f.count for f in self.flows if f.open_loop)
        ring = RING0
        while ring > RING_MIN and ring * n_open > RING_RECORDS:
            ring //= 2
        return ring

    @property
    def max_buffer(self) -> int:
        """The largest packet ring an open-loop flow starts with (0: none): its ``buffer``, at most
        :attr:`first_ring` (the ring grows with the packets held)."""
        r0 = self.first_ring
        return max([min(f.buffer or r0, r0) for f in self.flows if f.open_loop] or [0])

    @property
    def geometric_sizes(self) -> bool:
        """True when every class's flows are Poisson arrivals of geometric sizes: the assumption
        of the flow-level Markov model ([BR] §4), hence of ``mrfq fluid`` and ``mrfq compare``'s
        fluid values.  (Under processor sharing on one resource gamma is insensitive to the size
        law; for the multi-resource allocations that is not guaranteed.)"""
        return self.arrival_trace is None and all(c.size is None for c in self.classes)

    # ---- derived quantities -------------------------------------------------
    @property
    def n_resources(self) -> int:
        return len(self.resources)

    @property
    def n_static(self) -> int:
        """Static flows, each [[flow]] table counted ``count`` times."""
        return sum(f.count for f in self.flows)

    def static_ids(self) -> tuple[np.ndarray, np.ndarray]:
        """``(table, index)``, each ``[n_static]`` int64: for every static flow id, its [[flow]] table
        (index in ``flows``) and its index among that table's ``count`` flows.  ``run.flow_order``
        "tables" numbers a table's flows in one block, table after table; "round-robin" numbers flow
        0 of every table, then flow 1 of every table that has one, ... (the C yardstick's flow
        ``i`` has vector ``i mod 3``: three counted tables in round-robin order are its layout).
        Ids matter beyond names: they break ties between equal tags."""
        counts = np.array([f.count for f in self.flows], dtype=np.int64)
        table = np.repeat(np.arange(len(self.flows), dtype=np.int64), counts)
        index = np.arange(table.size, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        if self.run.flow_order == "round-robin" and table.size:
            order = np.lexsort((table, index))  # by index, then table
            table, index = table[order], index[order]
        return table, index

    def static_spec(self) -> np.ndarray:
        """``[n_static]`` int64: the [[flow]] table (index in ``flows``) of each static flow id."""
        return self.static_ids()[0]

    def static_flow_names(self) -> list[str]:
        """The name of every static flow, in flow-id order."""
        table, index = self.static_ids()
        fl = self.flows
        return [fl[k].name if fl[k].count == 1 else f"{fl[k].name}.{i}" for k, i in zip(table.tolist(), index.tolist())]

    def class_resource_loads(self) -> tuple[float, ...]:
        """Offered load of each resource from the classes: sum_k lambda_k sigma_k E[s_kj]."""
        loads = [0.0] * self.n_resources
        for c in self.classes:
            for j, a in enumerate(c.mean_cost()):
                loads[j] += c.rate * c.mean_packets * a
        return tuple(loads)

    def replace(self, **changes: Any) -> "Scenario":
        """A copy with top-level or nested changes, validated again.

        Nested keys use dots: ``replace(**{"router.scheduler": "pf-sfq", "run.seed": 3})``.
        """
        d = to_dict(self)
        for k, v in changes.items():
            parts = k.split(".")
            tgt = d
            for p in parts[:-1]:
                tgt = tgt.setdefault(p, {})
            if v is None:
                tgt.pop(parts[-1], None)
            else:
                tgt[parts[-1]] = v
        return from_dict(d, name=self.name)

    def with_overrides(self, *, scheduler: str | None = None, virtual_time: str | None = None,
                       seed: int | None = None, duration: float | None = None,
                       max_services: int | None = None) -> "Scenario":
        """The keyword overrides every runner takes (``None`` keeps the scenario's own value)."""
        changes = {k: v for k, v in (("router.scheduler", scheduler), ("router.virtual_time", virtual_time),
                                     ("run.seed", seed), ("run.duration", duration),
                                     ("run.max_services", max_services)) if v is not None}
        return self.replace(**changes) if changes else self

    def with_load(self, load: float) -> "Scenario":
        """The same scenario with class rates rescaled so the most loaded resource has ``load``."""
        return self.replace(**{"traffic.load": load})

    def used_resources(self) -> tuple[bool, ...]:
        """Per resource: some [[flow]] or [[class]] costs something there (:func:`used_resources`)."""
        return used_resources(list(self.flows) + list(self.classes), self.n_resources)

    def without_unused_resources(self) -> tuple["Scenario", tuple[int, ...]]:
        """The scenario the router runs: the resources nobody uses that come before the last used
        one removed, and the indices of the ones kept (ascending).  No packet visits a resource whose
        cost is 0 for every flow and class, so removing it changes nothing a packet sees, and every
        rule that names a resource by its position (the first resource of ingress placement, MR3's
        rounds, a stage buffer, a cost draw per resource) then names the same resource as in the
        scenario without it (docs/schedulers.md, 'Resources nobody uses').  Unused resources after
        the last used one are kept: no rule reaches them (``fq-single`` and ``drr`` default to the
        last *used* resource, fq.registry.resolve).  Returns ``(self, all indices)`` when nothing
        is removed."""
        used = self.used_resources()
        if not any(used):
            return self, tuple(range(len(used)))
        last = max(j for j, u in enumerate(used) if u)
        # after the last used resource nothing refers to one by position: those stay (idle), so that
        # [link, spare] runs on the two-resource loop a two-resource scenario compiles
        kept = tuple(j for j, u in enumerate(used) if u or j > last)
        if len(kept) == len(used):
            return self, kept

        def sub(v):
            return None if v is None else tuple(v[j] for j in kept)
        stage = self.router.stage_buffer
        if stage is not None:
            stage = tuple(stage[j - 1] for j in kept[1:])   # entry j - 1 sits in front of resource j
            stage = None if not stage or all(b is None for b in stage) else stage
        router = dataclasses.replace(self.router, stage_buffer=stage)
        return dataclasses.replace(
            self, resources=sub(self.resources), router=router,
            flows=tuple(dataclasses.replace(f, cost=sub(f.cost), per_byte=sub(f.per_byte)) for f in self.flows),
            classes=tuple(dataclasses.replace(c, cost=sub(c.cost), per_byte=sub(c.per_byte))
                          for c in self.classes)), kept

    def digest(self) -> str:
        """A stable hash of the whole validated scenario (for result keys)."""
        d = to_dict(self)
        if self.arrival_trace is not None:  # the trace's content, not only its path
            d["traffic"]["trace_sha256"] = self.arrival_trace.sha256
        if self.packet_trace is not None:
            d["traffic"]["packet_trace_sha256"] = self.packet_trace.sha256
        blob = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------
_TOP = ("resources", "router", "run", "traffic", "flow", "class", "name", "description")
_ROUTER = ("scheduler", "window", "rtt", "virtual_time", "fq_resource", "idle_reset", "increment", "schedule_at",
           "stage_buffer", "shared_buffer", "shared_buffer_bytes", "shared_buffer_policy", "aqm")
_RUN = ("duration", "warmup", "seed", "batches", "confidence", "gamma_method", "max_services", "max_flows",
        "flow_order")
#: run.flow_order: how static flow ids (the order of ties, flow table rows) follow the [[flow]] tables
FLOW_ORDERS = ("tables", "round-robin")
_TRAFFIC = ("load", "trace", "packet_trace")
_FLOW = ("name", "cost", "weight", "start", "packets", "per_byte", "packet_sizes", "packet_size_probs", "count",
         "arrival", "buffer", "buffer_bytes", "cost_law", "shaper", "transport", "loss", "rate")
_TRANSPORT = ("cc", "rtt", "initial_window", "ecn", "min_rto", "max_window", "cubic_c")
_CLASS = ("name", "cost", "rate", "share", "mean_packets", "weight", "per_byte", "packet_sizes",
          "packet_size_probs", "size", "cost_law")


def _table(where: str, v: Any) -> Mapping[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise _err(f"{where}: must be a table ([{where}])")
    return v


def _size_law(where: str, c: Mapping[str, Any]) -> tuple[float, SizeLaw | None]:
    """A class's flow-size law: ``(mean packets, law)``, law ``None`` for geometric (the Markov
    model's assumption).  ``mean_packets = m`` is the shorthand of ``size = {law = "geometric",
    mean = m}``; the laws and their discretisations are in :mod:`flows.traffic`."""
    size = c.get("size")
    if size is None:
        return _num(f"{where}.mean_packets", c.get("mean_packets", 20000.0), lo=1.0), None
    if "mean_packets" in c:
        raise _err(f"{where}: give either mean_packets or size = {{law = ...}}, not both")
    if not isinstance(size, Mapping):
        raise _err(f"{where}.size = {_q(size)}: must be a table, e.g. size = {{law = \"pareto\", alpha = 1.5, "
                   "mean = 20000}")
    law = size.get("law")
    if law is None:
        raise _err(f"{where}.size.law: missing; choose one of {', '.join(SIZE_LAWS)}")
    if law not in SIZE_LAWS:
        raise _err(f"{where}.size.law = {_q(law)}: unknown; choose one of {', '.join(SIZE_LAWS)}")
    keys = {"geometric": ("law", "mean"), "pareto": ("law", "alpha", "mean"),
            "lognormal": ("law", "sigma", "mean"), "deterministic": ("law", "packets")}[law]
    _check_keys(f"{where}.size", size, keys)
    for k in keys:
        if k not in size:
            raise _err(f"{where}.size.{k}: missing; law = {_q(law)} takes {', '.join(keys[1:])}")
    if law == "deterministic":
        n = _int(f"{where}.size.packets", size["packets"], lo=1)
        return float(n), SizeLaw("deterministic", float(n))
    mean = _num(f"{where}.size.mean", size["mean"], lo=1.0)
    if law == "geometric":
        return mean, None
    if law == "pareto":
        alpha = _num(f"{where}.size.alpha", size["alpha"])
        if alpha <= 1.0:
            raise _err(f"{where}.size.alpha = {_q(size['alpha'])}: must be > 1 (alpha <= 1 has no finite mean)")
        if mean < alpha / (alpha - 1.0):
            raise _err(f"{where}.size.mean = {_q(size['mean'])}: must be >= alpha / (alpha - 1) = "
                       f"{alpha / (alpha - 1.0):g} so that the smallest flow is at least 1 packet")
        return mean, SizeLaw("pareto", mean, alpha=alpha)
    sigma = _num(f"{where}.size.sigma", size["sigma"], lo=0.0, lo_open=True)
    if mean <= 1.0:
        raise _err(f"{where}.size.mean = {_q(size['mean'])}: must be > 1 (a lognormal law: 1 + lognormal packets)")
    return mean, SizeLaw("lognormal", mean, sigma=sigma)


def _arrival_trace(t: Mapping[str, Any], base_dir: Path | None, raw: list[dict],
                   classes_in: list) -> ArrivalTrace | None:
    """``[traffic] trace = "file.csv"``: read the trace (relative to the scenario file's folder) and
    give every class its empirical rate and mean size.  The trace fixes arrivals and sizes, so
    classes must not give ``rate``, ``share``, ``mean_packets`` or ``size``, nor [traffic] ``load``."""
    tp = t.get("trace")
    if tp is None:
        return None
    if not isinstance(tp, str) or not tp:
        raise _err(f"traffic.trace = {_q(tp)}: must be the path of a CSV file (time,class,packets)")
    if "load" in t:
        raise _err("traffic.load: cannot scale a trace; drop load (the trace fixes the arrivals)")
    if not raw:
        raise _err("traffic.trace: the scenario has no [[class]]; define the classes the trace names")
    for i, c in enumerate(classes_in):
        for k in ("rate", "share", "mean_packets", "size"):
            if k in c:
                raise _err(f"class[{i}].{k}: not allowed with traffic.trace (the trace gives arrivals and sizes)")
    path = Path(tp)
    if not path.is_absolute():
        path = (base_dir if base_dir is not None else Path.cwd()) / path
    tr = read_arrival_trace("traffic.trace", path.resolve(), [c["name"] for c in raw])
    span = float(tr.times[-1]) if len(tr.times) else 0.0
    for k, c in enumerate(raw):
        n = int((tr.classes == k).sum())
        c["rate"] = n / span if span > 0 else 0.0
        c["mean_packets"] = float(tr.sizes[tr.classes == k].mean()) if n else 1.0
    return tr


def _packet_law(where: str, f: Mapping[str, Any]) -> tuple[PacketLaw | None, int | None]:
    """A static flow's open-loop source ``arrival = {law = ...}`` and its ``buffer``: (law, buffer
    (None: unbounded)), ``(None, 0)`` for a windowed flow (the default)."""
    a = f.get("arrival")
    if a is None and "transport" in f:
        return None, _buffer(where, f)
    if a is None:
        for k in ("buffer", "buffer_bytes"):
            if k in f:
                raise _err(f"{where}.{k}: only for an open-loop or TCP flow; add arrival = {{law = \"poisson\", "
                           "rate = ...} or transport = {cc = \"reno\", rtt = ...} (a windowed flow holds "
                           "router.window packets)")
        return None, 0
    if not isinstance(a, Mapping):
        raise _err(f"{where}.arrival = {_q(a)}: must be a table, e.g. arrival = {{law = \"poisson\", rate = 0.5}}")
    law = a.get("law")
    if law is None:
        raise _err(f"{where}.arrival.law: missing; choose one of {', '.join(ARRIVAL_LAWS)}")
    if law not in ARRIVAL_LAWS:
        raise _err(f"{where}.arrival.law = {_q(law)}: unknown; choose one of {', '.join(ARRIVAL_LAWS)}")
    keys = {"poisson": ("law", "rate"), "cbr": ("law", "rate"), "onoff": ("law", "rate", "on", "off"),
            "trace": ("law",)}[law]
    _check_keys(f"{where}.arrival", a, keys)
    for k in keys:
        if k not in a:
            raise _err(f"{where}.arrival.{k}: missing; law = {_q(law)} takes {', '.join(keys[1:])}")
    rate = 0.0
    on = off = None
    if law != "trace":
        rate = _num(f"{where}.arrival.rate", a["rate"], lo=0.0, lo_open=True, hi=MAX_MAGNITUDE)
    if law == "onoff":
        on = _num(f"{where}.arrival.on", a["on"], lo=0.0, lo_open=True, hi=MAX_TIME)
        off = _num(f"{where}.arrival.off", a["off"], lo=0.0, lo_open=True, hi=MAX_TIME)
    return PacketLaw(law, rate, on, off), _buffer(where, f)


def _buffer(where: str, f: Mapping[str, Any]) -> int | None:
    """An open-loop or TCP flow's ``buffer``: packets inside the router (None: unbounded)."""
    b = f.get("buffer", DEFAULT_BUFFER)
    if isinstance(b, str) and b != "unbounded":
        raise _err(f"{where}.buffer = {_q(b)}: must be a whole number from 1 to {MAX_BUFFER:,} (packets) or "
                   "\"unbounded\" (no limit: for theory checks)")
    return None if b == "unbounded" else _int(f"{where}.buffer", b, lo=1, hi=MAX_BUFFER)


def _transport(where: str, f: Mapping[str, Any], law: PacketLaw | None, aqm) -> tuple["Transport | None", float]:
    """A static flow's ``transport = {cc = ..., rtt = ..., ...}`` and its ``loss``: (Transport or None, p)."""
    v = f.get("transport")
    if v is None:
        if "loss" in f:
            raise _err(f"{where}.loss: only for a TCP flow (its losses are detected and repaired); add "
                       "transport = {cc = \"reno\", rtt = ...}")
        return None, 0.0
    if law is not None:
        raise _err(f"{where}.transport: a TCP flow sends as its congestion window allows; drop arrival (an "
                   "open-loop source) or transport")
    if not isinstance(v, Mapping):
        raise _err(f"{where}.transport = {_q(v)}: must be a table, e.g. transport = {{cc = \"reno\", rtt = 10}}")
    _check_keys(f"{where}.transport", v, _TRANSPORT)
    cc = v.get("cc", "reno")
    if cc not in CONGESTION_CONTROLS:
        raise _err(f"{where}.transport.cc = {_q(cc)}: unknown; choose one of {', '.join(CONGESTION_CONTROLS)}")
    if "rtt" not in v:
        raise _err(f"{where}.transport.rtt: missing; give the flow's round-trip time outside the router (time "
                   "units, > 0)")
    rtt = _num(f"{where}.transport.rtt", v["rtt"], lo=0.0, lo_open=True, hi=MAX_TIME)
    mw = _int(f"{where}.transport.max_window", v.get("max_window", 1000), lo=1, hi=MAX_TCP_WINDOW)
    iw = _int(f"{where}.transport.initial_window", v.get("initial_window", 10), lo=1, hi=MAX_TCP_WINDOW)
    ecn = v.get("ecn", False)
    if not isinstance(ecn, bool):
        raise _err(f"{where}.transport.ecn = {_q(ecn)}: must be true or false")
    if ecn and dict(aqm or ()).get("policy") not in ("red", "codel"):
        raise _err(f"{where}.transport.ecn = true: no AQM marks packets; add router.aqm = {{policy = \"red\"}} or "
                   "{policy = \"codel\"}, or set ecn = false")
    mr = v.get("min_rto")
    if mr is not None:
        mr = _num(f"{where}.transport.min_rto", mr, lo=0.0, lo_open=True, hi=MAX_TIME)
    c = _num(f"{where}.transport.cubic_c", v.get("cubic_c", 0.4), lo=0.0, lo_open=True, hi=MAX_MAGNITUDE)
    if "packets" in f and f["packets"] != 0:
        raise _err(f"{where}.packets: a TCP flow here is backlogged; drop packets (or set it to 0)")
    loss = 0.0
    if "loss" in f:
        loss = _num(f"{where}.loss", f["loss"], lo=0.0, hi=1.0, hi_open=True)
    return Transport(cc=cc, rtt=rtt, initial_window=iw, ecn=ecn, min_rto=mr, max_window=mw, cubic_c=c), loss


def _shaper(where: str, f: Mapping[str, Any], law: PacketLaw | None) -> tuple[float, float] | None:
    """A static flow's ``shaper = {rate = ..., burst = ...}`` (packets per time unit, packets): (rate,
    burst), or None."""
    v = f.get("shaper")
    if v is None:
        return None
    if law is None:
        raise _err(f"{where}.shaper: only for an open-loop flow; add arrival = {{law = \"poisson\", rate = ...}} "
                   "(a windowed flow sends as its window allows)")
    if law.law == "trace":
        raise _err(f"{where}.shaper: not for a trace-driven flow (its rows are the arrival times); shape the "
                   "trace's times before, or use a poisson, cbr or onoff source")
    if not isinstance(v, Mapping):
        raise _err(f"{where}.shaper = {_q(v)}: must be a table, e.g. shaper = {{rate = 0.5, burst = 4}}")
    _check_keys(f"{where}.shaper", v, ("rate", "burst"))
    for k in ("rate", "burst"):
        if k not in v:
            raise _err(f"{where}.shaper.{k}: missing; a shaper takes rate (tokens per time unit) and burst "
                       "(the bucket's depth, packets)")
    rate = _num(f"{where}.shaper.rate", v["rate"], lo=0.0, lo_open=True, hi=MAX_MAGNITUDE)
    burst = _num(f"{where}.shaper.burst", v["burst"], lo=1.0, hi=MAX_BUFFER)
    return (rate, burst)


def _aqm(v: Any) -> tuple[tuple[str, Any], ...] | None:
    """``router.aqm = {policy = "red" | "codel", parameter = value, ...}``: the policy and every
    parameter (defaults filled in), checked; None when absent."""
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise _err(f"router.aqm = {_q(v)}: must be a table, e.g. aqm = {{policy = \"red\"}} or "
                   "aqm = {policy = \"codel\", target = 5, interval = 100}")
    pol = v.get("policy")
    if pol not in AQM_PARAMS:
        what = "router.aqm.policy: missing" if pol is None else f"router.aqm.policy = {_q(pol)}: unknown"
        raise _err(f"{what}; choose one of {', '.join(AQM_PARAMS)}")
    spec = AQM_PARAMS[pol]
    _check_keys("router.aqm", v, ("policy",) + tuple(spec))
    out: dict[str, Any] = {}
    for k, dflt in spec.items():
        x = v.get(k, dflt)
        w = f"router.aqm.{k}"
        if k == "gentle":
            if not isinstance(x, bool):
                raise _err(f"{w} = {_q(x)}: must be true or false (gentle RED: the drop probability rises from "
                           "max_p to 1 between max_th and 2 max_th)")
        elif k == "maxpacket":
            x = _int(w, x, lo=0, hi=MAX_BUFFER)
        elif x is not None:
            x = _num(w, x, lo=0.0, lo_open=True, hi=1.0 if k in ("max_p", "weight", "theta") else MAX_TIME)
        out[k] = x
    if pol == "red" and not out["min_th"] < out["max_th"]:
        raise _err(f"router.aqm.min_th = {out['min_th']:g}, max_th = {out['max_th']:g}: min_th must be below "
                   "max_th (RED drops with a probability rising from 0 at min_th to max_p at max_th)")
    if pol == "codel" and not out["target"] < out["interval"]:
        raise _err(f"router.aqm.target = {out['target']:g}: must be below interval = {out['interval']:g} "
                   "(CoDel drops once the sojourn has stayed above target for an interval; RFC 8289: 5 and 100)")
    return (("policy", pol),) + tuple(out.items())


def _packet_trace(t: Mapping[str, Any], base_dir: Path | None, sc: Scenario) -> PacketTrace | None:
    """``[traffic] packet_trace = "file.csv"``: the packet arrivals of the flows whose source is
    ``arrival = {law = "trace"}`` (path relative to the scenario file's folder)."""
    tp = t.get("packet_trace")
    names = [n for f in sc.flows if f.open_loop and f.arrival.law == "trace" for n in f.flow_names()]
    if tp is None:
        if names:
            i = next(i for i, f in enumerate(sc.flows) if f.open_loop and f.arrival.law == "trace")
            raise _err(f"flow[{i}].arrival.law = 'trace': the scenario has no [traffic] packet_trace = \"file.csv\" "
                       "(time,flow[,size] rows)")
        return None
    if not isinstance(tp, str) or not tp:
        raise _err(f"traffic.packet_trace = {_q(tp)}: must be the path of a CSV file (time,flow[,size])")
    if not names:
        raise _err("traffic.packet_trace: no [[flow]] has arrival = {law = \"trace\"}; give the flows the trace "
                   "drives that source")
    path = Path(tp)
    if not path.is_absolute():
        path = (base_dir if base_dir is not None else Path.cwd()) / path
    starts = {n: f.start for f in sc.flows for n in f.flow_names()}
    pt = read_packet_trace("traffic.packet_trace", path.resolve(), sc.static_flow_names(), set(names), starts)
    table, _ = sc.static_ids()
    for i, f in enumerate(sc.flows):
        if not (f.open_loop and f.arrival.law == "trace"):
            continue
        if pt.sizes is None:
            if f.per_byte is not None and f.packet_sizes is None:
                raise _err(f"flow[{i}].per_byte: needs packet sizes: packet_sizes = [...], or a size column in "
                           "traffic.packet_trace (time,flow,size)")
            continue
        if f.per_byte is None or f.packet_sizes is not None:
            raise _err(f"flow[{i}]: the packet trace gives sizes, so this flow needs per_byte = [...] (cost per "
                       "byte at each resource) and no packet_sizes (the trace's sizes replace them)")
        # every packet of the flow visits the same resources (see _check_positive), whatever its size
        rows = np.flatnonzero(table[pt.flows] == i)
        if len(rows):
            s = np.asarray(f.cost)[None, :] + np.asarray(f.per_byte)[None, :] * pt.sizes[rows, None]
            pos = s > 0
            bad = np.flatnonzero((pos != pos[0]).any(axis=1) | ~pos.any(axis=1) | ~np.isfinite(s).all(axis=1))
            if len(bad):
                r = rows[bad[0]]
                raise _err(f"traffic.packet_trace: {path_text(path)} line {int(pt.lines[r])}: size = {pt.sizes[r]:g}: flow[{i}]'s "
                           f"packet would cost {s[bad[0]].tolist()}, visiting other resources than its line "
                           f"{int(pt.lines[rows[0]])} packet (or none); give every resource a positive cost or a "
                           "zero per-byte cost")
    return pt


def trace_packet_times(sc: Scenario, k: int) -> list[tuple[float, ...]]:
    """The per-packet times of [[flow]] table k's smallest and largest packet of the packet trace
    (a trace-driven flow with sizes; else none)."""
    f = sc.flows[k]
    pt = sc.packet_trace
    if pt is None or pt.sizes is None or not (f.open_loop and f.arrival.law == "trace") or f.per_byte is None:
        return []
    table, _ = sc.static_ids()
    z = pt.sizes[table[pt.flows] == k]
    if not len(z):
        return []
    return [tuple(c + b * x for c, b in zip(f.cost, f.per_byte)) for x in (float(z.min()), float(z.max()))]


def _cost_law(where: str, d: Mapping[str, Any]) -> str:
    law = d.get("cost_law", "fixed")
    if law not in COST_LAWS:
        raise _err(f"{where}.cost_law = {_q(law)}: choose 'fixed' (every packet costs its cost) or 'exponential' "
                   "(each packet's cost at each resource drawn independently, exponential with that mean)")
    return law


def _stage_buffer(v: Any, res) -> tuple[int | None, ...] | None:
    """``router.stage_buffer``: one number for every resource after the first, or a list with one
    entry per resource after the first ("unbounded" for none); None when absent or all unbounded."""
    if v is None:
        return None
    J = len(res)
    fix = (f"an integer from 1 to {MAX_STAGE_BUFFER:,} (packets waiting for a resource, the one in service "
           "before it included), \"unbounded\", or a list with one such entry per resource after the first")
    if J == 1:
        raise _err(f"router.stage_buffer = {_q(v)}: there is no resource after the first (resources = "
                   f"{_q(list(res))}); remove router.stage_buffer")
    entries = list(v) if isinstance(v, (list, tuple)) else [v] * (J - 1)
    if len(entries) != J - 1:
        raise _err(f"router.stage_buffer has {len(entries)} entries: give one per resource after the first "
                   f"({J - 1}: {', '.join(res[1:][:8])}), or one number for all")
    out: list[int | None] = []
    for k, b in enumerate(entries):
        where = "router.stage_buffer" if not isinstance(v, (list, tuple)) else f"router.stage_buffer[{k}]"
        if b == "unbounded":
            out.append(None)
        elif isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_STAGE_BUFFER:
            raise _err(f"{where} = {_q(b)}: must be {fix}")
        else:
            out.append(int(b))
    return None if all(b is None for b in out) else tuple(out)


def from_dict(d: Mapping[str, Any], *, name: str = "scenario", base_dir: str | Path | None = None) -> Scenario:
    """Validate a parsed TOML document (or an equivalent dict) into a :class:`Scenario`.

    ``base_dir``: where a relative ``[traffic] trace`` path starts (default: the working folder).
    """
    if not isinstance(d, Mapping):
        raise _err("scenario: must be a table")
    _check_keys("scenario", d, _TOP)
    res = d.get("resources")
    if res is None:
        raise _err('resources: missing; give the service order, e.g. resources = ["cpu", "link"]')
    if (not isinstance(res, (list, tuple)) or not res or len(res) > MAX_RESOURCES
            or not all(isinstance(r, str) and 0 < len(r) <= MAX_NAME for r in res)):
        raise _err(f"resources = {_q(res)}: must be a list of 1 to {MAX_RESOURCES} resource names "
                   f"(1 to {MAX_NAME} characters each)")
    if len(set(res)) != len(res):
        raise _err(f"resources = {_q(list(res))}: names must be distinct")
    J = len(res)

    r = _table("router", d.get("router"))
    sched = r.get("scheduler", "drfq")
    if not isinstance(sched, str) or not sched or len(sched) > MAX_NAME:
        raise _err(f"router.scheduler = {_q(sched)}: must be a scheduler name (see `mrfq run --help`)")
    extra = []
    for k in sorted(k for k in r if k not in _ROUTER):
        v = r[k]
        if not isinstance(v, (bool, int, float, str)) or (isinstance(v, float) and not math.isfinite(v)) \
                or (isinstance(v, int) and abs(v) > 2**53) or (isinstance(v, str) and len(v) > MAX_NAME):
            raise _err(f"router.{k} = {_q(v)}: a scheduler option must be a finite number, a short string or a "
                       "boolean")
        extra.append((k, v))
    vt = r.get("virtual_time", "started")
    if vt not in VIRTUAL_TIMES:
        raise _err(f"router.virtual_time = {_q(vt)}: choose 'started' ([BR]) or 'in-service' ([DRFQ])")
    fqr = r.get("fq_resource")
    if fqr is not None and fqr not in res:
        raise _err(f"router.fq_resource = {_q(fqr)}: must be one of the resources {_names(res, 8)}")
    schedule_at = r.get("schedule_at", "every")
    if schedule_at not in SCHEDULE_AT:
        raise _err(f"router.schedule_at = {_q(schedule_at)}: choose 'every' (each resource orders its queue by "
                   "the scheduler, [BR]) or 'ingress' (the scheduler orders the first resource's queue, later "
                   "resources serve first come, first served)")
    stage = _stage_buffer(r.get("stage_buffer"), res)
    pool = None if "shared_buffer" not in r else _int("router.shared_buffer", r["shared_buffer"], lo=1, hi=MAX_POOL)
    pool_bytes = None if "shared_buffer_bytes" not in r else _num(
        "router.shared_buffer_bytes", r["shared_buffer_bytes"], lo=0.0, lo_open=True, hi=MAX_BYTES)
    pool_policy = r.get("shared_buffer_policy", "tail")
    if pool_policy not in POOL_POLICIES:
        raise _err(f"router.shared_buffer_policy = {_q(pool_policy)}: choose 'tail' (a full pool drops the arrival) "
                   "or 'longest' (it pushes out the oldest waiting packet of the flow holding the most)")
    aqm = _aqm(r.get("aqm"))
    idle_reset = r.get("idle_reset", False)
    if not isinstance(idle_reset, bool):
        raise _err(f"router.idle_reset = {_q(idle_reset)}: must be true or false")
    inc = r.get("increment", "cost")
    if inc not in INCREMENTS:
        raise _err(f"router.increment = {_q(inc)}: choose 'cost' (s_ij, the schedulers of [BR]) or 'packet' "
                   "(1 per packet: a negative control that must not realise PF or BMF)")
    router = RouterConfig(
        scheduler=sched,
        window=_int("router.window", r.get("window", 30), lo=1, hi=MAX_WINDOW),
        rtt=_num("router.rtt", r.get("rtt", 0.0), lo=0.0, hi=MAX_TIME),
        virtual_time=vt,
        fq_resource=fqr,
        idle_reset=idle_reset,
        increment=inc,
        options=tuple(extra),
        schedule_at=schedule_at,
        stage_buffer=stage,
        shared_buffer=pool,
        shared_buffer_bytes=pool_bytes,
        shared_buffer_policy=pool_policy,
        aqm=aqm,
    )

    u = _table("run", d.get("run"))
    _check_keys("run", u, _RUN)
    duration = _num("run.duration", u.get("duration", 6000.0), lo=0.0, lo_open=True, hi=MAX_TIME)
    warmup = _num("run.warmup", u.get("warmup", 0.0), lo=0.0, hi=MAX_TIME)
    if warmup >= duration:
        raise _err(f"run.warmup = {warmup:g}: must be less than run.duration = {duration:g}")
    seed = _int("run.seed", u.get("seed", 1), lo=0, hi=MAX_SEED)
    gm = u.get("gamma_method", "little")
    if gm not in GAMMA_METHODS:
        raise _err(f"run.gamma_method = {_q(gm)}: choose one of {', '.join(GAMMA_METHODS)}")
    fo = u.get("flow_order", "tables")
    if fo not in FLOW_ORDERS:
        raise _err(f"run.flow_order = {_q(fo)}: choose 'tables' (a counted [[flow]] table's flows in one block "
                   "of ids) or 'round-robin' (flow r of every table, then flow r + 1)")
    run = RunConfig(
        duration=duration, warmup=warmup, seed=seed, flow_order=fo,
        batches=_int("run.batches", u.get("batches", 20), lo=2, hi=MAX_BATCHES),
        confidence=_num("run.confidence", u.get("confidence", 0.95), lo=0.0, lo_open=True, hi=1.0, hi_open=True),
        gamma_method=gm,
        max_services=_int("run.max_services", u.get("max_services", 0), lo=0, hi=MAX_COUNT),
        max_flows=_int("run.max_flows", u.get("max_flows", 0), lo=0, hi=MAX_FLOWS_CAP),
    )

    names: set[str] = set()

    def _name(where: str, v: Any, default: str) -> str:
        n = default if v is None else v
        if not isinstance(n, str) or not 0 < len(n) <= MAX_NAME:
            raise _err(f"{where}.name = {_q(v)}: must be a string of 1 to {MAX_NAME} characters")
        if n in names:
            raise _err(f"{where}.name = {_q(n)}: already used; flow and class names must be distinct")
        names.add(n)
        return n

    def _cost(where: str, v: Any) -> tuple[float, ...]:
        if v is None:
            raise _err(f"{where}.cost: missing; give the processing time per packet at each of the {len(res)} "
                       f"resources ({_names(res)})")
        return _vec(f"{where}.cost", v, J)

    flows_in = d.get("flow", [])
    if not isinstance(flows_in, list):
        raise _err("flow: must be an array of tables ([[flow]])")
    n_specs = len(flows_in) + (len(d["class"]) if isinstance(d.get("class"), list) else 0)
    if n_specs > MAX_SPECS:
        raise _err(f"flow, class: {n_specs:,} [[flow]] and [[class]] tables; at most {MAX_SPECS:,}")
    flows = []
    for i, f in enumerate(flows_in):
        w = f"flow[{i}]"
        f = _table(w, f)
        _check_keys(w, f, _FLOW)
        cost = _cost(w, f.get("cost"))
        law, buffer = _packet_law(w, f)
        if law is not None and law.law == "trace" and "per_byte" in f and "packet_sizes" not in f \
                and "packet_size_probs" not in f:
            # the packet trace's size column gives every packet's size (checked with the trace)
            pb, ps = _vec(f"{w}.per_byte", f["per_byte"], J), None
        else:
            pb, ps = _packet_sizes(w, f, J)
            _check_positive(w, cost, pb, ps)
        bb = None
        if "buffer_bytes" in f:
            bb = _num(f"{w}.buffer_bytes", f["buffer_bytes"], lo=0.0, lo_open=True, hi=MAX_BYTES)
        tp, loss = _transport(w, f, law, aqm)
        flows.append(FlowSpec(
            arrival=law, buffer=buffer, buffer_bytes=bb, shaper=_shaper(w, f, law), transport=tp, loss=loss,
            name=_name(w, f.get("name"), f"f{i + 1}"), cost=cost,
            weight=_num(f"{w}.weight", f.get("weight", 1.0), lo=MIN_WEIGHT, hi=MAX_MAGNITUDE),
            start=_num(f"{w}.start", f.get("start", 0.0), lo=0.0, hi=MAX_TIME),
            packets=_int(f"{w}.packets", f.get("packets", 0), lo=0, hi=MAX_COUNT),
            per_byte=pb if ps is not None or "per_byte" in f else None, packet_sizes=ps,
            count=_int(f"{w}.count", f.get("count", 1), lo=1, hi=MAX_STATIC_FLOWS),
            cost_law=_cost_law(w, f),
            reserved_rate=(None if "rate" not in f else
                           _num(f"{w}.rate", f["rate"], lo=0.0, lo_open=True, hi=1.0)),
        ))
    n_static = sum(f.count for f in flows)
    if n_static > MAX_STATIC_FLOWS:
        raise _err(f"flow[*].count: {n_static:,} static flows in all; at most {MAX_STATIC_FLOWS:,}")
    counted = {f.name: f.count for f in flows if f.count > 1}
    for i, f in enumerate(flows if counted else ()):  # a counted flow's names name.0 ... are reserved
        base, dot, idx = f.name.rpartition(".")
        if dot and idx.isdigit() and str(int(idx)) == idx and int(idx) < counted.get(base, 0):
            raise _err(f"flow[{i}].name = {_q(f.name)}: also the name of flow {idx} of {_q(base)} "
                       f"(count = {counted[base]}); rename one")

    classes_in = d.get("class", [])
    if not isinstance(classes_in, list):
        raise _err("class: must be an array of tables ([[class]])")
    t = _table("traffic", d.get("traffic"))
    _check_keys("traffic", t, _TRAFFIC)
    load = t.get("load")
    if load is not None:
        load = _num("traffic.load", load, lo=0.0, lo_open=True, hi=1.0, hi_open=True)
    raw = []
    for i, c in enumerate(classes_in):
        w = f"class[{i}]"
        c = _table(w, c)
        if "transport" in c or "loss" in c:
            raise _err(f"{w}.{'transport' if 'transport' in c else 'loss'}: TCP senders are for [[flow]] tables "
                       "only; give the TCP flows as [[flow]] tables with transport = {cc = ..., rtt = ...}")
        _check_keys(w, c, _CLASS)
        cost = _cost(w, c.get("cost"))
        pb, ps = _packet_sizes(w, c, J)
        _check_positive(w, cost, pb, ps)
        share = c.get("share")
        rate = c.get("rate")
        if share is not None:
            share = _num(f"{w}.share", share, lo=0.0, hi=MAX_MAGNITUDE)
        if rate is not None:
            rate = _num(f"{w}.rate", rate, lo=0.0, hi=MAX_MAGNITUDE)
        if load is None and rate is None and "trace" not in t:
            raise _err(f"{w}.rate: missing; give flow arrivals per time unit, or share = ... with [traffic] load")
        if load is not None and share is None:
            raise _err(f"{w}.share: missing; [traffic] load scales class rates by their share of the work")
        if load is not None and rate is not None:
            raise _err(f"{w}.rate = {_q(c.get('rate'))}: given with [traffic] load, which sets every class rate from its "
                       "share (load wins); remove rate, or remove [traffic] load to use explicit rates")
        if load is None and share is not None:
            raise _err(f"{w}.share = {_q(c.get('share'))}: only used with [traffic] load (explicit rates win without it); "
                       "remove share, or add [traffic] load")
        mean_packets, size = _size_law(w, c)
        raw.append(dict(
            name=_name(w, c.get("name"), f"c{i + 1}"), cost=cost, rate=rate or 0.0,
            mean_packets=mean_packets,
            weight=_num(f"{w}.weight", c.get("weight", 1.0), lo=MIN_WEIGHT, hi=MAX_MAGNITUDE),
            share=share, per_byte=pb if ps is not None else None, packet_sizes=ps, size=size,
            cost_law=_cost_law(w, c),
        ))
    arrival_trace = _arrival_trace(t, Path(base_dir) if base_dir is not None else None, raw, classes_in)
    if load is not None:
        if not raw:
            raise _err("traffic.load: given but there is no [[class]] to scale")
        # share_k is proportional to rho_k = lambda_k sigma_k max_j E[s_kj] (dominant-time work)
        tot = sum(c["share"] for c in raw)
        if tot <= 0:
            raise _err("class[*].share: at least one share must be positive")
        unit = [0.0] * J  # resource loads when rho_k = share_k / tot
        for c in raw:
            mc = _mean_cost(c["cost"], c["per_byte"], c["packet_sizes"])
            rho = c["share"] / tot
            for j in range(J):
                unit[j] += rho * mc[j] / max(mc)
        scale = load / max(unit)
        for c in raw:
            mc = _mean_cost(c["cost"], c["per_byte"], c["packet_sizes"])
            c["rate"] = scale * c["share"] / tot / (c["mean_packets"] * max(mc))
    classes = tuple(ClassSpec(**c) for c in raw)
    if not flows and not classes:
        raise _err("scenario: no traffic; add at least one [[flow]] or [[class]]")
    nm = d.get("name", name)
    if not isinstance(nm, str) or len(nm) > MAX_NAME:
        raise _err(f"name = {_q(nm)}: must be a string of at most {MAX_NAME} characters")
    sc = Scenario(resources=tuple(res), router=router, run=run, flows=tuple(flows),
                  classes=classes, load=load, name=nm, arrival_trace=arrival_trace)
    pt = _packet_trace(t, Path(base_dir) if base_dir is not None else None, sc)
    if pt is not None:
        sc = dataclasses.replace(sc, packet_trace=pt)
    if router.fq_resource is not None and not sc.used_resources()[res.index(router.fq_resource)]:
        raise _err(f"router.fq_resource = {_q(router.fq_resource)}: no flow or class uses that resource (every "
                   "cost there is 0), so there is nothing to fair-queue; name a resource some flow uses, or "
                   "leave fq_resource out (default: the last one some flow uses)")
    _check_resources(sc)
    _check_buffers(sc)
    return sc


def used_resources(specs, J: int) -> tuple[bool, ...]:
    """Per resource: some flow or class of ``specs`` costs something there (a cost or a per-byte cost)."""
    return tuple(any(s.cost[j] > 0.0 or (s.per_byte is not None and s.per_byte[j] > 0.0) for s in specs)
                 for j in range(J))


def _packet_times(spec) -> list[tuple[float, ...]]:
    """Per-packet processing times at each resource, one tuple per packet size (a trace-driven
    flow's trace sizes: :func:`trace_packet_times`)."""
    if spec.packet_sizes is None:
        return [tuple(spec.cost)]
    return [tuple(c + b * z for c, b in zip(spec.cost, spec.per_byte)) for z in spec.packet_sizes.sizes]


def _largest_packet(sc: Scenario, i: int) -> float | None:
    """The largest packet (bytes) of [[flow]] table i: of its packet_sizes, or of the packet trace's
    size column for a trace-driven flow with per_byte; None when its packets have no size."""
    f = sc.flows[i]
    if f.packet_sizes is not None:
        return max(f.packet_sizes.sizes)
    pt = sc.packet_trace
    if f.open_loop and f.arrival.law == "trace" and f.per_byte is not None and pt is not None and pt.sizes is not None:
        table, _ = sc.static_ids()
        z = pt.sizes[table[pt.flows] == i]
        return float(z.max()) if len(z) else 0.0
    return None


def _check_buffers(sc: Scenario) -> None:
    """Buffer management (docs/buffers.md): byte limits need packet sizes and hold the largest
    packet; a shared pool or an AQM needs an open-loop flow to manage."""
    opened = [i for i, f in enumerate(sc.flows) if f.buffered]
    r = sc.router
    for k in ("shared_buffer", "shared_buffer_bytes", "aqm"):
        if getattr(r, k) is not None and not opened:
            raise _err(f"router.{k}: no open-loop or TCP flow to manage (a windowed flow keeps router.window packets "
                       "and loses none); give a [[flow]] an arrival = {law = \"poisson\", rate = ...} or a "
                       "transport = {cc = \"reno\", rtt = ...}, or remove it")
    if r.shared_buffer_policy != "tail" and r.shared_buffer is None and r.shared_buffer_bytes is None:
        raise _err("router.shared_buffer_policy: there is no shared pool; add router.shared_buffer = N (packets) or "
                   "router.shared_buffer_bytes = B")
    # (where, limit, flow) of every byte limit: a flow's own, and the pool's for each open-loop flow
    limits = [(f"flow[{i}].buffer_bytes", f.buffer_bytes, i) for i, f in enumerate(sc.flows) if f.buffer_bytes is not None]
    if r.shared_buffer_bytes is not None:
        limits += [("router.shared_buffer_bytes", r.shared_buffer_bytes, i) for i in opened]
    for where, limit, i in limits:
        big = _largest_packet(sc, i)
        if big is None:
            raise _err(f"{where}: flow[{i}]'s packets have no size; give it packet_sizes (bytes), or limit it in "
                       "packets (flow.buffer, router.shared_buffer)")
        if limit < big:
            raise _err(f"{where} = {limit:g}: smaller than flow[{i}]'s largest packet ({big:g} bytes), which it "
                       "could never hold; raise it")


def _check_resources(sc: Scenario) -> None:
    """Whole-scenario checks: what the engine can resolve, count and hold.

    * Every positive per-packet time is at least ``REL_MIN_COST`` times the largest one
      in the scenario and ``TIME_RESOLUTION`` times ``run.duration``: a time below one
      float64 ulp of the clock would leave the clock standing still (a hang).
    * Services are bounded by ``sum_j duration / min_i s_ij`` (each resource serves one
      packet at a time); above ``MAX_SERVICES_BOUND`` the run must set ``run.max_services``.
      Open-loop packet arrivals (rate x count x duration, all flows together) above
      ``MAX_SERVICES_BOUND`` are refused whatever ``run.max_services`` says (dropped packets
      serve nothing, so a cap on services would not stop a flood).  At the engine's rough speed (flows.workload) these are hours of work.
    * Class load ``rho_j = sum_k lambda_k sigma_k E[s_kj]`` ([BR] §4.1) from explicit class
      rates below 1 at every resource, or else an overload run that says so with an explicit
      ``run.max_flows``, which must hold the flows the run can bring (static flows plus the
      expected arrivals over the run plus six standard deviations).  Flows in the system never
      outnumber the flows that arrived, so this bounds the flow table.  Rates scaled by
      ``[traffic] load`` (< 1 by construction) and the empirical rates of an arrival trace
      (finite by construction) are not explicit rates.
    * The engine's initial flow table (static flows + 64 rows, a ring of the window rounded
      up to a power of two per row) fits in ``MAX_TABLE_BYTES``.
    """
    specs = [(f"flow[{i}]", f) for i, f in enumerate(sc.flows)] + [(f"class[{k}]", c)
                                                                   for k, c in enumerate(sc.classes)]
    times = [_packet_times(s) + (trace_packet_times(sc, i) if i < len(sc.flows) else [])
             for i, (_, s) in enumerate(specs)]
    largest = max(max(t) for ts in times for t in ts)
    min_j = [math.inf] * sc.n_resources
    for (where, s), ts in zip(specs, times):
        for t in ts:
            for j, x in enumerate(t):
                if x <= 0:
                    continue
                fld = f"{where}.cost[{j}]" if s.packet_sizes is None else f"{where}.cost[{j}] + per_byte[{j}] x size"
                if x < REL_MIN_COST * largest:
                    raise _err(f"{fld} = {x:.6g}: a positive time per packet must be >= {REL_MIN_COST:g} x the "
                               f"largest one ({largest:.6g}); use 0 to skip the resource, or rescale the costs")
                if x < TIME_RESOLUTION * sc.run.duration:
                    raise _err(f"run.duration = {sc.run.duration:g}: too long for the time per packet {x:.6g} of "
                               f"{fld} (the clock could not advance); must be <= {x / TIME_RESOLUTION:.6g}")
                min_j[j] = min(min_j[j], x)
    bound = sum(sc.run.duration / m for m in min_j if m < math.inf)
    if sc.run.max_services == 0 and bound > MAX_SERVICES_BOUND:
        raise _err(f"run.duration = {sc.run.duration:g}: up to {bound:.3g} packet services (duration / smallest "
                   f"time per packet, summed over resources), more than {MAX_SERVICES_BOUND:.0e}; shorten "
                   "run.duration or set run.max_services")
    arrivals = sum(c.rate for c in sc.classes) * sc.run.duration
    need = sc.n_static + arrivals + 6.0 * math.sqrt(arrivals) + 10.0
    if sc.classes and sc.load is None and sc.arrival_trace is None:
        loads = sc.class_resource_loads()
        j = max(range(sc.n_resources), key=lambda i: loads[i])
        if not loads[j] < 1.0 and sc.run.max_flows == 0:
            raise _err(f"class[*].rate: class load {loads[j]:.4g} at resource {sc.resources[j]!r} (sum of rate x "
                       f"mean_packets x cost) is >= 1, so flows pile up; lower the rates, use [traffic] load with "
                       f"shares, or ask for an overload run with an explicit flow cap: run.max_flows >= "
                       f"{math.ceil(need)} (this run can bring {need:.4g} flows)")
    if sc.run.max_flows > 0:
        if need > sc.run.max_flows:
            raise _err(f"run.max_flows = {sc.run.max_flows}: the run can hold up to {need:.4g} flows ({sc.n_static} "
                       f"static + {arrivals:.4g} expected arrivals + 6 standard deviations); raise run.max_flows "
                       f"(at most {MAX_FLOWS_CAP:,}) or shorten run.duration")
    offered = []  # (packet arrivals over the run, table) of the open-loop [[flow]] tables
    for i, f in enumerate(sc.flows):
        if f.open_loop and f.arrival.law != "trace":
            gap = 1.0 / f.arrival.rate
            if gap < TIME_RESOLUTION * sc.run.duration or gap < MIN_GAP * largest:
                raise _err(f"flow[{i}].arrival.rate = {f.arrival.rate:g}: more than one packet per "
                           f"{max(TIME_RESOLUTION * sc.run.duration, MIN_GAP * largest):.3g} time units (the clock or "
                           "the packet times could not be resolved); lower the rate")
            for k in ("on", "off"):
                v = getattr(f.arrival, k)
                if v is not None and v < MIN_GAP * largest:
                    raise _err(f"flow[{i}].arrival.{k} = {v:g}: must be >= {MIN_GAP * largest:.3g} "
                               f"({MIN_GAP:g} x the largest time per packet)")
            n = f.count * f.arrival.rate * sc.run.duration
            offered.append((n, i))
    # open-loop packet arrivals of all flows together (each is an event of the loop, a drop about ten
    # services' time: flows.workload): 1e11 are hours of work, more an accident
    total = sum(n for n, _ in offered)
    # (whatever run.max_services says: a flood that is dropped serves nothing, so a cap on services
    # would not stop it)
    if total > MAX_SERVICES_BOUND:
        n, i = max(offered, key=lambda x: (x[0], -x[1]))  # the largest, the first of equals
        rest = f" ({total:.3g} with the other open-loop flows)" if len(offered) > 1 else ""
        raise _err(f"flow[{i}].arrival.rate = {sc.flows[i].arrival.rate:g}: {n:.3g} packet arrivals over run.duration"
                   f"{rest}, more than {MAX_SERVICES_BOUND:.0e} (hours of work); shorten run.duration or lower "
                   "the rate")
    nr = 1
    while nr < max(sc.router.window, sc.max_buffer):
        nr *= 2
    J = sc.n_resources
    # words per row (router/state.py): per ring slot the scheduler's tags (at most J + 1, dovetail),
    # per-packet cost records (J, or 2 J with the scheduler's increments; only with packet sizes)
    # and the rtt-delayed admissions (time, row; only with an rtt); per row the queue records
    # (2 J), the admissions due now (1), the integer and float columns (8 + 4 + 2 J at most),
    # the free list (1), the heaps (2 J) and the scheduler's state
    # (at most 4 + J: mr3's 4 per flow, sfq's 1 per (flow, resource))
    sized = any(s.packet_sizes is not None for _, s in specs)
    per_slot = (J + 1) + (2 * J if sized else 0) + (2 if sc.router.rtt > 0 else 0)
    table = (sc.n_static + 64) * 8 * (nr * per_slot + 2 * J + 1 + 8 + 4 + 2 * J + 1 + 2 * J + 4 + J)
    if table > MAX_TABLE_BYTES:
        raise _err(f"router.window = {sc.router.window}: with {sc.n_static} static flows the flow table would "
                   f"need {table / 2**30:.3g} GiB (at most {MAX_TABLE_BYTES / 2**30:g}); lower the window or the "
                   "number of static flows")


def to_dict(s: Scenario) -> dict[str, Any]:
    """The inverse of :func:`from_dict` (a plain dict that validates to the same scenario)."""
    def spec(x) -> dict[str, Any]:
        out = {}
        for f in dataclasses.fields(x):
            v = getattr(x, f.name)
            if f.name == "arrival":
                if v is not None:
                    out["arrival"] = v.to_dict()
            elif f.name == "transport":
                if v is not None:
                    out["transport"] = {k: w for k, w in dataclasses.asdict(v).items() if w is not None}
            elif f.name == "loss":
                if getattr(x, "transport", None) is not None and v > 0.0:
                    out["loss"] = v
            elif f.name == "buffer":
                if getattr(x, "arrival", None) is not None or getattr(x, "transport", None) is not None:
                    out["buffer"] = "unbounded" if v is None else v
            elif f.name == "shaper":
                if v is not None:
                    out["shaper"] = {"rate": v[0], "burst": v[1]}
            elif f.name == "reserved_rate":
                if v is not None:
                    out["rate"] = v
            elif f.name == "packet_sizes":
                if v is not None:
                    out["packet_sizes"] = list(v.sizes)
                    out["packet_size_probs"] = list(v.probs)
            elif f.name == "size":
                if v is not None:  # a non-geometric law carries its own mean
                    out["size"] = v.to_dict()
                    out.pop("mean_packets", None)
            elif v is None or (f.name == "mean_packets" and getattr(x, "size", None) is not None) \
                    or (f.name == "count" and v == 1) or (f.name == "cost_law" and v == "fixed"):  # the default: digests of older scenarios stay
                continue
            elif isinstance(v, tuple):
                out[f.name] = list(v)
            else:
                out[f.name] = v
        return out

    d: dict[str, Any] = {"name": s.name, "resources": list(s.resources),
                         "router": {**{k: v for k, v in dataclasses.asdict(s.router).items()
                                       if v is not None and k not in ("options", "stage_buffer", "aqm")
                                       and not (k == "schedule_at" and v == "every")
                                       and not (k == "shared_buffer_policy" and v == "tail")},  # digests of older scenarios stay
                                    **({"aqm": {k: v for k, v in s.router.aqm if v is not None}} if s.router.aqm else {}),
                                    **({"stage_buffer": ["unbounded" if b is None else b for b in s.router.stage_buffer]}
                                       if s.router.stage_buffer is not None else {}),
                                    **dict(s.router.options)},
                         "run": {k: v for k, v in dataclasses.asdict(s.run).items()
                                 if not (k == "max_flows" and v == 0) and not (k == "flow_order" and v == "tables")}}
    if s.flows:
        d["flow"] = [spec(f) for f in s.flows]
    if s.classes:
        cl = [spec(c) for c in s.classes]
        if s.arrival_trace is not None:  # rates and sizes come from the trace
            d["traffic"] = {"trace": s.arrival_trace.path}
            for c in cl:
                for k in ("rate", "share", "mean_packets", "size"):
                    c.pop(k, None)
        elif s.load is not None:
            d["traffic"] = {"load": s.load}
            for c in cl:
                c.pop("rate", None)
        else:
            for c in cl:
                c.pop("share", None)
        d["class"] = cl
    if s.packet_trace is not None:
        d.setdefault("traffic", {})["packet_trace"] = s.packet_trace.path
    return d


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a TOML scenario file."""
    p = Path(path)
    d = read_toml(p, what="scenario", max_bytes=MAX_FILE_BYTES,
                  missing_hint="or use --preset NAME; see `mrfq presets`")
    return from_dict(d, name=p.stem, base_dir=p.parent)


def preset_names() -> list[str]:
    """Names of the scenarios shipped in ``flows/presets``."""
    return sorted(p.name[:-5] for p in _res.files("mrfq.flows.presets").iterdir() if p.name.endswith(".toml"))


def load_preset(name: str) -> Scenario:
    """Load a shipped scenario by name (``mrfq presets`` lists them)."""
    names = preset_names()
    if name not in names:
        raise _err(f"--preset {_q(name)}: unknown; choose one of {_names(names, 12)}")
    text = _res.files("mrfq.flows.presets").joinpath(name + ".toml").read_text(encoding="utf-8")
    return from_dict(tomllib.loads(text), name=name, base_dir=Path(str(_res.files("mrfq.flows.presets"))))


def preset_description(name: str) -> str:
    text = _res.files("mrfq.flows.presets").joinpath(name + ".toml").read_text(encoding="utf-8")
    return str(tomllib.loads(text).get("description", ""))
