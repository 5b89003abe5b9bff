"""Buffer management in plain Python, for the SimPy reference (router/reference.py): the test oracle
of router/buffers.py, written from the definitions of docs/buffers.md.

Limits, the shared pool and RED decide at a packet's arrival; CoDel decides when a resource takes
the head of an open-loop flow's queue at its first resource.  RED's draws come from the same
counter-based hash (keyed by the flow and its arrival's index) as the engine's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mrfq.flows.traffic import aqm_key
from mrfq.router.state import REASONS

M32 = 0xFFFFFFFF
DELIVER, DROP, ENTER = 0, 1, 2   # CoDel's verdicts (as router.buffers.CD_*)


def aqm_uniform(key: int, uid: int, n: int) -> float:
    """The uniform draw of arrival n of flow uid (router.buffers.aqm_uniform)."""
    from mrfq.router.reference import hash32  # (the reference imports this module)
    return hash32(hash32(hash32((key + 0x2545F491) ^ (uid & M32)) + (n & M32)) + (n >> 32)) / 4294967296.0


@dataclass
class FlowBuffer:
    """One open-loop flow's limits and AQM state."""

    limit: float                    # packets in the router (inf: none)
    limit_bytes: float              # bytes (inf: none)
    j0: int                         # its first resource: where its queue is
    packet_time: float              # RED's packet time for the decay of an empty spell
    bytes: float = 0.0
    arrivals: int = 0
    red_avg: float = 0.0
    red_count: int = -1
    red_idle: float | None = None   # when its last packet left (None: never, or not empty)
    first_above: float = 0.0        # CoDel: first_above_time (0: none)
    drop_next: float = 0.0
    count: int = 0
    lastcount: int = 0
    dropping: bool = False
    weight: float = 1.0             # FairDrop: its weight in the shadow system
    vq: list = field(default_factory=list)         # FairDrop: its virtual queue at each resource
    threshold: list = field(default_factory=list)  # FairDrop: its threshold at each resource
    drops: dict = field(default_factory=lambda: dict.fromkeys(REASONS, 0))
    ecn: bool = False               # a TCP flow's ECN-capable packets: the AQM marks them instead of dropping
    marks: int = 0                  # from warm-up on


class BufferManager:
    """The pool and the AQM of one run; ``flows`` maps a static flow id to its FlowBuffer."""

    def __init__(self, sc, ingress: bool):
        from mrfq.router.run import first_resource
        r = sc.router
        self.aqm = r.aqm_params()
        self.policy = self.aqm.get("policy")
        self.key = aqm_key(sc.run.seed)
        self.pool_cap = math.inf if r.shared_buffer is None else r.shared_buffer
        self.pool_bytes_cap = math.inf if r.shared_buffer_bytes is None else r.shared_buffer_bytes
        self.longest = r.shared_buffer_policy == "longest"
        self.pool_n = 0
        self.pool_bytes = 0.0
        J = sc.n_resources
        self.flows: dict[int, FlowBuffer] = {}
        for uid, k in enumerate(sc.static_spec().tolist()):
            f = sc.flows[k]
            if f.buffered:
                self.flows[uid] = FlowBuffer(
                    limit=math.inf if f.buffer is None else f.buffer,
                    limit_bytes=math.inf if f.buffer_bytes is None else f.buffer_bytes,
                    j0=first_resource(f.cost, f.per_byte, J, ingress),
                    packet_time=self.aqm.get("packet_time") or max(f.mean_cost()),
                    weight=f.weight, vq=[0.0] * J, ecn=f.tcp and f.transport.ecn,
                    threshold=[self.aqm.get("threshold", 0.0) * c for c in f.mean_cost()])
        self.J = J
        self.fd_t = 0.0   # FairDrop: the instant the shadow system was drained to

    # ---- at arrival ----------------------------------------------------------
    def _red(self, b: FlowBuffer, q: int, t: float, uid: int, n: int) -> bool:
        """Floyd & Jacobson's Fig. 2, gentle above max_th."""
        a = self.aqm
        if q == 0 and b.red_idle is not None:
            b.red_avg *= (1.0 - a["weight"]) ** ((t - b.red_idle) / b.packet_time)
        b.red_avg = (1.0 - a["weight"]) * b.red_avg + a["weight"] * q
        b.red_idle = None
        avg, lo, hi, max_p = b.red_avg, a["min_th"], a["max_th"], a["max_p"]
        if avg < lo:
            b.red_count = -1
            return False
        if avg < hi:
            p_b = max_p * (avg - lo) / (hi - lo)
        elif a["gentle"] and avg < 2 * hi:
            p_b = max_p + (1 - max_p) * (avg - hi) / hi
        else:
            b.red_count = 0
            return True
        b.red_count += 1
        p_a = 1.0 if b.red_count * p_b >= 1.0 else p_b / (1.0 - b.red_count * p_b)
        if aqm_uniform(self.key, uid, n) < p_a:
            b.red_count = 0
            return True
        return False

    def _fairdrop_drain(self, t: float) -> None:
        """Weighted water-filling of each resource's virtual queues up to t (router.buffers.fairdrop_drain)."""
        dt = t - self.fd_t
        if dt <= 0.0:
            return
        self.fd_t = t
        order = [self.flows[u] for u in sorted(self.flows)]
        for r in range(self.J):
            credit = self.aqm["theta"] * dt
            while credit > 0.0:
                wsum = 0.0
                for b in order:
                    if b.vq[r] > 0.0:
                        wsum += b.weight
                if wsum == 0.0:
                    break
                per = credit / wsum
                credit = 0.0
                for b in order:
                    if b.vq[r] > 0.0:
                        give = per * b.weight
                        if b.vq[r] > give:
                            b.vq[r] -= give
                        else:
                            credit += give - b.vq[r]
                            b.vq[r] = 0.0

    def arrive(self, f, size: float, t: float, post: bool, waiting, victims: list) -> str | None:
        """Open-loop packet of flow f (``size`` bytes) arrives at t: None (accepted: the counts take
        it), "ce" (accepted with a congestion mark: ECN) or the reason it is dropped.  ``waiting(v)``: the packets of flow v waiting at its first
        resource that arrived before t, oldest first; flows whose oldest such packet the pool pushes
        out are appended to ``victims`` (removed after the instant's admissions)."""
        b = self.flows[f.uid]
        n = b.arrivals
        b.arrivals += 1
        held = f.in_router
        reason = None
        marked = False
        if self.policy == "red" and self._red(b, held, t, f.uid, n):
            if b.ecn:
                marked = True
            else:
                reason = "red"
        elif self.policy == "fairdrop":
            self._fairdrop_drain(t)
            if any(q > th for q, th in zip(b.vq, b.threshold)):
                reason = "fairdrop"
        if reason is None and (held + 1 > b.limit or b.bytes + size > b.limit_bytes):
            reason = "tail"
        by_bytes = self.pool_bytes_cap < math.inf
        while reason is None and (self.pool_n + 1 > self.pool_cap or self.pool_bytes + size > self.pool_bytes_cap):
            if not self.longest:
                reason = "pool"
                break
            # the flow holding the most, with a packet waiting at its first resource not pushed out yet;
            # the arrival's own flow wins ties, then the smallest flow id
            best, most = None, (b.bytes if by_bytes else held)
            for uid in sorted(self.flows):
                if uid == f.uid:
                    continue
                v = self.router.static[uid]
                hv = self.flows[uid].bytes if by_bytes else v.in_router
                if hv > most and len(waiting(v)) > victims.count(v):
                    best, most = v, hv
            if best is None:
                reason = "pool"
                break
            p = waiting(best)[victims.count(best)]
            victims.append(best)
            best.in_router -= 1
            self.flows[best.uid].bytes -= p.size
            self.pool_n -= 1
            self.pool_bytes -= p.size
            if post:
                self.flows[best.uid].drops["push_out"] += 1
        if reason is not None:
            if post:
                b.drops[reason] += 1
            return reason
        b.bytes += size
        self.pool_n += 1
        self.pool_bytes += size
        if self.policy == "fairdrop":
            prof = f.profile
            for r in range(self.J):
                b.vq[r] += prof.cost[r] + prof.per_byte[r] * size
        if marked:
            if post:
                b.marks += 1
            return "ce"   # accepted, with a congestion mark
        return None

    def leave(self, f, size: float, t: float) -> None:
        """A packet of open-loop flow f left the router, served or dropped by CoDel (f.in_router
        already counts it out)."""
        b = self.flows[f.uid]
        b.bytes -= size
        self.pool_n -= 1
        self.pool_bytes -= size
        if f.in_router == 0:
            b.red_idle = t

    # ---- at dequeue ----------------------------------------------------------
    def codel(self, f, t: float, sojourn: float, behind: int, phase: int) -> int:
        """RFC 8289's dequeue, one examined packet at a time (router.buffers.codel)."""
        b = self.flows[f.uid]
        a = self.aqm
        interval = a["interval"]
        if sojourn < a["target"] or behind <= a["maxpacket"]:
            b.first_above = 0.0
            ok = False
        elif b.first_above == 0.0:
            b.first_above = t + interval
            ok = False
        else:
            ok = t >= b.first_above
        if phase == ENTER:
            return DELIVER
        if phase == DROP or b.dropping:
            if not ok:
                b.dropping = False
                return DELIVER
            if phase == DROP:
                b.drop_next += interval / math.sqrt(b.count)
            if t >= b.drop_next:
                b.count += 1
                return DROP
            return DELIVER
        if ok:
            delta = b.count - b.lastcount
            b.count = delta if delta > 1 and t - b.drop_next < 16 * interval else 1
            b.lastcount = b.count
            b.dropping = True
            b.drop_next = t + interval / math.sqrt(b.count)
            return ENTER
        return DELIVER

    def codel_marked(self, f, phase: int, post: bool) -> None:
        """CoDel marks the head instead of dropping it and delivers it (router.buffers.codel_marked)."""
        b = self.flows[f.uid]
        if phase == DROP:
            b.drop_next += self.aqm["interval"] / math.sqrt(b.count)
        if post:
            b.marks += 1

    def codel_emptied(self, f, phase: int) -> None:
        b = self.flows[f.uid]
        b.first_above = 0.0
        if phase == DROP:
            b.dropping = False
