"""WF²Q+ on one resource, FIFO elsewhere (a baseline: docs/schedulers.md, 'wf2q-plus').

[BZ] J. C. R. Bennett, H. Zhang, *Hierarchical packet fair queueing algorithms*,
IEEE/ACM ToN 5(5), 1997, §IV-B (WF²Q+: the tag rules, the system virtual time, the
smallest eligible finish tag first), after [WF2Q] J. C. R. Bennett, H. Zhang,
*WF²Q: worst-case fair weighted fair queueing*, IEEE INFOCOM 1996.  At the
fair-queued resource ``j`` (option ``router.fq_resource``, default the last one
some flow uses, chosen as for ``fq-single``: :func:`fq.contract.one_resource`),
flow i reserves the rate ``r_i`` of the resource, its ``[[flow]]`` table's ``rate`` or
``w_i / W`` (``W = router.total_weight``, by default the sum of the flows' weights), as
for ``virtual-clock``, and its head-of-line packet carries the tags::

    S_i = max(F_i, V(a))   if the packet arrives at a to find the flow with nothing at j
    S_i = F_i              otherwise (when its predecessor begins service)
    F_i = S_i + L / r_i,   here  L / r_i = the engine's increment (virtual_clock.increment_scale)

The system virtual time advances by the work done at j and never lags the smallest
start tag of the flows with packets waiting there [BZ, eq. (27)]::

    V(t + tau) = max(V(t) + W(t, t + tau), min_{i in B} S_i)

A head is *eligible* when ``S_i <= V``; j serves the eligible head of smallest
``F_i`` (ties: the smaller flow id, docs/schedulers.md, 'Event order and ties').
The ``max`` with the smallest start tag makes some head eligible whenever one waits,
so the resource is work-conserving.  Every other resource is FIFO (key = arrival
time there, as in :mod:`fq.fifo`).  On the scheduler contract: ``eligibility`` is
the head's ``S_i``, ``threshold`` is ``max(V(t), e_min)``, ``e_min`` the smallest
``S_i`` among j's heads.

(reconstructed) When V is brought up to date.  [BZ] writes the update at the
instants a packet is chosen.  Here V is read as ``V_c + W(t_c, t)`` at any instant
(``t_c`` the last choice, ``W`` the service given at j since: ``min(t, e) - t_c``
with ``e`` the end of that service), so a packet arriving during a service is
tagged with the work done so far; at a choice, ``V = max(V(t), S)`` of the packet
chosen, which equals [BZ]'s ``max(V(t), min S)`` (the packet chosen is eligible:
its S is at most V(t), or it is the smallest).  V is never reset: an idle
resource holds it (W adds nothing while idle).

(choice) "Nothing at j": the flow has no packet waiting or in service at j (its
queue at j, ``q_ij = 1`` on arrival).  A packet that arrives while its flow's
previous one is in service follows it (``S = F_i``), as a backlogged flow's do.

State: per (flow, resource) ``F_ij``; per resource ``V`` at the last choice, that
choice's instant and the end of its service; per packet its key (``F`` at j, the
arrival time elsewhere) and its start tag (-1 until it is tagged, at j).
"""

from __future__ import annotations

from mrfq.fq._jit import jit_inline
from mrfq.fq.contract import Layout, Option, ReferenceTags
from mrfq.fq.fifo import admit, finish, idle, ready  # noqa: F401  (FIFO's no-op hooks)
from mrfq.fq import virtual_clock as _virtual_clock

NAME = "wf2q-plus"
SUMMARY = "WF2Q+ (smallest eligible finish tag) on one resource, FIFO elsewhere"
REFERENCE = "[BZ] Bennett & Zhang, IEEE/ACM ToN 1997, sec. IV-B"
OBJECTIVE = None
OPTIONS = (Option("fq_resource", None, "the WF2Q+ resource (default: the last); FIFO elsewhere"),
           _virtual_clock.OPTIONS[1])   # total_weight, as virtual-clock reserves its rates
HOST_OPT = _virtual_clock.HOST_OPT               # W: in the increments, never read by the hooks
increment_scale = _virtual_clock.increment_scale  # L / r_i as virtual-clock's

INF = float("inf")
FR_F = 0        # F_ij: the finish tag of the flow's last packet tagged at j
R_V = 0         # V at the last choice at j
R_TC = 1        # the instant of that choice
R_END = 2       # the end of that service
NRS = 3
P_KEY = 0       # F at the WF2Q+ resource, the arrival time elsewhere
P_S = 1         # S at the WF2Q+ resource (-1: not tagged yet)


def layout(J):
    return Layout(flow_res=1, res=NRS, pkt=2, increments=True)


def encode(router, resources):
    """``opt = (WF2Q+ resource index, W)``: as ``virtual-clock``'s."""
    return _virtual_clock.encode(router, resources, "wf2q-plus")


@jit_inline
def _virtual_time(S, j, t):
    """``V(t) = V_c + W(t_c, t)``: the work done at j since the last choice."""
    b = j * NRS
    done = S.res[b + R_END]
    if t < done:
        done = t
    done -= S.res[b + R_TC]
    if done < 0.0:
        done = 0.0
    return S.res[b + R_V] + done


@jit_inline
def _tag(S, pkt, opt, J, slot, pb, cst, cb, j, start):
    fin = start + cst[cb + J + j]
    S.flow_res[slot * J + j] = fin
    pkt[pb + P_S] = start
    pkt[pb + P_KEY] = fin


@jit_inline
def arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t):
    """[BZ]: a packet that finds its flow with nothing at j: ``S = max(F_i, V(a))``."""
    if j != opt[0]:
        pkt[pb + P_KEY] = t
        return
    pkt[pb + P_S] = -1.0
    if q_ij == 1:
        v = _virtual_time(S, j, t)
        f = S.flow_res[slot * J + j]
        _tag(S, pkt, opt, J, slot, pb, cst, cb, j, f if f > v else v)


@jit_inline
def head(S, pkt, opt, J, slot, pb, cst, cb, j, weight):
    """[BZ]: the next packet of a backlogged flow: ``S = F_i``."""
    if j == opt[0] and pkt[pb + P_S] < 0.0:
        _tag(S, pkt, opt, J, slot, pb, cst, cb, j, S.flow_res[slot * J + j])
    return pkt[pb + P_KEY]


@jit_inline
def start(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t):
    """[BZ, eq. (27)] at a choice: ``V = max(V(t), S)`` of the packet chosen."""
    if j != opt[0]:
        return
    v = _virtual_time(S, j, t)
    s = pkt[pb + P_S]
    b = j * NRS
    S.res[b + R_V] = s if s > v else v
    S.res[b + R_TC] = t
    S.res[b + R_END] = t + cst[cb + j]


@jit_inline
def eligibility(S, pkt, opt, J, slot, pb, cst, cb, j):
    """The head's start tag at the WF2Q+ resource (every head is eligible elsewhere)."""
    if j != opt[0]:
        return 0.0
    return pkt[pb + P_S]


@jit_inline
def threshold(S, pkt, opt, J, j, t, e_min):
    """Eligible: ``S <= max(V(t), min S)`` at the WF2Q+ resource."""
    if j != opt[0]:
        return INF
    v = _virtual_time(S, j, t)
    return v if v > e_min else e_min


class Reference(ReferenceTags):
    """[BZ]'s WF2Q+ as written: per flow its finish tag, per packet its start and finish tags, the
    system virtual time advanced by the work done and raised to the smallest start tag."""

    def __init__(self, J, opt, router):
        super().__init__(J, opt, router)
        self.fq = int(opt[0])
        self.W = opt[1]
        self.F = {}               # flow uid -> finish tag of its last packet tagged
        self.v = 0.0              # V at the last choice
        self.chosen_at = 0.0      # the instant of that choice
        self.ends_at = 0.0        # the end of that service

    def V(self, t):
        return self.v + max(0.0, min(t, self.ends_at) - self.chosen_at)

    def _tag(self, p, j, start):
        p.tag["S"] = start
        w, rate = p.flow.profile.weight, p.flow.profile.rate
        p.tag["key"] = start + (p.s[j] / w) * (self.W if rate is None else w / rate)   # L / r_i
        self.F[p.flow.uid] = p.tag["key"]

    def arrive(self, p, j, t):
        if j != self.fq:
            p.tag["key"] = t
            return
        p.tag.pop("S", None)
        if p.flow.Q[j] == 1:      # nothing of its flow at j: newly backlogged
            self._tag(p, j, max(self.F.get(p.flow.uid, 0.0), self.V(t)))

    def head(self, p, j):
        if j == self.fq and "S" not in p.tag:
            self._tag(p, j, self.F[p.flow.uid])
        return p.tag["key"]

    def start(self, p, j, next_p, t):
        if j == self.fq:
            self.v = max(self.V(t), p.tag["S"])
            self.chosen_at = t
            self.ends_at = t + p.s[j]

    def eligibility(self, p, j):
        return p.tag["S"] if j == self.fq else 0.0

    def threshold(self, j, t, e_min):
        return max(self.V(t), e_min) if j == self.fq else float("inf")
