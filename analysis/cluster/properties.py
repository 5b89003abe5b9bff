"""Fairness and efficiency properties of cluster allocations ([DRF] §3, §6; [DRFH] §III-C, §IV-D).

An allocation is given as a bundle ``bundle[U, S, R]`` (resources of each type that
user u receives on server s, scenario units; S = 1 for an all-in-one pool).  Users
have Leontief preferences: with bundle ``b`` on server s user u runs
``min_r b_sr / d_ur`` tasks (fractional in the fluid model; [DRFH] eq. (1)), and
prefers more tasks.

sharing incentive ([DRF] §3)
    every user runs at least as many tasks as with its own ``w_u / sum(w)`` of the
    resources.  With several servers the benchmark is ambiguous ([DRFH] §IV-D);
    option ``benchmark``: ``"pool"`` (default; the share of the pooled resources, as
    if they were one server) or ``"per-server"`` (the share of every server, the
    paper's benchmark (a)).
envy-freeness ([DRF] §3; [DRFH] §III-C)
    no user could run more tasks with another user's bundle (weighted: with
    ``w_u / w_v`` of user v's bundle).
Pareto efficiency ([DRF] §3; [DRFH] §III-C)
    no feasible allocation gives every user at least as many tasks and one more:
    one LP, ``max sum_u x_u`` over per-server task counts ``x[u, s] >= 0`` with
    ``sum_u x_us d_u <= capacity_s`` and ``sum_s x_us >= tasks_u``.
strategy-proofness ([DRF] §3; [DRFH] Prop. 3, "truthfulness")
    checked by search: for each user, every misreport on a grid (each resource
    of its demand multiplied by one of ``factors``) is fed to the mechanism; the
    user's true benefit is the number of tasks its *true* demand can run with the
    bundle it receives.  Reports the largest gain found (1.0 = nobody gains).

Tolerance ``TOL`` (relative) absorbs LP and float rounding.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mrfq.analysis.cluster.objectives import CLUSTER_OBJECTIVES
from mrfq.flows.errors import MrfqError, quote

TOL = 1e-7
BENCHMARKS = ("pool", "per-server")
#: default misreport grid: each resource's demand multiplied by one of these
FACTORS = (0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0)

Mechanism = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def tasks_of(bundle: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """Tasks each user runs with its bundle ([DRFH] eq. (1)): ``sum_s min_{r: d_ur>0} b_usr / d_ur``."""
    d = np.asarray(demand, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(d[:, None, :] > 0, bundle / d[:, None, :], np.inf)
    return q.min(axis=2).sum(axis=1)


def sharing_incentive(capacity, demand, bundle, weight=None, *, benchmark: str = "pool") -> np.ndarray:
    """Per-user slack ``tasks_u / benchmark_u - 1`` (>= -TOL means the property holds for u)."""
    C = np.array(capacity, dtype=np.float64, ndmin=2)
    D = np.asarray(demand, dtype=np.float64)
    U = D.shape[0]
    w = np.ones(U) if weight is None else np.asarray(weight, dtype=np.float64)
    share = w / w.sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        if benchmark == "pool":
            alone = np.where(D > 0, C.sum(axis=0) / D, np.inf).min(axis=1)
        elif benchmark == "per-server":
            alone = np.where(D[:, None, :] > 0, C[None] / D[:, None, :], np.inf).min(axis=2).sum(axis=1)
        else:
            raise MrfqError(f"benchmark = {quote(benchmark)}: must be one of {', '.join(BENCHMARKS)}")
    return tasks_of(bundle, D) / (share * alone) - 1.0


def envy(demand, bundle, weight=None) -> np.ndarray:
    """``E[u, v] = tasks u would run with (w_u/w_v x) v's bundle / tasks u runs - 1``; envy-free iff all <= TOL."""
    D = np.asarray(demand, dtype=np.float64)
    U = D.shape[0]
    w = np.ones(U) if weight is None else np.asarray(weight, dtype=np.float64)
    own = tasks_of(bundle, D)
    E = np.zeros((U, U))
    for u in range(U):
        for v in range(U):
            if u != v:
                other = tasks_of((w[u] / w[v]) * bundle[v][None], D[u][None])[0]
                E[u, v] = other / own[u] - 1.0 if own[u] > 0 else (np.inf if other > 0 else 0.0)
    return E


def pareto_gain(capacity, demand, tasks) -> float:
    """``max sum_u x_u - sum_u tasks_u`` over feasible allocations giving everyone at least
    ``tasks_u`` (LP, HiGHS); Pareto efficient iff <= TOL * sum(tasks)."""
    from scipy.optimize import linprog

    C = np.array(capacity, dtype=np.float64, ndmin=2)
    D = np.asarray(demand, dtype=np.float64)
    S, R = C.shape
    U = D.shape[0]
    A, b = [], []
    for s in range(S):
        for r in range(R):
            row = np.zeros(U * S)
            row[np.arange(U) * S + s] = D[:, r]
            A.append(row)
            b.append(C[s, r])
    for u in range(U):
        row = np.zeros(U * S)
        row[u * S:(u + 1) * S] = -1.0
        A.append(row)
        b.append(-float(tasks[u]) * (1 - 1e-12))
    res = linprog(-np.ones(U * S), A_ub=np.array(A), b_ub=np.array(b), bounds=[(0, None)] * (U * S),
                  method="highs")
    if res.status != 0:
        raise RuntimeError(f"Pareto LP failed: {res.message}")
    return float(-res.fun - np.sum(tasks))


@dataclass(frozen=True)
class Misreport:
    user: int
    claimed: tuple[float, ...]
    truthful_tasks: float
    lying_tasks: float

    @property
    def gain(self) -> float:
        return self.lying_tasks / self.truthful_tasks if self.truthful_tasks > 0 else np.inf


def best_misreport(mechanism: Mechanism, capacity, demand, weight=None, *,
                   factors=FACTORS) -> Misreport:
    """Search the misreport grid for the most profitable lie of any user.

    ``mechanism(capacity, demand, weight) -> bundle[U, S, R]``.  Returns the best
    :class:`Misreport` found (``gain`` <= 1 + TOL: no user gains on this grid).
    """
    C = np.array(capacity, dtype=np.float64, ndmin=2)
    D = np.asarray(demand, dtype=np.float64)
    U, R = D.shape
    truth = tasks_of(mechanism(C, D, weight), D)
    best = Misreport(0, tuple(D[0]), float(truth[0]), float(truth[0]))
    for u in range(U):
        for f in itertools.product(factors, repeat=R):
            if all(x == 1.0 for x in f):
                continue
            lie = D.copy()
            lie[u] = D[u] * np.array(f)
            if lie[u].max() <= 0:
                continue
            got = tasks_of(mechanism(C, lie, weight)[u:u + 1], D[u:u + 1])[0]
            cand = Misreport(u, tuple(float(x) for x in lie[u]), float(truth[u]), float(got))
            if cand.gain > best.gain:
                best = cand
    return best


def objective_mechanism(name: str) -> Mechanism:
    """A fluid objective of :data:`CLUSTER_OBJECTIVES` as a mechanism returning bundles."""
    f = CLUSTER_OBJECTIVES[name][2]
    return lambda C, D, w: f(C, D, w).bundle


def discrete_mechanism(allocator: str, **options) -> Mechanism:
    """A task-level allocator of :mod:`fq.cluster.registry` (filled until it stops, every user
    backlogged) as a mechanism returning bundles (``running x demand`` per server)."""
    from mrfq.fq.cluster.registry import allocate_static
    from mrfq.fq.cluster.state import ClusterState

    def mech(C, D, w):
        st = ClusterState.new(C, D, weight=w)
        allocate_static(allocator, st, **options)
        return st.running[:, :, None] * np.asarray(D, dtype=np.float64)[:, None, :]

    return mech


@dataclass(frozen=True)
class PropertyReport:
    sharing_incentive: bool
    envy_free: bool
    pareto_efficient: bool
    strategy_proof: bool
    worst_misreport: Misreport

    def to_dict(self) -> dict:
        m = self.worst_misreport
        return {"sharing_incentive": self.sharing_incentive, "envy_free": self.envy_free,
                "pareto_efficient": self.pareto_efficient, "strategy_proof": self.strategy_proof,
                "worst_misreport": {"user": m.user, "claimed": list(m.claimed), "gain": m.gain}}


def check_all(mechanism: Mechanism, capacity, demand, weight=None, *, benchmark: str = "pool",
              factors=FACTORS) -> PropertyReport:
    """All four properties of [DRF] §3 for one mechanism on one instance."""
    C = np.array(capacity, dtype=np.float64, ndmin=2)
    D = np.asarray(demand, dtype=np.float64)
    bundle = mechanism(C, D, weight)
    tasks = tasks_of(bundle, D)
    si = bool(np.all(sharing_incentive(C, D, bundle, weight, benchmark=benchmark) >= -TOL))
    ef = bool(np.all(envy(D, bundle, weight) <= TOL))
    pe = pareto_gain(C, D, tasks) <= TOL * max(1.0, tasks.sum())
    m = best_misreport(mechanism, C, D, weight, factors=factors)
    return PropertyReport(si, ef, bool(pe), bool(m.gain <= 1 + TOL), m)
