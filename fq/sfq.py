"""Per-resource start-time fair queueing: BMF-WFQ and PF-SFQ.

[SFQ] Goyal, Vin, Cheng, *Start-time fair queueing*, IEEE/ACM ToN 5(5), 1997;
[BR] Bonald & Roberts eqs. (5) and (7).  SPEC §3, §4.3, §4.4.

Independently at each resource j, when packet k of flow i joins j (time A)::

    S_ij^k = max(V_j(A), F_ij^{k-1}),   F_ij^k = S_ij^k + s_ij^k / r_ij

* BMF-WFQ ([BR] eq. 7): ``r_ij = w_i`` — fair sharing of each resource's time,
  which realises bottleneck max fairness.
* PF-SFQ ([BR] eq. 5): ``r_ij = w_i Q_ij`` where ``Q_ij`` counts the packets of
  flow i waiting or in service at j *including the arriving one* (SPEC §6.2);
  window conservation (eq. 4) turns queue lengths into PF's KKT prices.

Option ``increment = "packet"`` replaces ``s_ij`` by 1 (packet-count
increments): the negative control of SPEC §4.5, which must *not* realise
PF/BMF (it converges to DRF-like rates).

``V_j`` is the start tag of the last packet to begin service at j.  With the
option ``idle_reset`` (classic SFQ) ``V_j`` jumps to the largest finish tag
served at j when j goes idle; off by default (SPEC §4.3 as written).
Layout of ``pkt``/``vt``: see :mod:`fq.drfq`.
"""

from __future__ import annotations

from fq._jit import jit


@jit(inline="always")
def admit(slot, pb, J, weight, dominant, vt, flow_F, flow_Fj, pkt):
    """Nothing is tagged at the router: tags are per resource."""
    return 0.0


@jit(inline="always")
def arrive_bmf(slot, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt, unit):
    """[BR] eq. (7): ``S = max(V_j, F_ij)``, ``F_ij = S + s_ij / w_i`` (``1 / w_i`` when ``unit``)."""
    start_tag = vt[j]
    if flow_Fj[slot, j] > start_tag:
        start_tag = flow_Fj[slot, j]
    finish_tag = start_tag + (1.0 if unit else pkt[pb + j]) / weight
    flow_Fj[slot, j] = finish_tag
    pkt[pb + 2 * J] = start_tag
    pkt[pb + 2 * J + 1] = finish_tag
    return start_tag


@jit(inline="always")
def arrive_pf(slot, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt, unit):
    """[BR] eq. (5): ``S = max(V_j, F_ij)``, ``F_ij = S + s_ij / (w_i Q_ij)`` (``1 / (w_i Q_ij)`` when ``unit``)."""
    start_tag = vt[j]
    if flow_Fj[slot, j] > start_tag:
        start_tag = flow_Fj[slot, j]
    finish_tag = start_tag + (1.0 if unit else pkt[pb + j]) / (weight * q_ij)
    flow_Fj[slot, j] = finish_tag
    pkt[pb + 2 * J] = start_tag
    pkt[pb + 2 * J + 1] = finish_tag
    return start_tag


@jit(inline="always")
def start(slot, pb, j, J, vt, pkt):
    """``V_j`` = start tag of the packet that begins service at j."""
    vt[j] = pkt[pb + 2 * J]


def twin_arrive(state: dict, flow: int, j: int, s_j: float, rate: float) -> tuple[float, float]:
    """Plain-Python twin: ``state = {"V": [V_j], "F": {(flow, j): F}}``; ``rate = w`` or ``w*Q``."""
    st = max(state["V"][j], state["F"].get((flow, j), 0.0))
    fin = st + s_j / rate
    state["F"][(flow, j)] = fin
    return st, fin
