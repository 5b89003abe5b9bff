"""Virtual Clock on one resource, FIFO elsewhere (a baseline: docs/schedulers.md, 'virtual-clock').

[VC] L. Zhang, *VirtualClock: a new traffic control algorithm for packet
switching networks*, ACM SIGCOMM 1990, §3 (the algorithm: on each packet
arrival ``auxVC = max(real time, auxVC)``, ``auxVC += Vtick``, stamp the packet
with ``auxVC``, serve in increasing stamp; ``Vtick`` = the time the flow's
average rate allows for the packet).  At the fair-queued resource ``j``
(option ``router.fq_resource``, default the last one some flow uses, chosen
as for ``fq-single``: :func:`fq.contract.one_resource`), when packet k of
flow i arrives there at time t::

    aux_i = max(t, aux_i) + s_ij^k / r_i,       stamp of the packet = aux_i

and packets are served in increasing stamp (ties: the smaller flow id,
docs/schedulers.md, 'Event order and ties').  Every other resource is FIFO
(key = arrival time there, as in :mod:`fq.fifo`).  Size-aware: ``s_ij^k`` is
the packet's own time at j.  Unlike SFQ and SCFQ the clock is real time, so
a flow that sent faster than its rate while others were idle is stamped
ahead of real time and waits for it later (the "punishment" of [VC]).

The reserved rate ``r_i``, a share of the resource's time: a ``[[flow]]`` table's
``rate`` (0 < r_i <= 1), or (choice) the weight's share of a total,
``r_i = w_i / W`` with ``W = router.total_weight``, by default the sum of the
weights of the scenario's flows: each ``[[flow]]`` table's ``count`` times its
weight, plus each ``[[class]]``'s weight counted once (a class stands for one
flow at a time in this reckoning; its flows come and go).  With the default
the static flows reserve the whole resource between them.  ``L / r_i`` is
the engine's increment ``s_ij / w_i`` (``Layout.increments``) times the flow's
factor :func:`increment_scale`, ``W``, or ``w_i / r_i`` for a given rate: the
same bits in the engine and the twin.  Without the scenario's flows (a bare
``RouterConfig``) ``W = 1``.

State: per (flow, resource) ``aux_ij``; per packet its key (the stamp at j,
the arrival time elsewhere).
"""

from __future__ import annotations

import math

from mrfq.flows.errors import ScenarioError
from mrfq.fq._jit import jit_inline
from mrfq.fq.contract import Layout, Option, ReferenceTags, one_resource, option_value
from mrfq.fq.fifo import admit, finish, head, idle, ready, start  # noqa: F401  (FIFO's no-op hooks; the key in the packet's slot 0)


def total_weight(specs) -> float:
    """The default ``W``: each ``[[flow]]`` table's count times its weight, plus each class's weight once."""
    return float(sum(s.weight * getattr(s, "count", 1) for s in specs))


NAME = "virtual-clock"
SUMMARY = "Virtual Clock on one resource, FIFO elsewhere"
REFERENCE = "[VC] Zhang, SIGCOMM 1990, sec. 3"
OBJECTIVE = None
OPTIONS = (
    Option("fq_resource", None, "the Virtual Clock resource (default: the last); FIFO elsewhere"),
    Option("total_weight", None, "W: flow i reserves the share w_i / W of the resource (default: the sum of the "
                                 "flows' weights, each class once)", examples=(1.0, 6.0),
           flow_default=total_weight),
)

#: W enters the increments on the host (:func:`increment_scale`); the hooks never read it, so every
#: scenario's default shares one lean loop
HOST_OPT = (1,)

FR_AUX = 0      # aux_ij: the flow's virtual clock at j
P_KEY = 0       # the stamp at the Virtual Clock resource, the arrival time elsewhere


def layout(J):
    return Layout(flow_res=1, pkt=1, increments=True)


def encode(router, resources, what: str = "virtual-clock"):
    """``opt = (Virtual Clock resource index, W)`` (``what``: the scheduler, for refusals; ``wf2q-plus``
    reserves its rates the same way)."""
    jv = one_resource(router, resources, what)
    w = option_value(router, "total_weight", None)
    if w is None:
        return (float(jv), 1.0)
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
        raise ScenarioError(f"router.total_weight = {w!r}: must be a number > 0 (flow i reserves the share "
                            "w_i / total_weight of the resource; leave it out for the sum of the flows' weights)")
    return (float(jv), float(w))


def increment_scale(opt, weight, rate):
    """``L / r_i = (s_ij / w_i) * scale``: ``W`` (``r_i = w_i / W``), or ``w_i / r_i`` for a flow's own ``rate``."""
    return opt[1] if rate is None else weight / rate


@jit_inline
def arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t):
    """[VC] §3: ``aux = max(t, aux) + s_ij / r_i``, the engine's increment (:func:`increment_scale`)."""
    if j != opt[0]:
        pkt[pb + P_KEY] = t
        return
    b = slot * J + j
    aux = S.flow_res[b + FR_AUX]
    if t > aux:
        aux = t
    aux = aux + cst[cb + J + j]
    S.flow_res[b + FR_AUX] = aux
    pkt[pb + P_KEY] = aux


class Reference(ReferenceTags):
    """[VC] as written: one virtual clock per flow, ``auxVC = max(now, auxVC) + Vtick``."""

    def __init__(self, J, opt, router):
        super().__init__(J, opt, router)
        self.vc = int(opt[0])
        self.W = opt[1]
        self.aux = {}        # flow uid -> its virtual clock

    def arrive(self, p, j, t):
        if j != self.vc:
            p.tag["key"] = t
            return
        w, rate = p.flow.profile.weight, p.flow.profile.rate
        vtick = (p.s[j] / w) * (self.W if rate is None else w / rate)   # L / r_i, r_i = w_i / W or its rate
        self.aux[p.flow.uid] = max(t, self.aux.get(p.flow.uid, 0.0)) + vtick
        p.tag["key"] = self.aux[p.flow.uid]
