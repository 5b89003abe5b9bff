"""Memoryless DRFQ: one start tag per packet, used at every resource.

[BR] Bonald & Roberts, *Multi-resource fairness*, eq. (2); [DRFQ] Ghodsi et al.,
SIGCOMM 2012, §4 (memoryless variant).  docs/schedulers.md, 'drfq'.

On admission of packet k of flow i (time ``A``)::

    start_tag  S_i^k = max(V(A), F_i^{k-1})          F_i^0 = 0
    finish_tag F_i^k = S_i^k + max_j s_ij^k / w_i

and every resource serves its waiting packets in increasing ``S`` (ties: flow
id, then packet sequence number).

Virtual time ``V`` (a choice the papers leave open, the option
``router.virtual_time``; docs/schedulers.md, 'Conventions you can switch'):

* ``"started"`` ([BR], default): the largest start tag of any packet that has
  begun service at any resource; monotone.
* ``"in-service"`` ([DRFQ]): the largest start tag among the packets *currently*
  in service.  When no packet is in service anywhere, V is the largest finish
  tag of the packets that have begun service (SFQ's end-of-busy-period rule) —
  a (choice), so that a flow arriving at an idle router neither gains nor loses.

State (fq/contract.py): per flow ``F_i``; per resource (in-service rule only)
a busy flag and the start tag in service; global ``V_started`` and the largest
finish tag begun; per packet its start tag.
"""

from __future__ import annotations

from mrfq.flows.errors import ScenarioError
from mrfq.fq._jit import jit_inline
from mrfq.fq.contract import Layout, Option, ReferenceTags

NAME = "drfq"
SUMMARY = "memoryless DRFQ, one start tag per packet"
REFERENCE = "[BR] eq. 2; [DRFQ] sec. 4"
OBJECTIVE = "drf"
VIRTUAL_TIMES = ("started", "in-service")
OPTIONS = (Option("virtual_time", "started",
                  "'started' ([BR]): largest start tag begun; 'in-service' ([DRFQ]): largest start tag in "
                  "service, else the largest finish tag begun"),)

# slots: flow F | res busy, start tag in service | glob V_started, largest finish begun | pkt start tag
# (the finish tag S + max_j s_ij / w_i is recomputed when the in-service rule needs it: same operations, same bits)
F_FINISH = 0
R_BUSY, R_KEY = 0, 1
G_V, G_MAXFIN = 0, 1
P_START = 0


def layout(J):
    return Layout(flow=1, flow_res=0, res=2, glob=2, pkt=1)


def encode(router, resources):
    vt = router.virtual_time
    if vt not in VIRTUAL_TIMES:
        raise ScenarioError(f"router.virtual_time = {vt!r}: choose 'started' ([BR]) or 'in-service' ([DRFQ])")
    return (1.0 if vt == "in-service" else 0.0,)


@jit_inline
def _virtual_time(S, opt, J):
    """V: the largest start tag begun ("started"), or in service, else the largest finish tag begun."""
    if opt[0] == 0.0:
        return S.glob[G_V]
    v = -1.0
    for j in range(J):
        if S.res[2 * j + R_BUSY] != 0.0 and S.res[2 * j + R_KEY] > v:
            v = S.res[2 * j + R_KEY]
    if v < 0.0:
        v = S.glob[G_MAXFIN]
    return v


@jit_inline
def admit(S, pkt, opt, J, slot, pb, cst, cb, weight, dominant_service, t):
    """[BR] eq. (2): ``S = max(V, F_prev)``, ``F = S + max_j s_ij / w`` at router admission (the
    engine passes ``max_j s_ij / w`` as ``dominant_service``, divided once per flow)."""
    start_tag = _virtual_time(S, opt, J)
    if S.flow[slot] > start_tag:
        start_tag = S.flow[slot]
    finish_tag = start_tag + dominant_service
    S.flow[slot] = finish_tag
    pkt[pb + P_START] = start_tag


@jit_inline
def arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t):
    """Nothing: the admission start tag is the key at every resource."""
    return


@jit_inline
def head(S, pkt, opt, J, slot, pb, cst, cb, j, weight):
    return pkt[pb + P_START]


@jit_inline
def start(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t):
    """``V_started = max(V_started, S)``; the in-service rule also notes the tag in service at j."""
    s = pkt[pb + P_START]
    if s > S.glob[G_V]:
        S.glob[G_V] = s
    if opt[0] != 0.0:
        S.res[2 * j + R_BUSY] = 1.0
        S.res[2 * j + R_KEY] = s
        dominant = 0.0  # as the engine computes it for admit: max_j s_ij, from 0
        for jj in range(J):
            if cst[cb + jj] > dominant:
                dominant = cst[cb + jj]
        f = s + dominant / weight
        if f > S.glob[G_MAXFIN]:
            S.glob[G_MAXFIN] = f


@jit_inline
def finish(S, pkt, opt, J, slot, pb, cst, cb, j, t):
    if opt[0] != 0.0:
        S.res[2 * j + R_BUSY] = 0.0


@jit_inline
def idle(S, pkt, opt, J, j, t):
    return


@jit_inline
def ready(S, pkt, opt, J, j, t):
    return True


class Reference(ReferenceTags):
    """Plain-Python memoryless DRFQ ([BR] eq. 2) with either virtual-time rule."""

    def __init__(self, J, opt, router):
        super().__init__(J, opt, router)
        self.in_service_rule = opt[0] != 0.0
        self.max_started = 0.0          # largest start tag that has begun service anywhere
        self.max_started_finish = 0.0   # largest finish tag that has begun service anywhere

    def V(self) -> float:
        if not self.in_service_rule:
            return self.max_started
        keys = [p.tag["key"] for p in self.router.serving if p is not None]
        return max(keys) if keys else self.max_started_finish

    def admit(self, p, t):
        F = p.flow.tag.get("F", 0.0)
        p.tag["key"] = max(self.V(), F)
        p.tag["finish"] = p.tag["key"] + max(p.s) / p.flow.profile.weight
        p.flow.tag["F"] = p.tag["finish"]

    def start(self, p, j, next_p, t):
        self.max_started = max(self.max_started, p.tag["key"])
        self.max_started_finish = max(self.max_started_finish, p.tag["finish"])


def twin_admit(state: dict, flow: int, s, weight: float) -> tuple[float, float]:
    """Plain-Python tag rule for hand-computed examples: ``state = {"V": v, "F": {flow: F}}``."""
    start_tag = max(state["V"], state["F"].get(flow, 0.0))
    finish_tag = start_tag + max(s) / weight
    state["F"][flow] = finish_tag
    return start_tag, finish_tag
