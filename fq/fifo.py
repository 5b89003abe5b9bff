"""FIFO at every resource (a baseline and negative control: docs/schedulers.md, 'fifo').

The key of a packet at resource j is its arrival time there; ties go to the
smaller flow id (docs/schedulers.md, 'Event order and ties').  State: one slot
per packet (the key).
"""

from __future__ import annotations

from mrfq.fq._jit import jit_inline
from mrfq.fq.contract import Layout, ReferenceTags

NAME = "fifo"
SUMMARY = "FIFO at every resource"
REFERENCE = "baseline"
OBJECTIVE = None
OPTIONS = ()


def layout(J):
    return Layout(pkt=1)


def encode(router, resources):
    return ()


@jit_inline
def admit(S, pkt, opt, J, slot, pb, cst, cb, weight, dominant_service, t):
    return


@jit_inline
def arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t):
    """Key = arrival time at resource j."""
    pkt[pb] = t


@jit_inline
def head(S, pkt, opt, J, slot, pb, cst, cb, j, weight):
    return pkt[pb]


@jit_inline
def start(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t):
    return


@jit_inline
def finish(S, pkt, opt, J, slot, pb, cst, cb, j, t):
    return


@jit_inline
def idle(S, pkt, opt, J, j, t):
    return


@jit_inline
def ready(S, pkt, opt, J, j, t):
    return True


class Reference(ReferenceTags):
    def arrive(self, p, j, t):
        p.tag["key"] = t
