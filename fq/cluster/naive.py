"""Naive DRF: DRF applied to each server separately ([DRFH] §III-D, Fig. 2).

On server ``s`` a user's dominant share is local: ``max_r running[u, s] * demand[u, r] /
capacity[s, r]`` (weighted by ``1 / weight[u]``).  Servers are filled independently by
discrete progressive filling, so the static result is per-server DRF; ``pick`` serves
the servers in index order and, on a server, the user of lowest local weighted dominant
share whose task fits there (ties: lowest user index).  In the example of [DRFH] Fig. 1
it gives each user 6 tasks (5 + 1 and 1 + 5), against 10 each under DRFH.

A resource with zero capacity on a server makes every user needing it not fit there;
such users get local share +inf on that server (never chosen there).
"""

from __future__ import annotations

import numpy as np

from mrfq.fq.cluster.state import FIT_TOL, ClusterState


def pick(state: ClusterState) -> tuple[int, int] | None:
    """Next launch of per-server DRF, or None."""
    pend = state.pending > 0
    if not pend.any():
        return None
    # fit[s, u]: one more task of (pending) user u fits on server s (one vectorised test for all servers)
    fit = np.all(state.free[:, None, :] >= (state.charge - FIT_TOL * state.total)[None, :, :], axis=2) & pend
    rows = np.flatnonzero(fit.any(axis=1))
    if rows.size == 0:
        return None
    s = int(rows[0])
    cap = state.capacity[s]
    with np.errstate(divide="ignore", invalid="ignore"):
        per_task = np.where(state.demand > 0, state.demand / cap, 0.0).max(axis=1)
    local = state.running[:, s] * per_task / state.weight
    cand = np.flatnonzero(fit[s])
    return int(cand[np.argsort(local[cand], kind="stable")][0]), s
