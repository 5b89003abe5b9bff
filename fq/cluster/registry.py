"""The cluster allocator registry: CLI, simulator, scripts and tests enumerate it.

Every entry wraps one ``pick(state, **options) -> (user, server) | None`` (the
contract of :mod:`fq.cluster.state`) and an optional ``prepare(state, **options)``
hook that the driver / simulator calls once on a fresh state before the first
``pick`` (the slot scheduler uses it to set what a task is charged).
Adding a mechanism = one module in ``fq/cluster/`` + one line here + its test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from mrfq.flows.errors import MrfqError, quote
from mrfq.fq.cluster import drf, drfh, hdrf, naive, slots
from mrfq.fq.cluster.state import ClusterState, Pick, fill


def _no_prepare(state: ClusterState, **options) -> None:
    return None


@dataclass(frozen=True)
class AllocatorInfo:
    name: str
    summary: str
    reference: str
    pick: Callable[..., tuple[int, int] | None]
    prepare: Callable[..., None] = _no_prepare
    #: option name -> allowed values (first = default); validated by :func:`bind`
    options: dict = field(default_factory=dict)
    #: the fluid objective it approximates (None for baselines)
    objective: str | None = None


ALLOCATORS: dict[str, AllocatorInfo] = {
    "drf": AllocatorInfo("drf", "progressive filling with discrete tasks, lowest weighted dominant share first",
                         "[DRF] sec. 4, Algorithm 1", drf.pick,
                         options={"blocked": drf.BLOCKED}, objective="drf"),
    "drfh-first-fit": AllocatorInfo("drfh-first-fit", "lowest global dominant share, first server that fits",
                                    "[DRFH] sec. V-B", drfh.pick_first_fit,
                                    options={"blocked": drf.BLOCKED}, objective="drfh"),
    "drfh-best-fit": AllocatorInfo("drfh-best-fit", "lowest global dominant share, server of least fitness H",
                                   "[DRFH] sec. V-B, eq. (9)", drfh.pick_best_fit,
                                   options={"blocked": drf.BLOCKED, "fitness_ref": drfh.FITNESS_REF},
                                   objective="drfh"),
    "naive-drf": AllocatorInfo("naive-drf", "DRF on each server separately (local dominant shares)",
                               "[DRFH] sec. III-D, Fig. 2", naive.pick),
    "slots": AllocatorInfo("slots", "fixed-size slots (max server / n_slots), fewest slots per weight first",
                           "[DRF] sec. 2; [DRFH] sec. VI, Table II", slots.pick, prepare=slots.prepare,
                           options={"n_slots": int, "task_slots": slots.TASK_SLOTS}),
    "h-drf": AllocatorInfo("h-drf", "dynamic hierarchical DRF: rescaling to the minimum child, blocked nodes ignored",
                           "[H-DRF] sec. 3.4, Algorithms 2-4", hdrf.pick,
                           options={"rescale": hdrf.FLAGS, "ignore_blocked": hdrf.FLAGS,
                                    "saturation": hdrf.SATURATION, "server": hdrf.SERVER,
                                    "blocked": hdrf.BLOCKED},
                           objective="h-drf"),
    "naive-h-drf": AllocatorInfo("naive-h-drf", "hierarchical DRF walk on plain subtree sums (starves jobs)",
                                 "[H-DRF] sec. 3.3", hdrf.pick_naive,
                                 options={"server": hdrf.SERVER, "blocked": hdrf.BLOCKED}),
    "collapsed-h-drf": AllocatorInfo("collapsed-h-drf", "flat weighted DRF on the flattened tree weights",
                                     "[H-DRF] sec. 3.2", hdrf.pick_collapsed,
                                     options={"recompute": hdrf.RECOMPUTE, "server": hdrf.SERVER}),
}


def get(name: str) -> AllocatorInfo:
    try:
        return ALLOCATORS[name]
    except KeyError:
        raise MrfqError(f"allocator = {quote(name)}: unknown; choose one of {', '.join(ALLOCATORS)}") from None


def bind(name: str, state: ClusterState, **options) -> Pick:
    """Validate ``options`` for allocator ``name``, run its ``prepare`` hook on ``state``
    and return ``pick`` with the options bound (what the simulator calls)."""
    info = get(name)
    for k, v in options.items():
        if k not in info.options:
            allowed = ", ".join(info.options) or "none"
            raise MrfqError(f"allocator option {quote(k)} = {quote(v)}: not an option of {quote(name)} (options: {allowed})")
        allowed = info.options[k]
        if isinstance(allowed, tuple) and v not in allowed:
            raise MrfqError(f"allocator option {k} = {quote(v)}: must be one of {', '.join(map(repr, allowed))}")
        if allowed is int and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise MrfqError(f"allocator option {k} = {quote(v)}: must be a whole number >= 1")
    info.prepare(state, **options)
    return partial(info.pick, **options) if options else info.pick


def allocate_static(name: str, state: ClusterState, **options) -> list[tuple[int, int]]:
    """Fill ``state`` with allocator ``name`` until it launches nothing more; returns the launches."""
    return fill(state, bind(name, state, **options))
