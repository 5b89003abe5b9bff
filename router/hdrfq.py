"""Hierarchical DRFQ, an experiment: packets, a weighted tree of flows, per-resource
hierarchical start-time fair queueing charged with dominant costs.

The packet model of docs/schedulers.md: flows ``i`` with a constant processing time ``s_ij`` per packet at
each resource ``j`` (capacity 1; [BR]'s ``s = a``), resources visited in series in index order
(a resource with ``s_ij = 0`` is skipped), a window of ``N`` packets per flow inside the router,
static backlogged flows, non-preemptive service.

The scheduler (named choices, no paper defines it): at every resource ``j`` independently, the
tree restricted to the flows that use ``j`` runs hierarchical SFQ ([SFQ] Goyal, Vin, Cheng 1997;
its hierarchical form, H-SFQ, Goyal, Guo, Vin, OSDI 1996): every internal node runs start-time
fair queueing over its children; a child that becomes backlogged at ``j`` gets
``S_c = max(v_p, F_c)`` (``v_p`` = start tag of the child its parent served last); the resource
serves, from the root down, the child of least start tag (ties: lowest node index) until a leaf,
and its head packet; every node ``c`` on that path gets ``F_c = S_c + cost / w_c`` and, if still
backlogged, ``S_c = F_c``.  ``cost`` is the packet's dominant processing time
``max_k s_ik`` (``increment="dominant"``, DRFQ's increment, [DRFQ] §4), its time at ``j``
(``increment="resource"``, per-resource fairness as in BMF-WFQ), or, for each node ``c`` on the
path, its time on ``c``'s own dominant resource so far (``increment="node-dominant"``: the
resource where the processing time served to ``c``'s subtree, over all resources, is largest;
for a leaf that is the flow's dominant resource).  With ``"dominant"`` an internal node is
charged the *sum* of its children's dominant costs, while static H-DRF measures it by the
*max over resources of the sum* of their usage ([H-DRF] §3.1): the two differ when siblings
dovetail; ``"node-dominant"`` charges the increase of the node's own dominant share.  Tags are updated when a packet
starts service.  Simultaneous events (docs/schedulers.md, 'Event order and ties'): completions in
resource order, then each idle resource with a backlog starts a packet, in resource order.

Plain Python (an experiment, not the numba engine); :func:`simulate_hdrfq` returns the long-run
packet rate of every flow, to set against the fluid static H-DRF rates of the same tree
(``analysis.cluster.hdrf.static_hdrf`` with capacity 1 per resource and demand ``s``).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from mrfq.flows.errors import MrfqError, quote
from mrfq.fq.cluster.state import Tree

INCREMENTS = ("dominant", "resource", "node-dominant")


def simulate_hdrfq(cost, tree: Tree, *, window: int = 30, duration: float = 2000.0, warmup: float = 200.0,
                   increment: str = "dominant") -> np.ndarray:
    """Packet rate of every flow (departures per time unit over ``[warmup, duration]``)."""
    s = np.array(cost, dtype=np.float64, ndmin=2)
    F_, J = s.shape
    if np.any(s < 0) or np.any(s.max(axis=1) <= 0):
        raise MrfqError("cost: every flow needs times >= 0 with some positive entry")
    if tree.leaf.shape[0] != F_:
        raise MrfqError(f"tree has {tree.leaf.shape[0]} leaves: must have one per flow ({F_})")
    if increment not in INCREMENTS:
        raise MrfqError(f"increment = {quote(increment)}: choose one of {', '.join(INCREMENTS)}")
    if window < 1 or not duration > warmup >= 0:
        raise MrfqError("window must be >= 1 and 0 <= warmup < duration")
    N = tree.parent.shape[0]
    parent = tree.parent
    w = tree.weight
    children = [np.flatnonzero(parent == n) for n in range(N)]
    dom = s.max(axis=1)
    route = [[j for j in range(J) if s[f, j] > 0] for f in range(F_)]
    leaf = tree.leaf

    # per resource: node tags, virtual time of each node's SFQ, backlog count per subtree, leaf queues
    S = np.zeros((J, N))
    Fin = np.zeros((J, N))
    v = np.zeros((J, N))
    back = np.zeros((J, N), dtype=np.int64)
    queue = [[deque() for _ in range(F_)] for _ in range(J)]
    busy = [None] * J  # (finish time, flow)
    done = np.zeros(F_)
    used = np.zeros((N, J))  # node-dominant: processing time served to each subtree at each resource

    def enqueue(j: int, f: int) -> None:
        queue[j][f].append(f)
        n = int(leaf[f])
        while n != 0:  # mark backlogged upwards; tag nodes that become backlogged
            back[j, n] += 1
            if back[j, n] == 1:
                S[j, n] = max(v[j, parent[n]], Fin[j, n])
            n = int(parent[n])
        back[j, 0] += 1

    def dispatch(j: int, t: float) -> None:
        path = []
        n = 0
        while children[n].size:
            ch = [int(c) for c in children[n] if back[j, c] > 0]
            c = min(ch, key=lambda c: (S[j, c], c))
            path.append(c)
            n = c
        f = int(np.flatnonzero(leaf == n)[0])
        queue[j][f].popleft()
        l = dom[f] if increment == "dominant" else s[f, j]
        for c in path:
            if increment == "node-dominant":  # the packet's time on c's dominant resource so far
                used[c, j] += s[f, j]
                l = s[f, int(np.argmax(used[c]))]
            back[j, c] -= 1
            v[j, parent[c]] = S[j, c]
            Fin[j, c] = S[j, c] + l / w[c]
            if back[j, c] > 0:
                S[j, c] = Fin[j, c]
        back[j, 0] -= 1
        busy[j] = (t + s[f, j], f)

    for f in range(F_):
        for _ in range(window):
            enqueue(route[f][0], f)
    t = 0.0
    for j in range(J):
        if back[j, 0] > 0:
            dispatch(j, t)
    while True:
        nxt = min((b[0] for b in busy if b is not None), default=None)
        if nxt is None or nxt >= duration:
            break
        t = nxt
        for j in range(J):  # completions at t, in resource order
            b = busy[j]
            if b is not None and b[0] == t:
                busy[j] = None
                f = b[1]
                k = route[f].index(j)
                if k + 1 < len(route[f]):
                    enqueue(route[f][k + 1], f)
                else:
                    if t >= warmup:
                        done[f] += 1
                    enqueue(route[f][0], f)  # the window admits the next packet
        for j in range(J):
            if busy[j] is None and back[j, 0] > 0:
                dispatch(j, t)
    return done / (duration - warmup)
