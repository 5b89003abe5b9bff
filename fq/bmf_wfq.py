"""BMF-WFQ: start-time fair queueing of resource time at every resource.

[BR] Bonald & Roberts eq. (7); docs/schedulers.md, 'bmf-wfq'.  At each resource j,
independently::

    S_ij^k = max(V_j, F_ij^{k-1}),   F_ij^k = S_ij^k + s_ij^k / w_i

fair sharing of each resource's time, which realises bottleneck max fairness.
The tag rule, ``V_j`` and the options ``router.idle_reset`` /
``router.increment`` are those of :mod:`fq.sfq`.
"""

from __future__ import annotations

from mrfq.fq import sfq
from mrfq.fq._jit import jit_inline

NAME = "bmf-wfq"
SUMMARY = "per-resource SFQ of resource time"
REFERENCE = "[BR] eq. 7"
OBJECTIVE = "bmf"
OPTIONS = sfq.OPTIONS
layout = sfq.layout_fixed_rate


def encode(router, resources):
    return sfq.encode_sfq(router)


@jit_inline
def admit(S, pkt, opt, J, slot, pb, cst, cb, weight, dominant_service, t):
    return


@jit_inline
def arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t):
    """[BR] eq. (7): ``F_ij = S + s_ij / w_i``."""
    sfq.tag(S, pkt, J, slot, pb, cst, cb, j, weight, opt[1] != 0.0, False, True)


@jit_inline
def head(S, pkt, opt, J, slot, pb, cst, cb, j, weight):
    return sfq.key(pkt, J, pb)


@jit_inline
def start(S, pkt, opt, J, slot, pb, cst, cb, j, weight, next_pb, next_cb, t):
    sfq.begin(S, pkt, J, pb, cst, cb, j, opt[0] != 0.0, weight, opt[1] != 0.0)


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
        super().__init__(J, opt, router, ["bmf"] * J, opt[0] != 0.0, opt[1] != 0.0)
