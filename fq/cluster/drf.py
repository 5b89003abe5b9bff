"""Task-level DRF by progressive filling ([DRF] Ghodsi et al., NSDI 2011, §4, Algorithm 1).

Each step launches one task of the user with the lowest weighted dominant share
``s_u / w_u`` ([DRF] §4.3 Weighted DRF, with one scalar weight per user), where
``s_u = max_r tasks_u * demand[u, r] / total[r]`` is measured on the pooled
capacity ([DRF] §4; on several servers this is [DRFH]'s global dominant share, eq. (2)-(3)).

Choices the paper leaves open, named as options:

``blocked``
    ``"skip"`` (default): when the lowest user's next task fits
    nowhere, try the next-lowest user, so users whose tasks avoid the saturated
    resource keep receiving tasks ([DRF] §4.2: "it can continue to allocate tasks to
    users that do not need the saturated resource").  ``"stop"``: Algorithm 1
    literally, return ``None`` as soon as the lowest user's task does not fit
    ("the cluster is full").
``server`` (only matters with several servers; [DRF] assumes one pool)
    the first server (lowest index) on which the task fits.  With several servers
    this is exactly [DRFH] §V-B First-Fit, see :mod:`fq.cluster.drfh`.

Ties between users with equal weighted dominant share go to the lowest user index
(Table 1 of [DRF] starts with user B, a tie broken the other way; the allocation
reached is the same, 3 tasks for A and 2 for B).
"""

from __future__ import annotations

import numpy as np

from mrfq.fq.cluster.state import ClusterState

BLOCKED = ("skip", "stop")


def user_order(state: ClusterState, share: np.ndarray) -> np.ndarray:
    """Users with a pending task, by increasing ``share / weight`` (ties: lowest index)."""
    key = share / state.weight
    cand = np.flatnonzero(state.pending > 0)
    return cand[np.argsort(key[cand], kind="stable")]


def pick(state: ClusterState, *, blocked: str = "skip") -> tuple[int, int] | None:
    """Next launch of task-level DRF ([DRF] Algorithm 1), or None."""
    assert blocked in BLOCKED, blocked
    for u in user_order(state, state.dominant_share()):
        ok = np.flatnonzero(state.fits(u))
        if ok.size:
            return int(u), int(ok[0])
        if blocked == "stop":
            return None
    return None
