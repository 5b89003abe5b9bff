"""Simulator against fluid: the check of the task-level simulator.

On the packet side the check is packet rates against the fluid allocation of the same flows; here
it is the long-run time-averaged dominant share of every backlogged user under an allocator
against the fluid allocation of the same users under the objective that allocator approximates
(``fq.cluster.registry.ALLOCATORS[name].objective``): ``drf`` against fluid DRF ([DRF] §4),
``drfh-*`` against fluid DRFH ([DRFH] eq. (7)), ``h-drf`` against static H-DRF ([H-DRF] §3.1).
Baselines (``naive-drf``, ``slots``, ``naive-h-drf``, ``collapsed-h-drf``) have no objective and are
compared with the objective asked for (``objective=``), which is how their gaps are shown.

Only scenarios whose users are all backlogged for the whole run (``start = 0``, no ``stop``)
have a single fluid point; anything else raises :class:`~flows.errors.MrfqError`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mrfq.analysis.cluster.objectives import CLUSTER_OBJECTIVES, ClusterAllocation
from mrfq.flows.cluster import ClusterScenario
from mrfq.flows.errors import MrfqError, quote
from mrfq.fq.cluster.state import Tree


def fluid_allocation(sc: ClusterScenario, objective: str, *, per_server: bool = False) -> ClusterAllocation:
    """The fluid ``objective`` (a ``CLUSTER_OBJECTIVES`` name) for the scenario's users, all backlogged.

    The servers go in as types (identical capacity vectors merged, ``ClusterScenario.server_types``);
    ``per_server``: DRFH also splits each type's allocation over its servers (``U x servers`` numbers)."""
    if objective not in CLUSTER_OBJECTIVES:
        raise MrfqError(f"objective = {quote(objective)}: unknown; choose one of {', '.join(CLUSTER_OBJECTIVES)}")
    fn = CLUSTER_OBJECTIVES[objective][2]
    cap, count = sc.server_types()
    kw = {"per_server": per_server} if objective == "drfh" else {}
    return fn(cap, sc.demand(), sc.weights(), tree=Tree(*sc.tree_arrays()), count=count, **kw)


@dataclass(frozen=True)
class SimVsFluid:
    allocator: str
    objective: str
    users: tuple[str, ...]
    simulated: np.ndarray
    fluid: np.ndarray

    @property
    def gap(self) -> np.ndarray:
        return self.simulated - self.fluid

    def to_dict(self) -> dict:
        return {"allocator": self.allocator, "objective": self.objective, "users": list(self.users),
                "simulated": self.simulated.tolist(), "fluid": self.fluid.tolist(), "gap": self.gap.tolist()}


def compare(sc: ClusterScenario, run, objective: str | None = None) -> SimVsFluid:
    """Time-averaged dominant shares of ``run`` (a ``router.cluster.ClusterRun`` of ``sc``) against
    the fluid allocation of the allocator's objective (or ``objective``)."""
    for i, u in enumerate(sc.users):
        if not u.backlogged or u.start > 0 or np.isfinite(u.stop):
            raise MrfqError(f"user[{i}] ({quote(u.name)}): the fluid comparison needs every user backlogged "
                            "for the whole run (backlogged = true, start = 0, no stop)")
    from mrfq.fq.cluster.registry import get as get_allocator  # here: alloc imports this module and needs no mechanism

    obj = objective or get_allocator(run.allocator).objective
    if obj is None:
        raise MrfqError(f"allocator {quote(run.allocator)} approximates no fluid objective; pass objective=")
    fl = fluid_allocation(sc, obj)
    return SimVsFluid(run.allocator, obj, tuple(sc.user_names()), np.asarray(run.share_mean),
                      np.asarray(fl.dominant_share))
