"""The scheduler registry: the one list of schedulers.

Scenario resolution, the CLI's choices, sweeps, benchmarks, the SimPy reference
and every test enumerate :data:`SCHEDULERS`.  Adding a discipline = one module
in ``fq/`` exporting the contract of :mod:`fq.contract` + one line in
:data:`MODULES`; the registry checks the contract when it loads, so a missing
hook or a wrong signature fails at import, never silently at run time.
"""

from __future__ import annotations

import dataclasses

import importlib
from dataclasses import dataclass
from types import ModuleType

from mrfq.flows.errors import ScenarioError, quote
from mrfq.flows.scenario import used_resources  # noqa: F401  (re-exported: router/run.py, router/reference.py)
from mrfq.fq.contract import Option, check_module

#: name -> module, in the order the CLI and reports list them
MODULES: dict[str, str] = {
    "drfq": "mrfq.fq.drfq",
    "drfq-dovetail": "mrfq.fq.dovetail",
    "pf-sfq": "mrfq.fq.pf_sfq",
    "bmf-wfq": "mrfq.fq.bmf_wfq",
    "fifo": "mrfq.fq.fifo",
    "fq-single": "mrfq.fq.fq_single",
    "drr": "mrfq.fq.drr",
    "mr3": "mrfq.fq.mr3",
    "scfq": "mrfq.fq.scfq",
    "virtual-clock": "mrfq.fq.virtual_clock",
    "wfq": "mrfq.fq.wfq",
    "wf2q-plus": "mrfq.fq.wf2q_plus",
}


@dataclass(frozen=True)
class SchedulerInfo:
    name: str
    module: ModuleType
    summary: str
    reference: str
    #: the fluid objective it is meant to realise (None for baselines)
    objective: str | None
    options: tuple[Option, ...]

    def default_opt(self, J: int) -> tuple[float, ...]:
        """``opt`` with every option at its default, for J resources (the lean loop's options)."""
        from mrfq.flows.scenario import RouterConfig

        return tuple(float(x) for x in self.module.encode(RouterConfig(scheduler=self.name),
                                                           tuple(f"r{j}" for j in range(J))))


def _load(name: str, path: str) -> SchedulerInfo:
    mod = importlib.import_module(path)
    check_module(mod)
    if mod.NAME != name:
        raise TypeError(f"fq/registry.py: {path}.NAME = {mod.NAME!r}, registered as {name!r}")
    return SchedulerInfo(name, mod, mod.SUMMARY, mod.REFERENCE, mod.OBJECTIVE, tuple(mod.OPTIONS))


SCHEDULERS: dict[str, SchedulerInfo] = {name: _load(name, path) for name, path in MODULES.items()}

#: router keys every scheduler accepts (the engine's own), and the options some scheduler declares
GENERIC_ROUTER_KEYS = ("scheduler", "window", "rtt")


def get(name: str) -> SchedulerInfo:
    """The registered scheduler ``name``; a one-line ScenarioError naming the choices otherwise."""
    info = SCHEDULERS.get(name)
    if info is None:
        raise ScenarioError(f"router.scheduler = {quote(name)}: unknown; choose one of {', '.join(SCHEDULERS)}")
    return info


def at_ingress(router, module, specs) -> bool:
    """Whether the router runs under ingress placement (docs/middlebox.md): the scenario asks for it
    (``router.schedule_at = "ingress"``), or the scheduler is defined at ingress (its module's
    ``PLACEMENT``) and some flow or class costs nothing at the first resource, which under
    ``"every"`` would bypass the scheduler."""
    if router.schedule_at == "ingress":
        return True
    if getattr(module, "PLACEMENT", "every") != "ingress":
        return False
    return any(s.cost[0] == 0.0 and not (s.per_byte is not None and s.per_byte[0] > 0.0) for s in specs)


def resolve(router, resources, *, used: tuple | None = None, specs: list | None = None,
            foreign: str = "refuse") -> tuple[SchedulerInfo, tuple[float, ...]]:
    """The scheduler of a validated ``RouterConfig`` and its options encoded as ``opt``.

    ``used`` (:func:`used_resources`, per resource) sets the default of ``router.fq_resource`` (the
    resource ``fq-single`` and ``drr`` schedule): the last resource some flow uses, so that a resource
    nobody uses, appended after the others, changes nothing (without ``used``: the last resource).
    Under ``schedule_at = "ingress"`` the default stays the first resource.

    ``specs`` (the scenario's ``[[flow]]`` tables, then its ``[[class]]`` es) sets the options whose default
    depends on the flows (``Option.flow_default``, e.g. ``virtual-clock``'s ``total_weight``) where the
    scenario leaves them out; without ``specs`` the module's ``encode`` picks its own.

    Options no scheduler declares were refused when the scenario was read.  An option
    set in ``router.options`` that *this* scheduler does not declare is refused
    (``foreign="refuse"``: the scenario's own scheduler, so a setting never silently
    does nothing) or left unused (``foreign="ignore"``: the scenario run under another
    scheduler by a keyword override, as in a sweep over schedulers, where the other
    schedulers' settings do not apply, like ``virtual_time`` outside DRFQ)."""
    if foreign not in ("refuse", "ignore"):
        raise ValueError(f"foreign = {foreign!r}: must be 'refuse' or 'ignore'")
    info = get(router.scheduler)
    own = {o.name for o in info.options}
    for key, _ in getattr(router, "options", ()) or ():
        if key not in own and foreign == "refuse":
            raise ScenarioError(f"router.{key}: not an option of scheduler {quote(info.name)} "
                                f"(its options: {', '.join(sorted(own)) or 'none'})")
    if specs is not None:
        reserved = [i for i, s in enumerate(specs) if getattr(s, "reserved_rate", None) is not None]
        if reserved and foreign == "refuse" and not hasattr(info.module, "increment_scale"):
            users = ", ".join(n for n, i in SCHEDULERS.items() if hasattr(i.module, "increment_scale"))
            raise ScenarioError(f"flow[{reserved[0]}].rate: a reserved rate, which scheduler {quote(info.name)} "
                                f"does not use (it reserves rates: {users}); remove it or choose one of those")
        given = {k for k, _ in getattr(router, "options", ()) or ()}
        fill = tuple((o.name, o.flow_default(specs)) for o in info.options
                     if o.flow_default is not None and o.name not in given)
        if fill:
            router = dataclasses.replace(router, options=tuple(router.options) + fill)
    if (used is not None and any(used) and router.fq_resource is None
            and getattr(router, "schedule_at", "every") != "ingress"):
        last = max(j for j, u in enumerate(used) if u)
        if last != len(resources) - 1:
            router = dataclasses.replace(router, fq_resource=resources[last])
    opt = tuple(float(x) for x in info.module.encode(router, tuple(resources)))
    inside = ("router.aqm = {policy = \"codel\"}" if dict(getattr(router, "aqm", None) or ()).get("policy") == "codel"
              else "router.shared_buffer_policy = \"longest\"" if getattr(router, "shared_buffer_policy", "tail") == "longest"
              else None)
    if inside is not None and not getattr(info.module, "DROPS_INSIDE", True):
        raise ScenarioError(f"{inside}: drops packets already waiting in a queue, which scheduler {quote(info.name)} "
                            "does not define (its rounds count every visit); use RED or tail drop, or another "
                            "scheduler")
    return info, opt


def option_names() -> tuple[str, ...]:
    """Every option some registered scheduler declares (the scenario gate accepts these under [router])."""
    names: list[str] = []
    for info in SCHEDULERS.values():
        for o in info.options:
            if o.name not in names:
                names.append(o.name)
    return tuple(names)
