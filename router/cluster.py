"""The task-level cluster simulator.

Jobs of tasks arrive (``flows.cluster.draw_jobs``: Poisson or a CSV trace), backlogged users
always have a task waiting between their ``start`` and ``stop`` times, and the chosen allocator's
``pick`` (``fq.cluster.registry``) launches tasks whenever something changes; a task holds its
user's ``charge`` vector on one server for its duration.

Event loop: a binary heap of ``(time, kind, seq)`` entries (``heapq``), one entry per future
event, no SimPy (one process per task would only add overhead; the loop is 60 lines and its
order is explicit).  At one instant, in this order (a choice, like the packet router's:
docs/schedulers.md, 'Event order and ties'): (1) every task finishing at ``t`` frees its
resources (in the order the tasks were launched); (2) job arrivals and backlog starts / stops at
``t`` (in file order); (3) the allocator is called until it returns ``None``, each launch
applied at once.  A task of a job user takes the next task of that user's oldest unfinished job
(FIFO within a user); its duration was drawn with the job.  A backlogged user's k-th task lasts
its k-th draw from its own stream, whatever the allocator, so allocators are compared on common
random numbers.

Outputs (:class:`ClusterRun`): per-user dominant shares (``max_r tasks_u demand[u, r] / R_r``
on the pooled capacity ``R``), time-averaged over ``[warmup, duration]`` and over ``samples``
equal bins of ``[0, duration]`` (the share-over-time curve); per-resource utilisation (time
average of the charged resources over the pool, overall and per bin); job completion times (finish of the last task
minus arrival) of every job that finished; counters and the wall-clock speed.  Same scenario and
seed, same result, bit for bit.
"""

from __future__ import annotations

import heapq
import time as _time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from mrfq.flows.cluster import ClusterScenario, backlog_duration, backlog_streams, draw_jobs
from mrfq.flows.errors import MrfqError, quote
from mrfq.fq.cluster import registry
from mrfq.fq.cluster.state import BACKLOGGED, ClusterState, Tree

_FINISH, _ARRIVE, _START, _STOP = 0, 1, 2, 3


@dataclass(frozen=True, eq=False)
class ClusterRun:
    """Flat results of one run (numpy arrays; ``to_dict`` for JSON).

    users, resources          names
    share_mean[U]             time-averaged dominant share over [warmup, duration]
    tasks_mean[U]             time-averaged running tasks over [warmup, duration]
    utilisation[R]            time-averaged charged fraction of the pool over [warmup, duration]
    sample_time[B]            bin centres; share_time[B, U] bin averages of the dominant shares
    util_time[B, R]           bin averages of the utilisation
    job_user[K], job_arrival[K], job_finish[K], job_tasks[K]   finished jobs (in finishing order)
    launched[U]               tasks launched per user; events, picks, wall (seconds)
    """

    allocator: str
    users: tuple[str, ...]
    resources: tuple[str, ...]
    share_mean: np.ndarray
    tasks_mean: np.ndarray
    utilisation: np.ndarray
    sample_time: np.ndarray
    share_time: np.ndarray
    util_time: np.ndarray
    job_user: np.ndarray
    job_arrival: np.ndarray
    job_finish: np.ndarray
    job_tasks: np.ndarray
    launched: np.ndarray
    events: int
    picks: int
    wall: float
    jobs_arrived: int = 0
    options: dict = field(default_factory=dict)
    #: which simulator ran: "compiled" (router/cluster_engine.py) or "reference" (this module)
    engine: str = "reference"

    @property
    def completion(self) -> np.ndarray:
        return self.job_finish - self.job_arrival

    def mean_completion(self) -> np.ndarray:
        """Mean job completion time per user (NaN where no job finished)."""
        out = np.full(len(self.users), np.nan)
        for u in range(len(self.users)):
            m = self.job_user == u
            if m.any():
                out[u] = float(self.completion[m].mean())
        return out

    @property
    def tasks_per_second(self) -> float:
        return float(self.launched.sum()) / self.wall if self.wall > 0 else float("inf")

    def to_dict(self, *, series: bool = True) -> dict:
        mc = self.mean_completion()
        d = {"allocator": self.allocator, "options": self.options, "users": list(self.users),
             "resources": list(self.resources),
             "share_mean": self.share_mean.tolist(), "tasks_mean": self.tasks_mean.tolist(),
             "utilisation": self.utilisation.tolist(), "launched": self.launched.tolist(),
             "jobs_arrived": self.jobs_arrived, "jobs_finished": int(self.job_user.shape[0]),
             "mean_completion": [None if np.isnan(x) else float(x) for x in mc],
             "events": self.events, "picks": self.picks}
        if series:
            d["sample_time"] = self.sample_time.tolist()
            d["share_time"] = self.share_time.tolist()
            d["util_time"] = self.util_time.tolist()
        return d


def make_state(sc: ClusterScenario) -> ClusterState:
    """An empty :class:`ClusterState` for the scenario (nothing pending: the simulator adds work)."""
    parent, weight, leaf, names = sc.tree_arrays()
    return ClusterState.new(sc.capacity(), sc.demand(), sc.weights(),
                            pending=np.zeros(sc.n_users, dtype=np.int64),
                            tree=Tree(parent, weight, leaf, names))


class _Integrator:
    """Integrals of a piecewise-constant vector over [warmup, T] and over `bins` equal bins of [0, T]."""

    def __init__(self, T: float, warmup: float, bins: int, width: int):
        self.T, self.warmup, self.bins = T, warmup, bins
        self.edges = np.linspace(0.0, T, bins + 1)
        self.total = np.zeros(width)
        self.binned = np.zeros((bins, width))
        self.b = 0

    def add(self, t0: float, t1: float, v: np.ndarray) -> None:
        t1 = min(t1, self.T)
        if t1 <= t0:
            return
        lo = max(t0, self.warmup)
        if t1 > lo:
            self.total += (t1 - lo) * v
        t = t0
        while t < t1:
            while self.b < self.bins - 1 and self.edges[self.b + 1] <= t:
                self.b += 1
            end = min(t1, self.edges[self.b + 1]) if self.b < self.bins - 1 else t1
            self.binned[self.b] += (end - t) * v
            t = end


#: the simulators :func:`simulate` can run
ENGINES = ("compiled", "reference")


def simulate(sc: ClusterScenario, *, allocator: str | None = None, seed: int | None = None,
             duration: float | None = None, options: dict | None = None, engine: str = "compiled",
             trace: list | None = None) -> ClusterRun:
    """Run the scenario through the task-level simulator.

    ``allocator``, ``seed`` and ``duration`` override the scenario's ``[run]`` values (validated
    again); ``options`` are the allocator's options (``fq.cluster.registry``; unknown ones raise
    :class:`~flows.errors.MrfqError`).  ``engine="compiled"`` (default) runs the numba event loop
    of :mod:`router.cluster_engine` for the allocators it has kernels for (drf, drfh-first-fit,
    drfh-best-fit, slots) and this module's loop for the others; ``engine="reference"`` always
    runs this module's loop, the oracle the compiled one is tested against (both launch the same
    tasks on the same servers at the same instants).  ``trace``, when a list, receives every launch
    as ``(time, user, server)``; :attr:`ClusterRun.engine` says which loop ran.
    """
    if engine not in ENGINES:
        raise MrfqError(f"engine = {quote(engine)}: unknown; choose one of {', '.join(ENGINES)}")
    if allocator is not None or seed is not None or duration is not None:
        sc = sc.replace_run(allocator=allocator, seed=seed, duration=duration)
    opts = dict(options or {})
    if engine == "compiled":
        from mrfq.router import cluster_engine

        if cluster_engine.supported(sc.run.allocator):
            return cluster_engine.simulate_compiled(sc, opts, trace=trace)
    T = sc.run.duration
    state = make_state(sc)
    pick = registry.bind(sc.run.allocator, state, **opts)
    U, R = state.n_users, state.total.shape[0]
    users = sc.users
    jobs = draw_jobs(sc, T)
    brng = backlog_streams(sc)

    heap: list = []
    seq = 0
    for k in range(jobs.n_jobs):
        heap.append((float(jobs.time[k]), _ARRIVE, seq, k))
        seq += 1
    for u, spec in enumerate(users):
        if spec.backlogged:
            heap.append((spec.start, _START, seq, u))
            seq += 1
            if spec.stop < T:
                heap.append((spec.stop, _STOP, seq, u))
                seq += 1
    heapq.heapify(heap)

    queue: list[deque] = [deque() for _ in range(U)]  # per user: [job, next task index] not fully launched
    left = np.zeros(jobs.n_jobs, dtype=np.int64)  # tasks of job k not yet finished
    launched = np.zeros(U, dtype=np.int64)
    done_user: list[int] = []
    done_arr: list[float] = []
    done_fin: list[float] = []
    done_tasks: list[int] = []
    share_int = _Integrator(T, sc.run.warmup, sc.run.samples, U)
    tasks_int = _Integrator(T, sc.run.warmup, 1, U)
    use_int = _Integrator(T, sc.run.warmup, sc.run.samples, R)
    inv_total = 1.0 / state.total
    dem_frac = state.demand * inv_total
    charge_frac = state.charge * inv_total
    tasks_now = np.zeros(U)
    share_now = np.zeros(U)
    use_now = np.zeros(R)
    now = 0.0
    events = picks = 0
    wall0 = _time.perf_counter()

    while heap and heap[0][0] < T:
        t = heap[0][0]
        share_int.add(now, t, share_now)
        tasks_int.add(now, t, tasks_now)
        use_int.add(now, t, use_now)
        now = t
        while heap and heap[0][0] == t:
            _, kind, _, a = heapq.heappop(heap)
            events += 1
            if kind == _FINISH:
                u, s, k = a
                state.finish(u, s)
                if k >= 0:
                    left[k] -= 1
                    if left[k] == 0:
                        done_user.append(u)
                        done_arr.append(float(jobs.time[k]))
                        done_fin.append(t)
                        done_tasks.append(int(jobs.tasks[k]))
            elif kind == _ARRIVE:
                u = int(jobs.user[a])
                n = int(jobs.tasks[a])
                left[a] = n
                queue[u].append([a, 0])
                state.pending[u] += n
            elif kind == _START:
                state.pending[a] = BACKLOGGED
            else:
                state.pending[a] = 0
        while True:
            choice = pick(state)
            picks += 1
            if choice is None:
                break
            u, s = int(choice[0]), int(choice[1])
            state.launch(u, s)
            launched[u] += 1
            if trace is not None:
                trace.append((t, u, s))
            if users[u].backlogged:
                k, d = -1, backlog_duration(brng[u], users[u])
            else:
                head = queue[u][0]
                k = head[0]
                d = float(jobs.task_duration[jobs.first[k] + head[1]])
                head[1] += 1
                if head[1] == jobs.tasks[k]:
                    queue[u].popleft()
            heapq.heappush(heap, (t + d, _FINISH, seq, (u, s, k)))
            seq += 1
        tasks_now = state.tasks().astype(np.float64)
        share_now = (tasks_now[:, None] * dem_frac).max(axis=1)
        use_now = tasks_now @ charge_frac
    share_int.add(now, T, share_now)
    tasks_int.add(now, T, tasks_now)
    use_int.add(now, T, use_now)
    wall = _time.perf_counter() - wall0

    span = T - sc.run.warmup
    width = np.diff(share_int.edges)
    return ClusterRun(
        allocator=sc.run.allocator, users=tuple(sc.user_names()), resources=sc.resources,
        share_mean=share_int.total / span, tasks_mean=tasks_int.total / span, utilisation=use_int.total / span,
        sample_time=0.5 * (share_int.edges[:-1] + share_int.edges[1:]),
        share_time=share_int.binned / width[:, None], util_time=use_int.binned / width[:, None],
        job_user=np.array(done_user, dtype=np.int64), job_arrival=np.array(done_arr, dtype=np.float64),
        job_finish=np.array(done_fin, dtype=np.float64), job_tasks=np.array(done_tasks, dtype=np.int64),
        launched=launched, events=events, picks=picks, wall=wall,
        jobs_arrived=int(np.count_nonzero(jobs.time < T)), options=opts)
