"""PF-SFQ: start-time fair queueing weighted by queue length at every resource.

[BR] Bonald & Roberts eq. (5); docs/schedulers.md, 'pf-sfq'.  At each resource j,
independently::

    S_ij^k = max(V_j, F_ij^{k-1}),   F_ij^k = S_ij^k + s_ij^k / (w_i Q_ij)

where Q_ij counts the packets of flow i at j, waiting or in service, at tag
time, the arriving one included (a choice); window conservation (eq. 4) turns
queue lengths into the KKT prices of proportional fairness.
The tag rule, ``V_j`` and the options ``router.idle_reset`` /
``router.increment`` are those of :mod:`fq.sfq`.
"""

from __future__ import annotations

from mrfq.fq import sfq
from mrfq.fq._jit import jit_inline

NAME = "pf-sfq"
SUMMARY = "per-resource SFQ weighted by queue length"
REFERENCE = "[BR] eq. 5"
OBJECTIVE = "pf"
OPTIONS = sfq.OPTIONS
layout = sfq.layout_queue_rate


def encode(router, resources):
    return sfq.encode_sfq(router)


@jit_inline
def admit(S, pkt, opt, J, slot, pb, cst, cb, weight, dominant_service, t):
    return


@jit_inline
def arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t):
    """[BR] eq. (5): ``F_ij = S + s_ij / (w_i Q_ij)``."""
    sfq.tag(S, pkt, J, slot, pb, cst, cb, j, weight * q_ij, opt[1] != 0.0, True, False)


@jit_inline
def head(S, pkt, opt, J, slot, pb, cst, cb, j, weight):
    return sfq.key(pkt, J, pb)


@jit_inline
def start(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t):
    sfq.begin(S, pkt, J, pb, cst, cb, j, opt[0] != 0.0, -1.0, False)


@jit_inline
def finish(S, pkt, opt, J, slot, pb, cst, cb, j, t):
    return


@jit_inline
def idle(S, pkt, opt, J, j, t):
    sfq.go_idle(S, j, opt[0] != 0.0)


@jit_inline
def ready(S, pkt, opt, J, j, t):
    return True


class Reference(sfq.SFQReference):
    def __init__(self, J, opt, router):
        super().__init__(J, opt, router, ["pf"] * J, opt[0] != 0.0, opt[1] != 0.0)
