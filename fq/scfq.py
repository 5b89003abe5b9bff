"""Self-clocked fair queueing on one resource, FIFO elsewhere (a baseline: docs/schedulers.md, 'scfq').

[SCFQ] S. J. Golestani, *A self-clocked fair queueing scheme for broadband
applications*, IEEE INFOCOM 1994, eqs. (19)-(20) of §IV (the tag rule and the
self-clocked virtual time).  At the fair-queued resource ``j`` (option
``router.fq_resource``, default the last one some flow uses, chosen as for
``fq-single``: :func:`fq.contract.one_resource`), when packet k of flow i
arrives there at time a::

    F_i^k = max(F_i^{k-1}, v(a)) + L_i^k / r_i,      here  L_i^k / r_i = s_ij^k / w_i

and packets are served in increasing finish tag ``F`` (ties: the smaller flow
id, docs/schedulers.md, 'Event order and ties').  The system virtual time
``v(t)`` is the finish tag of the packet in service at j [SCFQ, eq. (20)].
Every other resource is FIFO (key = arrival time there, as in :mod:`fq.fifo`).

(reconstructed) ``v`` between two services of one busy period: a packet that
arrives at the instant a service ends sees the ended packet's finish tag (the
virtual times as they were before any service starts at that instant, the
engine's event order), so ``v`` is kept as the finish tag of the last packet
to *begin* service at j until the next one begins.

(choice, ``router.scfq_idle``) The idle server.  [SCFQ] ends a busy period by
resetting ``v`` and every flow's ``F_i`` to 0 (``"reset"``, the default).  The
alternative ``"hold"`` keeps ``v`` at the last finish tag served and the
``F_i`` as they are.  Served finish tags never decrease within a busy period
(a packet arriving at a gets ``F > v(a)``, the tag in service), so at its end
``v`` is the largest tag of all, every returning flow is tagged from ``v`` and
the two rules order every later packet the same way: the tags of a busy period
differ by one constant.  They differ only in rounding (under ``"hold"`` the
tags grow without bound and lose bits).  The reset is done with a busy-period
counter per resource: an ``F_i`` written in an earlier busy period counts as 0.

State: per (flow, resource) ``F_ij`` and the busy period it was written in;
per resource ``v_j`` and the busy-period count; per packet its key (the finish
tag at j, the arrival time elsewhere).
"""

from __future__ import annotations

from mrfq.flows.errors import ScenarioError
from mrfq.fq._jit import jit_inline
from mrfq.fq.contract import Layout, Option, ReferenceTags, one_resource, option_value
from mrfq.fq.fifo import admit, finish, head, ready  # noqa: F401  (FIFO's no-op hooks; the key in the packet's slot 0)

NAME = "scfq"
SUMMARY = "self-clocked fair queueing on one resource, FIFO elsewhere"
REFERENCE = "[SCFQ] Golestani, INFOCOM 1994, eqs. 19-20"
OBJECTIVE = None
IDLE_RULES = ("reset", "hold")
OPTIONS = (
    Option("fq_resource", None, "the fair-queued resource (default: the last); FIFO elsewhere"),
    Option("scfq_idle", "reset", "'reset': v and every F_i to 0 when the resource goes idle ([SCFQ]); "
                                 "'hold': v keeps the last finish tag served", examples=("hold",)),
)

# per (flow, resource)
FR_FINISH = 0   # F_ij: finish tag of the flow's last packet tagged at j
FR_PERIOD = 1   # the busy period of j in which F_ij was written
NFR = 2
# per resource
R_V = 0         # v_j: finish tag of the last packet to begin service at j
R_PERIOD = 1    # busy periods of j ended so far
NRS = 2
# per packet
P_KEY = 0       # finish tag at the fair-queued resource, arrival time elsewhere


def layout(J):
    return Layout(flow_res=NFR, res=NRS, pkt=1, increments=True)


def encode(router, resources):
    """``opt = (fair-queued resource index, 1.0 for "reset" / 0.0 for "hold")``."""
    jf = one_resource(router, resources, "scfq")
    rule = option_value(router, "scfq_idle", "reset")
    if rule not in IDLE_RULES:
        raise ScenarioError(f"router.scfq_idle = {rule!r}: choose 'reset' (v and every finish tag to 0 when the "
                            "resource goes idle, [SCFQ]) or 'hold' (v keeps the last finish tag served)")
    return (float(jf), 1.0 if rule == "reset" else 0.0)


@jit_inline
def arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t):
    """[SCFQ] eq. (19): ``F = max(F_i^{k-1}, v) + s_ij / w_i`` at the fair-queued resource."""
    if j != opt[0]:
        pkt[pb + P_KEY] = t
        return
    b = (slot * J + j) * NFR
    prev = S.flow_res[b + FR_FINISH]
    if S.flow_res[b + FR_PERIOD] != S.res[j * NRS + R_PERIOD]:
        prev = 0.0                       # written in an earlier busy period: reset to 0
    v = S.res[j * NRS + R_V]
    if v > prev:
        prev = v
    fin = prev + cst[cb + J + j]
    S.flow_res[b + FR_FINISH] = fin
    S.flow_res[b + FR_PERIOD] = S.res[j * NRS + R_PERIOD]
    pkt[pb + P_KEY] = fin


@jit_inline
def start(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t):
    """[SCFQ] eq. (20): ``v`` = the finish tag of the packet in service."""
    if j == opt[0]:
        S.res[j * NRS + R_V] = pkt[pb + P_KEY]


@jit_inline
def idle(S, pkt, opt, J, j, t):
    """The end of a busy period: under "reset", ``v = 0`` and every ``F_ij`` counts as 0."""
    if j == opt[0] and opt[1] != 0.0:
        S.res[j * NRS + R_V] = 0.0
        S.res[j * NRS + R_PERIOD] += 1.0


class Reference(ReferenceTags):
    """[SCFQ] as written: a dict of finish tags per flow, ``v`` the tag in service, cleared when idle."""

    def __init__(self, J, opt, router):
        super().__init__(J, opt, router)
        self.fq = int(opt[0])
        self.reset = opt[1] != 0.0
        self.v = 0.0
        self.F = {}          # flow uid -> finish tag of its last packet at the fair-queued resource

    def arrive(self, p, j, t):
        if j != self.fq:
            p.tag["key"] = t
            return
        uid = p.flow.uid
        p.tag["key"] = max(self.F.get(uid, 0.0), self.v) + p.s[j] / p.flow.profile.weight
        self.F[uid] = p.tag["key"]

    def start(self, p, j, next_p, t):
        if j == self.fq:
            self.v = p.tag["key"]

    def idle(self, j, t):
        if j == self.fq and self.reset:
            self.v = 0.0
            self.F.clear()
