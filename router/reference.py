"""A SimPy model of the router: readable, slow, obviously correct — the test oracle.

It models exactly what :mod:`router.engine` models (docs/schedulers.md), in the plainest
terms available: a :class:`simpy.Environment` keeps time, every primary event is
a SimPy timeout in its own process (a service completion, the flow arrivals
of one instant, a static flow start, an admission delayed by the round-trip time),
each resource keeps every flow's FIFO as a Python list and picks the head of
smallest ``(key, flow id)`` with :func:`min`, and each scheduler's rules come
from the plain-Python twin (``Reference``) in its own module, found through the
registry (fq/contract.py), written independently of its numba hooks.  STYLE
practice 4: the engine must reproduce this model's service trace bit for bit.

Simultaneous events (docs/schedulers.md, 'Event order and ties'; the engine's module docstring).  A primary event
at time ``t`` does nothing but post itself on the notice board of instant
``t``; the first one to post also starts the *coordinator* of that instant,
which waits on ``env.timeout(0)``.  Every primary event at ``t`` was scheduled
before ``t`` (service times, the round-trip time and inter-arrival times are
positive), so SimPy (which runs same-time events in scheduling order) runs the
coordinator after all of them.  (The arrival source posts every arrival of
one instant at once: a trace may hold several rows with the same time.)  The coordinator then handles the instant in
the documented phase order:

1a. every completing packet leaves its server (queue lengths and the
    in-service virtual time stop counting it);
1b. in resource order, each moves on to the next resource it visits, or leaves
    the router: the flow's next packet is admitted at once (``rtt = 0``) or
    ``rtt`` later;
2.  admissions delayed by ``rtt`` due now (in the order they were scheduled),
    static flow starts now (by start time, then flow index) and the flow
    arrivals now (in stream order); all are tagged with the virtual times as they stand
    before any service starts at ``t``;
3.  each idle resource, in resource order, if its scheduler is ``ready``,
    starts the waiting flow head of smallest ``(key, flow id)`` (a flow's
    packets are served in sequence at each resource); an idle resource with
    nothing waiting calls the scheduler's ``idle`` (e.g. ``idle_reset``).
    With stage buffers (``router.stage_buffer``), a head whose next resource's
    buffer is full is not started (the resource is *blocked*); once a pass
    over the resources has started something, the blocked ones try again, in
    resource order, until a pass starts nothing.

Where the scheduler sits (``router.schedule_at``, docs/middlebox.md): under
``"every"`` each resource orders its queue by the scheduler's keys; under
``"ingress"`` only the first resource does, every later resource serves its
packets in the order they joined its queue (ties by flow id), and every packet
passes the first resource, in zero time if it costs nothing there (such a
zero-length service ends at the instant it starts, in a second round of that
instant).  Stage buffers count, in front of each resource j > 0, the packets
waiting there that came from an earlier resource and the packets in service
elsewhere whose next resource is j.

Randomness, as in :func:`router.run.simulate`: flow arrivals (time, class,
packets) come from :class:`flows.traffic.ArrivalStream`, the one
implementation the engine and the fluid path consume too (its module
docstring has the spawn tree of ``SeedSequence(seed)``);
:func:`flows.traffic.cost_key` keys :func:`packet_uniform`, the counter-based
hash that picks each packet's size.

Units: time units; costs in time units per packet (plus per byte).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np
import simpy

from mrfq.flows.scenario import MAX_TIME, Scenario
from mrfq.fq.contract import has_eligibility
from mrfq.fq.registry import at_ingress, resolve, used_resources
from mrfq.flows.traffic import ArrivalStream, PacketStream, cost_key, loss_key
from mrfq.router.batches import batch_starts
from mrfq.router.delays import PER_FLOW_MAX, bucket_py
from mrfq.router.delays import layout as delay_layout
from mrfq.router.reference_buffers import DELIVER, BufferManager
from mrfq.router.reference_tcp import TcpFlow, loss_uniform
from mrfq.router.state import REASONS
from mrfq.router import rfb as _rfb

M32 = 0xFFFFFFFF


# ---------------------------------------------------------------------------
# packet sizes: plain-Python twin of router.engine.packet_uniform
def hash32(x: int) -> int:
    """The engine's 32-bit xorshift-multiply mixer, on Python ints."""
    x &= M32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & M32
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & M32
    x ^= x >> 16
    return x


def packet_uniform(cost_key: int, uid: int, seq: int) -> float:
    """Uniform in [0, 1) for packet ``seq`` of flow ``uid``: ``h(h(h(key ^ uid) + seq) + uid >> 32)``."""
    h = hash32(hash32(hash32(cost_key ^ (uid & M32)) + (seq & M32)) + (uid >> 32))
    return h / 4294967296.0


def packet_exponential(cost_key: int, uid: int, seq: int, j: int) -> float:
    """Exponential of mean 1 for packet ``seq`` of flow ``uid`` at resource j (``cost_law =
    "exponential"``): ``-log(1 - u)``, ``u = (h + 1/2) / 2**32`` from the same mixer, keyed per resource."""
    h = hash32(hash32(hash32(hash32(cost_key + 0x632BE5AB * (j + 1)) ^ (uid & M32)) + (seq & M32)) + (uid >> 32))
    return -math.log1p(-((h + 0.5) / 4294967296.0))


def _delay_to(now: float, t: float) -> float:
    """A delay d with ``now + d == t`` exactly in float64 (SimPy schedules at ``now + delay``):
    ``t - now`` corrected by a few ulps where its rounding would miss ``t``."""
    d = t - now
    while now + d < t:
        d = math.nextafter(d, math.inf)
    while now + d > t:
        d = math.nextafter(d, -math.inf)
    return d


def _until(env, t: float):
    """Waits until ``env.now == t`` exactly.  One timeout of :func:`_delay_to` does it unless no
    float64 delay lands on t from ``now`` (``now + d`` rounds past t on both sides, which happens
    when ``now`` lies half an ulp of t off t's grid); then a first step to about ``(now + t) / 2``,
    from where ``t - now'`` is exact (Sterbenz: ``t / 2 <= now' <= t``) and so is the sum."""
    d = _delay_to(env.now, t)
    if env.now + d != t:
        yield env.timeout((t - env.now) / 2)
        d = t - env.now
    yield env.timeout(d)


# ---------------------------------------------------------------------------
# the model's objects
@dataclass(frozen=True)
class Profile:
    """What every packet of a flow (or of a class's flows) costs."""

    cost: tuple[float, ...]
    per_byte: tuple[float, ...]
    sizes: tuple[float, ...]        # bytes; (0.0,) when packet sizes are not modelled
    cdf: tuple[float, ...]          # cumulative probabilities of ``sizes``, last = 1
    weight: float
    exponential: bool = False       # cost_law = "exponential"
    rate: float | None = None       # a [[flow]] table's reserved rate (virtual-clock, wf2q-plus), else None

    @classmethod
    def of(cls, spec, J: int) -> "Profile":
        exp = spec.cost_law == "exponential"
        rate = getattr(spec, "reserved_rate", None)
        if spec.packet_sizes is None and spec.per_byte is not None:  # sizes from the packet trace
            return cls(tuple(spec.cost), tuple(spec.per_byte), (), (), spec.weight, exp, rate)
        if spec.packet_sizes is None:
            return cls(tuple(spec.cost), (0.0,) * J, (0.0,), (1.0,), spec.weight, exp, rate)
        cdf = [float(x) for x in np.cumsum(spec.packet_sizes.probs)]   # as router.run._spec_arrays
        cdf[-1] = 1.0
        return cls(tuple(spec.cost), tuple(spec.per_byte), tuple(spec.packet_sizes.sizes), tuple(cdf),
                   spec.weight, exp, rate)

    def packet_size(self, cost_key: int, uid: int, seq: int, size: float | None = None) -> float:
        """The size of packet seq: drawn by the counter-based hash, or given (the packet trace's)."""
        if not (size is not None and not self.sizes):
            size = self.sizes[0]
            if len(self.sizes) > 1:
                u = packet_uniform(cost_key, uid, seq)
                z = 0
                while z < len(self.sizes) - 1 and u >= self.cdf[z]:
                    z += 1
                size = self.sizes[z]
        return size

    def packet_costs(self, cost_key: int, uid: int, seq: int, size: float | None = None) -> tuple[float, ...]:
        """``s_j = cost_j + per_byte_j * size``, the size drawn by the counter-based hash (or given: the
        packet trace's); with exponential costs each positive ``s_j`` times its own exponential."""
        size = self.packet_size(cost_key, uid, seq, size)
        s = [c + b * size for c, b in zip(self.cost, self.per_byte)]
        if self.exponential:
            s = [x * packet_exponential(cost_key, uid, seq, j) if x > 0.0 else x for j, x in enumerate(s)]
        return tuple(s)


@dataclass(eq=False)
class Flow:
    uid: int                        # flow id: static flows 0..n-1, then Poisson flows in arrival order
    name: str
    profile: Profile
    static: int | None              # its [[flow]] table (index in scenario.flows), or None
    klass: int | None               # index in scenario.classes, or None
    arrived: float
    size: int                       # packets; 0 = backlogged forever
    J: int
    to_admit: int = 0               # packets not yet admitted (-1: forever)
    next_seq: int = 1
    in_router: int = 0              # admitted, not yet departed
    pending: int = 0                # admissions waiting out the rtt
    departed_post: int = 0          # departures after warm-up
    done_at: float | None = None
    open_loop: bool = False         # an open-loop source (else a windowed flow)
    tcp: object = None              # a TCP flow's sender and receiver (router.reference_tcp.TcpFlow)
    loss: float = 0.0               # a TCP flow's random loss before the router
    timer_set: set = field(default_factory=set)  # deadlines of its retransmission timer with a process
    offered: int = 0                # open-loop packet arrivals from warm-up on (t >= warmup)
    Q: list[int] = field(default_factory=list)      # packets at each resource, waiting or in service
    tag: dict = field(default_factory=dict)         # the scheduler's own per-flow values

    def __post_init__(self):
        self.Q = [0] * self.J
        self.to_admit = self.size if self.size > 0 else -1

    @property
    def buffered(self) -> bool:
        """Its packets pass the buffer management: an open-loop source or a TCP flow."""
        return self.open_loop or self.tcp is not None


@dataclass(eq=False)
class Packet:
    flow: Flow
    seq: int
    s: tuple[float, ...]            # processing time at each resource
    route: list[int]                # the resources it visits (s_j > 0), in order
    hop: int = 0                    # index into route
    tag: dict = field(default_factory=dict)  # the scheduler's own per-packet values
    arrived: float = 0.0            # at the router (admission, or an open-loop arrival)
    joined: float = 0.0             # at the queue of the resource it is at
    staged: bool = False            # counted in the stage buffer of the resource it waits at
    size: float = 0.0               # bytes
    waits: list = field(default_factory=list)  # (resource, wait there) of each service started
    tseq: int = -1                  # a TCP flow's sequence number (its n-th packet; a retransmission repeats it)
    ce: bool = False                # an AQM marked it (ECN)


def make_tags(sc: Scenario, router: "ReferenceRouter"):
    """The scheduler's plain-Python twin (its module's ``Reference``, fq/contract.py), from the registry."""
    specs = list(sc.flows) + list(sc.classes)
    info, opt = resolve(sc.router, sc.resources, used=used_resources(specs, sc.n_resources), specs=specs)
    return info.module.Reference(sc.n_resources, opt, router)


# ---------------------------------------------------------------------------
# results
@dataclass(frozen=True)
class ReferenceFlow:
    name: str
    rate: float                     # packets per time unit after warm-up
    packets: int                    # departures after warm-up
    completion_time: float | None   # finite flows: last departure - start
    admitted: int                   # packets admitted over the whole run
    drops: int = 0                  # open-loop packets from warm-up on dropped or pushed out
    offered: int = 0                # open-loop packet arrivals from warm-up on (t >= warmup)
    drops_by_reason: dict = field(default_factory=dict)
    transport: dict | None = None   # a TCP flow's counts (router.run.FlowResult.transport)
    cwnd_log: list | None = None     # a TCP flow's (time, cwnd, ssthresh) at every change of its window


@dataclass(frozen=True)
class ReferenceResult:
    t_end: float
    services: int                   # completed services, all resources
    served: tuple[int, ...]         # completed services per resource
    admitted: tuple[int, ...]       # packet arrivals per resource
    flows: list[ReferenceFlow]      # static flows, in scenario order
    class_arrived: tuple[int, ...]
    class_completed: tuple[int, ...]
    class_departed: tuple[int, ...]  # class packets that left after warm-up
    flows_started: int              # flow ids handed out (static + Poisson)
    max_active_flows: int           # most flows (static + Poisson) in the router at once
    trace: list[tuple[float, float, int, int, int]]   # (start, end, resource, flow id, seq)
    arrivals: list[tuple[int, float, int, int]] = field(default_factory=list)  # (flow id, time, class, packets)
    departures: list[tuple[float, float, int, int]] = field(default_factory=list)  # (time, sojourn, flow id, seq)
    hist: np.ndarray | None = None   # [rows, J + 1, NB] delay histograms, as router.run.DelayHistograms
    dmax: np.ndarray | None = None
    dsum: np.ndarray | None = None
    dcnt: np.ndarray | None = None
    rfb: object = None               # the relative fairness bound reached, as router.run.RunResult.rfb
    share_x: object = None           # [samples, n_static] X at the multiples of share_window (router.rfb.samples)

    def rows(self, resource: int | None = None, names=None):
        """Like :meth:`router.run.Trace.rows`: ``(start, flow, seq)`` on one resource or ``(start, j, flow, seq)``."""
        def name(u):
            return (names[u] if names is not None and u < len(names) else u)
        if resource is None:
            return [(t, j, name(u), k) for t, _, j, u, k in self.trace]
        return [(t, name(u), k) for t, _, j, u, k in self.trace if j == resource]


def trace_tuples(trace) -> list[tuple[float, float, int, int, int]]:
    """A :class:`router.run.Trace` as the reference's list of ``(start, end, resource, flow, seq)``."""
    return [(float(a), float(b), int(j), int(u), int(k))
            for a, b, j, u, k in zip(trace.start, trace.end, trace.resource, trace.flow, trace.seq)]


# ---------------------------------------------------------------------------
class ReferenceRouter:
    """The router as SimPy processes plus one coordinator per event instant."""

    def __init__(self, sc: Scenario, trace_cap: int | None, share_window: float = 0.0):
        self.sc = sc
        self.J = J = sc.n_resources
        self.N = sc.router.window
        self.rtt = float(sc.router.rtt)
        self.T = float(sc.run.duration)
        self.warmup = float(sc.run.warmup)
        self.max_services = sc.run.max_services
        self.trace_cap = trace_cap
        self.ingress = at_ingress(sc.router, resolve(sc.router, sc.resources)[0].module,
                                  list(sc.flows) + list(sc.classes))
        # stage buffers: capacity and count in front of each resource (index 0 unused)
        caps = sc.router.stage_caps(J)
        self.stage_cap = [math.inf] + (list(caps) if caps is not None else [math.inf] * (J - 1))
        self.stage_n = [0] * J
        self.env = simpy.Environment()
        self.tags = make_tags(sc, self)
        self.eligible_rule = has_eligibility(resolve(sc.router, sc.resources)[0].module)

        # waiting packets (not in service): per resource, each flow's FIFO, and the key of each head
        self.fifo: list[dict[int, list[Packet]]] = [{} for _ in range(J)]
        self.head_key: list[dict[int, float]] = [{} for _ in range(J)]
        self.serving: list[Packet | None] = [None] * J
        names = sc.static_flow_names()
        spec = sc.static_spec()
        profiles = [Profile.of(f, J) for f in sc.flows]
        self.static = [Flow(i, names[i], profiles[s], s, None, sc.flows[s].start, sc.flows[s].packets, J,
                            open_loop=sc.flows[s].open_loop, loss=sc.flows[s].loss)
                       for i, s in enumerate(spec.tolist())]
        for f in self.static:
            tp = sc.flows[f.static].transport
            if tp is not None:
                f.tcp = TcpFlow(tp, self.warmup, self._transmit)
                f.tcp.flow = f
        self.loss_key = loss_key(sc.run.seed)
        self.ack_count = 0                           # ACKs sent so far (their order at one instant)
        self.tcp_acks: list = []                     # (order, flow, ack, send time) due now
        self.tcp_timers: set = set()                 # flows whose timer may expire now
        self.tcp_opens: list[Flow] = []              # TCP flows starting now
        self.victims: list[Flow] = []
        # delays (router/delays.py): one row per static flow (or [[flow]] table), then per class
        n = len(self.static)
        self.flow_row = list(range(n)) if n <= PER_FLOW_MAX else spec.tolist()
        self.n_static_rows = n if n <= PER_FLOW_MAX else len(sc.flows)
        self.hbase, self.NB = delay_layout(sc.min_packet_time(), MAX_TIME)   # as router.engine
        rows = self.n_static_rows + len(sc.classes)
        B = sc.run.batches
        self.hist = np.zeros((rows, J + 1, self.NB), np.int64)
        self.dmax = np.zeros(rows)
        self.dsum = np.zeros((rows, B))
        self.dcnt = np.zeros((rows, B))
        self.b_start = batch_starts(self.warmup, self.T, B)
        self.departures: list[tuple[float, float, int, int]] = []
        self.class_profiles = [Profile.of(c, J) for c in sc.classes]
        self.next_uid = sc.n_static
        # the relative fairness bound (router/rfb.py), as the engine: 2..RFB_MAX static flows
        self.rfb = None
        self.rfb_index: dict[int, int] = {}   # static flow id -> its index among the covered flows
        if n >= 2:
            from mrfq.router.run import _spec_arrays
            specs = _spec_arrays(list(sc.flows) + list(sc.classes), J)
            self.rfb_cov = _rfb.covered(spec)
            self.rfb_index = {int(u): k for k, u in enumerate(self.rfb_cov.tolist())}
            self.rfb_dom, self.rfb_lmax, self.rfb_known = _rfb.dominant(specs, spec[self.rfb_cov])
            self.rfb = _rfb.RfbPy(len(self.rfb_cov), J, specs.weight[spec[self.rfb_cov]], self.warmup, self.rfb_dom,
                                  share_window, _rfb.windows(self.T, share_window))
        self.share_window = share_window
        self.active = 0
        self.max_active = 0

        # counters
        self.services = 0
        self.served = [0] * J
        self.admitted = [0] * J
        self.class_arrived = [0] * len(sc.classes)
        self.class_completed = [0] * len(sc.classes)
        self.class_departed = [0] * len(sc.classes)
        self.trace: list[tuple[float, float, int, int, int]] = []
        self.stopped_at: float | None = None

        # the notice board of the current instant
        self.board_time: float | None = None
        self.completions: list[int] = []          # resources whose service ends now
        self.due_admissions: list[Flow] = []      # in the order they were scheduled
        self.static_starts: list[Flow] = []
        self.poisson_arrivals: list[tuple[int, int]] = []   # (class, size)
        self.packet_arrivals: list[tuple[int, float]] = []   # open-loop packet arrivals: (static flow id, size)
        self.arrival_log: list[tuple[int, float, int, int]] = []   # (flow id, time, class, packets)

        self.cost_key = cost_key(sc.run.seed)
        self.bm = BufferManager(sc, self.ingress)   # the open-loop flows' buffer management
        self.bm.router = self
        self.dropped = [0] * J                      # packets that left each resource's queue unserved
        for f in self.static:
            self.env.process(self._static_start(f))
        if sc.classes:
            self.env.process(self._arrival_source(iter(ArrivalStream(sc))))
        if any(f.open_loop for f in sc.flows):
            self.env.process(self._packet_source(PacketStream(sc)))

    def waiting(self, j: int) -> list[Packet]:
        """The packets waiting at resource j (not in service), flow by flow, each flow's in order."""
        return [p for uid in sorted(self.fifo[j]) for p in self.fifo[j][uid]]

    # ---- primary events: each only posts itself for its instant ------------
    def _post(self) -> None:
        if self.board_time != self.env.now:
            self.board_time = self.env.now
            self.env.process(self._coordinator())

    def _static_start(self, f: Flow):
        yield self.env.timeout(f.arrived)
        self.static_starts.append(f)
        self._post()

    def _arrival_source(self, arrivals):
        """Posts the flow arrivals, all those of one instant at once, at their exact times."""
        nxt = next(arrivals, None)
        while nxt is not None:
            t = nxt[0]
            yield from _until(self.env, t)
            while nxt is not None and nxt[0] == t:
                self.poisson_arrivals.append((nxt[1], nxt[2]))
                nxt = next(arrivals, None)
            self._post()

    def _packet_source(self, stream):
        """Posts the open-loop packet arrivals (flows.traffic.PacketStream), all those of one instant at once."""
        def rows():
            while True:
                times, fids, sizes = stream.take(4096)
                yield from zip(times.tolist(), fids.tolist(), sizes.tolist())
                if len(times) < 4096:
                    return
        it = rows()
        nxt = next(it, None)
        while nxt is not None:
            t = nxt[0]
            yield from _until(self.env, t)
            while nxt is not None and nxt[0] == t:
                self.packet_arrivals.append((nxt[1], nxt[2]))
                nxt = next(it, None)
            self._post()

    def _service(self, j: int, p: Packet):
        yield self.env.timeout(p.s[j])
        self.completions.append(j)
        self._post()

    def _delayed_admission(self, f: Flow):
        yield self.env.timeout(self.rtt)
        self.due_admissions.append(f)
        self._post()

    def _ack_later(self, f: Flow, order: int, a: int, ts: float, ece: bool):
        """The ACK a of TCP flow f, sent at a departure, reaches the sender the flow's rtt later."""
        yield self.env.timeout(f.tcp.rtt)
        self.tcp_acks.append((order, f, a, ts, ece))
        self._post()

    def _timer(self, f: Flow, at: float):
        yield from _until(self.env, at)
        self.tcp_timers.add(f)
        self._post()

    def _arm(self, f: Flow) -> None:
        """A process for the deadline of f's retransmission timer, once per deadline set."""
        d = f.tcp.rto_at
        if d < math.inf and d not in f.timer_set:
            f.timer_set.add(d)
            self.env.process(self._timer(f, d))

    # ---- the coordinator of one instant -------------------------------------
    def _coordinator(self):
        yield self.env.timeout(0)   # after every primary event of this instant
        t = self.env.now
        completions = sorted(self.completions)
        due, starts, arrivals = self.due_admissions, self.static_starts, self.poisson_arrivals
        packets = self.packet_arrivals
        self.completions, self.due_admissions, self.static_starts, self.poisson_arrivals = [], [], [], []
        self.packet_arrivals = []
        acks, timers = sorted(self.tcp_acks, key=lambda e: e[0]), sorted(self.tcp_timers, key=lambda f: f.uid)
        self.tcp_acks, self.tcp_timers = [], set()
        self.board_time = None

        # phase 1a: completing packets leave their servers
        done = []
        for j in completions:
            p = self.serving[j]
            self.serving[j] = None
            p.flow.Q[j] -= 1
            self.served[j] += 1
            self.services += 1
            self.tags.finish(p, j, t)
            done.append((j, p))
        # phase 1b: in resource order, move on or leave the router
        for j, p in done:
            p.hop += 1
            if p.hop < len(p.route):
                self._enqueue(p, p.route[p.hop], t)
            else:
                self._depart(p, t)
        # phase 2: delayed admissions, static starts, the Poisson arrival
        for f in due:
            f.pending -= 1
            self._admit(f, t)
        for f in sorted(starts, key=lambda f: (f.arrived, f.uid)):
            self._start_flow(f, t)
        for k, size in arrivals:
            f = Flow(self.next_uid, f"{self.sc.classes[k].name}#{self.next_uid}", self.class_profiles[k],
                     None, k, t, size, self.J)
            self.arrival_log.append((f.uid, t, k, size))
            self.next_uid += 1
            self.class_arrived[k] += 1
            self._start_flow(f, t)
        # ... then the open-loop packet arrivals (by flow id): admitted, or dropped by the buffer management
        victims = self.victims = []
        for uid, size in packets:
            f = self.static[uid]
            post = t >= self.warmup
            if post:
                f.offered += 1
            if f.to_admit > 0:
                f.to_admit -= 1
            z = f.profile.packet_size(self.cost_key, f.uid, f.next_seq, size)
            if self.bm.arrive(f, z, t, post, lambda v: self._waiting_before(v, t), victims) is None:
                if f.in_router == 0 and uid in self.rfb_index:
                    self.rfb.record(t, t, self.rfb_index[uid], _rfb.K_BACKLOG)
                self._admit(f, t, size)
        # ... then the TCP senders: the ACKs due now (in the order they were sent), then the
        # retransmission timers expiring now (by flow id); each sends what its window allows
        opens, self.tcp_opens = self.tcp_opens, []
        for f in opens:   # (in static start order: by flow id)
            f.tcp.open(t)
            self._arm(f)
        for _, f, a, ts, ece in acks:
            f.tcp.ack(t, a, ts, ece)
            self._arm(f)
        for f in timers:
            f.timer_set.discard(t)
            if f.tcp.rto_at == t:
                f.tcp.timeout(t)
                self._arm(f)
        # the pool's push-outs leave their queues after the instant's admissions
        for v in victims:
            self._push_out(v, t)
        # phase 3: idle resources start the head of smallest (key, flow id), if the scheduler is ready
        # and the head's next stage buffer has room; blocked resources try again after a pass that
        # started something
        blocked = [j for j in range(self.J) if self._start(j, t) == "blocked"]
        started = True
        while blocked and started:
            started = False
            still = []
            for j in blocked:
                r = self._start(j, t)
                started |= r == "started"
                if r == "blocked":
                    still.append(j)
            blocked = still
        # ``max_services``: the run ends with the instant at which that many services have completed
        if self.max_services > 0 and self.services >= self.max_services:
            self.stopped_at = t

    def _start(self, j: int, t: float) -> str:
        """Idle resource j starts its smallest head: "started", "blocked" (its next stage buffer
        is full), or "" (busy, nothing waiting, or the scheduler not ready)."""
        if self.serving[j] is not None:
            return ""
        if not self.head_key[j]:
            self.tags.idle(j, t)
            return ""
        if not self.tags.ready(j, t):
            return ""
        while True:   # (again when CoDel empties the queue it took)
            if not self.head_key[j]:
                return self._idle(j, t)
            heads = self.head_key[j]
            if self.eligible_rule and not (self.ingress and j > 0):
                # the scheduler's eligible heads only (fq/contract.py: eligibility, threshold)
                e = {u: self.tags.eligibility(self.fifo[j][u][0], j) for u in heads}
                limit = self.tags.threshold(j, t, min(e.values()))
                heads = [u for u in heads if e[u] <= limit]
                if not heads:
                    return ""
            uid = min(heads, key=lambda u: (self.head_key[j][u], u))
            fifo = self.fifo[j][uid]
            p = fifo[0]
            f = p.flow
            if not (self.bm.policy == "codel" and f.buffered and j == self.bm.flows[f.uid].j0):
                break
            nxt = p.route[p.hop + 1] if p.hop + 1 < len(p.route) else None
            if nxt is not None and self.stage_n[nxt] >= self.stage_cap[nxt]:
                return "blocked"
            phase = DELIVER
            while True:
                phase = self.bm.codel(f, t, t - p.arrived, len(fifo) - 1, phase)
                if phase == DELIVER:
                    break
                if self.bm.flows[f.uid].ecn:   # an ECN-capable TCP packet: marked and delivered
                    self.bm.codel_marked(f, phase, t >= self.warmup)
                    p.ce = True
                    phase = DELIVER
                    break
                self._drop_head(p, j, t, rekey=False)
                f.in_router -= 1
                self.bm.leave(f, p.size, t)
                if t >= self.warmup:
                    self.bm.flows[f.uid].drops["codel"] += 1
                self._went_idle(f, t)
                if not fifo:
                    self.bm.codel_emptied(f, phase)
                    break
                p = fifo[0]
            if phase == DELIVER:
                break
        nxt = p.route[p.hop + 1] if p.hop + 1 < len(p.route) else None
        if nxt is not None and self.stage_n[nxt] >= self.stage_cap[nxt]:
            return "blocked"
        if nxt is not None:
            self.stage_n[nxt] += 1
        if p.staged:
            self.stage_n[j] -= 1
        p.staged = nxt is not None
        fifo.pop(0)
        next_p = fifo[0] if fifo else None
        self.tags.start(p, j, next_p, t)
        p.waits.append((j, t - p.joined))
        if next_p is not None:
            self.head_key[j][uid] = self._head(next_p, j)
        else:
            del self.head_key[j][uid], self.fifo[j][uid]
        self.serving[j] = p
        k = self.rfb_index.get(uid, -1)
        if k >= 0 and self.rfb_dom[k] == j:
            self.rfb.record(t, t + p.s[j], k, _rfb.K_SERVICE)
        if self.trace_cap is None or len(self.trace) < self.trace_cap:
            self.trace.append((float(t), float(t + p.s[j]), j, p.flow.uid, p.seq))
        self.env.process(self._service(j, p))
        return "started"

    def _idle(self, j: int, t: float) -> str:
        self.tags.idle(j, t)
        return ""

    def _waiting_before(self, v: Flow, t: float) -> list[Packet]:
        """Flow v's packets waiting at its first resource that arrived before t, oldest first."""
        return [p for p in self.fifo[self.bm.flows[v.uid].j0].get(v.uid, []) if p.arrived < t]

    def _drop_head(self, p: Packet, j: int, t: float, rekey: bool = True) -> None:
        """p, the head of its flow's queue at j, leaves it unserved (the scheduler's drop hook); the
        next head's key is taken now (``rekey``), or not (CoDel: the resource takes that head at once)."""
        uid = p.flow.uid
        fifo = self.fifo[j][uid]
        fifo.pop(0)
        p.flow.Q[j] -= 1
        self.dropped[j] += 1
        self.tags.drop(p, j, fifo[0] if fifo else None, t)
        if not fifo:
            del self.head_key[j][uid], self.fifo[j][uid]
        elif rekey:
            self.head_key[j][uid] = self._head(fifo[0], j)

    def _push_out(self, v: Flow, t: float) -> None:
        """The pool pushes out the oldest packet waiting at v's first resource (counted at the arrival)."""
        j = self.bm.flows[v.uid].j0
        self._drop_head(self.fifo[j][v.uid][0], j, t)
        self._went_idle(v, t)

    def _went_idle(self, f: Flow, t: float) -> None:
        """After a drop: an open-loop flow with no packet left starts RED's empty spell, ends its backlog."""
        if f.in_router == 0:
            self.bm.flows[f.uid].red_idle = t
            if f.uid in self.rfb_index:
                self.rfb.record(t, t, self.rfb_index[f.uid], _rfb.K_IDLE)

    # ---- packet and flow life cycle ------------------------------------------
    def _start_flow(self, f: Flow, t: float) -> None:
        if f.klass is None and not f.buffered and f.uid in self.rfb_index:  # a windowed static flow: backlogged
            self.rfb.record(t, t, self.rfb_index[f.uid], _rfb.K_BACKLOG)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        n0 = self.N if f.size == 0 or f.size >= self.N else f.size
        if f.open_loop:
            n0 = 0  # an open-loop source: its packets arrive by their own law
        if f.tcp is not None:  # a TCP flow: its initial window goes with the instant's TCP events
            self.tcp_opens.append(f)
            return
        for _ in range(n0):
            if f.to_admit > 0:
                f.to_admit -= 1
            self._admit(f, t)

    def _transmit(self, tcp: TcpFlow, q: int, n: int, t: float) -> None:
        """TCP flow tcp.flow sends packet q (its n-th send) at t: lost before the router (``loss``), dropped
        by the buffer management, or admitted."""
        f = tcp.flow
        post = t >= self.warmup
        if f.loss > 0.0 and loss_uniform(self.loss_key, f.uid, n) < f.loss:
            if post:
                tcp.lost += 1
            return
        if post:
            f.offered += 1
        z = f.profile.packet_size(self.cost_key, f.uid, f.next_seq, None)
        verdict = self.bm.arrive(f, z, t, post, lambda v: self._waiting_before(v, t), self.victims)
        if verdict in (None, "ce"):
            if f.in_router == 0 and f.uid in self.rfb_index:
                self.rfb.record(t, t, self.rfb_index[f.uid], _rfb.K_BACKLOG)
            self._admit(f, t, None, q)
            self.last_packet.ce = verdict == "ce"

    def _admit(self, f: Flow, t: float, size: float | None = None, tseq: int = -1) -> None:
        seq = f.next_seq
        f.next_seq += 1
        s = f.profile.packet_costs(self.cost_key, f.uid, seq, size)
        z = f.profile.packet_size(self.cost_key, f.uid, seq, size)
        route = [j for j in range(self.J) if s[j] > 0.0 or (j == 0 and self.ingress)]
        if not [j for j in route if s[j] > 0.0]:
            raise ValueError(f"packet {seq} of flow {f.name!r} costs nothing at every resource "
                             f"(s = {list(s)}): the router model leaves such a packet undefined")
        p = self.last_packet = Packet(f, seq, s, route, arrived=t, size=z, tseq=tseq)
        f.in_router += 1
        self.tags.admit(p, t)
        self._enqueue(p, route[0], t)

    def _enqueue(self, p: Packet, j: int, t: float) -> None:
        p.flow.Q[j] += 1
        self.admitted[j] += 1
        p.joined = t
        self.tags.arrive(p, j, t)
        fifo = self.fifo[j].setdefault(p.flow.uid, [])
        fifo.append(p)
        if len(fifo) == 1:
            self.head_key[j][p.flow.uid] = self._head(p, j)

    def _head(self, p: Packet, j: int) -> float:
        """The key of p, now the head of its flow's FIFO at j: the scheduler's, or under ingress at
        a later resource the instant it joined the queue there (first come, first served)."""
        if self.ingress and j > 0:
            return p.joined
        return self.tags.head(p, j)

    def _depart(self, p: Packet, t: float) -> None:
        f = p.flow
        f.in_router -= 1
        if t > self.warmup:
            if f.static is not None:
                f.departed_post += 1
            else:
                self.class_departed[f.klass] += 1
            for j, w in p.waits:   # every delay of a packet that leaves after warm-up
                self._record(f, j, w)
            row = self._record(f, self.J, t - p.arrived)
            b = int(np.searchsorted(self.b_start, t, side="right")) - 1
            self.dsum[row, b] += t - p.arrived
            self.dcnt[row, b] += 1.0
        self.departures.append((float(t), float(t - p.arrived), f.uid, p.seq))
        if f.buffered:  # an open-loop source admits nothing when a packet leaves
            self.bm.leave(f, p.size, t)
            if f.in_router == 0 and f.klass is None and f.uid in self.rfb_index:
                self.rfb.record(t, t, self.rfb_index[f.uid], _rfb.K_IDLE)
            if f.tcp is not None:  # a TCP flow: the receiver's ACK, back at the sender rtt later
                a = f.tcp.receive(p.tseq, t)
                self.env.process(self._ack_later(f, self.ack_count, a, p.arrived, p.ce))
                self.ack_count += 1
                return
            if f.to_admit == 0 and f.in_router == 0:
                f.done_at = t
                self.active -= 1
            return
        if f.to_admit != 0:
            if f.to_admit > 0:
                f.to_admit -= 1
            if self.rtt > 0.0:
                f.pending += 1
                self.env.process(self._delayed_admission(f))
            else:
                self._admit(f, t)
        elif f.in_router == 0 and f.pending == 0:
            if f.klass is None and f.uid in self.rfb_index:
                self.rfb.record(t, t, self.rfb_index[f.uid], _rfb.K_IDLE)
            f.done_at = t
            self.active -= 1
            if f.klass is not None:
                self.class_completed[f.klass] += 1

    def _record(self, f: Flow, j: int, d: float) -> int:
        """Delay d of a packet of f into histogram j (a wait at j < J, the sojourn at J, whose maximum
        is kept too); returns the row."""
        row = self.flow_row[f.uid] if f.klass is None else self.n_static_rows + f.klass
        self.hist[row, j, bucket_py(d, self.hbase, self.NB)] += 1
        if j == self.J:
            self.dmax[row] = max(self.dmax[row], d)
        return row

    # ---- run -------------------------------------------------------------------
    def run(self) -> ReferenceResult:
        env = self.env
        while self.stopped_at is None and env.peek() <= self.T:   # instants t <= duration
            env.step()
        t_end = self.stopped_at if self.stopped_at is not None else self.T
        # conservation (STYLE practice 7): admitted = served + waiting + in service
        for j in range(self.J):
            inside = sum(len(q) for q in self.fifo[j].values()) + (self.serving[j] is not None)
            assert self.admitted[j] == self.served[j] + inside + self.dropped[j], f"resource {j}: conservation broken"
        span = t_end - self.warmup
        flows = [ReferenceFlow(
            name=f.name, rate=f.departed_post / span if span > 0 else math.nan, packets=f.departed_post,
            completion_time=None if f.done_at is None else f.done_at - f.arrived, admitted=f.next_seq - 1,
            drops=sum(self.bm.flows[f.uid].drops.values()) if f.buffered else 0, offered=f.offered,
            drops_by_reason=dict(self.bm.flows[f.uid].drops) if f.buffered else dict.fromkeys(REASONS, 0),
            transport=None if f.tcp is None else {**f.tcp.report(t_end, span), "marks": self.bm.flows[f.uid].marks},
            cwnd_log=None if f.tcp is None else f.tcp.log)
            for f in self.static]
        return ReferenceResult(
            t_end=float(t_end), services=self.services, served=tuple(self.served), admitted=tuple(self.admitted),
            flows=flows, class_arrived=tuple(self.class_arrived), class_completed=tuple(self.class_completed),
            class_departed=tuple(self.class_departed), flows_started=self.next_uid,
            max_active_flows=self.max_active, trace=self.trace, arrivals=self.arrival_log,
            departures=self.departures, hist=self.hist, dmax=self.dmax, dsum=self.dsum, dcnt=self.dcnt,
            rfb=self._rfb_result(t_end),
            share_x=_rfb.samples(self.rfb.g, self.rfb.ser) if self.rfb is not None and self.share_window > 0 else None)

    def _rfb_result(self, t_end: float):
        """The run's relative fairness (router.run.RelativeFairness), as the engine reports it."""
        from mrfq.router.run import relative_fairness
        raw = None
        if self.rfb is not None:
            self.rfb.finish(t_end)
            best, i, j, l_seen = _rfb.result(self.rfb.f, self.rfb.g)
            cov = self.rfb_cov
            raw = (best, int(cov[i]) if i >= 0 else -1, int(cov[j]) if j >= 0 else -1,
                   self.rfb_lmax if self.rfb_known else max(self.rfb_lmax, l_seen), cov)
        return relative_fairness(raw, len(self.static), len(self.sc.classes), lambda i: self.static[i].name, True)


def simulate_reference(scenario: Scenario, *, scheduler: str | None = None, virtual_time: str | None = None,
                       seed: int | None = None, duration: float | None = None, trace: int | None = None,
                       max_services: int | None = None, share_window: float = 0.0) -> ReferenceResult:
    """Run ``scenario`` through the SimPy reference model.

    Keyword overrides as in :func:`router.run.simulate`; ``trace`` bounds the
    number of service starts recorded (``None``: all of them); ``share_window`` samples the static
    flows' dominant service at its multiples, as the engine (router/rfb.py).
    """
    full = scenario.with_overrides(scheduler=scheduler, virtual_time=virtual_time, seed=seed, duration=duration,
                                   max_services=max_services)
    sc, kept = full.without_unused_resources()   # as the engine (router.run.simulate)
    r = ReferenceRouter(sc, trace, share_window).run()
    if sc is full:
        return r
    from mrfq.router.run import widen_histograms

    def widen(per_resource):
        out = [0] * full.n_resources
        for k, j in enumerate(kept):
            out[j] = per_resource[k]
        return tuple(out)
    return dataclasses.replace(r, served=widen(r.served), admitted=widen(r.admitted),
                               trace=[(a, b, kept[j], u, k) for a, b, j, u, k in r.trace],
                               hist=widen_histograms(r.hist, full.n_resources, kept))
