"""Dovetailing DRFQ: per-resource tags, one key per packet.

[DRFQ] Ghodsi et al., SIGCOMM 2012, §4 (dovetailing DRFQ).  SPEC §4.2 (R).

On admission of packet k of flow i, for every resource j the packet visits
(``s_ij^k > 0``)::

    S_ij^k = max(V_j(A), F_ij^{k-1}),   F_ij^k = S_ij^k + s_ij^k / w_i

and the packet's scheduling key at every resource is ``max_j S_ij^k``.
``V_j`` is the largest per-resource start tag at j of the packets that have
begun service at j.  A flow that under-uses a resource in one packet gets
credit for it in later packets.

(choice) A resource the packet skips (``s_ij^k = 0``) takes no part: it adds
no tag, leaves ``F_ij`` unchanged and does not enter the max, so that a flow is
never held back by the virtual time of a resource it does not use.
Layout of ``pkt``/``vt``: see :mod:`fq.drfq`.
"""

from __future__ import annotations

from fq._jit import jit


@jit(inline="always")
def admit(slot, pb, J, weight, dominant, vt, flow_F, flow_Fj, pkt):
    """Per-resource start tags; the key is their max over visited resources."""
    key = 0.0
    fin = 0.0
    for j in range(J):
        s = pkt[pb + j]
        if s > 0.0:
            start_tag = vt[j]
            if flow_Fj[slot, j] > start_tag:
                start_tag = flow_Fj[slot, j]
            finish_tag = start_tag + s / weight
            flow_Fj[slot, j] = finish_tag
            pkt[pb + J + j] = start_tag
            if start_tag > key:
                key = start_tag
            if finish_tag > fin:
                fin = finish_tag
    pkt[pb + 2 * J] = key
    pkt[pb + 2 * J + 1] = fin
    return key


@jit(inline="always")
def arrive(slot, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt):
    """The key is fixed at admission."""
    return pkt[pb + 2 * J]


@jit(inline="always")
def start(slot, pb, j, J, vt, pkt):
    """``V_j = max(V_j, S_ij)`` when the packet begins service at j."""
    s = pkt[pb + J + j]
    if s > vt[j]:
        vt[j] = s


def twin_admit(state: dict, flow: int, s, weight: float) -> float:
    """Plain-Python twin: ``state = {"V": [V_j], "F": {(flow, j): F_ij}}``; returns the key."""
    key = 0.0
    for j, sj in enumerate(s):
        if sj > 0:
            st = max(state["V"][j], state["F"].get((flow, j), 0.0))
            state["F"][(flow, j)] = st + sj / weight
            key = max(key, st)
    return key
