"""The common contract of the task-level cluster mechanisms.

A cluster has ``S`` servers and ``R`` resource types; server ``s`` has the
capacity vector ``capacity[s]`` (in the scenario's units, e.g. CPUs and GB).
``U`` users each run identical tasks with the per-task demand vector
``demand[u]`` ([DRF] §4: a user's *demand vector* <1 CPU, 4 GB>; [DRFH] §III:
``D_i``).  The pooled capacity is ``total = capacity.sum(axis=0)``.

Every mechanism in ``fq/cluster/`` exposes one function

    ``pick(state: ClusterState) -> tuple[int, int] | None``

returning the next task launch it makes *now*, as ``(user, server)``, or
``None`` when it launches nothing more in this state.  ``pick`` never mutates
``state``: the caller applies the launch with :meth:`ClusterState.launch`
and calls ``pick`` again.  The simulator (``router/cluster.py``) calls it
whenever resources free up or tasks arrive; the static driver :func:`fill`
calls it until ``None``.  Ties are broken by the lowest user index, then the
lowest server index, so the result is deterministic.

A task of user ``u`` consumes ``charge[u]`` from its server's ``free`` vector
(``charge`` is ``demand`` unless a mechanism's ``prepare`` hook changes it,
e.g. the slot scheduler charges whole slots); fairness is always measured
on ``demand`` (what the user asked for).

Tolerances: a task fits on server ``s`` when
``free[s] >= charge[u] - FIT_TOL * total`` for every resource (absorbs
rounding of repeated float subtraction; never admits a genuine over-commit).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

#: ``pending[u]`` for a backlogged user (always has another task to launch)
BACKLOGGED = np.int64(1) << 50
#: relative tolerance of the fit test (times the pooled capacity of the resource)
FIT_TOL = 1e-9

Pick = Callable[["ClusterState"], "tuple[int, int] | None"]


@dataclass(frozen=True)
class Tree:
    """A weighted hierarchy for H-DRF ([H-DRF] §2): node 0 is the root.

    parent[n]   index of node n's parent (-1 for the root), shape (N,), parents before children
    weight[n]   weight of node n among its siblings (> 0), shape (N,)
    leaf[u]     the node of user u (a leaf), shape (U,)
    names       node names, for messages and output
    """

    parent: np.ndarray
    weight: np.ndarray
    leaf: np.ndarray
    names: tuple[str, ...] = ()

    def children(self, n: int) -> np.ndarray:
        """Indices of node n's children, in index order."""
        return np.flatnonzero(self.parent == n)


@dataclass(eq=False)
class ClusterState:
    """The mutable state a mechanism looks at (all numpy arrays, float64 / int64).

    capacity[S, R]  each server's capacity vector (constant)
    free[S, R]      what is still free on each server
    demand[U, R]    per-task demand vector of each user (fairness is measured on this)
    weight[U]       user weights (> 0), [DRF] §4 weighted DRF
    running[U, S]   tasks of user u running on server s
    pending[U]      tasks of user u waiting to launch (``BACKLOGGED`` for an infinite backlog)
    tree            optional :class:`Tree` for the hierarchical mechanisms
    charge[U, R]    what one task of user u takes from ``free`` (defaults to ``demand``)
    """

    capacity: np.ndarray
    free: np.ndarray
    demand: np.ndarray
    weight: np.ndarray
    running: np.ndarray
    pending: np.ndarray
    tree: Tree | None = None
    charge: np.ndarray | None = field(default=None)

    def __post_init__(self) -> None:
        if self.charge is None:
            self.charge = self.demand

    # -- construction ---------------------------------------------------------
    @classmethod
    def new(cls, capacity, demand, weight=None, pending=None, tree: Tree | None = None) -> ClusterState:
        """An empty cluster: everything free, nothing running.

        ``capacity`` is (S, R) (or (R,) for one server), ``demand`` is (U, R);
        ``weight`` defaults to ones and ``pending`` to ``BACKLOGGED`` for every user.
        Inputs are assumed validated (``flows/cluster.py`` is the gate); shapes are asserted.
        """
        C = np.array(capacity, dtype=np.float64, ndmin=2)
        D = np.array(demand, dtype=np.float64, ndmin=2)
        U, R = D.shape
        assert C.shape[1] == R, f"capacity has {C.shape[1]} resources, demand {R}"
        W = np.ones(U) if weight is None else np.array(weight, dtype=np.float64).reshape(U)
        P = (np.full(U, BACKLOGGED, dtype=np.int64) if pending is None
             else np.array(pending, dtype=np.int64).reshape(U))
        return cls(capacity=C, free=C.copy(), demand=D, weight=W,
                   running=np.zeros((U, C.shape[0]), dtype=np.int64), pending=P, tree=tree)

    def copy(self) -> ClusterState:
        return ClusterState(self.capacity, self.free.copy(), self.demand, self.weight,
                            self.running.copy(), self.pending.copy(), self.tree,
                            None if self.charge is self.demand else self.charge)

    # -- derived quantities ---------------------------------------------------
    @property
    def n_users(self) -> int:
        return self.demand.shape[0]

    @property
    def n_servers(self) -> int:
        return self.capacity.shape[0]

    @property
    def total(self) -> np.ndarray:
        """Pooled capacity of each resource, shape (R,)."""
        return self.capacity.sum(axis=0)

    def tasks(self) -> np.ndarray:
        """Running tasks per user, shape (U,)."""
        return self.running.sum(axis=1)

    def allocation(self) -> np.ndarray:
        """Resources held by each user (tasks x demand), shape (U, R)."""
        return self.tasks()[:, None] * self.demand

    def dominant_share(self) -> np.ndarray:
        """Global dominant share of each user ([DRF] §4; [DRFH] §III eq. (2)):
        ``max_r tasks_u * demand[u, r] / total[r]``, shape (U,)."""
        return (self.allocation() / self.total).max(axis=1)

    def fits(self, u: int) -> np.ndarray:
        """Boolean (S,): servers on which one more task of user u fits now."""
        return np.all(self.free >= self.charge[u] - FIT_TOL * self.total, axis=1)

    # -- mutation (the caller applies what pick returned) -----------------------
    def launch(self, u: int, s: int) -> None:
        """Start one task of user u on server s."""
        assert self.pending[u] > 0, f"user {u} has no pending task"
        self.free[s] -= self.charge[u]
        self.running[u, s] += 1
        if self.pending[u] != BACKLOGGED:
            self.pending[u] -= 1

    def finish(self, u: int, s: int) -> None:
        """One task of user u on server s ends; its resources become free."""
        assert self.running[u, s] > 0, f"user {u} has no task on server {s}"
        self.running[u, s] -= 1
        self.free[s] += self.charge[u]
        if self.running[:, s].sum() == 0:  # no rounding drift on an idle server
            self.free[s] = self.capacity[s].copy()


def fill(state: ClusterState, pick: Pick, *, max_launches: int = 1_000_000) -> list[tuple[int, int]]:
    """The static driver: apply ``pick`` until it returns ``None``; returns the launches in order.

    Mutates ``state``.  ``max_launches`` guards against a mechanism that never stops.
    """
    launches: list[tuple[int, int]] = []
    for _ in range(max_launches):
        choice = pick(state)
        if choice is None:
            return launches
        u, s = choice
        state.launch(u, s)
        launches.append((int(u), int(s)))
    raise RuntimeError(f"pick launched {max_launches} tasks without stopping")
