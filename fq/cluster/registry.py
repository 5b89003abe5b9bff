"""The cluster allocator registry (issue 11): CLI, simulator, scripts and tests enumerate it.

Every entry wraps one ``pick(state, **options) -> (user, server) | None`` (the
contract of :mod:`fq.cluster.state`) and an optional ``prepare(state, **options)``
hook that the driver / simulator calls once on a fresh state before the first
``pick`` (the slot scheduler uses it to set what a task is charged).
Adding a mechanism = one module in ``fq/cluster/`` + one line here + its test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Callable

from flows.errors import MrfqError
from fq.cluster import drf
from fq.cluster.state import ClusterState, Pick, fill


def _no_prepare(state: ClusterState, **options) -> None:
    return None


@dataclass(frozen=True)
class AllocatorInfo:
    name: str
    summary: str
    reference: str
    pick: Callable[..., "tuple[int, int] | None"]
    prepare: Callable[..., None] = _no_prepare
    #: option name -> allowed values (first = default); validated by :func:`bind`
    options: dict = field(default_factory=dict)
    #: the fluid objective it approximates (None for baselines)
    objective: str | None = None


ALLOCATORS: dict[str, AllocatorInfo] = {
    "drf": AllocatorInfo("drf", "progressive filling with discrete tasks, lowest weighted dominant share first",
                         "[DRF] sec. 4, Algorithm 1", drf.pick,
                         options={"blocked": drf.BLOCKED}, objective="drf"),
}


def get(name: str) -> AllocatorInfo:
    try:
        return ALLOCATORS[name]
    except KeyError:
        raise MrfqError(f"allocator = {name!r}: unknown; choose one of {', '.join(ALLOCATORS)}") from None


def bind(name: str, state: ClusterState, **options) -> Pick:
    """Validate ``options`` for allocator ``name``, run its ``prepare`` hook on ``state``
    and return ``pick`` with the options bound (what the simulator calls)."""
    info = get(name)
    for k, v in options.items():
        if k not in info.options:
            allowed = ", ".join(info.options) or "none"
            raise MrfqError(f"allocator option {k!r} = {v!r}: not an option of {name!r} (options: {allowed})")
        allowed = info.options[k]
        if isinstance(allowed, tuple) and v not in allowed:
            raise MrfqError(f"allocator option {k} = {v!r}: must be one of {', '.join(map(repr, allowed))}")
    info.prepare(state, **options)
    return partial(info.pick, **options) if options else info.pick


def allocate_static(name: str, state: ClusterState, **options) -> list[tuple[int, int]]:
    """Fill ``state`` with allocator ``name`` until it launches nothing more; returns the launches."""
    return fill(state, bind(name, state, **options))
