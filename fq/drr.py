"""Deficit round robin on one resource, FIFO elsewhere (a baseline).

[DRR] M. Shreedhar, G. Varghese, *Efficient fair queueing using deficit round
robin*, SIGCOMM 1995, §3 (the algorithm), here on one resource of the router
(option ``router.fq_resource``, default the last one some flow uses, as for ``fq-single``);
every other resource is FIFO (key = arrival time there, :mod:`fq.fifo`).

The rules at the DRR resource ``j``, packet costs ``s_ij`` in time units:

1. [DRR §3] Flows with packets waiting at j form the *active list*, served in
   turn.  A flow joins the tail of the list when a packet arrives at j to an
   empty queue (the flow was not in the list).
2. [DRR §3] When the scheduler visits flow i (its *turn*), the deficit counter
   grows by the quantum: ``DC_i += Q w_i`` (``Q = router.quantum``, time units,
   weighted by the flow weight ``w_i``).  The flow then sends head packets while
   the head fits, ``s_ij <= DC_i``, each sent packet taking ``DC_i -= s_ij``.
3. [DRR §3] If the flow's queue at j is empty after a packet, the flow leaves
   the list and ``DC_i = 0``; otherwise, when the next head does not fit, the
   flow moves to the tail of the list and keeps ``DC_i``.

(choice) What "the queue is empty" means in a router whose packets reach j
from an earlier resource: the flow has no packet *waiting at j* when its
packet begins service there (a packet still at the CPU does not count), as in
rule 3 for a single-resource DRR whose input is the earlier resource.

(choice) ``Q w_i`` smaller than a packet: [DRR] then lets the flow's visits
pass without sending until its deficit covers the head, one quantum per round.
Under the scheduler contract a head's key is fixed when it becomes head, so
this module credits the missing quanta at once at the visit that sends
(``DC_i += Q w_i`` until ``DC_i >= s_ij``): exact DRR whenever
``Q w_i >= s_ij`` for every packet (the usual DRR condition, which makes every
visit send at least one packet).  With a smaller quantum it is *not* DRR: a
flow whose packets exceed its quantum sends one packet per visit instead of
one every few rounds, so it gets more than its share (tests/test_drr.py shows
both cases).  ``router.quantum`` must be > 0 (default 1 time unit); it cannot
be checked against the packet costs because the contract's ``encode(router,
resources)`` does not see the flows: choose it >= the largest packet cost at
the DRR resource divided by the smallest weight.

How the rules map onto the contract (fq/contract.py): keys at j are *turn
tokens* from a per-resource counter, so the smallest key is the front of the
active list.  ``head`` gives a packet a new token when its flow (re)joins the
list (rule 1) or its turn has ended (rule 3), and the current token while the
flow's turn goes on; ``start`` adds the quantum at the first packet of a turn,
subtracts the cost, and decides whether the next waiting packet still fits.
Ties cannot occur at j (tokens are distinct); at FIFO resources ties go to
the smaller flow id.
"""

from __future__ import annotations

import math
from collections import deque

from mrfq.flows.errors import ScenarioError
from mrfq.fq._jit import jit_inline
from mrfq.fq.contract import Layout, Option, ReferenceTags, one_resource, option_value

NAME = "drr"
SUMMARY = "deficit round robin on one resource, FIFO elsewhere"
REFERENCE = "[DRR] Shreedhar & Varghese, SIGCOMM 1995, sec. 3"
OBJECTIVE = None
OPTIONS = (
    Option("fq_resource", None, "the resource DRR schedules (default: the last); FIFO elsewhere"),
    Option("quantum", 1.0, "DRR quantum Q, time units of the DRR resource per turn (weighted by the flow weight)",
           examples=(0.25, 2.5)),
)

# per-flow slots
F_DEFICIT = 0   # DC_i, time units
F_IN_TURN = 1   # 1 while the flow's turn goes on (its next waiting packet fits)
F_TOKEN = 2     # the token of the flow's current turn
F_LISTED = 3    # 1 while the flow waits in the active list with its token (not in its turn)
NF = 4
# per-resource slots
R_TOKENS = 0    # tokens handed out at this resource
NRS = 1
# per-packet slots
P_ARRIVAL = 0   # arrival time at the current resource (the FIFO key)


def layout(J):
    return Layout(flow=NF, res=NRS, pkt=1)


def encode(router, resources):
    """``opt = (DRR resource index, Q)``."""
    jd = one_resource(router, resources, "drr")
    name = resources[jd]
    q = option_value(router, "quantum", 1.0)
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not math.isfinite(q) or q <= 0:
        raise ScenarioError(f"router.quantum = {q!r}: must be a number > 0 (time units of "
                            f"{name!r} per DRR turn, e.g. quantum = 1.0)")
    return (float(jd), float(q))


@jit_inline
def admit(S, pkt, opt, J, slot, pb, cst, cb, weight, dominant_service, t):
    return


@jit_inline
def arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t):
    pkt[pb + P_ARRIVAL] = t


@jit_inline
def head(S, pkt, opt, J, slot, pb, cst, cb, j, weight):
    """DRR resource: the flow's turn token, a new one when it (re)joins the list; else the arrival time."""
    if j != opt[0]:
        return pkt[pb + P_ARRIVAL]
    b = slot * NF
    if S.flow[b + F_IN_TURN] != 0.0 or S.flow[b + F_LISTED] != 0.0:
        return S.flow[b + F_TOKEN]
    token = S.res[j * NRS + R_TOKENS]
    S.res[j * NRS + R_TOKENS] = token + 1.0
    S.flow[b + F_TOKEN] = token
    S.flow[b + F_LISTED] = 1.0
    return token


@jit_inline
def start(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t):
    """[DRR §3]: ``DC += Q w`` at a turn's first packet, ``DC -= s``; reset when the queue empties."""
    if j != opt[0]:
        return
    b = slot * NF
    s = cst[cb + j]
    deficit = S.flow[b + F_DEFICIT]
    if S.flow[b + F_IN_TURN] == 0.0:
        quantum = opt[1] * weight
        deficit += quantum
        while deficit < s:          # Q w < s: the (choice) of the module docstring
            deficit += quantum
        S.flow[b + F_IN_TURN] = 1.0
        S.flow[b + F_LISTED] = 0.0  # it left the list's front
    deficit -= s
    if next_pb < 0:
        deficit = 0.0               # the flow leaves the active list
        S.flow[b + F_IN_TURN] = 0.0
    elif cst[next_cb + j] > deficit:
        S.flow[b + F_IN_TURN] = 0.0  # turn over: head(next) draws a token at the tail
    S.flow[b + F_DEFICIT] = deficit


@jit_inline
def finish(S, pkt, opt, J, slot, pb, cst, cb, j, t):
    return


@jit_inline
def drop(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t):
    """A head dropped unserved (buffer management): a queue it empties leaves the active list with
    its deficit reset, as when its last packet begins service; else nothing changes (a turn goes on
    and may overdraw its deficit by the next packet, as fq_codel's DRR does)."""
    if j != opt[0] or next_pb >= 0:
        return
    b = slot * NF
    S.flow[b + F_DEFICIT] = 0.0
    S.flow[b + F_IN_TURN] = 0.0
    S.flow[b + F_LISTED] = 0.0


@jit_inline
def idle(S, pkt, opt, J, j, t):
    return


@jit_inline
def ready(S, pkt, opt, J, j, t):
    return True


class Reference(ReferenceTags):
    """DRR written as in [DRR] Fig. 1: an explicit active list (a deque of flows) and deficit counters.

    The contract's keys are tickets in the order flows enter the list's tail; ``start`` checks that
    the router picked the flow at the list's front (the oracle checks the engine's heap order)."""

    def __init__(self, J, opt, router):
        super().__init__(J, opt, router)
        self.jd = int(opt[0])
        self.quantum = opt[1]
        self.active: deque = deque()    # the active list, front first
        self.serving_turn = None        # the flow whose turn goes on
        self.tickets = 0

    def arrive(self, p, j, t):
        p.tag["key"] = t

    def head(self, p, j):
        if j != self.jd:
            return p.tag["key"]
        f = p.flow
        if f is self.serving_turn or f.tag.get("listed"):
            return f.tag["ticket"]
        self.active.append(f)            # (re)join the tail
        f.tag["listed"] = True
        f.tag["ticket"] = self.tickets
        self.tickets += 1
        return f.tag["ticket"]

    def start(self, p, j, next_p, t):
        if j != self.jd:
            return
        f = p.flow
        if f is not self.serving_turn:   # a visit: the front of the list
            front = self.active.popleft()
            assert front is f, f"DRR visits flow {f.uid}, the active list's front is flow {front.uid}"
            f.tag["listed"] = False
            q = self.quantum * f.profile.weight
            dc = f.tag.get("deficit", 0.0) + q
            while dc < p.s[j]:
                dc += q
            f.tag["deficit"] = dc
            self.serving_turn = f
        f.tag["deficit"] -= p.s[j]
        if next_p is None:
            f.tag["deficit"] = 0.0
            self.serving_turn = None
        elif next_p.s[j] > f.tag["deficit"]:
            self.serving_turn = None

    def drop(self, p, j, next_p, t):
        if j != self.jd or next_p is not None:
            return
        f = p.flow
        if f is self.serving_turn:
            self.serving_turn = None
        elif f.tag.get("listed"):
            self.active.remove(f)
            f.tag["listed"] = False
        f.tag["deficit"] = 0.0
