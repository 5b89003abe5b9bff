"""Dovetailing DRFQ: per-resource tags, one key per packet.

[DRFQ] Ghodsi et al., SIGCOMM 2012, §4 (dovetailing DRFQ), as reconstructed in
docs/schedulers.md, 'drfq-dovetail'.

On admission of packet k of flow i, for every resource j the packet visits
(``s_ij^k > 0``)::

    S_ij^k = max(V_j(A), F_ij^{k-1}),   F_ij^k = S_ij^k + s_ij^k / w_i

and the packet's scheduling key at every resource is ``max_j S_ij^k``.
``V_j`` is the largest per-resource start tag at j of the packets that have
begun service at j.  A flow that under-uses a resource in one packet gets
credit for it in later packets.

A resource the packet skips (``s_ij^k = 0``) adds no tag and leaves ``F_ij``
unchanged.  Option ``router.skipped`` (choice) says whether it enters the key:

* ``"virtual-time"`` (default): it enters with its virtual time ``V_j(A)``, the
  start tag a vanishing cost there would get (``S_ij = max(V_j, F_ij)``, and with
  ``s_ij -> 0`` every earlier ``S_ij`` was a ``V_j`` no larger than today's).  A
  flow that skips a resource then cannot run ahead of it in virtual time: with
  a = (1, 0), b = (0, 1), c = (0.5, 1) the rates are weighted DRF's 0.75 / 0.5 / 0.5.
* ``"ignore"``: it takes no part, so a flow is never held back by the virtual
  time of a resource it does not use.  In the case above a's and b's keys then
  follow only their own resource, the virtual time of the CPU (a's) runs ahead
  of the link's, and c's key, the larger of its two start tags, falls ever
  further behind b's at the link: c starved (0.16 packets per time unit over
  3,000 time units, 0.059 over 20,000, against DRF's 0.5).

Option ``router.dovetail_bound`` = Δ (R): how much of a flow's past under-use of a resource
may be credited, in virtual time.  With ``K`` the key above (the largest of the
packet's unbounded start tags, and of the skipped resources' ``V_j`` under
``"virtual-time"``), the start tag at every visited resource is held within Δ of it::

    S_ij^k = max(V_j(A), F_ij^{k-1}, K - Δ)

so the key stays ``K``.  Δ = ∞ (default) is the dovetailing above; Δ = 0 puts every
start tag at ``K``: then ``F_ij^k = K + s_ij^k / w_i``, the next key is
``max(max_j V_j, K + max_j s_ij^k / w_i)`` and the largest ``V_j`` is the largest key
begun anywhere: memoryless DRFQ ([BR] eq. (2), :mod:`fq.drfq` with its default
``virtual_time = "started"``), the same schedule bit for bit (``fl(K + x)`` is
monotone in ``x``).  (R): [DRFQ] names the two extremes; bounding the credit against
the packet's own key, rather than a flow's finish tags against each other, is the
reading under which Δ = 0 is memoryless DRFQ exactly.

Option ``router.idle_reset`` (classic SFQ): when j goes idle, ``V_j`` jumps to
the largest finish tag *at j* (``F_ij``) of the packets served at j.

State (fq/contract.py): per (flow, resource) ``F_ij``; per resource ``V_j`` and
the largest finish tag begun at j; per packet its ``S_ij`` (J slots) and key.
"""

from __future__ import annotations

import math

from mrfq.flows.errors import ScenarioError
from mrfq.fq._jit import jit_inline
from mrfq.fq.contract import Layout, Option, ReferenceTags, option_value

NAME = "drfq-dovetail"
SUMMARY = "dovetailing DRFQ, per-resource tags"
REFERENCE = "[DRFQ] sec. 4"
OBJECTIVE = "drf"
OPTIONS = (Option("idle_reset", False, "V_j jumps to the largest finish tag served at j when j goes idle"),
           Option("skipped", "virtual-time", "a resource the packet skips enters its key with its virtual time "
                                            "('virtual-time') or takes no part ('ignore')", examples=("ignore",)),
           Option("dovetail_bound", "inf", "Δ: how far (virtual time) a start tag may lag the packet's key, the "
                                           "credit for past under-use; 0 = memoryless DRFQ, 'inf' = full dovetailing",
                  examples=(0.0, 0.5, 3.0)))
SKIPPED = ("virtual-time", "ignore")

R_V, R_MAXFIN = 0, 1


def layout(J):
    return Layout(flow=0, flow_res=1, res=2, glob=0, pkt=J + 1)


def encode(router, resources):
    """``opt = (idle_reset, skipped is "ignore", Δ)``."""
    if not isinstance(router.idle_reset, bool):
        raise ScenarioError(f"router.idle_reset = {router.idle_reset!r}: must be true or false")
    skipped = option_value(router, "skipped", "virtual-time")
    if skipped not in SKIPPED:
        raise ScenarioError(f"router.skipped = {skipped!r}: must be 'virtual-time' (a resource the packet skips "
                            "enters its key with its virtual time) or 'ignore'")
    bound = option_value(router, "dovetail_bound", "inf")
    if bound == "inf":
        bound = math.inf
    elif isinstance(bound, bool) or not isinstance(bound, (int, float)) or not bound >= 0:
        raise ScenarioError(f"router.dovetail_bound = {bound!r}: must be a number >= 0 (0: memoryless DRFQ) "
                            "or 'inf' (the default: full dovetailing)")
    return (1.0 if router.idle_reset else 0.0, 1.0 if skipped == "ignore" else 0.0, float(bound))


@jit_inline
def admit(S, pkt, opt, J, slot, pb, cst, cb, weight, dominant_service, t):
    """Per-resource start tags ``S_ij``; the key ``K`` is their max over the visited resources, and over
    the skipped ones' virtual times ``V_j(A)`` unless ``skipped = "ignore"``; with Δ < inf each start
    tag is at least ``K - Δ`` (the key stays ``K``)."""
    key = 0.0
    for j in range(J):
        start_tag = S.res[2 * j + R_V]
        if cst[cb + j] > 0.0:
            if S.flow_res[slot * J + j] > start_tag:
                start_tag = S.flow_res[slot * J + j]
            if start_tag > key:
                key = start_tag
        elif opt[1] == 0.0 and start_tag > key:
            key = start_tag
    floor = key - opt[2]
    for j in range(J):
        s = cst[cb + j]
        if s > 0.0:
            start_tag = S.res[2 * j + R_V]
            if S.flow_res[slot * J + j] > start_tag:
                start_tag = S.flow_res[slot * J + j]
            if floor > start_tag:
                start_tag = floor
            S.flow_res[slot * J + j] = start_tag + s / weight
            pkt[pb + j] = start_tag
        else:
            # a packet that skips j passes it in zero time under ingress placement: its start
            # there must leave V_j as it is (as under "every", where it never reaches j)
            pkt[pb + j] = 0.0
    pkt[pb + J] = key


@jit_inline
def arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t):
    """Nothing: the key is fixed at admission."""
    return


@jit_inline
def head(S, pkt, opt, J, slot, pb, cst, cb, j, weight):
    return pkt[pb + J]


@jit_inline
def start(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t):
    """``V_j = max(V_j, S_ij)``; with idle_reset note the finish tag at j, ``S_ij + s_ij / w_i``."""
    s = pkt[pb + j]
    if s > S.res[2 * j + R_V]:
        S.res[2 * j + R_V] = s
    if opt[0] != 0.0:
        f = s + cst[cb + j] / weight
        if f > S.res[2 * j + R_MAXFIN]:
            S.res[2 * j + R_MAXFIN] = f


@jit_inline
def finish(S, pkt, opt, J, slot, pb, cst, cb, j, t):
    return


@jit_inline
def idle(S, pkt, opt, J, j, t):
    if opt[0] != 0.0:
        S.res[2 * j + R_V] = S.res[2 * j + R_MAXFIN]


@jit_inline
def ready(S, pkt, opt, J, j, t):
    return True


class Reference(ReferenceTags):
    """Plain-Python dovetailing: per-resource ``S_j = max(V_j, F_j)``, key = max over visited j."""

    def __init__(self, J, opt, router):
        super().__init__(J, opt, router)
        self.Vj = [0.0] * J
        self.idle_reset = opt[0] != 0.0
        self.skipped_enter = opt[1] == 0.0
        self.bound = opt[2]
        self.max_finish_started = [0.0] * J

    def admit(self, p, t):
        Fj = p.flow.tag.setdefault("Fj", [0.0] * self.J)
        used = [j for j in range(self.J) if p.s[j] > 0.0]   # the resources it uses (not the ingress pass)
        key = max(max(self.Vj[j], Fj[j]) for j in used)
        if self.skipped_enter:
            key = max([key] + [self.Vj[j] for j in range(self.J) if j not in used])
        S, Fin = {}, {}
        for j in used:
            S[j] = max(self.Vj[j], Fj[j], key - self.bound)   # the credit is at most Δ
            Fin[j] = S[j] + p.s[j] / p.flow.profile.weight
            Fj[j] = Fin[j]
        p.tag.update(S=S, Fin=Fin, key=key)

    def start(self, p, j, next_p, t):
        if j not in p.tag["S"]:   # it skips j, passing it in zero time under ingress placement
            return
        self.Vj[j] = max(self.Vj[j], p.tag["S"][j])
        self.max_finish_started[j] = max(self.max_finish_started[j], p.tag["Fin"][j])

    def idle(self, j, t):
        if self.idle_reset:
            self.Vj[j] = self.max_finish_started[j]


def twin_admit(state: dict, flow: int, s, weight: float, skipped: str = "virtual-time",
               bound: float = math.inf) -> float:
    """Plain-Python tag rule for hand-computed examples: ``state = {"V": [V_j], "F": {(flow, j): F_ij}}``;
    returns the key and leaves the start tags in ``state["S"]``."""
    used = [j for j, sj in enumerate(s) if sj > 0]
    key = max(max(state["V"][j], state["F"].get((flow, j), 0.0)) for j in used)
    if skipped == "virtual-time":
        key = max([key] + [state["V"][j] for j in range(len(s)) if j not in used])
    state["S"] = {}
    for j in used:
        st = max(state["V"][j], state["F"].get((flow, j), 0.0), key - bound)
        state["S"][j] = st
        state["F"][(flow, j)] = st + s[j] / weight
    return key
