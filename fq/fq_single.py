"""Fair queueing on one resource, FIFO elsewhere (a baseline: docs/schedulers.md, 'fq-single').

At the fair-queued resource (option ``router.fq_resource``, default the last
one some flow uses: fq.registry.resolve) the tag rule is BMF-WFQ's (:mod:`fq.sfq`, [BR] eq. 7); at every other
resource the key is the arrival time there, as in :mod:`fq.fifo`.  Options
``router.idle_reset`` and ``router.increment`` apply at the fair-queued resource.
"""

from __future__ import annotations

from mrfq.fq import sfq
from mrfq.fq._jit import jit_inline
from mrfq.fq.contract import Option, one_resource

NAME = "fq-single"
SUMMARY = "SFQ on one resource, FIFO elsewhere"
REFERENCE = "baseline"
OBJECTIVE = None
OPTIONS = (Option("fq_resource", None, "the fair-queued resource (default: the last)"),) + sfq.OPTIONS
layout = sfq.layout_fixed_rate


def encode(router, resources):
    return (float(one_resource(router, resources, "fq-single")),) + sfq.encode_sfq(router)


@jit_inline
def admit(S, pkt, opt, J, slot, pb, cst, cb, weight, dominant_service, t):
    return


@jit_inline
def arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t):
    if j == opt[0]:
        sfq.tag(S, pkt, J, slot, pb, cst, cb, j, weight, opt[2] != 0.0, False, True)
    else:
        pkt[pb + sfq.P_START] = t


@jit_inline
def head(S, pkt, opt, J, slot, pb, cst, cb, j, weight):
    return sfq.key(pkt, J, pb)


@jit_inline
def start(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t):
    if j == opt[0]:
        sfq.begin(S, pkt, J, pb, cst, cb, j, opt[1] != 0.0, weight, opt[2] != 0.0)


@jit_inline
def finish(S, pkt, opt, J, slot, pb, cst, cb, j, t):
    return


@jit_inline
def idle(S, pkt, opt, J, j, t):
    if j == opt[0]:
        sfq.go_idle(S, j, opt[1] != 0.0)


@jit_inline
def ready(S, pkt, opt, J, j, t):
    return True


class Reference(sfq.SFQReference):
    def __init__(self, J, opt, router):
        fq = int(opt[0])
        super().__init__(J, opt, router, ["bmf" if j == fq else "fifo" for j in range(J)],
                         opt[1] != 0.0, opt[2] != 0.0)
