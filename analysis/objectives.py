"""The one table of fluid objectives: every consumer enumerates :data:`TABLE`.

An objective is a rule that turns requirement vectors ``a`` (n x J) and weights
``w`` into rates ``phi`` (docs/allocators.md).  Each row says what the project can do with
it:

* ``allocate``  the static solver (:mod:`analysis.allocations`), used by ``mrfq alloc``;
* ``state_code`` the numba per-state kernel's code (:func:`analysis.state_rates.state_phi`),
  or None where no per-state kernel exists;
* ``any_j``     True when that kernel handles any number of resources J (False: J <= 2);
* ``markov``    True when the flow-level Markov model of [BR] §4.1 (``mrfq fluid``,
  ``mrfq compare``'s fluid reference) and the fluid path (:mod:`analysis.fluid_path`)
  offer it;
* ``cluster``   the task-level (cluster) solver ``f(capacity[S, R], demand[U, R], weight,
  *, tree) -> ClusterAllocation`` as ``"module:function"`` (imported when first used,
  since :mod:`analysis.cluster` builds on this module), or None: ``mrfq alloc
  CLUSTER.toml`` and ``mrfq cluster`` enumerate the rows that have one.

Names, not codes, are the public currency: APIs and the CLI take ``"drf"``; the
integer codes exist only because a numba kernel dispatches on an int, and are
derived from the table below as the named constants ``S_DRF``, ``S_PF``, ...

Adding an objective is one line in :data:`TABLE` (``drfh`` and ``h-drf`` are
cluster objectives with no packet-level solver); the CLI choices, validation
messages and the tests pick it up.  The scheduler registry (``fq.registry.SchedulerInfo.objective``)
names objectives from this table (a test checks it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mrfq.analysis import allocations
from mrfq.flows.errors import MrfqError, quote


@dataclass(frozen=True)
class Objective:
    name: str
    summary: str
    reference: str
    allocate: Callable | None            # static solver f(a, w) -> Allocation
    state_code: int | None = None        # numba per-state kernel code (None: no kernel)
    any_j: bool = False                  # the per-state kernel handles J >= 3
    markov: bool = False                 # Markov model, fluid path and compare reference
    cluster: str | None = None           # "module:function" of the task-level solver

    def cluster_solver(self) -> Callable:
        """The task-level solver (see the module docstring)."""
        import importlib

        mod, fn = self.cluster.split(":")
        return getattr(importlib.import_module(mod), fn)


#: the objectives, in the order the CLI lists them
TABLE: dict[str, Objective] = {o.name: o for o in (
    Objective("drf", "dominant resource fairness: max-min of dominant shares (progressive filling)",
              "[DRF] §4; [BR] eq. (2)", allocations.drf, 0, True, True,
              "mrfq.analysis.cluster.objectives:cluster_drf"),
    Objective("pf", "proportional fairness: max sum_i w_i log phi_i",
              "[BR] eq. (3)-(5)", allocations.pf, 1, False, True),
    Objective("bmf", "bottleneck max fairness: max-min on each flow's bottleneck resource",
              "[BR] eq. (6)-(7)", allocations.bmf, 2, False, True),
    Objective("asset", "asset fairness: max-min of the sum of shares over all resources",
              "[DRF] §5.1", allocations.asset_fairness, 3, True, False,
              "mrfq.analysis.cluster.objectives:cluster_asset"),
    Objective("ceei", "competitive equilibrium from equal incomes (Fisher market)",
              "[DRF] §5.2", allocations.ceei, cluster="mrfq.analysis.cluster.objectives:cluster_ceei"),
    Objective("drfh", "DRFH: max-min of global dominant shares under every server's capacity",
              "[DRFH] eq. (7), sec. V-A", None, cluster="mrfq.analysis.cluster.objectives:cluster_drfh"),
    Objective("h-drf", "static hierarchical DRF: siblings equalise weighted dominant shares",
              "[H-DRF] sec. 3.1, Algorithm 1", None, cluster="mrfq.analysis.cluster.objectives:cluster_hdrf"),
)}

#: numba kernel codes, derived from the table (compile-time constants in the kernels)
S_DRF = TABLE["drf"].state_code
S_PF = TABLE["pf"].state_code
S_BMF = TABLE["bmf"].state_code
S_ASSET = TABLE["asset"].state_code

#: names with a static solver (``mrfq alloc``, :func:`allocate`)
ALLOC = tuple(n for n, o in TABLE.items() if o.allocate is not None)
#: names with a per-state kernel (:func:`analysis.state_rates.state_rates`)
STATE = tuple(n for n, o in TABLE.items() if o.state_code is not None)
#: names the Markov model, the fluid path and ``mrfq compare`` support
MARKOV = tuple(n for n, o in TABLE.items() if o.markov)
#: names with a task-level (cluster) solver
CLUSTER = tuple(n for n, o in TABLE.items() if o.cluster is not None)


def get(name: str, among: tuple[str, ...] | None = None, field: str = "objective") -> Objective:
    """The table row of ``name``; a one-line MrfqError naming the choices when it is not
    one of ``among`` (default: every objective)."""
    among = tuple(TABLE) if among is None else among
    if name not in among:
        raise MrfqError(f"{field} = {quote(name)}: unknown; choose one of {', '.join(among)}")
    return TABLE[name]


def kernel_handles(name: str, J: int) -> bool:
    """True when the per-state numba kernel of ``name`` covers ``J`` resources."""
    o = TABLE[name]
    return o.state_code is not None and (o.any_j or J <= 2)


def allocate(objective: str, a, w=None) -> allocations.Allocation:
    """The static allocation of ``objective`` (one of :data:`ALLOC`) for vectors ``a``, weights ``w``."""
    return get(objective, ALLOC).allocate(a, w)
