"""Weighted fair queueing (PGPS) with the exact GPS virtual time, on one resource, FIFO elsewhere
(a baseline: docs/schedulers.md, 'wfq').

[DKS] A. Demers, S. Keshav, S. Shenker, *Analysis and simulation of a fair queueing
algorithm*, ACM SIGCOMM 1989 (the tag rule; the round number R(t));
[PG] A. K. Parekh, R. G. Gallager, *A generalized processor sharing approach to
flow control in integrated services networks: the single-node case*, IEEE/ACM
ToN 1(3), 1993, §III (PGPS and the virtual time of the fluid GPS system).
At the fair-queued resource ``j`` (option ``router.fq_resource``, default the
last one some flow uses, chosen as for ``fq-single``:
:func:`fq.contract.one_resource`), when packet k of flow i arrives there at
time a::

    S_i^k = max(F_i^{k-1}, V(a)),   F_i^k = S_i^k + L_i^k / r_i,   here  L_i^k / r_i = s_ij^k / w_i

and packets are served in increasing ``F`` (ties: the smaller flow id,
docs/schedulers.md, 'Event order and ties').  Every other resource is FIFO
(key = arrival time there, as in :mod:`fq.fifo`).

``V`` is the virtual time of the fluid GPS system fed with the same arrivals at
j [PG, §III]: ``dV/dt = 1 / sum_{i in B(t)} w_i``, where flow i is
GPS-backlogged (``i in B``) iff its last finish tag ``F_i > V``.  Between events
V grows linearly; when V reaches the smallest ``F_i`` in B, that flow leaves B
(the fluid system's own departure, not the packet queue's) and the slope
changes.  Departures at the same V leave together.  Computed lazily: ``V``, the
instant it was last brought up to date and the GPS-backlogged flows are kept;
``arrive`` at j first advances V to ``t`` through the GPS departures before
``t`` in order, each at ``t_d = t_last + (F_min - V) * W_B`` (``W_B`` = the sum
of the weights in B, summed again after each departure), then to
``V = min(V + (t - t_last) / W_B, F_min)``.  V is read only there, so no other
hook advances it (every advance is one more rounding; V at ``t`` does not
depend on the packet system's events).

(choice) The idle GPS system: when B is empty V holds (the next arrival is
tagged from the V the last departure left).  GPS and the packet system are
busy at the same instants (the same work, both work-conserving), so this is
the idle resource; resetting V to 0 instead would shift every later tag by one
constant and change no order.  A packet dropped while it waits (the contract's
default ``drop``) keeps its tag: the fluid system still serves its work (and may
be busy while the resource is idle).

(exactness) A flow stays in B after it has left the router, until V passes its
last ``F``: PGPS can serve a flow's packets long before GPS finishes them, and
GPS's slope must not change then.  The engine zeroes a flow's rows when a new
flow takes its table row, so B is not kept in the flow rows but in a table of
``(F_i, w_i, owner row + 1)`` entries in the global state (``CAP`` entries: at
most ``CAP`` flows GPS-backlogged at once; one more raises).  A flow's row at j
holds its entry's index + 1 (0: none); an entry belongs to its owner row only
while that row points back at it.  A new flow in a zeroed row gets a new entry
at its first arrival at j; the old flow's entry stays in B, disowned, until V
passes its F.  An entry leaving B moves the last entry into its place and, if
that one's row points back at it, the row follows.

(floating point) The twin :class:`Reference` performs the same operations in
the same order except the sum of the weights in B, which it adds in another
order: bit for bit equal whenever those sums are exact (weights that are binary
fractions, as in the cross-checks).

State: per (flow, resource) the index + 1 of the flow's entry in B (0: none);
global ``V``, ``t_last``, ``W_B``, the number of entries and the entries; per
packet its key (the finish tag at j, the arrival time elsewhere).
"""

from __future__ import annotations

from mrfq.fq._jit import jit_inline
from mrfq.fq.contract import Layout, Option, ReferenceTags, one_resource
from mrfq.fq.fifo import admit, finish, head, idle, ready, start  # noqa: F401  (FIFO's no-op hooks; the key in the packet's slot 0)

NAME = "wfq"
SUMMARY = "WFQ / PGPS with the exact GPS virtual time on one resource, FIFO elsewhere"
REFERENCE = "[DKS] Demers, Keshav, Shenker, SIGCOMM 1989; [PG] Parekh, Gallager, ToN 1993, sec. III"
OBJECTIVE = None
OPTIONS = (Option("fq_resource", None, "the WFQ resource (default: the last); FIFO elsewhere"),)

#: at most this many flows GPS-backlogged at once (the global table of B)
CAP = 1 << 15
# per (flow, resource)
FR_ENTRY = 0    # index + 1 of the flow's entry in B at j (0: not GPS-backlogged, or its row was zeroed)
NFR = 1
# global
G_V = 0         # V: the GPS virtual time at G_T
G_T = 1         # t_last: the instant V was last brought up to date
G_W = 2         # W_B: the sum of the weights of the flows in B
G_N = 3         # entries in B
G_TAB = 4       # entries: (F_i, w_i, owner row + 1, or 0 once the row went to another flow)
E_F = 0
E_W = 1
E_OWNER = 2
NE = 3
# per packet
P_KEY = 0       # finish tag at the WFQ resource, arrival time elsewhere


def layout(J):
    return Layout(flow_res=NFR, glob=G_TAB + NE * CAP, pkt=1, increments=True)


def encode(router, resources):
    """``opt = (WFQ resource index,)``."""
    return (float(one_resource(router, resources, "wfq")),)


@jit_inline
def _weights(g):
    """W_B: the weights of the entries in B, added in table order."""
    w = 0.0
    for e in range(int(g[G_N])):
        w += g[G_TAB + e * NE + E_W]
    return w


@jit_inline
def _remove(S, J, j, e):
    """Entry e leaves B: the last entry moves into its place (its owner's row follows it)."""
    g = S.glob
    owner = int(g[G_TAB + e * NE + E_OWNER])
    if owner > 0 and S.flow_res[((owner - 1) * J + j) * NFR + FR_ENTRY] == float(e + 1):
        S.flow_res[((owner - 1) * J + j) * NFR + FR_ENTRY] = 0.0
    last = int(g[G_N]) - 1
    if e != last:
        for m in range(NE):
            g[G_TAB + e * NE + m] = g[G_TAB + last * NE + m]
        owner = int(g[G_TAB + e * NE + E_OWNER])
        if owner > 0:
            r = ((owner - 1) * J + j) * NFR + FR_ENTRY
            if S.flow_res[r] == float(last + 1):
                S.flow_res[r] = float(e + 1)
            else:                         # its row went to another flow: disowned
                g[G_TAB + e * NE + E_OWNER] = 0.0
    g[G_N] = float(last)


@jit_inline
def advance(S, J, j, t):
    """Bring V up to ``t``: the GPS departures before ``t`` in order (those at one V together),
    then linear growth at ``1 / W_B``, never past the next departure; V holds while B is empty."""
    g = S.glob
    while g[G_N] > 0.0:
        n = int(g[G_N])
        fmin = g[G_TAB + E_F]
        for e in range(1, n):
            f = g[G_TAB + e * NE + E_F]
            if f < fmin:
                fmin = f
        v = g[G_V]
        if fmin > v:
            td = g[G_T] + (fmin - v) * g[G_W]
            if td > t:
                g[G_V] = min(v + (t - g[G_T]) / g[G_W], fmin)
                break
            g[G_V] = fmin
            g[G_T] = td
        e = 0
        while e < int(g[G_N]):
            if g[G_TAB + e * NE + E_F] <= g[G_V]:
                _remove(S, J, j, e)       # the last entry, moved here, is looked at next
            else:
                e += 1
        g[G_W] = _weights(g)
    g[G_T] = t


@jit_inline
def arrive(S, pkt, opt, J, slot, pb, cst, cb, j, weight, q_ij, t):
    """[PG] §III: ``S = max(F_prev, V(a))``, ``F = S + s_ij / w_i`` at the WFQ resource."""
    if j != opt[0]:
        pkt[pb + P_KEY] = t
        return
    advance(S, J, j, t)
    g = S.glob
    r = (slot * J + j) * NFR + FR_ENTRY
    e = int(S.flow_res[r]) - 1
    start_tag = g[G_V]
    if e >= 0:
        f = g[G_TAB + e * NE + E_F]
        if f > start_tag:
            start_tag = f
    fin = start_tag + cst[cb + J + j]
    if e >= 0:
        g[G_TAB + e * NE + E_F] = fin
    else:
        n = int(g[G_N])
        if n >= CAP:
            raise ValueError("router.scheduler = 'wfq': more than 32768 flows backlogged at once in the fluid GPS "
                             "system (fq.wfq.CAP); lower the load or the number of flows, or use 'scfq', whose "
                             "virtual time needs no fluid system")
        g[G_TAB + n * NE + E_F] = fin
        g[G_TAB + n * NE + E_W] = weight
        g[G_TAB + n * NE + E_OWNER] = float(slot + 1)
        g[G_N] = float(n + 1)
        S.flow_res[r] = float(n + 1)
        g[G_W] = _weights(g)
    pkt[pb + P_KEY] = fin


class Reference(ReferenceTags):
    """[PG] as written: the fluid GPS system's backlogged flows as a dict of last finish tags; V
    advanced through their departures at each arrival at the WFQ resource."""

    def __init__(self, J, opt, router):
        super().__init__(J, opt, router)
        self.fq = int(opt[0])
        self.V = 0.0
        self.t = 0.0
        self.B = {}          # flow uid -> (F_i, w_i) while GPS-backlogged (F_i > V)

    def gps(self, t):
        """V(t) by fluid simulation from the last instant: each departure at V = min F_i."""
        while self.B:
            W = sum(w for _, w in self.B.values())
            fmin = min(f for f, _ in self.B.values())
            if fmin > self.V:
                td = self.t + (fmin - self.V) * W
                if td > t:
                    self.V = min(self.V + (t - self.t) / W, fmin)
                    break
                self.V, self.t = fmin, td
            self.B = {u: fw for u, fw in self.B.items() if fw[0] > self.V}
        self.t = t
        return self.V

    def arrive(self, p, j, t):
        if j != self.fq:
            p.tag["key"] = t
            return
        v = self.gps(t)
        w = p.flow.profile.weight
        f_prev = self.B.get(p.flow.uid, (v, w))[0]
        p.tag["key"] = max(f_prev, v) + p.s[j] / w
        self.B[p.flow.uid] = (p.tag["key"], w)
