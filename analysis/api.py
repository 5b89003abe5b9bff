"""mrfq's Python API: one documented entry point per task, for notebooks and scripts.

Import it as ``import mrfq`` (``mrfq.run`` is this module's :func:`run`).  Every function validates
its input at the same gate as the ``mrfq`` command (a bad value raises :class:`mrfq.MrfqError` with the
same one-line message the command prints) and returns a report whose ``to_records()`` is a plain
list of dicts (JSON-ready: ``None`` where a value is undefined) and whose ``to_frame()`` is a
pandas DataFrame of the same records when pandas is installed (``pip install mrfq[pandas]``).
The objects the lower layers return stay reachable as ``.raw``.

============================  =================================================================
task                          entry point
============================  =================================================================
scenarios                     :func:`presets`, :func:`load`, :func:`schedulers`
one packet-level run          :func:`run` -> :class:`RunReport`
packet vs fluid sweep         :func:`compare` -> :class:`Records` (one row per scheduler, load, class)
scheduler scorecard           :func:`scorecard` -> :class:`ScorecardReport` (one row per scheduler, flow)
static fluid allocations      :func:`allocate` -> :class:`Records` (one row per transaction)
flow-level Markov model       :func:`fluid` -> :class:`Records` (one row per objective and class)
cluster scenarios             :func:`cluster_presets`, :func:`load_cluster`
cluster fluid allocations     :func:`cluster_allocate` -> :class:`Records` (one row per user)
cluster task simulator        :func:`cluster_simulate` -> :class:`Records` (one row per user)
============================  =================================================================

Example (the first public oracle of docs/allocators.md: two flows whose costs mirror each other get
2/3 of a packet per time unit each under DRF)::

    >>> import mrfq
    >>> [round(r["phi"], 4) for r in mrfq.allocate([[0.5, 1.0], [1.0, 0.5]], "drf").to_records()]
    [0.6667, 0.6667]
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mrfq.flows.errors import MrfqError, quote

__all__ = [
    "Records", "RunReport", "ScorecardReport", "allocate", "cluster_allocate", "cluster_presets", "cluster_simulate", "compare",
    "fluid", "load", "load_cluster", "presets", "run", "schedulers", "scorecard",
]


def _plain(v: Any) -> Any:
    """A JSON-ready value: numpy scalars to Python numbers, NaN and infinities to ``None``."""
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    return v


class Records(Sequence):
    """A table of results: a read-only sequence of plain dicts, one per row.

    ``to_records()`` returns a new list of those dicts; ``to_frame()`` the same rows as a pandas
    DataFrame (pandas is optional: without it, ``to_frame`` raises an error saying how to install
    it).  ``raw`` is the object the lower layer returned (e.g. a :class:`router.run.RunResult`).
    """

    def __init__(self, rows: Iterable[Mapping[str, Any]], raw: Any = None):
        self._rows = [dict(_plain(dict(r))) for r in rows]
        self.raw = raw

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i):
        """A copy of row ``i`` (a list of copies for a slice): changing it leaves the report alone."""
        return copy.deepcopy(self._rows[i])

    def __repr__(self) -> str:
        cols = list(self._rows[0]) if self._rows else []
        return f"Records({len(self._rows)} rows: {', '.join(cols)})"

    def to_records(self) -> list[dict]:
        """The rows as a list of dicts (copies: changing them leaves the report alone)."""
        return copy.deepcopy(self._rows)

    def to_frame(self):
        """The rows as a ``pandas.DataFrame`` (one column per key)."""
        try:
            import pandas as pd
        except ImportError:
            raise MrfqError("to_frame: pandas is not installed; pip install pandas (or use to_records())") from None
        return pd.DataFrame.from_records(self.to_records())


# ---------------------------------------------------------------------------
# scenarios
# ---------------------------------------------------------------------------
def presets() -> list[str]:
    """The names of the shipped packet scenarios (``mrfq presets``).

    >>> "br-unbalanced" in presets()
    True
    """
    from mrfq.flows.scenario import preset_names

    return preset_names()


def schedulers() -> list[str]:
    """The names of the packet schedulers, in the registry's order (``fq.registry.SCHEDULERS``).

    >>> schedulers()[:2]
    ['drfq', 'drfq-dovetail']
    """
    from mrfq.fq.registry import SCHEDULERS

    return list(SCHEDULERS)


def load(source: str | Path | Mapping[str, Any], **changes: Any):
    """A validated packet scenario (:class:`flows.scenario.Scenario`).

    ``source`` is a shipped preset's name, the path of a TOML file, or a dict laid out like the
    TOML (see the Scenarios page of the documentation).  ``changes`` override single fields
    with dotted names written with ``__`` for the dot (``run__seed=3``, ``router__scheduler=
    "pf-sfq"``; ``None`` resets one key to its default); the result goes through the gate again.
    A change through a value or into an array of tables (``flow__0__cost``) is refused, and so
    is ``None`` for a whole table (``run=None``): give the table or the array whole instead.

    >>> sc = load("oracle-two-flows", run__duration=2000.0)
    >>> sc.resources, [f.cost for f in sc.flows], sc.run.duration
    (('cpu', 'link'), [(0.5, 1.0), (1.0, 0.5)], 2000.0)
    >>> load({"resources": ["cpu"], "flow": [{"cost": [-1]}]})
    Traceback (most recent call last):
    ...
    mrfq.flows.errors.ScenarioError: flow[0].cost[0] = -1: out of range; must be in [0, 1e+12]
    """
    from mrfq.flows.scenario import from_dict, load_preset, load_scenario, preset_names

    if isinstance(source, Mapping):
        sc = from_dict(source)
    elif isinstance(source, str) and source in preset_names():
        sc = load_preset(source)
    elif isinstance(source, (str, Path)):
        if not Path(source).exists():
            raise MrfqError(f"load: {quote(str(source))}: not a shipped preset and no such file; presets() lists "
                            "the presets")
        sc = load_scenario(source)
    else:
        raise MrfqError(f"load: {type(source).__name__} given; pass a preset name, a TOML path or a dict")
    if changes:
        _check_changes(sc, changes)
        sc = sc.replace(**{k.replace("__", "."): v for k, v in changes.items()})
    return sc


#: the scenario's tables ([router]) and arrays of tables ([[flow]]) a change may name
_TABLES = ("router", "run", "traffic")
_ARRAYS = ("flow", "class")


def _check_changes(sc, changes: Mapping[str, Any]) -> None:
    """Refuse, naming the argument, a change :meth:`Scenario.replace` would misread: a dotted name
    through a value or an array (``run__duration__x``, ``flow__0__cost``), or ``None`` for a whole
    table (it would reset the table to its defaults)."""
    from mrfq.flows.scenario import to_dict

    d = to_dict(sc)
    for k, v in changes.items():
        parts = k.split("__")
        if not all(parts):
            raise MrfqError(f"load: {k}: an empty name between '__'; write a dotted name with '__' for the dot, "
                            "e.g. run__seed=3")
        if len(parts) == 1:
            if v is None and k in _TABLES:
                raise MrfqError(f"load: {k}=None: would reset the whole [{k}] table to its defaults; change single "
                                f"keys ({k}__<key>=...) or give the table as a dict ({k}={{...}})")
            if v is None and k in _ARRAYS:
                raise MrfqError(f"load: {k}=None: would drop every [[{k}]] table; give the tables as a list of "
                                f"dicts ({k}=[{{...}}, ...])")
            continue
        tgt: Any = d
        for i, p in enumerate(parts[:-1]):
            here = ".".join(parts[:i + 1])
            if p in _ARRAYS and i == 0:
                raise MrfqError(f"load: {k}: [[{p}]] is an array of tables, which a dotted change cannot reach "
                                f"into; give the whole array ({p}=[{{...}}, ...]) or load a dict")
            nxt = tgt.get(p)
            if nxt is None:  # a table the scenario leaves out: the change creates it
                break
            if not isinstance(nxt, Mapping):
                raise MrfqError(f"load: {k}: {here} is {quote(nxt, 40)}, not a table; a change names a key of a "
                                "table, e.g. run__duration=2000.0")
            tgt = nxt


def _names(field: str, v: Any) -> list[str]:
    """A list of names: a sequence of strings, or one comma-separated string (as on the command line)."""
    if isinstance(v, str):
        return [x.strip() for x in v.split(",")]
    if not isinstance(v, Iterable) or not all(isinstance(x, str) for x in v):
        raise MrfqError(f"{field} = {quote(v)}: give a list of names, e.g. ['drfq', 'fifo']")
    return list(v)


def _numbers(field: str, v: Any, example: str) -> list[float]:
    """A list of real numbers, or a one-line error naming ``field``."""
    if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
        raise MrfqError(f"{field} = {quote(v)}: give a list of numbers, e.g. {example}")
    out = []
    for x in v:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise MrfqError(f"{field}: {quote(x)} is not a number; give a list of numbers, e.g. {example}")
        out.append(float(x))
    return out


def _whole(field: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
        raise MrfqError(f"{field} = {quote(v)}: must be a whole number in [{lo:,}, {hi:,}]")
    return int(v)


def _scenario(scenario):
    from mrfq.flows.scenario import Scenario

    return scenario if isinstance(scenario, Scenario) else load(scenario)


# ---------------------------------------------------------------------------
# one run
# ---------------------------------------------------------------------------
class RunReport:
    """What one packet-level run gives: per static flow, per class and per resource.

    ``flows``, ``classes`` and ``resources`` are :class:`Records` with the same keys as the
    entries of ``mrfq run --json`` (each class with its ``gamma``, interval ``ci`` and
    ``method``); ``to_records()`` is the flows' and classes' rows together, each with a
    ``kind`` of ``"flow"`` or ``"class"``.  ``summary`` holds the run's scalars (scheduler, seed,
    services, duration, ``rfb``: the relative fairness bound reached, ...); ``shares``, with
    ``share_window``, one row per window and static flow (``window_start``, ``window_end``,
    ``flow``, ``share``: its dominant share there); ``windows``, with ``cwnd_series``, one row per change
    of a TCP flow's congestion window (``time``, ``flow``, ``cwnd``, ``ssthresh``; docs/transport.md: a
    TCP flow's entry in ``flows`` has its ``goodput`` and ``transport`` counts); ``raw`` the
    :class:`router.run.RunResult`.
    """

    def __init__(self, result):
        from mrfq.analysis.run_report import run_json

        d = run_json(result)
        self.raw = result
        self.flows = Records(d.pop("flows"), raw=result.flows)
        self.classes = Records(d.pop("classes"), raw=result.classes)
        self.resources = Records(d.pop("resources"), raw=result.resources)
        self.summary = _plain(d)
        ss = result.share_series
        self.shares = Records([] if ss is None else [
            {"window_start": k * ss.window, "window_end": (k + 1) * ss.window, "flow": name, "share": float(x)}
            for k, row in enumerate(ss.share.tolist()) for name, x in zip(ss.flows, row)])
        cs = result.cwnd_series
        names = result.scenario.static_flow_names()
        self.windows = Records([] if cs is None else [
            {"time": t, "flow": names[k], "cwnd": c, "ssthresh": h}
            for t, k, c, h in zip(cs.time.tolist(), cs.flow.tolist(), cs.cwnd.tolist(), cs.ssthresh.tolist())])

    def __repr__(self) -> str:
        s = self.summary
        return (f"RunReport({s['scenario']}, {s['scheduler']}, seed {s['seed']}: {len(self.flows)} flows, "
                f"{len(self.classes)} classes, {s['services']:,} services)")

    def to_records(self) -> list[dict]:
        """Every static flow's row, then every class's, each with ``kind`` = ``"flow"`` / ``"class"``."""
        return ([{"kind": "flow", **r} for r in self.flows] + [{"kind": "class", **r} for r in self.classes])

    def to_frame(self):
        """:meth:`to_records` as a pandas DataFrame."""
        return Records(self.to_records()).to_frame()


def run(scenario, *, scheduler: str | None = None, seed: int | None = None, duration: float | None = None,
        virtual_time: str | None = None, share_window: float | None = None, cwnd_series: bool = False) -> RunReport:
    """Run a packet scenario (a :class:`~flows.scenario.Scenario`, a preset name, a path or a dict)
    through the numba engine, as ``mrfq run`` does; the keywords override the scenario's own
    settings; ``share_window`` also gives each static flow's dominant share per window of that
    width (:attr:`RunReport.shares`, as ``mrfq run --share-series``); ``cwnd_series`` every change of each TCP
    flow's window (:attr:`RunReport.windows`, as ``mrfq run --cwnd-series``).  The first call of a
    scheduler compiles its event loop (half a minute to a minute on two cores; kept on disk).

    Static backlogged flows get their long-run rates (packets per time unit after warm-up):

    >>> r = run("oracle-two-flows", scheduler="drfq", duration=3000.0, share_window=1000.0)
    >>> [(f["name"], round(f["rate"], 2)) for f in r.flows]
    [('a', 0.67), ('b', 0.67)]
    >>> r.summary["scheduler"], [round(x["utilization"], 3) for x in r.resources]
    ('drfq', [1.0, 1.0])
    >>> [(x["flow"], round(x["share"], 2)) for x in r.shares][-2:]   # dominant share, last window
    [('a', 0.67), ('b', 0.67)]
    >>> r.summary["rfb"]["value"], r.summary["rfb"]["pair"]   # served in lockstep: never apart
    (0.0, ['a', 'b'])
    """
    from mrfq.router.run import simulate

    return RunReport(simulate(_scenario(scenario), scheduler=scheduler, seed=seed, duration=duration,
                              virtual_time=virtual_time, share_window=share_window or 0.0,
                              cwnd_series=bool(cwnd_series)))


# ---------------------------------------------------------------------------
# every scheduler on the same packets
# ---------------------------------------------------------------------------
class ScorecardReport:
    """What ``mrfq scorecard`` prints, as tables.

    ``rows`` (also ``to_records()``): one row per scheduler and ``[[flow]]`` table, with the keys of
    ``mrfq scorecard --json``'s ``flows`` (``rate``, ``share``, ``mean``, ``ci``, ``p99``,
    ``drops``, ...); ``schedulers``: one row per scheduler (``services``, ``cpu_ns_per_service``);
    ``intervals``: with ``intervals=``, one row per scheduler, flow and interval, and
    ``interval_fairness`` one per scheduler and interval (``jain``, ``max_min_ratio``: Jain's index
    and the max/min ratio of the windowed flows' normalised dominant shares; ``schedulers`` has them
    for the whole run); ``cdfs``: the
    sojourn CDFs :func:`analysis.plots.plot_delay_cdfs` draws.  ``raw`` is the
    :class:`analysis.scorecard.ScorecardResult` (its ``runs``: every scheduler's
    :class:`router.run.RunResult`).
    """

    def __init__(self, result):
        self.raw = result
        self.rows = Records(result.rows, raw=result)
        self.schedulers = Records(result.schedulers)
        self.intervals = Records(result.intervals)
        self.interval_fairness = Records(result.interval_fairness)
        self.cdfs = Records(result.cdfs)

    def __repr__(self) -> str:
        return (f"ScorecardReport({self.raw.scenario.name}, seed {self.raw.seed}: {len(self.schedulers)} schedulers, "
                f"{len(self.rows)} rows)")

    def to_records(self) -> list[dict]:
        """One dict per scheduler and flow (copies)."""
        return self.rows.to_records()

    def to_frame(self):
        """:meth:`to_records` as a pandas DataFrame."""
        return self.rows.to_frame()

    def plot(self, *, title: str | None = None):
        """The sojourn CDFs: one panel per flow, one line per scheduler (a matplotlib Figure)."""
        from mrfq.analysis.plots import plot_delay_cdfs

        return plot_delay_cdfs(self.raw.cdfs, title=title)


def scorecard(scenario, *, schedulers: Sequence[str] | None = None, seed: int | None = None,
              duration: float | None = None, intervals: Sequence[float] | None = None) -> ScorecardReport:
    """Every scheduler (or ``schedulers``) on the same packets, as ``mrfq scorecard``: per
    scheduler and flow its rate against its DRF share (an open-loop flow's: ``min(demand, DRF
    share)``), the sojourn's mean with its interval and p99, drops; per scheduler the event loop's
    CPU ns per service.  ``intervals``: edges ``t0 < t1 < ...``; each flow's dominant share and
    mean delay in each interval.

    The ``isolation`` preset, shortened: the light Poisson flow's p99 sojourn, in units of its own
    packet time, stays within a few under DRFQ; under FIFO it queues behind the greedy flows:

    >>> card = scorecard("isolation", schedulers=["drfq", "fifo"], duration=5000.0)
    >>> [(r["scheduler"], r["p99_over_packet_time"] < 5) for r in card.rows if r["flow"] == "light"]
    [('drfq', True), ('fifo', False)]
    """
    from mrfq.analysis.scorecard import scorecard as _scorecard
    from mrfq.fq.registry import SCHEDULERS

    sc = _scenario(scenario).with_overrides(seed=seed, duration=duration)
    return ScorecardReport(_scorecard(sc, list(SCHEDULERS) if schedulers is None else _names("schedulers", schedulers),
                                      intervals=None if intervals is None else
                                      _numbers("intervals", intervals, "[1000.0, 2000.0, 3000.0]"),
                                      option="schedulers"))


# ---------------------------------------------------------------------------
# sweeps
# ---------------------------------------------------------------------------
def compare(scenario, loads: Sequence[float], *, schedulers: Sequence[str] | None = None, quick: bool = True,
            results: str | Path | None = None, workers: int | None = 1, seed: int = 1, **config: Any) -> Records:
    """Packet gamma against fluid gamma over a load sweep, as ``mrfq compare``: one row per
    scheduler, load and class with ``gamma_packet``, its interval ``ci``, ``gamma_fluid`` and
    ``rel_error`` (see the Packet vs fluid page for the method).

    ``quick`` uses the quick configuration (``mrfq compare --quick``); ``config`` sets any other
    field of :class:`analysis.compare.CompareConfig` (``target``, ``max_replications``, ...).
    ``results``: an SQLite file that keeps every point (a re-run resumes from it); by default a
    temporary one, deleted afterwards.  ``workers=1`` runs in this process.

    A small sweep (one load, short replications): each class's packet gamma lies within a few
    per cent of the Markov model's DRF value:

    >>> rows = compare("dynamic-small", [0.5], schedulers=["drfq"], flows_per_replication=100.0,
    ...                max_replications=2)
    >>> [(r["class"], abs(r["gamma_packet"] / r["gamma_fluid"] - 1) < 0.05) for r in rows]
    [('c1', True), ('c2', True), ('c3', True)]
    """
    import tempfile

    from mrfq.analysis.compare import CompareConfig, point_scenario
    from mrfq.analysis.compare import compare as _compare
    from mrfq.analysis.sweep import ResultStore
    from mrfq.flows.cli_args import MAX_WORKERS, parse_loads
    from mrfq.fq.registry import SCHEDULERS

    sc = _scenario(scenario)
    loads = tuple(parse_loads(",".join(repr(x) for x in _numbers("loads", loads, "[0.3, 0.6]")), field="loads"))
    if workers is not None:
        _whole("workers", workers, 1, MAX_WORKERS)
    kw = dict(loads=loads, seed=seed, **config)
    if schedulers is not None:
        kw["schedulers"] = tuple(_names("schedulers", schedulers))
    try:
        cfg = CompareConfig.quick(**kw) if quick else CompareConfig(**kw)
    except TypeError as e:
        raise MrfqError(f"compare: {e}; the options are the fields of analysis.compare.CompareConfig") from None
    for s in cfg.schedulers:
        if s not in SCHEDULERS:
            raise MrfqError(f"schedulers: unknown scheduler {s!r}; choose from {', '.join(SCHEDULERS)}")
    for s in cfg.schedulers:  # every point's scenario through the gate before the first run
        for x in loads:
            point_scenario(sc, s, x, cfg)
    executor = "serial" if workers == 1 else "local"
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(results if results is not None else Path(tmp) / "results.sqlite")
        try:
            res = _compare(sc, cfg, store, executor=executor, workers=workers, progress=False)
        finally:
            store.close()
    return Records([r.to_json() for r in res.rows], raw=res)


# ---------------------------------------------------------------------------
# fluid models
# ---------------------------------------------------------------------------
def allocate(costs: Sequence[Sequence[float]], objective: str = "drf",
             weights: Sequence[float] | None = None) -> Records:
    """The static fluid allocation of one ``objective`` (``drf``, ``pf``, ``bmf``, ``asset``,
    ``ceei``: see ``analysis.objectives``) for transactions with the given cost vectors on
    resources of capacity 1, as ``mrfq alloc``: one row per transaction with its rate ``phi``,
    its ``usage`` of each resource and the run-wide ``saturated`` resources and ``unique`` flag.
    Costs and weights are held to the command's ranges: each cost 0 or in [1e-6, 1e6], each
    weight in [1e-6, 1e6], at most 64 resources and 1000 transactions.

    >>> rows = allocate([[0.5, 1.0], [1.0, 0.5], [1.0, 0.5]], "drf").to_records()
    >>> [round(r["phi"], 4) for r in rows]
    [0.4, 0.4, 0.4]
    >>> [round(r["phi"], 4) for r in allocate([[0.5, 1.0], [1.0, 0.5], [1.0, 0.5]], "pf")]
    [0.6667, 0.3333, 0.3333]
    """
    from mrfq.analysis import objectives

    objectives.get(objective, objectives.ALLOC)
    if isinstance(costs, (str, bytes)) or not isinstance(costs, Iterable):
        raise MrfqError(f"costs = {quote(costs)}: give a list of cost vectors, e.g. [[0.5, 1.0], [1.0, 0.5]]")
    costs = [_numbers(f"costs[{i}]", c, "[[0.5, 1.0], [1.0, 0.5]] (one cost vector per transaction)")
             for i, c in enumerate(costs)]
    w = None if weights is None else _numbers("weights", weights, "[1.0, 2.0]")
    _alloc_gate(costs, w)
    try:
        a = objectives.allocate(objective, costs, w)
    except MrfqError as e:  # the lower layer names its arguments a and w
        m = str(e)
        m = "costs" + m[1:] if m[:2] in ("a[", "a:") else "weights" + m[1:] if m[:2] in ("w[", "w:") else m
        raise MrfqError(m) from None
    d = a.to_dict()
    rows = []
    for i, phi in enumerate(a.phi):
        rows.append({"transaction": i, "objective": objective, "phi": float(phi),
                     "usage": [float(phi) * float(x) for x in costs[i]],
                     "saturated": [int(j) for j in a.saturated], "unique": bool(a.unique)})
    return Records(rows, raw=d)


def _alloc_gate(costs: list[list[float]], w: list[float] | None) -> None:
    """The ranges ``mrfq alloc`` holds its ``--cost`` and ``--weight`` to (negative and non-finite
    values are left to the allocation's own checks, which name them too)."""
    from mrfq.analysis.cli_fluid import ALLOC_MAX, ALLOC_MAX_RESOURCES, ALLOC_MAX_TRANSACTIONS, ALLOC_MIN

    rng = f"[{ALLOC_MIN:g}, {ALLOC_MAX:g}]"
    if len(costs) > ALLOC_MAX_TRANSACTIONS:
        raise MrfqError(f"costs: {len(costs):,} transactions; at most {ALLOC_MAX_TRANSACTIONS:,} (as mrfq alloc)")
    for i, row in enumerate(costs):
        if len(row) > ALLOC_MAX_RESOURCES:
            raise MrfqError(f"costs[{i}]: {len(row):,} resources; at most {ALLOC_MAX_RESOURCES} (as mrfq alloc)")
        for j, x in enumerate(row):
            if math.isfinite(x) and x > 0 and not ALLOC_MIN <= x <= ALLOC_MAX:
                raise MrfqError(f"costs[{i}, {j}] = {x:g}: out of range; each cost is 0 or in {rng} (rescale the "
                                "units), as for mrfq alloc --cost")
    for i, x in enumerate(w or ()):
        if math.isfinite(x) and x > 0 and not ALLOC_MIN <= x <= ALLOC_MAX:
            raise MrfqError(f"weights[{i}] = {x:g}: out of range; give a number in {rng}, as for mrfq alloc --weight")


def fluid(scenario, load: float | None = None, *, objectives: Sequence[str] = ("drf", "pf", "bmf"),
          method: str = "exact", seed: int = 1) -> Records:
    """The flow-level Markov model of [BR] §4.1, as ``mrfq fluid``: one row per objective and
    class with the mean flow throughput ``gamma`` (packets per time unit) at ``load`` (the most
    loaded resource's; default the scenario's ``[traffic] load``).  ``method``: ``exact``
    (truncated solve), ``graded`` (an approximation for loads near 1), ``auto`` or
    ``simulate``.

    >>> rows = fluid("br-unbalanced", 0.3, objectives=["drf"])
    >>> [(r["class"], round(r["gamma"], 3)) for r in rows]
    [('c1', 0.7), ('c2', 0.817), ('c3', 0.69)]
    """
    from mrfq.analysis import objectives as _obj
    from mrfq.analysis.cli_fluid import fluid_entry
    from mrfq.flows.cli_args import check_load
    from mrfq.flows.scenario import MAX_SEED

    sc = _scenario(scenario)
    if load is None:
        if sc.load is None:
            raise MrfqError(f"load: scenario {sc.name} has no [traffic] load; pass load=")
        load = sc.load
    if isinstance(load, bool) or not isinstance(load, (int, float, np.integer, np.floating)):
        raise MrfqError(f"load = {quote(load)}: must be a number, e.g. 0.6")
    load = check_load("load", float(load))
    if method not in ("exact", "graded", "auto", "simulate"):
        raise MrfqError(f"method = {method!r}: choose exact, graded, auto or simulate")
    seed = _whole("seed", seed, 0, MAX_SEED)
    objs = _names("objectives", objectives)
    for o in objs:
        _obj.get(o, _obj.MARKOV)
    entry = fluid_entry(sc, load, objs, method=method, seed=seed)
    rows = []
    for o, r in entry["objectives"].items():
        for c in r["classes"]:
            rows.append({"objective": o, "load": entry["load"], "class": c["name"], "gamma": c["gamma"],
                         "gamma_low": c.get("gamma_low"), "gamma_high": c.get("gamma_high"),
                         "mean_flows": c["mean_flows"], "method": r["method"]})
    return Records(rows, raw=entry)


# ---------------------------------------------------------------------------
# clusters
# ---------------------------------------------------------------------------
def cluster_presets() -> list[str]:
    """The names of the shipped cluster scenarios (``mrfq cluster presets``).

    >>> "drf-nsdi" in cluster_presets()
    True
    """
    from mrfq.flows.cluster import cluster_preset_names

    return cluster_preset_names()


def load_cluster(source: str | Path | Mapping[str, Any], *, simulate: bool = True):
    """A validated cluster scenario (:class:`flows.cluster.ClusterScenario`) from a shipped
    preset's name, a TOML path or a dict laid out like the TOML.  ``simulate=False`` checks it for
    the fluid allocations only, as ``mrfq cluster alloc`` does: the trace file is not read and the
    simulator's bound on task launches does not apply (:func:`cluster_allocate` loads so).

    >>> sc = load_cluster("drf-nsdi")
    >>> sc.user_names(), sc.capacity().sum(axis=0).tolist()
    (['A', 'B'], [9.0, 18.0])
    """
    from mrfq.flows.cluster import cluster_from_dict, cluster_preset_names, load_cluster as _load, load_cluster_preset

    if isinstance(source, Mapping):
        return cluster_from_dict(source, simulate=simulate)
    if isinstance(source, str) and source in cluster_preset_names():
        return load_cluster_preset(source, simulate=simulate)
    if isinstance(source, (str, Path)):
        if not Path(source).exists():
            raise MrfqError(f"load_cluster: {quote(str(source))}: not a shipped cluster preset and no such file; "
                            "cluster_presets() lists the presets")
        return _load(source, simulate=simulate)
    raise MrfqError(f"load_cluster: {type(source).__name__} given; pass a preset name, a TOML path or a dict")


def _cluster(scenario, simulate: bool = True):
    from mrfq.flows.cluster import ClusterScenario

    return scenario if isinstance(scenario, ClusterScenario) else load_cluster(scenario, simulate=simulate)


def cluster_allocate(scenario, objective: str = "drf") -> Records:
    """The fluid allocation of a cluster scenario's users (all backlogged), as ``mrfq cluster
    alloc``: one row per user with its ``tasks`` (a real number) and ``dominant_share``.
    ``objective``: ``drf``, ``drfh``, ``h-drf``, ``asset`` or ``ceei``.

    The example of [DRF] §4.1 (9 CPUs, 18 GB; A's tasks <1 CPU, 4 GB>, B's <3 CPUs, 1 GB>):

    >>> [(r["user"], round(r["tasks"], 3)) for r in cluster_allocate("drf-nsdi", "drf")]
    [('A', 3.0), ('B', 2.0)]
    """
    from mrfq.analysis.cli_cluster import ALLOC_OBJECTIVES
    from mrfq.analysis.cluster.simcheck import fluid_allocation

    sc = _cluster(scenario, simulate=False)
    if objective not in ALLOC_OBJECTIVES:
        raise MrfqError(f"objective = {objective!r}: unknown; choose one of {', '.join(ALLOC_OBJECTIVES)}")
    r = fluid_allocation(sc, objective)
    return Records([{"user": name, "objective": objective, "tasks": float(r.tasks[u]),
                     "dominant_share": float(r.dominant_share[u])} for u, name in enumerate(sc.user_names())],
                   raw=r)


def cluster_simulate(scenario, *, allocator: str | None = None, seed: int | None = None,
                     duration: float | None = None, options: Mapping[str, Any] | None = None) -> Records:
    """Run the task-level cluster simulator, as ``mrfq cluster sim``: one row per user with its
    time-averaged ``dominant_share`` and running ``tasks`` after warm-up, the jobs it completed
    and their mean completion time ``mean_jct``.  ``raw`` is the simulator's run (share time
    series, utilisation, launches).  The first call in a fresh environment compiles the task
    simulator with numba (about half a minute, once: the machine code is kept on disk).

    >>> rows = cluster_simulate("drf-nsdi", allocator="drf")
    >>> [(r["user"], round(r["tasks"], 2)) for r in rows]
    [('A', 3.0), ('B', 2.0)]
    """
    from mrfq.flows.cluster import ALLOCATOR_NAMES
    from mrfq.router.cluster import simulate

    if options is not None and not isinstance(options, Mapping):
        raise MrfqError(f"options = {quote(options)}: give a dict of allocator options by name, e.g. "
                        "{'blocked': 'stop'}")
    for k in options or {}:
        if not isinstance(k, str):
            raise MrfqError(f"options: the key {quote(k)} is not a string; give a dict of allocator options by "
                            "name, e.g. {'blocked': 'stop'}")
    sc = _cluster(scenario)
    if allocator is not None and allocator not in ALLOCATOR_NAMES:
        raise MrfqError(f"allocator = {allocator!r}: unknown; choose one of {', '.join(ALLOCATOR_NAMES)}")
    r = simulate(sc, allocator=allocator, seed=seed, duration=duration, options=dict(options or {}))
    mc = r.mean_completion()
    rows = []
    for u, name in enumerate(r.users):
        rows.append({"user": name, "allocator": r.allocator, "dominant_share": float(r.share_mean[u]),
                     "tasks": float(r.tasks_mean[u]), "jobs_done": int((r.job_user == u).sum()),
                     "mean_jct": float(mc[u])})
    return Records(rows, raw=r)
