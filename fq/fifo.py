"""FIFO at every resource (a baseline and negative control, SPEC §4.5).

The key of a packet at resource j is its arrival time there; ties go to the
smaller flow id, then the smaller packet sequence number (SPEC §2).
``fq-single`` uses this rule at every resource but the fair-queued one.
Layout of ``pkt``/``vt``: see :mod:`fq.drfq`.
"""

from __future__ import annotations

from fq._jit import jit


@jit(inline="always")
def admit(slot, pb, J, weight, dominant, vt, flow_F, flow_Fj, pkt):
    return 0.0


@jit(inline="always")
def arrive(slot, pb, j, J, t, weight, q_ij, vt, flow_Fj, pkt):
    """Key = arrival time at resource j."""
    pkt[pb + 2 * J] = t
    pkt[pb + 2 * J + 1] = t
    return t


@jit(inline="always")
def start(slot, pb, j, J, vt, pkt):
    vt[j] = pkt[pb + 2 * J]
