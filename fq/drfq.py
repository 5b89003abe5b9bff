"""Memoryless DRFQ: one start tag per packet, used at every resource.

[BR] Bonald & Roberts, *Multi-resource fairness*, eq. (2); [DRFQ] Ghodsi et al.,
SIGCOMM 2012, §4 (memoryless variant).  SPEC §4.1.

On admission of packet k of flow i (time ``A``)::

    start_tag  S_i^k = max(V(A), F_i^{k-1})          F_i^0 = 0
    finish_tag F_i^k = S_i^k + max_j s_ij^k / w_i

and every resource serves its waiting packets in increasing ``S`` (ties: flow
id, then packet sequence number).

Virtual time ``V`` (SPEC §6.1, a named option ``virtual_time``):

* ``"started"`` ([BR], default): the largest start tag of any packet that has
  begun service at any resource; monotone.
* ``"in-service"`` ([DRFQ]): the largest start tag among the packets *currently*
  in service.  When no packet is in service anywhere, V is the largest finish
  tag of the packets served so far (SFQ's end-of-busy-period rule) — a
  (choice), so that a flow arriving at an idle router neither gains nor loses.

Kernel layout (shared by every scheduler in ``fq``): ``pkt`` is one flat
float64 array; the record of the packet in ring position ``pos`` of flow-table
row ``slot`` starts at ``pb = (slot * NR + pos) * (2J + 2)``: ``pkt[pb + j]``
its processing time at resource j (time units), ``pkt[pb + J + j]`` its
per-resource start tags, ``pkt[pb + 2J]`` its scheduling key at its current
resource, ``pkt[pb + 2J + 1]`` its finish tag.
``vt[0..J-1]`` per-resource virtual times, ``vt[J]`` the router virtual time,
``vt[J+1]`` the largest finish tag of a packet that has begun service.
Every ``admit`` hook also receives ``dominant`` = max_j s_ij^k of the packet.
"""

from __future__ import annotations

import numpy as np

from fq._jit import jit


@jit(inline="always")
def admit(slot, pb, J, weight, dominant, vt, flow_F, flow_Fj, pkt):
    """[BR] eq. (2): tag the packet at router admission; returns its key.

    ``dominant`` = max_j s_ij^k of this packet (time units), given by the engine."""
    start_tag = vt[J]
    if flow_F[slot] > start_tag:
        start_tag = flow_F[slot]
    finish_tag = start_tag + dominant / weight
    flow_F[slot] = finish_tag
    pkt[pb + 2 * J] = start_tag
    pkt[pb + 2 * J + 1] = finish_tag
    return start_tag


@jit(inline="always")
def arrive(slot, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt):
    """The key is the admission start tag at every resource."""
    return pkt[pb + 2 * J]


@jit(inline="always")
def start(slot, pb, j, J, vt, pkt):
    """Service start: ``V = max(V, S)`` (the "started" rule; harmless for "in-service")."""
    s = pkt[pb + 2 * J]
    if s > vt[J]:
        vt[J] = s


@jit(inline="always")
def note_finish(pb, J, vt, pkt):
    """Service start under the "in-service" rule: ``vt[J + 1]`` = the largest finish tag of
    a packet that has begun service (V when nothing is in service)."""
    f = pkt[pb + 2 * J + 1]
    if f > vt[J + 1]:
        vt[J + 1] = f


@jit(inline="always")
def in_service_virtual_time(J, busy_slot, busy_key, vt):
    """[DRFQ] rule: ``V`` = largest start tag among packets in service, else the
    largest finish tag served so far.  Called once per event instant, after
    the completions at that instant and before any arrival is tagged."""
    v = -1.0
    for j in range(J):
        if busy_slot[j] >= 0 and busy_key[j] > v:
            v = busy_key[j]
    if v < 0.0:
        v = vt[J + 1]
    vt[J] = v


def twin_admit(state: dict, flow: int, s: np.ndarray | list, weight: float) -> tuple[float, float]:
    """Plain-Python twin of :func:`admit` for tests: ``state = {"V": v, "F": {flow: F}}``."""
    start_tag = max(state["V"], state["F"].get(flow, 0.0))
    finish_tag = start_tag + max(s) / weight
    state["F"][flow] = finish_tag
    return start_tag, finish_tag
