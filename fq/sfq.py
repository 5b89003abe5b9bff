"""Per-resource start-time fair queueing: the tag rule shared by BMF-WFQ, PF-SFQ and fq-single.

[SFQ] Goyal, Vin, Cheng, *Start-time fair queueing*, IEEE/ACM ToN 5(5), 1997;
[BR] Bonald & Roberts eqs. (5) and (7); docs/schedulers.md, 'pf-sfq' and
'bmf-wfq'.

Independently at each resource j, when packet k of flow i joins j (time A)::

    S_ij^k = max(V_j(A), F_ij^{k-1}),   F_ij^k = S_ij^k + s_ij^k / r_ij

with ``r_ij = w_i`` (BMF-WFQ, :mod:`fq.bmf_wfq`) or ``w_i Q_ij`` (PF-SFQ,
:mod:`fq.pf_sfq`).  Option ``router.increment = "packet"`` replaces ``s_ij`` by 1
(the negative control: docs/schedulers.md, 'fifo').  ``V_j`` is the start tag of
the last packet to begin service at j; with ``router.idle_reset`` (classic SFQ)
``V_j`` jumps to the largest finish tag served at j when j goes idle (off by
default: docs/schedulers.md, 'Conventions you can switch').

This module is a library for those schedulers, not a scheduler itself (it is
not in the registry).  State it uses, in the schedulers' layouts: per (flow,
resource) ``F_ij``; per resource ``V_j`` and the largest finish tag begun; per
packet its start and finish tags.
"""

from __future__ import annotations

from mrfq.flows.errors import ScenarioError
from mrfq.fq._jit import jit_inline
from mrfq.fq.contract import Layout, Option, ReferenceTags

INCREMENTS = ("cost", "packet")
R_V, R_MAXFIN = 0, 1
P_START, P_FINISH = 0, 1

OPTIONS = (
    Option("idle_reset", False, "V_j jumps to the largest finish tag served at j when j goes idle"),
    Option("increment", "cost", "'cost': s_ij ([BR]); 'packet': 1 per packet (a negative control)"),
)


def layout_fixed_rate(J):
    """Rate ``r_ij = w_i`` (BMF-WFQ, fq-single): per packet only the start tag; the finish tag
    ``S + s_ij / w_i`` is recomputed when needed (the same float operations, the same bits)."""
    return Layout(flow=0, flow_res=1, res=2, glob=0, pkt=1, increments=True)


def layout_queue_rate(J):
    """Rate ``r_ij = w_i Q_ij`` (PF-SFQ): ``Q_ij`` at arrival is gone by service time, so the
    finish tag is kept per packet (read by ``idle_reset`` only)."""
    return Layout(flow=0, flow_res=1, res=2, glob=0, pkt=2)


def encode_sfq(router) -> tuple[float, float]:
    """(idle_reset, packet increment) as floats."""
    if not isinstance(router.idle_reset, bool):
        raise ScenarioError(f"router.idle_reset = {router.idle_reset!r}: must be true or false")
    if router.increment not in INCREMENTS:
        raise ScenarioError(f"router.increment = {router.increment!r}: choose 'cost' (s_ij, the schedulers of "
                            "[BR]) or 'packet' (1 per packet: a negative control that must not realise PF or "
                            "BMF)")
    return (1.0 if router.idle_reset else 0.0, 1.0 if router.increment == "packet" else 0.0)


@jit_inline
def tag(S, pkt, J, slot, pb, cst, cb, j, rate, per_packet, keep_finish, stored):
    """``S = max(V_j, F_ij)``, ``F_ij = S + s_ij / rate`` (``1 / rate`` per packet); the packet's
    finish tag is stored only with ``keep_finish`` (layout_queue_rate).  ``stored``: the rate is
    ``w_i`` and ``s_ij / w_i`` is read from ``cst[cb + J + j]`` (``Layout.increments``: the
    engine's quotient, the same bits, without a division on every tag)."""
    start_tag = S.res[2 * j + R_V]
    if S.flow_res[slot * J + j] > start_tag:
        start_tag = S.flow_res[slot * J + j]
    if per_packet:
        finish_tag = start_tag + 1.0 / rate
    elif stored:
        finish_tag = start_tag + cst[cb + J + j]
    else:
        finish_tag = start_tag + cst[cb + j] / rate
    S.flow_res[slot * J + j] = finish_tag
    pkt[pb + P_START] = start_tag
    if keep_finish:
        pkt[pb + P_FINISH] = finish_tag


@jit_inline
def key(pkt, J, pb):
    return pkt[pb + P_START]


@jit_inline
def begin(S, pkt, J, pb, cst, cb, j, idle_reset, weight, per_packet):
    """``V_j`` = the start tag of the packet that begins service at j.  With ``idle_reset`` the
    largest finish tag begun is noted: ``S + s_ij / w_i`` recomputed when ``weight > 0`` (rate
    ``w_i``, as in :func:`tag`), else the stored one (layout_queue_rate)."""
    st = pkt[pb + P_START]
    S.res[2 * j + R_V] = st
    if idle_reset:
        if weight > 0.0:
            f = st + (1.0 if per_packet else cst[cb + j]) / weight
        else:
            f = pkt[pb + P_FINISH]
        if f > S.res[2 * j + R_MAXFIN]:
            S.res[2 * j + R_MAXFIN] = f


@jit_inline
def go_idle(S, j, idle_reset):
    if idle_reset:
        S.res[2 * j + R_V] = S.res[2 * j + R_MAXFIN]


class SFQReference(ReferenceTags):
    """Plain-Python per-resource tags; ``rules[j]`` is "bmf", "pf" or "fifo" (key = arrival time at j)."""

    def __init__(self, J, opt, router, rules, idle_reset, per_packet):
        super().__init__(J, opt, router)
        self.rules = rules
        self.idle_reset = idle_reset
        self.per_packet = per_packet
        self.Vj = [0.0] * J
        self.max_finish_started = [0.0] * J

    def arrive(self, p, j, t):
        r = self.rules[j]
        if r == "fifo":
            p.tag["key"] = p.tag["finish"] = t
            return
        f = p.flow
        Fj = f.tag.setdefault("Fj", [0.0] * self.J)
        rate = f.profile.weight * f.Q[j] if r == "pf" else f.profile.weight
        p.tag["key"] = max(self.Vj[j], Fj[j])
        p.tag["finish"] = p.tag["key"] + (1.0 if self.per_packet else p.s[j]) / rate
        Fj[j] = p.tag["finish"]

    def start(self, p, j, next_p, t):
        if self.rules[j] != "fifo":
            self.Vj[j] = p.tag["key"]
            self.max_finish_started[j] = max(self.max_finish_started[j], p.tag["finish"])

    def idle(self, j, t):
        if self.idle_reset and self.rules[j] != "fifo":
            self.Vj[j] = self.max_finish_started[j]


def twin_arrive(state: dict, flow: int, j: int, s_j: float, rate: float) -> tuple[float, float]:
    """Plain-Python tag rule for hand-computed examples: ``state = {"V": [V_j], "F": {(flow, j): F}}``."""
    st = max(state["V"][j], state["F"].get((flow, j), 0.0))
    fin = st + s_j / rate
    state["F"][(flow, j)] = fin
    return st, fin
