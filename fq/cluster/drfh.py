"""DRFH placement heuristics for tasks as entities ([DRFH] Wang, Liang, Li, §V-B).

Both heuristics serve the user with the lowest (weighted, §V-A) global dominant share
``G_i = max_r tasks_i * D_ir`` where ``D_ir = demand[i, r] / total[r]`` is the demand as a
share of the whole pool ([DRFH] §III-A, eq. (2)-(3)); they differ in the server:

First-Fit
    "picks the first server that fits the user's task" (lowest server index).
Best-Fit
    the server ``l`` minimising the fitness (eq. (9))
    ``H(i, l) = || D_i / D_i1 - c_l / c_l1 ||_1``, where ``c_lr = free[l, r] / total[r]``
    is the share of resource r still available on server l.  Both vectors are
    normalised by their first resource (CPU in the paper), so H compares the *shapes*
    of the demand and of the free capacity.  Ties go to the lowest server index.

Choices the paper leaves open, named as options:

``blocked``   ``"skip"`` (default) or ``"stop"``, as in :mod:`fq.cluster.drf`: what to do when the
              lowest user's task fits on no server.
``fitness_ref`` (Best-Fit) which resource normalises the two vectors of eq. (9): ``"first"``
              (default, the paper: resource 0) or ``"dominant"`` (the user's global dominant
              resource; needed when a user's demand for resource 0 is zero, which the paper
              excludes by assuming positive demands).  With ``"first"`` a user with zero
              demand for resource 0 falls back to ``"dominant"``.
"""

from __future__ import annotations

import numpy as np

from mrfq.fq.cluster.drf import BLOCKED, user_order
from mrfq.fq.cluster.state import ClusterState

FITNESS_REF = ("first", "dominant")


def fitness(state: ClusterState, u: int, servers: np.ndarray, *, fitness_ref: str = "first") -> np.ndarray:
    """[DRFH] eq. (9): ``H(u, l)`` for each server ``l`` in ``servers`` (the candidate servers,
    on which the task fits, so the normalising free share is positive)."""
    T = state.total
    D = state.demand[u] / T
    k = 0 if fitness_ref == "first" and D[0] > 0 else int(np.argmax(D))
    c = state.free[servers] / T
    with np.errstate(divide="ignore", invalid="ignore"):
        shape_c = c / c[:, k:k + 1]
    return np.abs(D / D[k] - shape_c).sum(axis=1)


def _pick(state: ClusterState, best: bool, blocked: str, fitness_ref: str) -> tuple[int, int] | None:
    assert blocked in BLOCKED and fitness_ref in FITNESS_REF
    for u in user_order(state, state.dominant_share()):
        ok = np.flatnonzero(state.fits(u))
        if ok.size:
            if not best:
                return int(u), int(ok[0])
            H = fitness(state, u, ok, fitness_ref=fitness_ref)
            return int(u), int(ok[int(np.argmin(H))])
        if blocked == "stop":
            return None
    return None


def pick_first_fit(state: ClusterState, *, blocked: str = "skip") -> tuple[int, int] | None:
    """First-Fit DRFH ([DRFH] §V-B): lowest global dominant share, first server that fits."""
    return _pick(state, False, blocked, "first")


def pick_best_fit(state: ClusterState, *, blocked: str = "skip",
                  fitness_ref: str = "first") -> tuple[int, int] | None:
    """Best-Fit DRFH ([DRFH] §V-B, eq. (9)): lowest global dominant share, server of least H."""
    return _pick(state, True, blocked, fitness_ref)
