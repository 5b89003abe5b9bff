"""The cluster objectives' task-level solvers; their table is the project's one objective table.

:data:`CLUSTER_OBJECTIVES` ``{name: (summary, reference, function)}`` is a view of the rows of
:data:`analysis.objectives.TABLE` that have a ``cluster`` solver (drf, asset, ceei, drfh, h-drf).

Every function has the signature ``f(capacity, demand, weight=None, *, tree=None, count=None) -> ClusterAllocation``
with ``capacity[S, R]`` (or ``[R]``) and ``demand[U, R]`` in the scenario's units; ``count[S]``
makes row s stand for that many identical servers (a server type; default one server per row).

``drf``, ``asset`` and ``ceei`` are the all-in-one objectives of [DRF] §4-5: the
servers are pooled into one (capacity ``T = capacity.sum(0)``) and the fluid
solvers of :mod:`analysis.allocations` run on ``a = demand / T`` (so ``phi`` is a
number of tasks; [DRF] §4.1 computes it this way).  ``drfh`` respects every
server's capacity ([DRFH] eq. (7)); on one server it equals ``drf`` ([DRFH] Prop. 4).
``tree`` is ignored by these objectives (it is for ``h-drf``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mrfq.analysis import objectives as _objectives
from mrfq.analysis.cluster import drfh as _drfh
from mrfq.analysis.cluster import hdrf as _hdrf


@dataclass(frozen=True, eq=False)
class ClusterAllocation:
    """objective; tasks[U] (fractional in the fluid model); dominant_share[U] (global:
    ``max_r tasks_u demand[u, r] / T_r``); bundle[U, S, R] resources given per server
    (scenario units; S = 1 for the pooled objectives); extra: objective-specific outputs."""

    objective: str
    tasks: np.ndarray
    dominant_share: np.ndarray
    bundle: np.ndarray
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = {"objective": self.objective, "tasks": [float(v) for v in self.tasks],
             "dominant_share": [float(v) for v in self.dominant_share]}
        d.update(self.extra)
        return d


def _pool(capacity, demand, count=None):
    C = np.array(capacity, dtype=np.float64, ndmin=2)
    D = np.array(demand, dtype=np.float64, ndmin=2)
    T = C.sum(axis=0) if count is None else (C * np.asarray(count, dtype=np.float64).reshape(-1, 1)).sum(axis=0)
    return T, D


def _pooled(objective: str, capacity, demand, weight, count=None) -> ClusterAllocation:
    T, D = _pool(capacity, demand, count)
    a = D / np.where(T > 0, T, 1.0)
    al = _objectives.allocate(objective, a, weight)
    tasks = np.array(al.phi)
    extra = {"saturated": list(al.saturated)}
    if al.prices is not None:
        extra["prices"] = [float(p) for p in al.prices]
    return ClusterAllocation(objective, tasks, (tasks[:, None] * a).max(axis=1),
                             (tasks[:, None] * D)[:, None, :], extra)


def cluster_drf(capacity, demand, weight=None, *, tree=None, count=None) -> ClusterAllocation:
    """Fluid DRF on the pooled resources ([DRF] §4, progressive filling)."""
    return _pooled("drf", capacity, demand, weight, count)


def cluster_asset(capacity, demand, weight=None, *, tree=None, count=None) -> ClusterAllocation:
    """Asset fairness on the pooled resources ([DRF] §5.1)."""
    return _pooled("asset", capacity, demand, weight, count)


def cluster_ceei(capacity, demand, weight=None, *, tree=None, count=None) -> ClusterAllocation:
    """CEEI on the pooled resources ([DRF] §5.2; equal incomes, or ``weight``)."""
    return _pooled("ceei", capacity, demand, weight, count)


def cluster_drfh(capacity, demand, weight=None, *, tree=None, count=None, tasks_max=None,
                 refine: str = "maxmin", per_server: bool | None = None) -> ClusterAllocation:
    """Fluid DRFH on heterogeneous servers ([DRFH] eq. (7), §V-A), see :mod:`analysis.cluster.drfh`.

    Identical servers are one type.  ``per_server`` (default: only when ``count`` is not given) splits each
    type's allocation evenly over its servers: ``bundle`` is ``[U, servers, R]`` and ``extra`` has
    ``per_server_tasks``; otherwise ``bundle`` is ``[U, types, R]`` (a type's servers summed).  ``extra``
    always has ``server_types`` (capacity and count of each type) and ``per_type_tasks``."""
    if per_server is None:
        per_server = count is None
    al = _drfh.drfh(capacity, demand, weight, tasks_max, refine=refine, count=count, per_server=per_server)
    d = al.to_dict()
    extra = {k: d[k] for k in ("server_types", "per_type_tasks", "per_server_tasks", "level") if k in d}
    if per_server:
        bundle = al.bundle
    else:
        D = np.array(demand, dtype=np.float64, ndmin=2)      # g dbar T = g D / d* (scenario units)
        bundle = al.g_type[:, :, None] * (D / al.dstar[:, None])[:, None, :]
    return ClusterAllocation("drfh", al.tasks, al.G, bundle, extra)


def cluster_hdrf(capacity, demand, weight=None, *, tree=None, count=None, tasks_max=None) -> ClusterAllocation:
    """Static H-DRF on the scenario's tree ([H-DRF] §3.1), see :mod:`analysis.cluster.hdrf`
    (no tree: the flat tree of ``weight``, i.e. weighted DRF)."""
    T, _ = _pool(capacity, demand, count)
    r = _hdrf.static_hdrf_of(T[None, :], demand, weight, tree=tree, tasks_max=tasks_max)
    D = np.array(demand, dtype=np.float64, ndmin=2)
    return ClusterAllocation("h-drf", r.tasks, r.share, (r.tasks[:, None] * D)[:, None, :],
                             {"node_share": [float(x) for x in r.node_share], "saturated": list(r.saturated)})


CLUSTER_OBJECTIVES = {name: (o.summary, o.reference, o.cluster_solver())
                      for name, o in _objectives.TABLE.items() if o.cluster is not None}
