"""The cluster scenario model: servers, users, an optional H-DRF tree, and job traffic.

A cluster scenario is read from TOML (stdlib :mod:`tomllib`) or a dict into
frozen dataclasses, validated at one gate (:func:`cluster_from_dict`) before
any simulation object exists; every error is one line of
:class:`~flows.errors.ScenarioError` naming the field, the bad value and
what is allowed.  The mechanisms (``fq/cluster``), the task simulator
(``router/cluster.py``) and the fluid allocations (``analysis/cluster``)
only read the validated arrays this module hands out.

Units: resources in the scenario's own units (CPUs, GB, GPUs, slots); time in
arbitrary *time units*; a task's duration is how long it holds its demand
vector on one server.

TOML layout (complete examples in ``flows/presets/cluster/*.toml``)::

    name = "hdrf-fig4"
    description = "..."
    resources = ["cpu", "gpu"]
    [run]
    allocator = "h-drf"          # a name from fq.cluster.ALLOCATORS (see ALLOCATOR_NAMES)
    duration = 1000.0            # simulated time units
    warmup = 100.0               # time-averages start here
    seed = 1
    samples = 200                # points of the dominant-share-over-time output
    [[server]]
    capacity = [10, 10]          # one capacity vector per server
    count = 1                    # identical copies (default 1)
    [[node]]                     # internal node of the H-DRF tree ([H-DRF] §2)
    name = "n1"
    weight = 1.0
    parent = "root"              # default: the root
    [[user]]                     # a leaf: a user (job queue) running identical tasks
    name = "n1,1"
    demand = [1, 0]              # per-task demand vector ([DRF] §4)
    weight = 1.0
    parent = "n1"                # default: the root (a flat cluster when no [[node]] is given)
    backlogged = true            # always has another task (default: true unless it receives jobs)
    start = 0.0                  # backlogged users launch tasks in [start, stop)
    stop = 500.0                 # default: never stops
    duration = 1.0               # mean task duration
    duration_law = "exponential" # or "fixed"
    job_share = 0.0              # relative share of the [traffic] job arrivals it receives
    tasks_per_job = 10           # mean tasks per job
    tasks_law = "fixed"          # or "geometric" (on 1, 2, ...)
    [traffic]
    kind = "poisson"             # "none" (default), "poisson" or "trace"
    rate = 0.05                  # poisson: job arrivals per time unit, over all users
    trace = "jobs.csv"           # trace: CSV "time,user,tasks[,duration]", relative to the TOML file

Randomness (:func:`draw_jobs`, :func:`backlog_streams`): one
``numpy.random.SeedSequence(seed)`` spawns four children, one per stream:
job arrival times, the user of each job, tasks per job, task durations; the
durations child spawns one stream for job tasks and one per user for the
tasks of backlogged users (drawn in launch order), so every allocator sees
the same jobs and each user's k-th backlogged task lasts the same time under
every allocator (common random numbers, as on the packet side).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources as _res
from pathlib import Path
from typing import Any

import numpy as np

from mrfq.flows.validate import check_keys as _check_keys
from mrfq.flows.validate import err as _err
from mrfq.flows.validate import name_list as _names
from mrfq.flows.validate import number, path_text, read_file, read_toml, trace_rows
from mrfq.flows.validate import quote as _q
from mrfq.flows.validate import whole as _int

#: allocator names, kept here (not imported from fq) so that loading a scenario compiles and imports
#: nothing; fq/cluster/registry.py's ALLOCATORS must have exactly these keys (asserted by a test).
ALLOCATOR_NAMES = ("drf", "drfh-first-fit", "drfh-best-fit", "naive-drf", "slots",
                   "h-drf", "naive-h-drf", "collapsed-h-drf")
DURATION_LAWS = ("fixed", "exponential")
TASKS_LAWS = ("fixed", "geometric")
TRAFFIC_KINDS = ("none", "poisson", "trace")
ROOT = "root"

_TOP = ("name", "description", "resources", "run", "server", "node", "user", "traffic")
_RUN = ("allocator", "duration", "warmup", "seed", "samples")
_SERVER = ("name", "capacity", "count")
_NODE = ("name", "weight", "parent")
_USER = ("name", "demand", "weight", "parent", "backlogged", "start", "stop", "duration", "duration_law",
         "job_share", "tasks_per_job", "tasks_law")
_TRAFFIC = ("kind", "rate", "trace")


#: Documented limits of the gate (documentation: "What mrfq refuses"), as for packet scenarios
#: (flows/scenario.py): every number finite and in range, so that nothing fails later with an
#: overflow, a numpy allocation error or an unbounded run.
MAX_RESOURCES = 32
MAX_MAGNITUDE = 1e12            # capacities, demands, task durations, job shares, tasks per job, traffic.rate
MIN_WEIGHT = 1e-9               # weights in [MIN_WEIGHT, MAX_MAGNITUDE]
MAX_TIME = 1e15                 # run.duration, run.warmup, user start/stop (stop may be inf)
MAX_SEED = 2**62
MAX_SAMPLES = 100_000           # points of the share-over-time output
MAX_SERVERS = 100_000           # servers, counting copies
MAX_USERS = 10_000              # [[user]] tables, and as many [[node]] tables
MAX_DEPTH = 64                  # levels of the H-DRF tree: a user at most this many edges below the root
MAX_NAME = 100                  # characters in a server, node, user or resource name
MAX_TASKS = 200_000_000         # task launches a run may need (the compiled simulator: about 10^6 per second)
MAX_FILE_BYTES = 10 * 2**20     # a cluster scenario file
MAX_TRACE_BYTES = 100 * 2**20   # a job trace CSV
REL_MIN_DEMAND = 1e-12          # a positive demand is >= this x the pooled capacity of its resource


def _num(where: str, v: Any, *, lo: float | None = None, lo_open: bool = False, hi: float = MAX_MAGNITUDE,
         allow_inf: bool = False) -> float:
    if allow_inf and isinstance(v, float) and v == math.inf:
        return v
    return number(where, v, lo=lo, lo_open=lo_open, hi=hi)


def _table(where: str, v: Any) -> Mapping[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise _err(f"{where} = {_q(v)}: must be a table ([{where}])")
    return v


def _array(where: str, v: Any, most: int) -> list:
    if v is None:
        return []
    if not isinstance(v, list):
        raise _err(f"{where} = {_q(v)}: must be an array of tables ([[{where}]])")
    if len(v) > most:
        raise _err(f"{where}: {len(v):,} tables; at most {most:,}")
    return v


def _vec(where: str, v: Any, n: int) -> tuple[float, ...]:
    if not isinstance(v, (list, tuple)):
        raise _err(f"{where} = {_q(v)}: must be a list of {n} numbers (one per resource)")
    if len(v) != n:
        raise _err(f"{where} has {len(v)} entries: must have {n}, one per resource")
    return tuple(_num(f"{where}[{j}]", x, lo=0.0) for j, x in enumerate(v))


def _choice(where: str, v: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(v, str) or v not in allowed:
        raise _err(f"{where} = {_q(v)}: unknown; choose one of {_names(allowed, 12)}")
    return v


@dataclass(frozen=True)
class ServerSpec:
    """``count`` identical servers with capacity vector ``capacity`` ([DRFH] §III: c_l)."""

    name: str
    capacity: tuple[float, ...]
    count: int = 1


@dataclass(frozen=True)
class NodeSpec:
    """An internal node of the H-DRF tree: ``weight`` among its siblings under ``parent``."""

    name: str
    weight: float = 1.0
    parent: str = ROOT


@dataclass(frozen=True)
class UserSpec:
    """A user (an H-DRF leaf): identical tasks of ``demand``, durations of mean ``duration``."""

    name: str
    demand: tuple[float, ...]
    weight: float = 1.0
    parent: str = ROOT
    backlogged: bool = True
    start: float = 0.0
    stop: float = math.inf
    duration: float = 1.0
    duration_law: str = "exponential"
    job_share: float = 0.0
    tasks_per_job: float = 1.0
    tasks_law: str = "fixed"


@dataclass(frozen=True)
class TrafficSpec:
    """Job arrivals: ``none``, ``poisson`` (``rate`` jobs per time unit) or a CSV ``trace`` path."""

    kind: str = "none"
    rate: float = 0.0
    trace: str | None = None


@dataclass(frozen=True)
class ClusterRun:
    allocator: str = "drf"
    duration: float = 1000.0
    warmup: float = 0.0
    seed: int = 1
    samples: int = 200


@dataclass(frozen=True)
class Jobs:
    """Job arrivals as flat columns (a job's tasks are ``task_duration[first[k]:first[k] + tasks[k]]``).

    time[K]            arrival time of job k (non-decreasing)
    user[K]            index of the user that submits job k
    tasks[K]           number of tasks of job k (>= 1)
    first[K]           offset of job k's first task in ``task_duration``
    task_duration[T]   duration of every task, job by job
    """

    time: np.ndarray
    user: np.ndarray
    tasks: np.ndarray
    first: np.ndarray
    task_duration: np.ndarray

    @property
    def n_jobs(self) -> int:
        return int(self.time.shape[0])


@dataclass(frozen=True)
class ClusterScenario:
    """A validated cluster scenario.  Build with :func:`load_cluster`, :func:`load_cluster_preset` or
    :func:`cluster_from_dict`."""

    resources: tuple[str, ...]
    servers: tuple[ServerSpec, ...]
    users: tuple[UserSpec, ...]
    nodes: tuple[NodeSpec, ...] = ()
    traffic: TrafficSpec = TrafficSpec()
    run: ClusterRun = ClusterRun()
    name: str = "cluster"
    description: str = ""
    trace_rows: tuple[tuple[float, int, int, float], ...] = ()

    # ---- the arrays the mechanisms read --------------------------------------
    @property
    def n_resources(self) -> int:
        return len(self.resources)

    @property
    def n_users(self) -> int:
        return len(self.users)

    def capacity(self) -> np.ndarray:
        """Capacity vector of every server, (S, R), each ``[[server]]`` repeated ``count`` times."""
        rows = [s.capacity for s in self.servers for _ in range(s.count)]
        return np.array(rows, dtype=np.float64).reshape(len(rows), self.n_resources)

    def server_types(self) -> tuple[np.ndarray, np.ndarray]:
        """The servers as types: ``(capacity[K, R], count[K])``, one row per distinct capacity vector (``[[server]]``
        tables with the same capacity merged), in order of first appearance; ``count`` sums their copies."""
        index: dict[tuple[float, ...], int] = {}
        caps: list[tuple[float, ...]] = []
        counts: list[int] = []
        for s in self.servers:
            k = index.setdefault(s.capacity, len(caps))
            if k == len(caps):
                caps.append(s.capacity)
                counts.append(0)
            counts[k] += s.count
        return (np.array(caps, dtype=np.float64).reshape(len(caps), self.n_resources),
                np.array(counts, dtype=np.int64))

    def server_names(self) -> list[str]:
        return [s.name if s.count == 1 else f"{s.name}#{k}" for s in self.servers for k in range(s.count)]

    def demand(self) -> np.ndarray:
        """Per-task demand vector of every user, (U, R)."""
        return np.array([u.demand for u in self.users], dtype=np.float64).reshape(self.n_users, self.n_resources)

    def weights(self) -> np.ndarray:
        return np.array([u.weight for u in self.users], dtype=np.float64)

    def user_names(self) -> list[str]:
        return [u.name for u in self.users]

    @property
    def hierarchical(self) -> bool:
        """True when the scenario has internal nodes (an H-DRF tree deeper than one level)."""
        return bool(self.nodes)

    def tree_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
        """The H-DRF tree as arrays: (parent[N], weight[N], leaf[U], names[N]).

        Node 0 is the root (parent -1, weight 1); internal nodes follow, parents before children,
        then one leaf per user, in user order.  A scenario without ``[[node]]`` gives the flat tree
        (every user a child of the root), on which H-DRF is weighted DRF.
        """
        names = [ROOT]
        index = {ROOT: 0}
        parent = [-1]
        weight = [1.0]
        pending = list(self.nodes)
        while pending:  # parents before children (validated acyclic)
            rest = []
            for n in pending:
                if n.parent in index:
                    index[n.name] = len(names)
                    names.append(n.name)
                    parent.append(index[n.parent])
                    weight.append(n.weight)
                else:
                    rest.append(n)
            pending = rest
        leaf = []
        for u in self.users:
            leaf.append(len(names))
            names.append(u.name)
            parent.append(index[u.parent])
            weight.append(u.weight)
        return (np.array(parent, dtype=np.int64), np.array(weight, dtype=np.float64),
                np.array(leaf, dtype=np.int64), tuple(names))

    def replace_run(self, **changes: Any) -> ClusterScenario:
        """A copy with ``[run]`` fields changed (validated like the file's)."""
        d = {"allocator": self.run.allocator, "duration": self.run.duration, "warmup": self.run.warmup,
             "seed": self.run.seed, "samples": self.run.samples}
        d.update({k: v for k, v in changes.items() if v is not None})
        sc = ClusterScenario(self.resources, self.servers, self.users, self.nodes, self.traffic,
                             _run(d), self.name, self.description, self.trace_rows)
        _check_work(sc)
        return sc


# ---------------------------------------------------------------------------
# the gate
# ---------------------------------------------------------------------------
def _run(u: Mapping[str, Any]) -> ClusterRun:
    _check_keys("run", u, _RUN)
    duration = _num("run.duration", u.get("duration", 1000.0), lo=0.0, lo_open=True, hi=MAX_TIME)
    warmup = _num("run.warmup", u.get("warmup", 0.0), lo=0.0, hi=MAX_TIME)
    if warmup >= duration:
        raise _err(f"run.warmup = {warmup:g}: must be less than run.duration = {duration:g}")
    return ClusterRun(allocator=_choice("run.allocator", u.get("allocator", "drf"), ALLOCATOR_NAMES),
                      duration=duration, warmup=warmup, seed=_int("run.seed", u.get("seed", 1), lo=0, hi=MAX_SEED),
                      samples=_int("run.samples", u.get("samples", 200), lo=1, hi=MAX_SAMPLES))


def _read_trace(path: Path, users: list[str]) -> tuple[tuple[float, int, int, float], ...]:
    """Rows (time, user index, tasks, duration or NaN) of a job trace CSV ``time,user,tasks[,duration]``."""
    shown = f"traffic.trace = '{path_text(path)}'"
    raw = read_file(path, where=shown, max_bytes=MAX_TRACE_BYTES)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _err(f"{shown}: not UTF-8 text (offset {e.start}); save the trace as UTF-8") from None
    reader = trace_rows(text, at=lambda n: f"{shown} line {n}")
    header = next(reader, (1, None))[1]
    if header is None or [h.strip() for h in header[:3]] != ["time", "user", "tasks"] or \
            (len(header) == 4 and header[3].strip() != "duration") or len(header) > 4:
        raise _err(f"{shown}: first line must be the header time,user,tasks[,duration]")
    rows = []
    last = 0.0
    for k, rec in reader:
        if not rec or all(not c.strip() for c in rec):
            continue
        where = f"traffic.trace line {k}"
        if len(rec) != len(header):
            raise _err(f"{where} has {len(rec):,} fields: must have {len(header)} ({','.join(header)})")
        try:
            t = float(rec[0])
            dur = float(rec[3]) if len(rec) == 4 and rec[3].strip() else math.nan
            n_tasks = float(rec[2])
        except ValueError:
            raise _err(f"{where} = {_q(','.join(rec))}: time, tasks and duration must be numbers") from None
        if not math.isfinite(t) or t < last:
            raise _err(f"{where}: time = {_q(rec[0])} must be finite and not before the previous row's {last:g}")
        last = t
        name = rec[1].strip()
        if name not in users:
            raise _err(f"{where}: user = {_q(name)} is not a [[user]]; known users: {_names(users)}")
        if not n_tasks.is_integer() or n_tasks < 1:
            raise _err(f"{where}: tasks = {_q(rec[2])} must be a whole number >= 1")
        if not math.isnan(dur) and not (math.isfinite(dur) and dur > 0):
            raise _err(f"{where}: duration = {_q(rec[3])} must be a positive number (or empty: the user's law)")
        rows.append((t, users.index(name), int(n_tasks), dur))
    if not rows:
        raise _err(f"{shown}: has no jobs after the header")
    return tuple(rows)


def cluster_from_dict(d: Mapping[str, Any], *, name: str = "cluster", base: Path | None = None,
                      simulate: bool = True) -> ClusterScenario:
    """Validate a parsed TOML document (or an equivalent dict) into a :class:`ClusterScenario`.

    ``base`` is the folder a relative ``traffic.trace`` path is resolved against.  ``simulate=False``
    (the fluid allocations, ``mrfq cluster alloc``): what only the task simulator needs is not checked,
    i.e. the trace file is not read and the run's task launches are not bounded (``MAX_TASKS``).
    """
    if not isinstance(d, Mapping):
        raise _err("cluster scenario: must be a table")
    _check_keys("cluster scenario", d, _TOP)
    res = d.get("resources")
    if res is None:
        raise _err('resources: missing; give the resource names, e.g. resources = ["cpu", "mem"]')
    if not isinstance(res, (list, tuple)) or not res or not all(isinstance(r, str) and r for r in res):
        raise _err(f"resources = {_q(res)}: must be a non-empty list of resource names")
    if len(res) > MAX_RESOURCES or max(len(r) for r in res) > MAX_NAME:
        raise _err(f"resources = {_q(res)}: at most {MAX_RESOURCES} names of at most {MAX_NAME} characters")
    if len(set(res)) != len(res):
        raise _err(f"resources = {_q(list(res))}: names must be distinct")
    R = len(res)
    run = _run(_table("run", d.get("run")))

    servers = []
    for i, s in enumerate(_array("server", d.get("server"), MAX_SERVERS)):
        w = f"server[{i}]"
        s = _table(w, s)
        _check_keys(w, s, _SERVER)
        if "capacity" not in s:
            raise _err(f"{w}.capacity: missing; give the server's capacity of each of the {R} resources ({_names(res)})")
        cap = _vec(f"{w}.capacity", s["capacity"], R)
        nm = s.get("name", f"s{i + 1}")
        if not isinstance(nm, str) or not nm or len(nm) > MAX_NAME:
            raise _err(f"{w}.name = {_q(nm)}: must be a non-empty string of at most {MAX_NAME} characters")
        servers.append(ServerSpec(name=nm, capacity=cap,
                                  count=_int(f"{w}.count", s.get("count", 1), lo=1, hi=MAX_SERVERS)))
    if not servers:
        raise _err("server: missing; add at least one [[server]] with capacity = [...]")
    n_servers = sum(s.count for s in servers)
    if n_servers > MAX_SERVERS:
        raise _err(f"server[*].count: {n_servers:,} servers in all; at most {MAX_SERVERS:,}")
    total = [sum(s.capacity[j] * s.count for s in servers) for j in range(R)]
    for j, t in enumerate(total):
        if t <= 0:
            raise _err(f"server[*].capacity[{j}]: resource {_q(res[j])} has no capacity on any server; "
                       "give it a positive capacity somewhere or remove it from resources")

    names: dict[str, str] = {ROOT: "the root"}

    def _name(where: str, v: Any, default: str) -> str:
        n = default if v is None else v
        if not isinstance(n, str) or not n or len(n) > MAX_NAME:
            raise _err(f"{where}.name = {_q(v)}: must be a non-empty string of at most {MAX_NAME} characters")
        if n in names:
            raise _err(f"{where}.name = {_q(n)}: already used by {names[n]}; node and user names must be distinct")
        names[n] = where
        return n

    nodes = []
    for i, n in enumerate(_array("node", d.get("node"), MAX_USERS)):
        w = f"node[{i}]"
        n = _table(w, n)
        _check_keys(w, n, _NODE)
        if "name" not in n:
            raise _err(f"{w}.name: missing; every internal node needs a name that children refer to")
        par = n.get("parent", ROOT)
        if not isinstance(par, str):
            raise _err(f"{w}.parent = {_q(par)}: must be a node name")
        nodes.append(NodeSpec(name=_name(w, n["name"], ""), parent=par,
                              weight=_num(f"{w}.weight", n.get("weight", 1.0), lo=MIN_WEIGHT)))
    node_names = {ROOT} | {n.name for n in nodes}
    for i, n in enumerate(nodes):
        if n.parent not in node_names:
            raise _err(f"node[{i}].parent = {_q(n.parent)}: not a [[node]]; use 'root' or one of "
                       f"{_names(sorted(node_names - {ROOT}))}")
    parent_of = {n.name: n.parent for n in nodes}
    depth = {ROOT: 0}  # edges below the root; every node's walk stops at the first node of known depth
    for i, n in enumerate(nodes):  # no cycles, at most MAX_DEPTH - 1 levels of nodes (their users one more)
        path, on_path, p = [], set(), n.name
        while p not in depth:
            if p in on_path:
                raise _err(f"node[{i}].parent = {_q(n.parent)}: the tree has a cycle through {_q(p)}")
            on_path.add(p)
            path.append(p)
            p = parent_of[p]
        for q in reversed(path):
            depth[q] = depth[p] + 1
            p = q
            if depth[q] >= MAX_DEPTH:
                k = next(j for j, m in enumerate(nodes) if m.name == q)
                raise _err(f"node[{k}] ({_q(q)}): {depth[q]} levels below the root; the tree may be at most "
                           f"{MAX_DEPTH} levels deep (a user at most {MAX_DEPTH} edges below the root, so a node "
                           f"at most {MAX_DEPTH - 1}); flatten the hierarchy")

    tr = _table("traffic", d.get("traffic"))
    _check_keys("traffic", tr, _TRAFFIC)
    kind = _choice("traffic.kind", tr.get("kind", "none"), TRAFFIC_KINDS)
    rate = 0.0
    trace = None
    if kind == "poisson":
        if "rate" not in tr:
            raise _err("traffic.rate: missing; give job arrivals per time unit for kind = 'poisson'")
        rate = _num("traffic.rate", tr["rate"], lo=0.0, lo_open=True)
    elif "rate" in tr:
        raise _err(f"traffic.rate: only for kind = 'poisson' (kind is {_q(kind)})")
    if kind == "trace":
        trace = tr.get("trace")
        if not isinstance(trace, str) or not trace:
            raise _err(f"traffic.trace = {_q(trace)}: give the path of a CSV time,user,tasks[,duration]")
    elif "trace" in tr:
        raise _err(f"traffic.trace: only for kind = 'trace' (kind is {_q(kind)})")

    users = []
    for i, u in enumerate(_array("user", d.get("user"), MAX_USERS)):
        w = f"user[{i}]"
        u = _table(w, u)
        _check_keys(w, u, _USER)
        if "demand" not in u:
            raise _err(f"{w}.demand: missing; give the per-task demand of each of the {R} resources ({_names(res)})")
        dem = _vec(f"{w}.demand", u["demand"], R)
        if max(dem) <= 0:
            raise _err(f"{w}.demand = {list(dem)}: all zero; a task must use some resource")
        for r, x in enumerate(dem):
            if 0 < x < REL_MIN_DEMAND * total[r]:
                raise _err(f"{w}.demand[{r}] = {x:.6g}: a positive demand must be >= {REL_MIN_DEMAND:g} x the pooled "
                           f"capacity of {_q(res[r])} ({total[r]:.6g}); use 0, or rescale the units")
        if not any(all(s.capacity[k] >= dem[k] - 1e-12 * total[k] for k in range(R)) for s in servers):
            raise _err(f"{w}.demand = {list(dem)}: one task fits on no server; lower the demand or "
                       "add a server at least that large")
        par = u.get("parent", ROOT)
        if not isinstance(par, str) or par not in node_names:
            others = sorted(node_names - {ROOT})
            raise _err(f"{w}.parent = {_q(par)}: not a [[node]]; use 'root'"
                       + (f" or one of {_names(others)}" if others else " (the scenario has no [[node]])"))
        share = _num(f"{w}.job_share", u.get("job_share", 0.0), lo=0.0)
        if share > 0 and kind != "poisson":
            raise _err(f"{w}.job_share = {share:g}: only with [traffic] kind = 'poisson' (kind is {_q(kind)})")
        backlogged = u.get("backlogged", not (share > 0 or kind == "trace"))
        if not isinstance(backlogged, bool):
            raise _err(f"{w}.backlogged = {_q(backlogged)}: must be true or false")
        if backlogged and share > 0:
            raise _err(f"{w}.backlogged = true: a backlogged user cannot also receive jobs (job_share = {share:g}); "
                       "set backlogged = false or job_share = 0")
        start = _num(f"{w}.start", u.get("start", 0.0), lo=0.0, hi=MAX_TIME)
        stop = _num(f"{w}.stop", u.get("stop", math.inf), lo=0.0, hi=MAX_TIME, allow_inf=True)
        if stop <= start:
            raise _err(f"{w}.stop = {stop:g}: must be after start = {start:g}")
        users.append(UserSpec(
            name=_name(w, u.get("name"), f"u{i + 1}"), demand=dem,
            weight=_num(f"{w}.weight", u.get("weight", 1.0), lo=MIN_WEIGHT),
            parent=par, backlogged=backlogged, start=start, stop=stop,
            duration=_num(f"{w}.duration", u.get("duration", 1.0), lo=0.0, lo_open=True),
            duration_law=_choice(f"{w}.duration_law", u.get("duration_law", "exponential"), DURATION_LAWS),
            job_share=share,
            tasks_per_job=_num(f"{w}.tasks_per_job", u.get("tasks_per_job", 1.0), lo=1.0, hi=1e6),
            tasks_law=_choice(f"{w}.tasks_law", u.get("tasks_law", "fixed"), TASKS_LAWS),
        ))
        if users[-1].tasks_law == "fixed" and not users[-1].tasks_per_job.is_integer():
            raise _err(f"{w}.tasks_per_job = {users[-1].tasks_per_job:g}: must be whole with tasks_law = 'fixed' "
                       "(or use tasks_law = 'geometric' for a mean)")
    if not users:
        raise _err("user: missing; add at least one [[user]] with demand = [...]")
    if kind == "poisson" and not any(u.job_share > 0 for u in users):
        raise _err("user[*].job_share: all zero; with kind = 'poisson' at least one user must receive jobs")
    for i, u in enumerate(users):
        if not u.backlogged and u.job_share <= 0 and kind != "trace":
            raise _err(f"user[{i}].backlogged = false: the user never has a task; give job_share > 0 "
                       "or leave it backlogged")
    used = {u.parent for u in users} | {n.parent for n in nodes}
    for i, n in enumerate(nodes):
        if n.name not in used:
            raise _err(f"node[{i}] ({_q(n.name)}): has no children; every internal node needs a user below it")

    rows: tuple = ()
    if kind == "trace" and simulate:
        p = Path(trace)
        if not p.is_absolute() and base is not None:
            p = base / p
        rows = _read_trace(p, [u.name for u in users])
        for r in rows:
            if users[r[1]].backlogged:
                raise _err(f"traffic.trace: has jobs for user {_q(users[r[1]].name)}, which is backlogged; "
                           "set its backlogged = false")

    nm = d.get("name", name)
    if not isinstance(nm, str) or len(nm) > MAX_NAME:
        raise _err(f"name = {_q(nm)}: must be a string of at most {MAX_NAME} characters")
    desc = d.get("description", "")
    if not isinstance(desc, str):
        raise _err(f"description = {_q(desc)}: must be a string")
    sc = ClusterScenario(resources=tuple(res), servers=tuple(servers), users=tuple(users), nodes=tuple(nodes),
                         traffic=TrafficSpec(kind=kind, rate=rate, trace=trace), run=run, name=nm,
                         description=desc, trace_rows=rows)
    if simulate:
        _check_work(sc)
    return sc


def expected_tasks(sc: ClusterScenario) -> float:
    """An upper estimate of the task launches of a run of ``run.duration`` time units.

    Job tasks: ``traffic.rate x duration x`` the share-weighted mean tasks per job (Poisson), or
    the trace's tasks before ``duration``.  Backlogged user u: at most ``n_u`` tasks at once, with
    ``n_u = sum_s count_s min_{r: d_ur > 0} floor(c_sr / d_ur)`` (what fits on the servers alone),
    each held for ``duration_u`` on average, over its window ``[start, min(stop, duration))``.
    """
    T = sc.run.duration
    total = 0.0
    if sc.traffic.kind == "poisson":
        share = sum(u.job_share for u in sc.users)
        total += sc.traffic.rate * T * sum(u.job_share * u.tasks_per_job for u in sc.users) / share
    elif sc.traffic.kind == "trace":
        total += float(sum(r[2] for r in sc.trace_rows if r[0] < T))
    for u in sc.users:
        if not u.backlogged:
            continue
        window = max(0.0, min(u.stop, T) - u.start)
        fit = sum(s.count * min(math.floor(s.capacity[r] / u.demand[r]) for r in range(sc.n_resources)
                                if u.demand[r] > 0) for s in sc.servers)
        total += fit * window / u.duration
    return total


def _check_work(sc: ClusterScenario) -> None:
    """Refuse a run that would launch more than ``MAX_TASKS`` tasks (:func:`expected_tasks`)."""
    n = expected_tasks(sc)
    if n > MAX_TASKS:
        raise _err(f"run.duration = {sc.run.duration:g}: about {n:.3g} task launches (jobs, and backlogged users' "
                   f"tasks that fit at once x window / task duration), more than {MAX_TASKS:.0e}; shorten "
                   "run.duration, lower traffic.rate or lengthen the task durations")


def load_cluster(path: str | Path, *, simulate: bool = True) -> ClusterScenario:
    """Read and validate a cluster scenario TOML file (``simulate``: as :func:`cluster_from_dict`)."""
    p = Path(path)
    d = read_toml(p, what="cluster scenario", max_bytes=MAX_FILE_BYTES,
                  missing_hint="or use --preset NAME; see `mrfq cluster presets`")
    return cluster_from_dict(d, name=p.stem, base=p.parent, simulate=simulate)


def _presets():
    return _res.files("mrfq.flows.presets").joinpath("cluster")


def cluster_preset_names() -> list[str]:
    """Names of the cluster scenarios shipped in ``flows/presets/cluster``."""
    return sorted(p.name[:-5] for p in _presets().iterdir() if p.name.endswith(".toml"))


def load_cluster_preset(name: str, *, simulate: bool = True) -> ClusterScenario:
    """Load a shipped cluster scenario by name (``simulate``: as :func:`cluster_from_dict`)."""
    names = cluster_preset_names()
    if name not in names:
        raise _err(f"--preset {_q(name)}: unknown cluster preset; choose one of {_names(names, 12)}")
    text = _presets().joinpath(name + ".toml").read_text(encoding="utf-8")
    return cluster_from_dict(tomllib.loads(text), name=name, simulate=simulate)


# ---------------------------------------------------------------------------
# traffic
# ---------------------------------------------------------------------------
#: children of SeedSequence(seed): job arrival times, user of each job, tasks per job, task durations
STREAMS = ("arrivals", "users", "tasks", "durations")


def _streams(seed: int) -> dict[str, np.random.SeedSequence]:
    return dict(zip(STREAMS, np.random.SeedSequence(seed).spawn(len(STREAMS))))


def _durations(rng: np.random.Generator, users: tuple[UserSpec, ...], who: np.ndarray) -> np.ndarray:
    """One duration per task of the users ``who`` (one standard exponential drawn per task for
    every law, so the stream stays aligned whatever the laws)."""
    e = rng.standard_exponential(who.shape[0])
    mean = np.array([u.duration for u in users], dtype=np.float64)[who]
    expo = np.array([u.duration_law == "exponential" for u in users], dtype=bool)[who]
    return np.where(expo, e * mean, mean)


def draw_jobs(sc: ClusterScenario, horizon: float | None = None) -> Jobs:
    """The jobs arriving in ``[0, horizon)`` (default ``run.duration``), from ``SeedSequence(run.seed)``.

    Poisson: inter-arrival times exponential of mean ``1 / traffic.rate`` (arrivals stream); each
    job's user drawn with probability proportional to ``job_share`` (users stream); its number of
    tasks ``tasks_per_job`` (fixed) or geometric on 1, 2, ... of that mean (tasks stream); each task's
    duration from the user's law (durations stream, first child).  A trace gives times, users and
    tasks; an empty duration column draws from the user's law the same way.
    """
    T = sc.run.duration if horizon is None else float(horizon)
    ss = _streams(sc.run.seed)
    dur_rng = np.random.default_rng(ss["durations"].spawn(2)[0])
    if sc.traffic.kind == "poisson":
        rng = np.random.default_rng(ss["arrivals"])
        times: list[np.ndarray] = []
        t = 0.0
        chunk = 1024
        while t < T:
            c = t + np.cumsum(rng.standard_exponential(chunk) / sc.traffic.rate)
            times.append(c)
            t = float(c[-1])
        time = np.concatenate(times) if times else np.zeros(0)
        time = time[time < T]
        K = time.shape[0]
        share = np.array([u.job_share for u in sc.users], dtype=np.float64)
        user = np.random.default_rng(ss["users"]).choice(sc.n_users, size=K, p=share / share.sum()).astype(np.int64)
        mean = np.array([u.tasks_per_job for u in sc.users], dtype=np.float64)[user]
        geo = np.array([u.tasks_law == "geometric" for u in sc.users], dtype=bool)[user]
        g = np.random.default_rng(ss["tasks"]).geometric(1.0 / np.maximum(mean, 1.0)) if K else np.zeros(0, np.int64)
        tasks = np.where(geo, g, np.rint(mean)).astype(np.int64)
        who = np.repeat(user, tasks)
        task_duration = _durations(dur_rng, sc.users, who)
    elif sc.traffic.kind == "trace":
        rows = [r for r in sc.trace_rows if r[0] < T]
        time = np.array([r[0] for r in rows], dtype=np.float64)
        user = np.array([r[1] for r in rows], dtype=np.int64)
        tasks = np.array([r[2] for r in rows], dtype=np.int64)
        who = np.repeat(user, tasks)
        task_duration = _durations(dur_rng, sc.users, who)
        given = np.repeat(np.array([r[3] for r in rows], dtype=np.float64), tasks)
        task_duration = np.where(np.isnan(given), task_duration, given)
    else:
        time = np.zeros(0)
        user = tasks = np.zeros(0, dtype=np.int64)
        task_duration = np.zeros(0)
    first = np.concatenate(([0], np.cumsum(tasks)[:-1])).astype(np.int64) if tasks.shape[0] else np.zeros(0, np.int64)
    return Jobs(time=np.ascontiguousarray(time, dtype=np.float64), user=user.astype(np.int64),
                tasks=tasks.astype(np.int64), first=first, task_duration=task_duration.astype(np.float64))


def backlog_streams(sc: ClusterScenario) -> list[np.random.Generator]:
    """One generator per user for the durations of its backlogged tasks, drawn in launch order
    (the second child of the durations stream, spawned per user)."""
    child = _streams(sc.run.seed)["durations"].spawn(2)[1]
    return [np.random.default_rng(s) for s in child.spawn(sc.n_users)]


def backlog_duration(rng: np.random.Generator, user: UserSpec) -> float:
    """The next backlogged task's duration for ``user`` (one standard exponential per task)."""
    e = float(rng.standard_exponential())
    return e * user.duration if user.duration_law == "exponential" else user.duration
