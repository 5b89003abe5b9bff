"""The engine's state as named tuples of flat arrays, and their allocation and growth (plain Python).

The compiled loop (:mod:`router.loop`) takes these tuples and nothing else;
everything here runs in Python around it: allocation before the first call,
doubling when the loop reports a full flow table, and what is left in the
system at the end for the conservation check.

Flow-table rows ("slots"): static flows own rows ``0..n_static-1`` (flow id =
row); Poisson flows take rows from a free list.  Row offsets use power-of-two
widths, so they are shifts.  Per (row, resource) a queue record of two
int64 ``qs[(s * J + j) * 2 + field]`` holds the sequence number of the flow's
first waiting packet and the number waiting.  No ring of sequence numbers is
needed: a flow's packets pass the resources in series in sequence order and
never overtake one another, so the packets of a flow waiting at j are always
consecutive, ``head, head + 1, ..., head + count - 1``.  No queue-length
counter is kept either: ``Q_ij`` (waiting or in service) is the count plus one
when j serves that flow's packet.

Packet records ``pkt[(s * NR + (seq & RM)) * W + m]`` (``NR > N``, a power of two; an
open-loop flow's ring doubles, moved to the end of the array, when its packets in the router
would not fit: :func:`grow_ring`, so memory follows the packets held, not the buffer's limit;
``FlowTable.ring`` holds each row's first record and mask) hold the scheduler's own
per-packet slots (``m < layout.pkt``), then the engine's ``J + 1`` times
(``W = layout.pkt + pkt_times(J)``): the packet's arrival at the router
(``pb + W - J - 1``) and the start of its service at each resource j
(``pb + W - J + j``), for the delays (router/delays.py); the lean loop without the
delays keeps none (``W = layout.pkt``, :func:`keeps_times`).
Costs live where the scenario needs them (``Params.pc``): when every flow has
constant per-packet costs (no ``packet_sizes``) once per flow, in the flow
row's float columns ``slot_f[s * NFC + F_COST + j]``; with per-packet sizes
per packet, ``cst[(s * NR + (seq & RM)) * CW + j]``.  The scheduler's hooks
read a packet's cost as ``cst[cb + j]`` either way (fq/contract.py), and, when
its layout asks for ``increments``, ``s_ij / w_i`` at ``cst[cb + J + j]``: a
cost record is ``CW = 2 J`` words then, else ``J`` (:func:`cost_width`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mrfq.fq.contract import Layout, SchedState
from mrfq.router import heap
from mrfq.router.delays import row_width

INF = np.inf

# flow-table integer columns
# (what a service touches, in one 64-byte row: the Specs row of a flow is not stored, it is
# Traffic.static_spec[row] for a static flow and Traffic.class_spec[class] for a class flow)
(I_UID, I_CLASS, I_REMAIN, I_INFLIGHT, I_NEXTSEQ, I_PENDING, I_DEPPOST, I_FIRST) = range(8)
N_ICOLS = 8  # a power of two, so row offsets are shifts
#: I_CLASS of a static flow: windowed (greedy, the default) or an open-loop source (flows.traffic.PacketLaw)
STATIC_WINDOWED, STATIC_OPEN, STATIC_TCP = -1, -2, -3


def pkt_times(J: int, kept: bool = True) -> int:
    """Words the engine appends to each packet record: its arrival at the router, then the start of
    its service at each of the J resources; none when they are not ``kept`` (:func:`keeps_times`)."""
    return J + 1 if kept else 0


def pkt_width(lay: Layout, J: int, times: bool, lean: bool, ingress: bool = False) -> int:
    """A packet record's words: the scheduler's own slots, then (generic loop) the seq of the packet
    behind it in its flow's queue (``LP - 1``), the key at a later resource under ingress placement
    (router/loop.py: ``LP = layout.pkt + 1``), a TCP packet's sequence number (``LP + 1``,
    router/transport.py) and the packet's size in bytes (``LP + 2``: an open-loop or TCP packet's, for
    the byte counts of router/buffers.py), then its times; the lean loop has none of the four, but the
    link and key words and the size under ingress placement."""
    return int(lay.pkt) + (0 if lean and not ingress else 3) + (0 if lean else 1) + pkt_times(J, times)


def keeps_times(record_delays: bool, lean: bool) -> bool:
    """Whether packet records keep their times: for the delays, and in the generic loop variant
    (its trace pairs each departure with the packet's arrival).  The lean loop without the
    recording neither stores nor reads them: a narrower record and one store less per packet."""
    return bool(record_delays) or not lean


# flow-table float columns: arrival time, weight, dominant service max_j s_ij / w_i, flow size
# (packets; exact below 2**53), then (constant-cost flows) the cost record: the cost at each
# resource, and with Layout.increments s_ij / w_i at each: n_fcols(J, increments) = F_COST + CW
F_ARRIVE, F_WEIGHT, F_DSVC, F_SIZE, F_COST = range(5)
# per-(flow row, resource) queue record: first waiting seq, number waiting
QS_HEAD, QS_COUNT = range(2)
QS_WIDTH = 2

# scalars carried between calls of the loop: floats, then ints
(C_T, C_NEXT_ARR, C_NEXT_STATIC, C_T_AREA, C_NEXT_PKT) = range(5)
N_CF = 5
(C_SERVICES, C_NFREE, C_ADM_HEAD, C_ADM_N, C_ST_PTR, C_PK_ADM, C_PK_DEP, C_NEXT_UID, C_ACTIVE,
 C_MAX_ACTIVE, C_TR_N, C_STOPPED, C_BATCH, C_ARR_CUR, C_ARR_LAST, C_ARR_LOG_N, C_PKT_CUR, C_PKT_LAST,
 C_DEP_N, C_RFB_N, C_VICT_N, C_GROW_ROW) = range(22)
N_CI = 22
# the int64 per-resource words of Resources.ri, J of each: ri[RI_* * J + j]; the row (-1 once idle)
# and seq of the packet served last at j (in service while service_end[j] < inf)
# and the stage buffers (router/loop.py): the cap in front of j, and what they hold now
# and the packets dropped from j's queue unserved (router/buffers.py)
(RI_BUSY_SLOT, RI_BUSY_SEQ, RI_SERVED, RI_ADMITTED, RI_HEAP_N, RI_STAGE_CAP, RI_STAGE_N, RI_DROPPED) = range(8)
N_RI = 8
#: what an idle resource did in phase 3 (router.loop._start_next)
ST_NONE, ST_STARTED, ST_BLOCKED = range(3)
#: the stage cap of an unbounded buffer
STAGE_UNBOUNDED = 1 << 62
# an entry of the admissions due now: row << ADM_BITS | count (count <= the window <= 4096)
ADM_BITS = 13
ADM_MASK = (1 << ADM_BITS) - 1


# buffer management of the open-loop flows' queues (router/buffers.py): per static flow, floats
# Buffers.fl[s * NBF + B_*]: its limits (packets, bytes; inf: none), the bytes it holds, its first
# resource (where its queue is), a lower bound of its oldest packet's seq in the router (for the
# ring check), its arrivals so far (the AQM's random draws are keyed by them), RED's state (average
# queue, count, the instant the queue went empty or -1) and its packet time, CoDel's (first_above_time, drop_next,
# count, lastcount, dropping), FairDrop's (the instant its virtual queues were last drained, then
# its weight, then whether its packets are ECN-capable (1: an AQM marks them instead of dropping) and
# the marks from warm-up on, then per resource its virtual queue and threshold)
(B_LIM, B_LIM_BYTES, B_BYTES, B_J0, B_LO, B_ARRIVALS, B_RED_AVG, B_RED_COUNT, B_RED_IDLE, B_RED_PT,
 B_CD_FIRST_ABOVE, B_CD_DROP_NEXT, B_CD_COUNT, B_CD_LASTCOUNT, B_CD_DROPPING, B_FD_W, B_ECN, B_MARKS) = range(18)
B_FD_VQ = 18  # FairDrop: the flow's virtual queue at each resource (J words), then its threshold there (J)


def buffer_width(J: int) -> int:
    """Floats per static flow in Buffers.fl."""
    return B_FD_VQ + 2 * J


#: why a packet was dropped (Buffers.drops[s * N_REASONS + D_*]): its flow's limit (packets or
#: bytes), the shared pool full (tail drop), pushed out of the pool by a longer queue's..., RED,
#: CoDel, FairDrop
(D_TAIL, D_POOL, D_PUSH_OUT, D_RED, D_CODEL, D_FAIRDROP) = range(6)
N_REASONS = 6
REASONS = ("tail", "pool", "push_out", "red", "codel", "fairdrop")
# Buffers.g: the shared pool's packets and bytes, its caps (inf: none) and policy, the AQM and its
# parameters (router/buffers.py)
(G_POOL_N, G_POOL_BYTES, G_POOL_CAP, G_POOL_BYTES_CAP, G_POOL_POLICY, G_AQM, G_AQM_KEY, G_FD_T) = range(8)
G_P = 8  # the AQM's parameters from here
N_G = 16
POOL_TAIL, POOL_LONGEST = 0, 1
AQM_NONE, AQM_RED, AQM_CODEL, AQM_FAIRDROP = range(4)


class Buffers(NamedTuple):
    """Buffer management of the open-loop flows (router/buffers.py)."""

    fl: np.ndarray       # [n_static * NBF] float64 per-flow limits and state (B_*)
    drops: np.ndarray    # [n_static * N_REASONS] int64 drops from warm-up on, by reason (D_*)
    g: np.ndarray        # [N_G] float64 the pool and the AQM (G_*)
    victims: np.ndarray  # [n_static + 4096] int64 rows whose oldest waiting packet the pool pushes out at this instant


class Params(NamedTuple):
    """Scalars of one run (time units; counts)."""

    N: int              # window: packets per flow inside the router
    RM: int             # ring mask: NR - 1
    W: int              # packet record width: the scheduler's per-packet slots
    NFC: int            # flow-table float columns: F_COST + CW (cost record width: J, or 2 J with increments)
    pc: int             # 1: costs per packet (packet sizes), in FlowTable.cst; 0: per flow, in slot_f
    NF: int             # scheduler floats per flow
    NFR: int            # scheduler floats per (flow, resource)
    rtt: float          # admission delay after a departure
    T: float            # end of the run
    warmup: float
    B: int              # batches
    max_services: int   # 0 = no limit; the loop is always passed its next stop (>= 1) by the host
    trace_cap: int      # service starts to record
    n_static: int
    K: int              # classes
    cost_key: int       # key of the packet-size hash
    HS: int             # delay histogram rows of the static flows (then one per class)
    NB: int             # buckets per histogram (router.delays.layout)
    hbase: int          # bucket offset (router.delays.layout)
    dstat: int          # a row's largest sojourn sits at dacc[hrow + dstat], its batch sums after it
    dfloor: float       # delays are bucketed as max(delay, dfloor) (router.delays.floor_value)
    rec_from: float     # delays are recorded at instants > rec_from (warmup; inf: recording off)
    rfb_on: int         # 1: the loop logs services for the relative fairness bound (router/rfb.py)
    rfb_lim: int        # the log is flushed at the top of an instant when it holds more records than this
    ingress: int = 0    # 1: the scheduler orders resource 0 only, later resources FIFO (docs/middlebox.md)
    staged: int = 0     # 1: stage buffers with back-pressure (caps in Resources.ri[RI_STAGE_CAP])
    n_tcp: int = 0      # TCP flows (router/transport.py)
    loss_key: int = 0   # the key of their random losses before the router (flows.traffic.loss_key)


class Specs(NamedTuple):
    """Per-packet cost profiles, one row per static flow, then one per class."""

    cost: np.ndarray       # [S, J] time units per packet
    per_byte: np.ndarray   # [S, J] time units per byte
    sizes: np.ndarray      # [S, Z] packet sizes (bytes)
    cdf: np.ndarray        # [S, Z] their cumulative probabilities
    n_sizes: np.ndarray    # [S] number of sizes (1 = constant costs; 0 = each packet's size from the packet trace)
    weight: np.ndarray     # [S]
    law: np.ndarray        # [S] 1: each packet's cost at each resource times an exponential of mean 1 (cost_law)
    #: [S] the factor of the increments s_ij / w_i (Layout.increments): 1, or the scheduler's
    #: fq.contract.increment_scale (a reserved rate)
    scale: np.ndarray


class Traffic(NamedTuple):
    """Static flows, and the Specs row of each class."""

    table_start: np.ndarray     # [n_tables] start time of each [[flow]] table's flows
    table_packets: np.ndarray   # [n_tables] their packets (0 = backlogged)
    static_order: np.ndarray    # static flow ids by (start, id)
    static_spec: np.ndarray     # [n_static] row of Specs = the flow's [[flow]] table (flow.count repeats it)
    class_spec: np.ndarray      # [K] row of Specs
    table_buffer: np.ndarray    # [n_tables] packets an open-loop flow of the table may hold (0: windowed)
    hist_row: np.ndarray        # [n_static] delay histogram row of each static flow


class PacketChunk(NamedTuple):
    """The next open-loop packet arrivals, from flows.traffic.PacketStream (the cursor is in Carry)."""

    time: np.ndarray     # float64
    flow: np.ndarray     # int64 static flow id
    size: np.ndarray     # float64 packet size in bytes (a packet trace's size column; else 0, unread)


class ArrivalChunk(NamedTuple):
    """The next flow arrivals, from flows.traffic.ArrivalStream (the cursor is in Carry)."""

    time: np.ndarray     # float64
    klass: np.ndarray    # int64 class index
    packets: np.ndarray  # int64 flow size


class FlowTable(NamedTuple):
    slot_i: np.ndarray   # [C * N_ICOLS] int64
    slot_f: np.ndarray   # [C * NFC] float64
    qs: np.ndarray       # [C * J * QS_WIDTH] int64 queue records
    qt: np.ndarray       # [C * J] int64 the seq of the last packet waiting at each (row, resource) (generic loop)
    pkt: np.ndarray      # [records * W] float64 packet records (the scheduler's tags)
    cst: np.ndarray      # [records * CW] float64 per-packet cost records (Params.pc = 1), else [1] unused
    ring: np.ndarray     # [2 C] int64: each row's packet ring, its first record and its mask (size - 1): packet
    #                      seq of row s is record ring[2 s] + (seq & ring[2 s + 1]) (s NR + (seq & RM) until an
    #                      open-loop flow's ring grows: router.state.grow_ring)
    free: np.ndarray     # [C] free rows (a stack)
    rfb_dom: np.ndarray  # [C] int64: 1 + the dominant resource of a static flow whose services the loop logs
    #                      (router/rfb.py), else 0
    hrow: np.ndarray     # [C] where the delays of the flow in each row go (router.delays.row_offset of its delay
    #                      row: static, Traffic.hist_row; class k, HS + k)


class Resources(NamedTuple):
    service_end: np.ndarray  # [J] end of the service in progress (inf: idle)
    busy_post: np.ndarray    # [J] busy time inside [warmup, T]
    ri: np.ndarray           # [N_RI J] int64: busy row | busy seq | served | admitted | heap size
    hp: np.ndarray           # [J, 2 C + 4] heaps of flow heads (router.heap)


class Admissions(NamedTuple):
    due_t: np.ndarray   # ring of admissions delayed by rtt: due time
    due_s: np.ndarray   # ... and row
    now_s: np.ndarray   # admissions due at the current instant: row << ADM_BITS | how many


class Carry(NamedTuple):
    cf: np.ndarray  # [N_CF] float scalars
    ci: np.ndarray  # [N_CI] int scalars


class Accumulators(NamedTuple):
    b_start: np.ndarray        # [B + 1] first instant of each batch (router.batches.batch_starts)
    x: np.ndarray              # [K] flows in system
    area: np.ndarray           # [K, B] integral of flows in system
    departed: np.ndarray       # [K, B] class packets that left
    done_n: np.ndarray         # [K, B] flows completed (arrived after warm-up)
    done_packets: np.ndarray   # [K, B] their sizes
    done_time: np.ndarray      # [K, B] their completion times
    class_arrived: np.ndarray  # [K]
    class_completed: np.ndarray  # [K]
    static_done_t: np.ndarray  # [n_static] completion time of finite static flows
    offered: np.ndarray        # [n_static] open-loop packet arrivals from warm-up on
    drops: np.ndarray          # [n_static] of which dropped (the flow's buffer was full)
    dacc: np.ndarray           # [HR * row_width] per delay row: the histograms (the wait at each resource, the
    #                            sojourn), the largest sojourn, the sum and number of sojourns per batch
    #                            (router.delays.row_width, split)
    dcount: np.ndarray         # dacc's words as int64 (the same memory): the counts among them
    rfb_log: np.ndarray        # the service log (router/rfb.py): start, end, code (row << 2 | kind) per record
    rfb_f: np.ndarray          # the relative fairness state: floats
    rfb_g: np.ndarray          # and ints
    rfb_ser: np.ndarray        # the share series: each flow's X at the multiples of the window


class TraceBuffer(NamedTuple):
    times: np.ndarray      # [cap * 2] service start, end
    ids: np.ndarray        # [cap * 3] resource, flow id, packet sequence
    arr_times: np.ndarray  # [cap] flow arrival time
    arr_ids: np.ndarray    # [cap * 3] flow id, class, packets
    dep_times: np.ndarray  # [cap * 2] departures from the router: time, the packet's arrival at the router
    dep_ids: np.ndarray    # [cap * 2] flow id, packet sequence


def cost_width(J: int, increments: bool) -> int:
    """Words of a cost record: s_ij at each resource, then s_ij / w_i at each when the scheduler's
    layout asks for the increments (fq/contract.py)."""
    return 2 * J if increments else J


def n_fcols(J: int, increments: bool = False) -> int:
    """Float columns of a flow-table row: arrival, weight, dominant service, size, the cost record."""
    return F_COST + cost_width(J, increments)


def ring_size(N: int) -> int:
    NR = 1
    while NR < N:
        NR *= 2
    return NR


def int_views(ri: np.ndarray, J: int):
    """busy row (-1: idle), busy seq (of the packet served last), served, admitted, heap size."""
    return tuple(ri[k * J:(k + 1) * J] for k in range(N_RI))


def _due_size(C: int, NR: int, J: int, rtt: float) -> int:
    """Room in the ring of admissions delayed by rtt: at most N per flow; none without an rtt."""
    return C * NR + J if rtt > 0.0 else 1


def allocate(J: int, C: int, NR: int, W: int, lay: Layout, n_static: int, K: int, B: int, trace_cap: int,
             b_start: np.ndarray, rtt: float, pc: int, HR: int = 1, NB: int = 1, rfb=None, linked: bool = True):
    """Every array of a run with room for C flows (rows ``n_static..C-1`` free); per-packet
    costs only when ``pc`` (the scenario has packet sizes); ``rfb``: the relative fairness log and
    state (router.rfb.allocate), or None."""
    ft = FlowTable(
        slot_i=np.zeros(C * N_ICOLS, np.int64),
        slot_f=np.zeros(C * n_fcols(J, lay.increments), np.float64),
        qs=np.zeros(C * J * QS_WIDTH, np.int64),
        qt=np.zeros(C * J if linked else 1, np.int64),  # (only the generic loop links its queues)
        pkt=np.zeros(max(C * NR * W, 1), np.float64),
        cst=np.zeros(C * NR * cost_width(J, lay.increments) if pc else 1, np.float64),
        free=np.concatenate([np.arange(C - 1, n_static - 1, -1, dtype=np.int64), np.zeros(n_static, np.int64)]),
        ring=uniform_rings(C, NR),
        rfb_dom=np.zeros(C, np.int64),
        hrow=np.zeros(C, np.int64),
    )
    S = SchedState(flow=np.zeros(max(C * lay.flow, 1)), flow_res=np.zeros(max(C * J * lay.flow_res, 1)),
                   res=np.zeros(max(J * lay.res, 1)), glob=np.zeros(max(lay.glob, 1)))
    rs = Resources(service_end=np.full(J, INF), busy_post=np.zeros(J), ri=np.zeros(N_RI * J, np.int64),
                   hp=heap.allocate(J, C))
    rs.ri[:J] = -1  # no packet in service
    rs.ri[RI_STAGE_CAP * J:(RI_STAGE_CAP + 1) * J] = STAGE_UNBOUNDED
    due = _due_size(C, NR, J, rtt)
    aq = Admissions(due_t=np.zeros(due), due_s=np.zeros(due, np.int64), now_s=np.zeros(C + J, np.int64))
    Kc = max(K, 1)
    dacc = np.zeros(HR * row_width(J, NB, B))
    acc = Accumulators(b_start=b_start, x=np.zeros(Kc), area=np.zeros((Kc, B)), departed=np.zeros((Kc, B)),
                       done_n=np.zeros((Kc, B)), done_packets=np.zeros((Kc, B)), done_time=np.zeros((Kc, B)),
                       class_arrived=np.zeros(Kc, np.int64), class_completed=np.zeros(Kc, np.int64),
                       static_done_t=np.full(max(n_static, 1), np.nan),
                       offered=np.zeros(max(n_static, 1), np.int64), drops=np.zeros(max(n_static, 1), np.int64),
                       dacc=dacc, dcount=dacc.view(np.int64),
                       **dict(zip(("rfb_log", "rfb_f", "rfb_g", "rfb_ser"), rfb if rfb is not None else (
                           np.zeros(3), np.zeros(1), np.zeros(1, np.int64), np.zeros(1)))))
    tr = TraceBuffer(times=np.zeros(trace_cap * 2), ids=np.zeros(trace_cap * 3, np.int64),
                     arr_times=np.zeros(trace_cap), arr_ids=np.zeros(trace_cap * 3, np.int64),
                     dep_times=np.zeros(trace_cap * 2), dep_ids=np.zeros(trace_cap * 2, np.int64))
    carry = Carry(cf=np.zeros(N_CF), ci=np.zeros(N_CI, np.int64))
    carry.ci[C_NFREE] = C - n_static
    return ft, S, rs, aq, acc, tr, carry


def _grown(a: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, a.dtype)
    out[: a.shape[0]] = a
    return out


def grow(C: int, J: int, NR: int, ft: FlowTable, S: SchedState, rs: Resources, aq: Admissions, carry: Carry,
         rtt: float):
    """Double the flow table (and the heaps, the scheduler's per-flow state and the admission
    queues); the new rows go on the free list below the rows still free (taken last-in
    first-out: old ones first).  Returns the new capacity and tuples."""
    C2 = 2 * C
    n_free = int(carry.ci[C_NFREE])
    # the new rows' rings after every record in use (an open-loop flow's grown ring may lie past C NR)
    W = ft.pkt.shape[0] // max(_records(ft), 1)
    used = _records(ft)
    ring = _grown(ft.ring, 2 * C2)
    ring[2 * C::2] = used + np.arange(C2 - C, dtype=np.int64) * NR
    ring[2 * C + 1::2] = NR - 1
    more = (C2 - C) * NR
    ft2 = FlowTable(slot_i=_grown(ft.slot_i, C2 * N_ICOLS), slot_f=_grown(ft.slot_f, ft.slot_f.shape[0] * 2),
                    qs=_grown(ft.qs, ft.qs.shape[0] * 2), qt=_grown(ft.qt, ft.qt.shape[0] * 2) if ft.qt.shape[0] > 1 else ft.qt, pkt=_grown(ft.pkt, (used + more) * W),
                    cst=_grown(ft.cst, ft.cst.shape[0] // used * (used + more)) if ft.cst.shape[0] > 1 else ft.cst,
                    ring=ring, free=np.zeros(C2, np.int64), rfb_dom=_grown(ft.rfb_dom, C2), hrow=_grown(ft.hrow, C2))
    ft2.free[: C2 - C] = np.arange(C2 - 1, C - 1, -1)
    ft2.free[C2 - C: C2 - C + n_free] = ft.free[:n_free]
    carry.ci[C_NFREE] = C2 - C + n_free
    S2 = S._replace(flow=_grown(S.flow, S.flow.shape[0] * 2), flow_res=_grown(S.flow_res, S.flow_res.shape[0] * 2))
    rs2 = rs._replace(hp=heap.grow(rs.hp, C2))
    n, head, cap = carry.ci[C_ADM_N], carry.ci[C_ADM_HEAD], aq.due_t.shape[0]
    order = (head + np.arange(n)) % cap
    due = _due_size(C2, NR, J, rtt)
    aq2 = Admissions(due_t=np.zeros(due), due_s=np.zeros(due, np.int64), now_s=np.zeros(C2 + J, np.int64))
    aq2.due_t[:n] = aq.due_t[order]
    aq2.due_s[:n] = aq.due_s[order]
    carry.ci[C_ADM_HEAD] = 0
    return C2, ft2, S2, rs2, aq2


def uniform_rings(C: int, NR: int) -> np.ndarray:
    """Rings of NR records for C rows, row s at record s NR (FlowTable.ring)."""
    ring = np.empty(2 * C, np.int64)
    ring[0::2] = np.arange(C, dtype=np.int64) * NR
    ring[1::2] = NR - 1
    return ring


def _records(ft: FlowTable) -> int:
    """Packet records the arrays hold: the end of the last row's ring."""
    ends = ft.ring[0::2] + ft.ring[1::2] + 1
    return int(ends.max()) if ends.shape[0] else 0


def grow_ring(ft: FlowTable, W: int, CW: int, s: int) -> FlowTable:
    """Row s's packet ring, twice as large, at the end of the arrays.  The live records of a ring of
    NR have distinct seqs modulo NR (the loop asks before they would not), so the old ring laid
    twice in a row puts every one of them at ``seq & (2 NR - 1)`` (and keeps a constant-cost flow's
    cost record in every slot, as :func:`router.flowtable.flow_starts` wrote it)."""
    base, NR = int(ft.ring[2 * s]), int(ft.ring[2 * s + 1]) + 1
    used = _records(ft)
    pkt = _grown(ft.pkt, (used + 2 * NR) * W)
    old = ft.pkt[base * W:(base + NR) * W]
    pkt[used * W:(used + NR) * W] = old
    pkt[(used + NR) * W:(used + 2 * NR) * W] = old
    cst = ft.cst
    if cst.shape[0] > 1:
        cst = _grown(ft.cst, (used + 2 * NR) * CW)
        oc = ft.cst[base * CW:(base + NR) * CW]
        cst[used * CW:(used + NR) * CW] = oc
        cst[(used + NR) * CW:(used + 2 * NR) * CW] = oc
    ring = ft.ring.copy()
    ring[2 * s] = used
    ring[2 * s + 1] = 2 * NR - 1
    return ft._replace(pkt=pkt, cst=cst, ring=ring)


def make_buffers(n_static: int, J: int, lim=None, lim_bytes=None, j0=None, red_pt=None,
                 pool: tuple = (INF, INF, POOL_TAIL), aqm: tuple = (AQM_NONE, 0, ()), fd_weight=None,
                 fd_threshold=None, ecn=None) -> Buffers:
    """Buffers for ``n_static`` static flows: per flow its limits in packets and bytes (inf: none),
    its first resource and RED's packet time (arrays or None: none, 0, 0); the pool's
    ``(packets, bytes, policy)`` and the AQM's ``(code, key, parameters)`` (router/buffers.py)."""
    n = max(n_static, 1)
    NBF = buffer_width(J)
    fl = np.zeros(n * NBF)
    fl[B_LIM::NBF] = INF if lim is None else lim
    fl[B_LIM_BYTES::NBF] = INF if lim_bytes is None else lim_bytes
    fl[B_J0::NBF] = 0 if j0 is None else j0
    fl[B_RED_PT::NBF] = 0.0 if red_pt is None else red_pt
    fl[B_LO::NBF] = 1.0
    fl[B_RED_IDLE::NBF] = -1.0
    fl[B_RED_COUNT::NBF] = -1.0  # (Floyd & Jacobson's initial count)
    fl[B_FD_W::NBF] = 1.0 if fd_weight is None else fd_weight
    fl[B_ECN::NBF] = 0.0 if ecn is None else ecn
    if fd_threshold is not None:  # [n, J]: FairDrop's threshold of each flow at each resource
        for r in range(J):
            fl[B_FD_VQ + J + r::NBF] = fd_threshold[:, r]
    g = np.zeros(N_G)
    g[G_POOL_CAP], g[G_POOL_BYTES_CAP], g[G_POOL_POLICY] = pool
    g[G_AQM], g[G_AQM_KEY] = aqm[0], aqm[1]
    g[G_P:G_P + len(aqm[2])] = aqm[2]
    return Buffers(fl=fl, drops=np.zeros(n * N_REASONS, np.int64), g=g, victims=np.zeros(n + 4096, np.int64))
