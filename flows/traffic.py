"""Flow arrivals, drawn once: times, classes and sizes for the engine, the reference and the fluid path.

This module is the ONE implementation of the flow-arrival process.  The numba
engine (:mod:`router.engine`, in chunks), the SimPy reference
(:mod:`router.reference`) and the fluid model on the same path
(:mod:`analysis.fluid_path`) all consume the arrays handed out by
:class:`ArrivalStream`, so they see identical arrival times, classes and sizes
(common random numbers: the packet-vs-fluid control variate rests on it).

Random streams (the spawn tree of a scenario's ``run.seed``)::

    SeedSequence(seed)
    ├── child 0: flow arrivals
    │   ├── child 0.0: inter-arrival times   exponential(1 / Lambda), Lambda = sum_k lambda_k
    │   ├── child 0.1: classes               one uniform u per arrival: class k with
    │   │                                    cdf[k-1] <= u < cdf[k], cdf[k] = sum_{i<=k} lambda_i / Lambda
    │   └── child 0.2: sizes                 two uniforms (u1, u2) per arrival, turned into packets
    │                                        by the class's size law (:class:`SizeLaw`)
    ├── child 1: packet-size hash key        ``cost_key``, one uint32 for the counter-based hash of
    │                                        (flow, packet) that picks per-packet sizes (router.engine)
    └── child 2: open-loop packet sources    child i: static flow i's source (:class:`PacketLaw`)
        ├── child 2.i.0: gaps                exponential(1 / rate) (poisson, onoff; cbr draws none)
        └── child 2.i.1: on/off periods      exponential(on), exponential(off), alternately (onoff)

Each stream is consumed at a fixed rate per arrival (one exponential, one
uniform, two uniforms), whatever the class or the size law, so the ``n``-th
arrival's time, class and size depend only on the seed and ``n``: never on the
scheduler, on how many arrivals are taken at once (:meth:`ArrivalStream.take`),
or on the size law of another class.  Changing only the size law keeps the
times and classes and couples the sizes through the same ``u1`` (a quantile
coupling: useful when comparing laws).

Arrival times are ``t_n = t_{n-1} + e_n`` (``t_0 = 0``), summed left to right
in float64, so they do not depend on chunk boundaries either.

Size laws (packets per flow, integers >= 1; ``mean`` is matched exactly):

* ``geometric`` (``mean``): ``P(L = n) = p (1 - p)^(n-1)``, ``p = 1 / mean``,
  by inversion: ``L = max(1, ceil(log(1 - u1) / log(1 - p)))``.  The flow-level
  Markov model of [BR] §4 assumes these (a flow is a geometric number of
  packets: an exponential amount of work in the fluid limit).
* ``pareto`` (``alpha`` > 1, ``mean`` >= alpha / (alpha - 1)): a continuous
  Pareto ``X = x_m (1 - u1)^(-1/alpha)`` with ``x_m = mean (alpha - 1) / alpha``
  (so ``E[X] = mean`` and ``X >= x_m >= 1``), rounded at random:
  ``L = floor(X) + [u2 < X - floor(X)]``, so ``E[L | X] = X`` and
  ``E[L] = mean`` exactly.  ``P(L > n)`` decays like ``n^-alpha``.  ``X`` is
  capped at ``2^53`` (exact integers in float64): the mass above is below
  ``(x_m / 2^53)^alpha``, invisible at any run length.
* ``lognormal`` (``sigma`` > 0, ``mean`` > 1): ``L = 1 + R(Y)``, ``Y =
  (mean - 1) exp(sigma z - sigma^2 / 2)`` with ``z = Phi^-1(u1)`` a standard
  normal (so ``E[Y] = mean - 1``), ``R`` the same random rounding (by ``u2``):
  ``E[L] = mean`` exactly.
* ``deterministic`` (``packets``): every flow has ``packets`` packets.

Trace-driven arrivals (``[traffic] trace = "file.csv"``): the rows of the
file, in order, replace all three streams; a run longer than the trace sees
no more arrivals.  The file is read and validated once, by
:func:`read_arrival_trace` (from :mod:`flows.scenario`).

Units: time units; sizes in packets.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mrfq.flows.errors import ScenarioError
from mrfq.flows.validate import name_list, path_text, quote, read_file, trace_rows

#: the size laws a class may name
SIZE_LAWS = ("geometric", "pareto", "lognormal", "deterministic")
#: how many arrivals the engine takes per chunk (any value gives the same arrivals)
CHUNK = 4096
#: largest arrival trace CSV, in bytes (lines are at most flows.validate.MAX_TRACE_LINE characters)
MAX_TRACE_BYTES = 100 * 2**20
#: largest continuous size before rounding (2^53: float64 holds every integer below it)
SIZE_CAP = float(2 ** 53)


# ---------------------------------------------------------------------------
# size laws
@dataclass(frozen=True)
class SizeLaw:
    """A flow-size law in packets (see the module docstring for the exact discretisations)."""

    law: str = "geometric"
    mean: float = 20000.0
    alpha: float | None = None      # pareto: tail index (> 1)
    sigma: float | None = None      # lognormal: standard deviation of the log

    @property
    def packets(self) -> int:
        """deterministic: the number of packets of every flow."""
        return int(self.mean)

    def sizes(self, u1: np.ndarray, u2: np.ndarray) -> np.ndarray:
        """Flow sizes (int64, >= 1) from uniforms ``u1, u2`` in [0, 1), one pair per flow."""
        if self.law == "geometric":
            p = 1.0 / self.mean
            if p >= 1.0:
                return np.ones(len(u1), np.int64)
            L = np.ceil(np.log1p(-u1) / math.log1p(-p))
            return np.maximum(L, 1.0).astype(np.int64)
        if self.law == "deterministic":
            return np.full(len(u1), self.packets, np.int64)
        if self.law == "pareto":
            a = float(self.alpha)
            x_m = self.mean * (a - 1.0) / a
            X = np.minimum(x_m * np.power(1.0 - u1, -1.0 / a), SIZE_CAP)
            return _round_at_random(X, u2)
        if self.law == "lognormal":
            from scipy.special import ndtri   # here, not at the top: `import flows` stays light

            s = float(self.sigma)
            with np.errstate(divide="ignore"):
                z = ndtri(u1)                 # u1 = 0 gives -inf, hence Y = 0 and L = 1
            Y = np.minimum((self.mean - 1.0) * np.exp(s * z - 0.5 * s * s), SIZE_CAP)
            return 1 + _round_at_random(Y, u2)
        raise ValueError(f"size law {self.law!r}: not one of {SIZE_LAWS}")

    def to_dict(self) -> dict:
        """The TOML table that validates back to this law (``size = {...}``)."""
        if self.law == "deterministic":
            return {"law": "deterministic", "packets": self.packets}
        d = {"law": self.law, "mean": self.mean}
        if self.law == "pareto":
            d["alpha"] = self.alpha
        if self.law == "lognormal":
            d["sigma"] = self.sigma
        return d


def _round_at_random(X: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``floor(X) + [u < X - floor(X)]``: an integer with conditional mean X."""
    f = np.floor(X)
    return (f + (u < X - f)).astype(np.int64)


# ---------------------------------------------------------------------------
# the spawn tree
def seed_streams(seed: int) -> tuple[np.random.Generator, np.random.Generator, np.random.Generator, int]:
    """(inter-arrival generator, class generator, size generator, cost_key) of ``seed``: the spawn
    tree of the module docstring (PCG64 generators)."""
    arrivals_ss, costs_ss = np.random.SeedSequence(seed).spawn(2)
    gens = tuple(np.random.Generator(np.random.PCG64(ss)) for ss in arrivals_ss.spawn(3))
    return gens[0], gens[1], gens[2], cost_key(seed)


def cost_key(seed: int) -> int:
    """The key of the counter-based packet-size hash: ``SeedSequence(seed).spawn(2)[1]``'s first word."""
    return int(np.random.SeedSequence(seed).spawn(2)[1].generate_state(1, np.uint32)[0])


def aqm_key(seed: int) -> int:
    """The key of the buffer management's random draws (RED, router/buffers.py): the first word of
    ``SeedSequence(seed).spawn(3)[2]``, a child of its own (the arrivals and the packet sizes keep
    theirs, the first two)."""
    return int(np.random.SeedSequence(seed).spawn(3)[2].generate_state(1, np.uint32)[0])


def loss_key(seed: int) -> int:
    """The key of a TCP flow's random losses before the router (``loss = p``, router/transport.py): the
    first word of ``SeedSequence(seed).spawn(4)[3]``, a child of its own."""
    return int(np.random.SeedSequence(seed).spawn(4)[3].generate_state(1, np.uint32)[0])


def class_cdf(rates) -> np.ndarray:
    """Cumulative class probabilities ``sum_{i<=k} lambda_i / Lambda`` (last entry exactly 1)."""
    r = np.asarray(rates, dtype=np.float64)
    cdf = np.cumsum(r) / float(r.sum())
    cdf[-1] = 1.0
    return cdf


# ---------------------------------------------------------------------------
# trace-driven arrivals
@dataclass(frozen=True, eq=False)
class ArrivalTrace:
    """A validated arrival trace: rows ``(time, class, packets)`` with classes as indices."""

    path: str
    sha256: str
    times: np.ndarray     # float64, non-decreasing, >= 0
    classes: np.ndarray   # int64 class indices
    sizes: np.ndarray     # int64, >= 1

    def __eq__(self, other) -> bool:
        return isinstance(other, ArrivalTrace) and (self.path, self.sha256) == (other.path, other.sha256)

    def __hash__(self) -> int:
        return hash((self.path, self.sha256))


def _row_time(where: str, shown: str, i: int, ts: str, last: float) -> float:
    """The time field ``ts`` of trace line i: a finite number >= 0, not below the previous row's
    ``last`` (one-line errors naming the line)."""
    try:
        t = float(ts)
    except ValueError:
        raise ScenarioError(f"{where}: {shown} line {i}: time = {quote(ts)}: must be a number") from None
    if not math.isfinite(t) or t < 0.0:
        raise ScenarioError(f"{where}: {shown} line {i}: time = {_plain(ts)}: must be a finite number >= 0")
    if t < last:
        raise ScenarioError(f"{where}: {shown} line {i}: time = {_plain(ts)}: decreases (previous row {last!r}); "
                            "sort the rows by time")
    return t


def read_arrival_trace(where: str, path: Path, class_names: list[str]) -> ArrivalTrace:
    """Read and validate a CSV of ``time,class,packets`` rows (header required, class by name).

    Every error is one :class:`ScenarioError` line naming ``where`` (the field), the file and
    the line.  Times must be finite, >= 0 and non-decreasing (equal times are simultaneous
    arrivals, handled in file order); packets whole numbers >= 1.
    """
    shown = path_text(path)
    raw = read_file(path, where=f"{where} = '{shown}'", max_bytes=MAX_TRACE_BYTES)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ScenarioError(f"{where}: {shown} line {line}: not UTF-8 text (byte 0x{raw[e.start]:02x}); "
                            "save the file as UTF-8") from None
    rows = trace_rows(text, at=lambda n: f"{where}: {shown} line {n}")
    header = next(rows, (1, None))[1]
    cols = [c.strip().lower() for c in header] if header is not None else None
    if header is None:
        raise ScenarioError(f"{where}: {shown}: empty; its first line must be the header 'time,class,packets'")
    if cols != ["time", "class", "packets"]:
        raise ScenarioError(f"{where}: {shown} line 1: header {quote(header)}: must be exactly 'time,class,packets'")
    index = {n: k for k, n in enumerate(class_names)}
    times, classes, sizes = [], [], []
    last = 0.0
    for i, row in rows:
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != 3:
            raise ScenarioError(f"{where}: {shown} line {i}: {len(row):,} fields: must be 3 (time,class,packets)")
        ts, cs, ps = (c.strip() for c in row)
        t = _row_time(where, shown, i, ts, last)
        if cs not in index:
            raise ScenarioError(f"{where}: {shown} line {i}: class = {quote(cs)}: unknown; the scenario's classes "
                                f"are {name_list(class_names) or '(none)'}")
        try:
            n = float(ps)
        except ValueError:
            n = math.nan
        if not (math.isfinite(n) and n == int(n) and n >= 1):
            raise ScenarioError(f"{where}: {shown} line {i}: packets = {quote(ps)}: must be a whole number >= 1")
        last = t
        times.append(t)
        classes.append(index[cs])
        sizes.append(int(n))
    return ArrivalTrace(path=str(path), sha256=hashlib.sha256(raw).hexdigest(),
                        times=np.array(times, np.float64), classes=np.array(classes, np.int64),
                        sizes=np.array(sizes, np.int64))


def _plain(s: str) -> str:
    """A number as written, unquoted; cut like :func:`flows.errors.quote` beyond 60 characters."""
    return s if len(s) <= 60 else quote(s)


# ---------------------------------------------------------------------------
class ArrivalStream:
    """The flow arrivals of a scenario and seed, handed out in chunks.

    ``take(n)`` returns the next ``n`` arrivals as three contiguous arrays
    (times float64, classes int64, sizes int64), fewer (down to none) once a
    trace is used up; the values never depend on how the calls split them.
    Poisson arrivals never run out.  ``scenario`` needs ``classes`` (each with
    ``rate``, ``mean_packets`` and ``size_law``) and ``arrival_trace``;
    ``seed`` defaults to ``scenario.run.seed``.
    """

    def __init__(self, scenario, seed: int | None = None):
        self.seed = scenario.run.seed if seed is None else int(seed)
        self.trace = getattr(scenario, "arrival_trace", None)
        self.K = len(scenario.classes)
        self.taken = 0
        self.t_last = 0.0
        rates = [c.rate for c in scenario.classes]
        self.lam = float(np.sum(np.asarray(rates, np.float64))) if self.K else 0.0
        self.cdf = class_cdf(rates) if self.K and self.lam > 0 else None
        self.laws = [c.size_law for c in scenario.classes]
        self.g_time, self.g_class, self.g_size, _ = seed_streams(self.seed)

    @property
    def finite(self) -> bool:
        """True when the arrivals end (a trace, or no class with a positive rate)."""
        return self.trace is not None or self.cdf is None

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The next ``n`` arrivals: (times, classes, sizes)."""
        n = int(n)
        if self.trace is not None:
            a, b = self.taken, min(self.taken + n, len(self.trace.times))
            self.taken = b
            return (self.trace.times[a:b].copy(), self.trace.classes[a:b].copy(), self.trace.sizes[a:b].copy())
        if self.cdf is None or n <= 0:
            return np.zeros(0, np.float64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        gaps = self.g_time.exponential(1.0 / self.lam, size=n)
        times = np.add.accumulate(np.concatenate(([self.t_last], gaps)))[1:]   # left to right
        self.t_last = float(times[-1])
        u = self.g_class.random(n)
        k = np.minimum(np.searchsorted(self.cdf, u, side="right"), self.K - 1).astype(np.int64)
        uu = self.g_size.random((n, 2))
        sizes = np.zeros(n, np.int64)
        for c in range(self.K):
            m = k == c
            if m.any():
                sizes[m] = self.laws[c].sizes(uu[m, 0], uu[m, 1])
        self.taken += n
        return np.ascontiguousarray(times), k, sizes

    def until(self, T: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every arrival at a time ``<= T`` from here on (the stream then stands after the last one
        returned plus the chunk it looked ahead into: use a fresh stream to continue)."""
        parts = []
        while True:
            t, k, s = self.take(CHUNK)
            keep = t <= T
            parts.append((t[keep], k[keep], s[keep]))
            if len(t) < CHUNK or not keep.all():
                break
        return tuple(np.ascontiguousarray(np.concatenate([p[i] for p in parts])) for i in range(3))

    def __iter__(self):
        """Arrivals one at a time, ``(time, class, size)`` as Python numbers (the SimPy reference)."""
        while True:
            t, k, s = self.take(CHUNK)
            for i in range(len(t)):
                yield float(t[i]), int(k[i]), int(s[i])
            if len(t) < CHUNK:
                return


def arrivals_until(scenario, seed: int | None, T: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times, classes, sizes) of every flow arrival in ``[0, T]`` for this scenario and seed."""
    return ArrivalStream(scenario, seed).until(T)


# ---------------------------------------------------------------------------
# open-loop packet sources of static flows
#: the laws a static flow's ``arrival = {law = ...}`` may name ("trace": its rows of ``[traffic] packet_trace``)
ARRIVAL_LAWS = ("poisson", "cbr", "onoff", "trace")
#: packets a source generates per block (any value gives the same arrivals)
PACKET_BLOCK = 1024
#: a source's first block (:class:`_Source`)
FIRST_BLOCK = 16
#: arrivals per open-loop source that each move of the merge's horizon brings in on average
#: (:meth:`PacketStream._extend`: the merge visits every source at each move, so n sources cost O(n) per
#: move and the moves must bring in O(n) arrivals)
PER_SOURCE_STEP = 16


@dataclass(frozen=True)
class PacketLaw:
    """An open-loop packet source: packets arrive at the router by their own law.

    * ``poisson`` (``rate``): exponential gaps of mean ``1 / rate``, the first one after ``start``;
    * ``cbr`` (``rate``): one packet every ``1 / rate`` exactly, the first at ``start``
      (packet k at ``start + k / rate``, k = 0, 1, ...: no accumulated rounding);
    * ``onoff`` (``rate``, ``on``, ``off``): exponential on and off periods of means ``on`` and
      ``off``, starting with an on period at ``start``; Poisson at ``rate`` while on (the mean rate
      is ``rate on / (on + off)``);
    * ``trace``: the flow's rows of the scenario's ``[traffic] packet_trace``.

    Units: ``rate`` packets per time unit; ``on``, ``off`` time units.
    """

    law: str
    rate: float = 0.0
    on: float | None = None
    off: float | None = None

    @property
    def mean_rate(self) -> float:
        """Long-run packets per time unit (nan for a trace)."""
        if self.law == "onoff":
            return self.rate * self.on / (self.on + self.off)
        if self.law == "trace":
            return math.nan
        return self.rate

    def to_dict(self) -> dict:
        """The TOML table that validates back to this law (``arrival = {...}``)."""
        d: dict = {"law": self.law}
        if self.law != "trace":
            d["rate"] = self.rate
        if self.law == "onoff":
            d["on"] = self.on
            d["off"] = self.off
        return d


def packet_seeds(seed: int, flow_id: int) -> tuple[np.random.Generator, np.random.Generator]:
    """(gap generator, period generator) of static flow ``flow_id``'s packet source: children 0 and 1
    of child ``flow_id`` of child 2 of ``SeedSequence(seed)`` (the spawn tree of the module docstring;
    a flow's packets do not depend on the other flows, the scheduler or the chunking)."""
    return packet_seed(seed, flow_id, 0), packet_seed(seed, flow_id, 1)


def packet_seed(seed: int, flow_id: int, c: int) -> np.random.Generator:
    """Child ``c`` of :func:`packet_seeds`."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(2, int(flow_id), int(c)))))


class TokenBucket:
    """A token-bucket shaper of ``rate`` tokens per time unit and depth ``burst`` (full at the flow's
    start), one token per packet: each packet leaves the source, in order, at the first instant at
    or after its arrival when a token is there; the excess waits in the source.

    Departures in closed form (the greedy shaper's output, the min-plus convolution of the arrivals
    with ``burst + rate t``; Le Boudec & Thiran, *Network calculus*, 2001, §1.5): packet k (from 1)
    of arrival ``a_k`` leaves at

        d_k = max(a_k, (k + 1 - burst) / rate + max_{j <= k + 1 - burst} (a_j - j / rate)),

    since packets j..k need ``k - j + 1`` tokens, of which at most ``burst`` were there at ``a_j``.
    Vectorised over each block of arrivals, the running maximum carried from block to block, so the
    departures do not depend on the blocks (tests/test_shaper.py: equal, to rounding, to a
    packet-by-packet token count)."""

    def __init__(self, rate: float, burst: float):
        self.rate, self.burst = float(rate), float(burst)
        self.n = 0                      # packets shaped so far
        self.tail = np.zeros(0)         # the running maximum at the last ceil(burst) + 1 of them

    def shape(self, a: np.ndarray) -> np.ndarray:
        """The departures of the next arrivals ``a`` (sorted, all at or after the previous ones)."""
        m = len(a)
        if m == 0:
            return a
        r, B = self.rate, self.burst
        j = np.arange(self.n + 1, self.n + m + 1, dtype=np.float64)
        run = np.maximum.accumulate(a - j / r)
        if len(self.tail):
            run = np.maximum(run, self.tail[-1])
        every = np.concatenate([self.tail, run])
        first = self.n + 1 - len(self.tail)      # the packet index of every[0]
        idx = np.floor(j + 1.0 - B).astype(np.int64)
        out = a.copy()
        ok = idx >= 1
        out[ok] = np.maximum(a[ok], every[idx[ok] - first] + (j[ok] + 1.0 - B) / r)
        self.n += m
        self.tail = every[-(int(math.ceil(B)) + 1):]
        return out


class _Source:
    """The packet arrivals of one open-loop flow, generated in blocks, handed out up to a horizon
    (with a shaper: the times they leave it)."""

    def __init__(self, law: PacketLaw, start: float, packets: int, seed: int, flow_id: int,
                 shaper: tuple[float, float] | None = None):
        self.law = law
        self.shaper = TokenBucket(*shaper) if shaper is not None else None
        self.left = packets if packets > 0 else -1   # packets still to generate (-1: forever)
        self.seed, self.flow_id = int(seed), int(flow_id)
        self._gap = self._period = None   # packet_seeds(seed, flow_id), each made at its first draw (a cbr
        #                                   source draws nothing, a Poisson one no periods; building generators
        #                                   dominated the set-up of many sources)
        self.start = float(start)
        self.k = 0                  # cbr: packets generated
        self.u = 0.0                # onoff: on-time elapsed at the last arrival (Poisson in on-time)
        self.on_end = 0.0           # onoff: on-time at which the current on period ends
        self.shift = self.start     # onoff: real time = on-time + shift (start plus the off periods so far)
        self.t = self.start         # poisson: the last arrival (the start before the first)
        self.pending = np.zeros(0)  # generated, not yet handed out (all >= the last horizon)
        self.block = FIRST_BLOCK    # the next block's size: it doubles up to PACKET_BLOCK (draws are sequential,
        #                             so the arrivals do not depend on the block sizes; a slow source among many
        #                             holds few arrivals ahead)
        if law.law == "onoff":
            self.on_end = float(self.g_period.exponential(law.on))

    @property
    def g_gap(self) -> np.random.Generator:
        if self._gap is None:
            self._gap = packet_seed(self.seed, self.flow_id, 0)
        return self._gap

    @property
    def g_period(self) -> np.random.Generator:
        if self._period is None:
            self._period = packet_seed(self.seed, self.flow_id, 1)
        return self._period

    def _block(self) -> np.ndarray:
        n = self.block if self.left < 0 else min(self.block, self.left)
        if n == 0:
            return np.zeros(0)
        self.block = min(2 * self.block, PACKET_BLOCK)
        law = self.law
        if law.law == "cbr":
            out = self.start + np.arange(self.k, self.k + n, dtype=np.float64) / law.rate
            self.k += n
        elif law.law == "poisson":
            gaps = self.g_gap.exponential(1.0 / law.rate, size=n)
            out = np.add.accumulate(np.concatenate(([self.t], gaps)))[1:]   # left to right
            self.t = float(out[-1])
        else:  # onoff: Poisson points in on-time, off periods inserted where an on period ends
            gaps = self.g_gap.exponential(1.0 / law.rate, size=n)
            u = np.add.accumulate(np.concatenate(([self.u], gaps)))[1:]
            self.u = float(u[-1])
            out = np.empty(n)
            for i in range(n):
                while u[i] >= self.on_end:   # the on period ended before this point: an off period follows
                    self.shift += float(self.g_period.exponential(law.off))
                    self.on_end += float(self.g_period.exponential(law.on))
                out[i] = u[i] + self.shift
        if self.left > 0:
            self.left -= n
        return out if self.shaper is None else self.shaper.shape(out)

    def until(self, H: float) -> np.ndarray:
        """Every arrival not yet handed out at a time ``< H``."""
        parts = [self.pending]
        while (not len(parts[-1]) or parts[-1][-1] < H) and self.left != 0:
            parts.append(self._block())
        a = np.concatenate(parts)
        cut = int(np.searchsorted(a, H, side="left"))
        self.pending = a[cut:]
        return a[:cut]

    @property
    def done(self) -> bool:
        return self.left == 0 and not len(self.pending)


@dataclass(frozen=True, eq=False)
class PacketTrace:
    """A validated packet trace: rows ``(time, flow)`` with static flow ids, in (time, flow id) order,
    and the packet sizes in bytes when the file has a ``size`` column (else ``None``)."""

    path: str
    sha256: str
    times: np.ndarray     # float64, non-decreasing
    flows: np.ndarray     # int64 static flow ids
    sizes: np.ndarray | None
    lines: np.ndarray     # int64 the file line of each row (for error messages)

    def __eq__(self, other) -> bool:
        return isinstance(other, PacketTrace) and (self.path, self.sha256) == (other.path, other.sha256)

    def __hash__(self) -> int:
        return hash((self.path, self.sha256))


def read_packet_trace(where: str, path: Path, flow_names: list[str], trace_flows: set[str],
                      starts: dict[str, float]) -> PacketTrace:
    """Read and validate a CSV of ``time,flow`` or ``time,flow,size`` rows (header required, static
    flows by name, e.g. ``voip`` or ``web.3`` for flow 3 of a counted table).

    Every error is one :class:`ScenarioError` line naming ``where``, the file and the line.  Times
    must be finite, non-decreasing and not before the flow's ``start``; a row must name a flow with
    ``arrival = {law = "trace"}`` (``trace_flows``); sizes (bytes) are finite numbers >= 0.  Rows
    of one instant are handed to the router in flow-id order (a stable sort)."""
    shown = path_text(path)
    raw = read_file(path, where=f"{where} = '{shown}'", max_bytes=MAX_TRACE_BYTES)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise ScenarioError(f"{where}: {shown} line {line}: not UTF-8 text (byte 0x{raw[e.start]:02x}); "
                            "save the file as UTF-8") from None
    rows = trace_rows(text, at=lambda n: f"{where}: {shown} line {n}")
    header = next(rows, (1, None))[1]
    cols = [c.strip().lower() for c in header] if header is not None else None
    if header is None:
        raise ScenarioError(f"{where}: {shown}: empty; its first line must be the header 'time,flow' or "
                            "'time,flow,size'")
    if cols not in (["time", "flow"], ["time", "flow", "size"]):
        raise ScenarioError(f"{where}: {shown} line 1: header {quote(header)}: must be exactly 'time,flow' or "
                            "'time,flow,size'")
    ncol = len(cols)
    index = {n: i for i, n in enumerate(flow_names)}
    times, fl, sizes, lines = [], [], [], []
    last = -math.inf
    for i, row in rows:
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != ncol:
            raise ScenarioError(f"{where}: {shown} line {i}: {len(row):,} fields: must be {ncol} ({','.join(cols)})")
        ts, fs = row[0].strip(), row[1].strip()
        t = _row_time(where, shown, i, ts, last)
        if fs not in index:
            raise ScenarioError(f"{where}: {shown} line {i}: flow = {quote(fs)}: unknown; the scenario's static flows "
                                f"are {name_list(flow_names) or '(none)'}")
        if fs not in trace_flows:
            raise ScenarioError(f"{where}: {shown} line {i}: flow = {quote(fs)}: not trace-driven; give its [[flow]] "
                                "table arrival = {law = \"trace\"}")
        if t < starts[fs]:
            raise ScenarioError(f"{where}: {shown} line {i}: time = {_plain(ts)}: before flow {quote(fs)} starts "
                                f"(start = {starts[fs]:g})")
        if ncol == 3:
            zs = row[2].strip()
            try:
                z = float(zs)
            except ValueError:
                z = math.nan
            if not (math.isfinite(z) and z >= 0.0):
                raise ScenarioError(f"{where}: {shown} line {i}: size = {quote(zs)}: must be a finite number of bytes >= 0")
            sizes.append(z)
        last = t
        times.append(t)
        fl.append(index[fs])
        lines.append(i)
    t_arr = np.array(times, np.float64)
    f_arr = np.array(fl, np.int64)
    order = np.lexsort((f_arr, t_arr)) if len(t_arr) else np.zeros(0, np.int64)  # by time, then flow id (stable)
    return PacketTrace(path=str(path), sha256=hashlib.sha256(raw).hexdigest(), times=t_arr[order],
                       flows=f_arr[order], sizes=np.array(sizes, np.float64)[order] if ncol == 3 else None,
                       lines=np.array(lines, np.int64)[order])


class _TraceSource:
    """The rows of a packet trace, handed out up to a horizon (as :class:`_Source`)."""

    def __init__(self, trace: PacketTrace):
        self.trace = trace
        self.at = 0

    def until(self, H: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        b = int(np.searchsorted(self.trace.times, H, side="left"))
        a, self.at = self.at, max(self.at, b)
        return self.trace.times[a:self.at], self.trace.flows[a:self.at], self.sizes(a, self.at)

    def sizes(self, a: int, b: int) -> np.ndarray:
        return self.trace.sizes[a:b] if self.trace.sizes is not None else np.zeros(b - a)

    @property
    def done(self) -> bool:
        return self.at >= len(self.trace.times)


class PacketStream:
    """The packet arrivals of a scenario's open-loop static flows, merged in (time, flow id) order.

    ``take(n)`` returns the next ``n`` arrivals as (times float64, flow ids int64, sizes float64: a
    packet trace's ``size`` column, else 0), fewer once every source has ended.  The values never depend on how the calls split them: each flow's arrivals
    come from its own generators (:func:`packet_seeds`), and the merge hands out only arrivals before
    a horizon that moves forward, once every source has generated all of its own before it.
    ``scenario`` needs ``flows`` (``arrival``, ``start``, ``packets``), ``static_ids()`` and
    ``packet_trace``.
    """

    def __init__(self, scenario, seed: int | None = None):
        self.seed = scenario.run.seed if seed is None else int(seed)
        table, _ = scenario.static_ids()
        self.sources: list[tuple[int, _Source]] = []
        rate = 0.0
        laws = [getattr(f, "arrival", None) for f in scenario.flows]
        h0 = math.inf
        for fid, k in enumerate(table.tolist()):
            law = laws[k]
            if law is not None and law.law != "trace":
                f = scenario.flows[k]
                shaper = getattr(f, "shaper", None)
                self.sources.append((fid, _Source(law, f.start, f.packets, self.seed, fid, shaper)))
                rate += law.mean_rate if shaper is None else min(law.mean_rate, shaper[0])
                h0 = min(h0, f.start)
        self.rate = rate
        tr = getattr(scenario, "packet_trace", None)
        self.trace = _TraceSource(tr) if tr is not None else None
        self.H = h0 if self.sources else math.inf
        self.buf_t = np.zeros(0)
        self.buf_f = np.zeros(0, np.int64)
        self.buf_z = np.zeros(0)

    @property
    def finite(self) -> bool:
        return all(s.left >= 0 for _, s in self.sources)

    def _done(self) -> bool:
        return all(s.done for _, s in self.sources) and (self.trace is None or self.trace.done)

    def _extend(self, n: int) -> None:
        """Move the horizon until the buffer holds at least ``n`` arrivals or every source has ended."""
        while len(self.buf_t) < n and not self._done():
            live = [(fid, s) for fid, s in self.sources if not s.done]
            if live:
                H = self.H + max(n - len(self.buf_t), PACKET_BLOCK, PER_SOURCE_STEP * len(live)) / self.rate
            else:
                H = math.inf
            ts, fs, zs = [self.buf_t], [self.buf_f], [self.buf_z]
            for fid, s in live:
                a = s.until(H)
                ts.append(a)
                fs.append(np.full(len(a), fid, np.int64))
                zs.append(np.zeros(len(a)))
            if self.trace is not None:
                a, f, z = self.trace.until(H)
                ts.append(a)
                fs.append(f)
                zs.append(z)
            t = np.concatenate(ts)
            f = np.concatenate(fs)
            order = np.lexsort((f, t))
            self.buf_t, self.buf_f, self.buf_z = t[order], f[order], np.concatenate(zs)[order]
            self.H = H

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The next ``n`` packet arrivals: (times, static flow ids, sizes in bytes or 0)."""
        n = int(n)
        if self.trace is not None and not self.sources:  # a trace alone: its rows in order
            a = self.trace.at
            b = min(a + n, len(self.trace.trace.times))
            self.trace.at = b
            return self.trace.trace.times[a:b].copy(), self.trace.trace.flows[a:b].copy(), self.trace.sizes(a, b)
        self._extend(n)
        t, f, z = self.buf_t[:n], self.buf_f[:n], self.buf_z[:n]
        self.buf_t, self.buf_f, self.buf_z = self.buf_t[n:], self.buf_f[n:], self.buf_z[n:]
        return np.ascontiguousarray(t), np.ascontiguousarray(f), np.ascontiguousarray(z)

    def until(self, T: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every packet arrival at a time ``<= T`` (for tests and the reference)."""
        parts = []
        while True:
            t, f, z = self.take(CHUNK)
            keep = t <= T
            parts.append((t[keep], f[keep], z[keep]))
            if len(t) < CHUNK or not keep.all():
                break
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))
