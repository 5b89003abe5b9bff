"""The slot scheduler, the Hadoop Fair Scheduler baseline ([DRF] §2, §7; [DRFH] §VI, Table II).

Every server is cut into slots of one fixed size: the *maximum* server (the
component-wise largest capacity) divided into ``n_slots`` equal bundles, as in
[DRFH] Table II ("14 per maximum server").  A server of capacity ``c`` holds
``floor(min_r c_r / slot_r)`` slots (what does not fill a whole slot is lost).
The scheduler gives the next slot to the user holding the fewest slots per unit
weight (max-min fairness on the single slot resource, ties: lowest user index),
on the first server with enough free slots.

How many slots a task takes is not fixed by the papers; named as option ``task_slots``:

``"ceil"``  (default) ``ceil(max_r demand[u, r] / slot_r)`` slots, so a task never
            overloads its server (the scheduler's accounting stays physical);
``"one"``   one slot per task whatever its demand, Hadoop's behaviour: a task larger
            than a slot overloads the server ([DRF] Fig. 2 counts such tasks), and one
            smaller than a slot wastes the rest.  Resources are then *charged* per slot
            but tasks use their ``demand``: utilisation measured on demand can exceed
            capacity.

The prepare hook sets ``state.charge`` (what a task takes from ``free``) to the slot
bundle(s); fairness among users is measured in slots held.
"""

from __future__ import annotations

import numpy as np

from mrfq.fq.cluster.state import FIT_TOL, ClusterState

TASK_SLOTS = ("ceil", "one")


def slot_size(capacity: np.ndarray, n_slots: int) -> np.ndarray:
    """The slot bundle: the component-wise maximum server capacity divided by ``n_slots``."""
    return capacity.max(axis=0) / n_slots


def slots_per_task(demand: np.ndarray, slot: np.ndarray, task_slots: str = "ceil") -> np.ndarray:
    """Slots one task of each user occupies, shape (U,)."""
    if task_slots == "one":
        return np.ones(demand.shape[0], dtype=np.int64)
    k = np.ceil((demand / slot).max(axis=1) - 1e-9).astype(np.int64)
    return np.maximum(k, 1)


def prepare(state: ClusterState, *, n_slots: int = 14, task_slots: str = "ceil") -> None:
    """Set ``state.charge`` to whole slots (called once on a fresh state)."""
    assert task_slots in TASK_SLOTS
    slot = slot_size(state.capacity, n_slots)
    state.charge = slots_per_task(state.demand, slot, task_slots)[:, None] * slot[None, :]


def pick(state: ClusterState, *, n_slots: int = 14, task_slots: str = "ceil") -> tuple[int, int] | None:
    """Next launch of the slot scheduler, or None."""
    slot = slot_size(state.capacity, n_slots)
    k = slots_per_task(state.demand, slot, task_slots)
    held = state.tasks() * k / state.weight
    cand = np.flatnonzero(state.pending > 0)
    for u in cand[np.argsort(held[cand], kind="stable")]:
        ok = np.flatnonzero(np.all(state.free >= state.charge[u] - FIT_TOL * state.total, axis=1))
        if ok.size:
            return int(u), int(ok[0])
    return None
