"""The scheduler contract: what one module in ``fq/`` must export.

A scheduling discipline is one module plus one line in :mod:`fq.registry`.
The engine (:mod:`router.loop`) and the SimPy reference (:mod:`router.reference`)
are written once against this contract; nothing outside the module knows what
a scheduler does.

Module attributes (plain Python)::

    NAME, SUMMARY, REFERENCE         strings; REFERENCE cites the paper and equation
    OBJECTIVE                        the fluid objective it is meant to realise ("drf", "pf", "bmf") or None
    OPTIONS                          tuple of :class:`Option`: the scheduler's named options (scenario keys
                                     under ``[router]``)
    layout(J) -> Layout              the float64 state it needs (per flow, per (flow, resource), per
                                     resource, global, per packet); the engine allocates and zeroes it
    encode(router, resources)        its options as a tuple of floats, ``opt`` (validated: raises
                                     :class:`flows.errors.ScenarioError` naming ``router.<option>``);
                                     an option whose default depends on the flows declares
                                     ``Option.flow_default``: the registry sets it in ``router.options``
                                     before ``encode`` when the scenario's flows are known
    Reference                        plain-Python twin of the hooks for the SimPy reference model,
                                     written independently of the kernel: the test oracle
    DROPS_INSIDE (optional)          False when the scheduler does not define a packet dropped while it
                                     waits (router/buffers.py: CoDel, push-out); such scenarios are refused
    PLACEMENT (optional)             "ingress" for a scheduler defined at the first resource only
                                     (its later resources FIFO, every packet through its first
                                     resource): the router runs it so (fq.registry.at_ingress)
    HOST_OPT (optional)              indices of ``opt`` the hooks never read (values only the host uses,
                                     such as in ``increment_scale``): the lean loop compiles them in as 0,
                                     so scenarios that differ only there share one loop
    increment_scale(opt, weight, rate) (optional, with ``Layout.increments``) the factor the engine
                                     multiplies a flow's increments ``s_ij / w_i`` by: its weight, its
                                     ``[[flow]]`` table's reserved ``rate`` (None: not given, or a class);
                                     without it the factor is 1 and a flow's ``rate`` is refused

State (all float64, zeroed; a flow's rows are zeroed again when a flow takes a table row):
``S = SchedState(flow, flow_res, res, glob)`` with ``S.flow[slot * NF + m]``,
``S.flow_res[(slot * J + j) * NFR + m]``, ``S.res[j * NRS + m]``, ``S.glob[m]``
(``NF, NFR, NRS``: the module's own layout numbers); ``pkt``, the engine's
packet records: the record of a packet starts at ``pb`` and ``pkt[pb + m]`` is the
module's per-packet slot m (``m < layout.pkt``: keep there only what must be
per packet); and the packet's costs ``cst[cb + j]``, ``s_ij`` at resource j
(time units, 0 = it skips j), read-only.  Where the costs live is the engine's
business: once per flow when every flow has constant costs, per packet when
the scenario has packet sizes (router/state.py).  A scheduler whose layout sets
``increments`` also reads ``s_ij / w_i`` at ``cst[cb + J + j]``: the engine
divides once per flow (per packet with packet sizes) instead of at every tag,
with the same bits (a division's latency on every tag cost 4-9 % of a service); ``dominant_service`` (``max_j s_ij / w_i``) is kept the same way.

Hooks: numba functions (``@jit_inline``, fq/_jit.py), all with exactly these
parameters (checked by :func:`check_module` when the registry loads)::

    admit(S, pkt, opt, J, slot, pb, cst, cb, weight, dominant_service, t)
                                                             router admission (dominant_service =
                                                             max_j s_ij / w_i, [MR3]'s d(p))
    arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t)   the packet joins resource j; q_ij = packets
                                                             of its flow at j (waiting or in service), this
                                                             one included
    head(S, pkt, opt, J, slot, pb, cst, cb, j, weight) -> key       it became the head of its flow's FIFO at j
                                                             (the queue was empty, or its predecessor just
                                                             began service): its scheduling key there
    start(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t)
                                                             it begins service at j; next_pb / next_cb = the
                                                             records of the flow's next packet waiting at j,
                                                             or -1; called before head(next)
    finish(S, pkt, opt, J, slot, pb, cst, cb, j, t)          its service at j ends (phase 1a)
    idle(S, pkt, opt, J, j, t)                               j is idle and nothing waits there (phase 3)
    ready(S, pkt, opt, J, j, t) -> bool                      may idle j start its smallest head now?  False
                                                             keeps j idle until a later instant
    drop(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t)   (optional: default
                                                             :func:`drop`, nothing) the head waiting at j
                                                             leaves without service (buffer management,
                                                             router/buffers.py: pushed out, or CoDel's
                                                             head drop); next_pb / next_cb as for start,
                                                             called before head(next).  It was tagged: the
                                                             flow keeps what it was charged at arrival
    eligibility(S, pkt, opt, J, slot, pb, cst, cb, j) -> e   (optional, with ``threshold``) the eligibility
                                                             value of the head waiting at j, read when j
                                                             chooses (it may change while the packet waits)
    threshold(S, pkt, opt, J, j, t, e_min) -> float          (optional, with ``eligibility``) the heads whose
                                                             value is <= this are eligible at j now; e_min =
                                                             the smallest value among j's heads.  It must not
                                                             decrease as e_min grows: the engine first tries
                                                             the smallest head against threshold(-inf)

Each resource serves, among the heads of the flows' FIFOs, the smallest
``(key, flow id)``.  A scheduler that defines ``eligibility`` and ``threshold``
(WF²Q+'s start tags against the system virtual time, MR3's per-flow progress
control) restricts the choice to its eligible heads: the smallest ``(key, flow id)``
among the heads whose eligibility is at most the threshold; with none eligible the
resource stays idle until a later instant, as when ``ready`` returns False.  (Where
the scheduler does not order the queue, at a later resource under ingress placement,
every head is eligible.)  Phase order at one instant (docs/schedulers.md, 'Event order
and ties'): completions (``finish``), moves and departures in resource order
(``arrive``/``head``), admissions (``admit``, ``arrive``, ``head``), then every
idle resource in index order (``ready``, ``start``, ``head`` of the next packet,
or ``idle``).
In the lean compiled variant ``opt`` is a compile-time constant, so branches
on it cost nothing.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from mrfq.flows.errors import ScenarioError
from mrfq.fq._jit import jit_inline


@dataclass(frozen=True)
class Layout:
    """float64 slots a scheduler keeps: per flow, per (flow, resource), per resource, global, per packet;
    and whether its hooks read the increments ``s_ij / w_i`` (``cst[cb + J + j]``)."""

    flow: int = 0
    flow_res: int = 0
    res: int = 0
    glob: int = 0
    pkt: int = 0
    #: the engine keeps each packet's ``s_ij / w_i`` for the hooks at ``cst[cb + J + j]``
    increments: bool = False


@dataclass(frozen=True)
class Option:
    """A named scheduler option: scenario key ``router.<name>``."""

    name: str
    default: Any
    doc: str
    #: valid non-default values the property tests draw (tests/test_reference.py ``scenarios``), so a
    #: scheduler's options are cross-checked against its reference twin without edits to the tests
    examples: tuple = ()
    #: a default that depends on the scenario's flows: ``flow_default(specs)`` of its ``[[flow]]`` tables
    #: and ``[[class]]`` es (flows.scenario.FlowSpec, ClassSpec), filled in by :func:`fq.registry.resolve`
    #: when the option is not set and the flows are known (``encode`` sees the router only); None: none
    flow_default: Callable[[list], Any] | None = None


class SchedState(NamedTuple):
    """The scheduler's own state, allocated by the engine from :func:`layout` (flat float64 arrays)."""

    flow: np.ndarray
    flow_res: np.ndarray
    res: np.ndarray
    glob: np.ndarray


HOOKS: dict[str, tuple[str, ...]] = {
    "admit": ("S", "pkt", "opt", "J", "slot", "pb", "cst", "cb", "weight", "dominant_service", "t"),
    "arrive": ("S", "pkt", "opt", "J", "slot", "pb", "cst", "cb", "j", "weight", "q_ij", "t"),
    "head": ("S", "pkt", "opt", "J", "slot", "pb", "cst", "cb", "j", "weight"),
    "start": ("S", "pkt", "opt", "J", "slot", "pb", "cst", "cb", "j", "weight", "next_pb", "next_cb", "t"),
    "finish": ("S", "pkt", "opt", "J", "slot", "pb", "cst", "cb", "j", "t"),
    "idle": ("S", "pkt", "opt", "J", "j", "t"),
    "ready": ("S", "pkt", "opt", "J", "j", "t"),
}
#: hooks a module may leave out: the contract's own (below) stands in
OPTIONAL_HOOKS: dict[str, tuple[str, ...]] = {
    "drop": ("S", "pkt", "opt", "J", "slot", "pb", "cst", "cb", "j", "weight", "next_pb", "next_cb", "t"),
    "eligibility": ("S", "pkt", "opt", "J", "slot", "pb", "cst", "cb", "j"),
    "threshold": ("S", "pkt", "opt", "J", "j", "t", "e_min"),
}
#: optional hooks a module defines together or not at all
ELIGIBILITY_HOOKS = ("eligibility", "threshold")
REFERENCE_METHODS = ("admit", "arrive", "head", "start", "finish", "idle", "ready", "drop")
ATTRIBUTES = ("NAME", "SUMMARY", "REFERENCE", "OBJECTIVE", "OPTIONS", "layout", "encode", "Reference")


def _params(fn: Callable) -> tuple[str, ...]:
    py = getattr(fn, "py_func", fn)
    return tuple(inspect.signature(py).parameters)


def check_module(mod) -> None:
    """Raise TypeError unless ``mod`` exports the whole contract with the exact hook signatures."""
    missing = [a for a in ATTRIBUTES + tuple(HOOKS) if not hasattr(mod, a)]
    if missing:
        raise TypeError(f"scheduler module {mod.__name__}: missing {', '.join(missing)} (see fq/contract.py)")
    for name, params in HOOKS.items():
        got = _params(getattr(mod, name))
        if got != params:
            raise TypeError(f"scheduler module {mod.__name__}: {name}{got} must take {params} (fq/contract.py)")
    for name, params in OPTIONAL_HOOKS.items():
        if hasattr(mod, name) and _params(getattr(mod, name)) != params:
            raise TypeError(f"scheduler module {mod.__name__}: {name}{_params(getattr(mod, name))} must take "
                            f"{params} (fq/contract.py)")
    if sum(hasattr(mod, h) for h in ELIGIBILITY_HOOKS) == 1:
        raise TypeError(f"scheduler module {mod.__name__}: define both eligibility and threshold, or neither "
                        f"(fq/contract.py)")
    if has_eligibility(mod):
        for m in ELIGIBILITY_HOOKS:
            if not callable(getattr(mod.Reference, m, None)):
                raise TypeError(f"scheduler module {mod.__name__}: Reference.{m} missing (fq/contract.py)")
    for m in REFERENCE_METHODS:
        if not callable(getattr(mod.Reference, m, None)):
            raise TypeError(f"scheduler module {mod.__name__}: Reference.{m} missing (fq/contract.py)")
    if not isinstance(mod.layout(2), Layout):
        raise TypeError(f"scheduler module {mod.__name__}: layout(J) must return fq.contract.Layout")


def one_resource(router, resources, what: str) -> int:
    """The index of the resource a single-resource scheduler (``fq-single``, ``drr``) schedules:
    ``router.fq_resource``, by default the last resource (fq.registry.resolve names the last one some
    flow uses), or the first under
    ``router.schedule_at = "ingress"``, where only the first resource's queue is ordered by a
    scheduler (another resource is refused: its scheduler would never order anything)."""
    ingress = getattr(router, "schedule_at", "every") == "ingress"
    name = router.fq_resource if router.fq_resource is not None else resources[0 if ingress else -1]
    if name not in resources:
        raise ScenarioError(f"router.fq_resource = {name!r}: must be one of the resources {list(resources)}")
    if ingress and name != resources[0]:
        raise ScenarioError(f"router.fq_resource = {name!r}: under router.schedule_at = 'ingress' only the first "
                            f"resource's queue is scheduled, so {what} must run there; set fq_resource = "
                            f"{resources[0]!r} (or leave it out), or schedule_at = 'every'")
    return resources.index(name)


def host_opt(module) -> tuple[int, ...]:
    """The indices of ``opt`` the module's hooks never read (``HOST_OPT``; none by default)."""
    return tuple(int(i) for i in getattr(module, "HOST_OPT", ()))


def compiled_opt(module, opt) -> tuple[float, ...]:
    """``opt`` as the lean loop compiles it in: the entries only the host reads (:func:`host_opt`) set to 0."""
    rt = host_opt(module)
    return tuple(0.0 if i in rt else float(x) for i, x in enumerate(opt))


def increment_scale(module, opt, weight: float, rate) -> float:
    """The factor of a flow's increments ``s_ij / w_i`` (the module's ``increment_scale``; 1 without it)."""
    fn = getattr(module, "increment_scale", None)
    return 1.0 if fn is None else float(fn(opt, weight, rate))


def option_value(router, name: str, default: Any) -> Any:
    """The value of scheduler option ``name``: a ``RouterConfig`` field, else ``router.options``."""
    if hasattr(router, name):
        return getattr(router, name)
    return dict(getattr(router, "options", ()) or ()).get(name, default)


class ReferenceTags:
    """Base of the plain-Python twins: every hook does nothing; ``head`` returns ``p.tag["key"]``."""

    def __init__(self, J: int, opt: tuple[float, ...], router):
        self.J = J
        self.opt = opt
        self.router = router

    def admit(self, p, t):
        pass

    def arrive(self, p, j, t):
        pass

    def head(self, p, j):
        return p.tag["key"]

    def start(self, p, j, next_p, t):
        pass

    def finish(self, p, j, t):
        pass

    def idle(self, j, t):
        pass

    def ready(self, j, t):
        return True

    def drop(self, p, j, next_p, t):
        pass


@jit_inline
def drop(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t):
    """The default ``drop`` hook: a packet dropped unserved changes nothing in the scheduler's state."""
    return


@jit_inline
def eligibility(S, pkt, opt, J, slot, pb, cst, cb, j):
    """The default ``eligibility`` hook (a scheduler without one): every head is eligible."""
    return 0.0


@jit_inline
def threshold(S, pkt, opt, J, j, t, e_min):
    """The default ``threshold`` hook (a scheduler without one): every head is eligible."""
    return 0.0


def has_eligibility(mod) -> bool:
    """Whether scheduler module ``mod`` restricts each resource's choice to eligible heads."""
    return hasattr(mod, "eligibility")


def hook(mod, name: str):
    """The module's hook ``name``, or the contract's default for an optional one."""
    return getattr(mod, name, None) or globals()[name]
