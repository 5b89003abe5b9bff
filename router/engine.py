"""The engine's host side: set up a run, call the compiled loop, grow tables, collect the outputs.

The router model (docs/schedulers.md, 'The packet model they share'): resources in series in index order, each a
non-preemptive server of capacity 1; a packet skips a resource where its
processing time is 0.  Flow i keeps ``N`` packets (the window) inside the
router: packet ``k + N`` is admitted when packet ``k`` leaves the last resource,
``rtt`` time units later.  Static flows start at a given time with a given
number of packets (0 = backlogged forever); classes bring flow arrivals (Poisson
with a size law, or a trace: :mod:`flows.traffic`); a new flow admits
``min(N, L)`` packets at once.

Where things are (a newcomer's map):

* :mod:`router.loop` — the event loop and its phase order (docs/schedulers.md, 'Event order and ties'), compiled per
  (J, scheduler, lean/generic); the scheduler's hooks (fq/contract.py) are all it
  knows of the scheduler;
* :mod:`router.heap` — per-resource heaps of flow heads;
* :mod:`router.flowtable` — flow starts, departures, completions;
* :mod:`router.batches` — batch-means accumulators (also used by the fluid path);
* :mod:`router.packets` — the counter-based packet-size hash;
* :mod:`router.state` — the named tuples of arrays, their allocation and growth;
* this module — plain Python around the loop: allocation, growth when the flow
  table is full, and what is left in the system for the conservation check.

Memory depends on the number of concurrent flows, never on run length (the
optional trace is bounded by ``trace_cap``).  The kernels draw no random
numbers: flow arrivals come in chunks from :class:`flows.traffic.ArrivalStream`
(shared with the SimPy reference and the fluid path), packet sizes from the
packet-size hash, so every scheduler sees the same flows and packets (common
random numbers).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from mrfq.flows.errors import MrfqError
from mrfq.fq.contract import compiled_opt
from mrfq.flows.scenario import MAX_TIME
from mrfq.flows import notice as _notice
from mrfq.flows.notice import compiling
from mrfq.router import heap
from mrfq.router.batches import add_area_py, batch_starts
from mrfq.router import delays, rfb as _rfb
from mrfq.router.flowtable import DONE, GROW_ACKS, GROW_LOG, GROW_RING, MORE_ARRIVALS, MORE_PACKETS, TCP_OVERFLOW
from mrfq.router import transport as _tcp
from mrfq.router.loop import loop_for
from mrfq.router.state import (
    C_ARR_CUR, C_ARR_LAST, C_ARR_LOG_N, C_DEP_N, C_MAX_ACTIVE, C_NEXT_ARR, C_NEXT_PKT, C_NEXT_STATIC, C_NEXT_UID,
    C_PK_ADM, C_PK_DEP, C_PKT_CUR, C_PKT_LAST, C_RFB_N, C_SERVICES, C_STOPPED, C_T, C_T_AREA, C_TR_N, F_WEIGHT, I_CLASS,
    I_DEPPOST, I_INFLIGHT, I_NEXTSEQ, I_UID, N_ICOLS, QS_COUNT, QS_WIDTH, STATIC_OPEN, STATIC_TCP, STATIC_WINDOWED,
    ArrivalChunk, PacketChunk, Params, Specs, Traffic, allocate, grow, int_views, keeps_times, n_fcols, pkt_width, ring_size,
    RI_STAGE_CAP, STAGE_UNBOUNDED, C_GROW_ROW, B_MARKS, buffer_width, N_REASONS, RI_DROPPED, cost_width, grow_ring, make_buffers,
    AQM_CODEL, G_AQM, G_POOL_POLICY, POOL_LONGEST,
)

INF = np.inf
#: services per call of the compiled loop: Ctrl-C (seen only in Python) stops a long run between
#: calls, about a second apart; the loop saves its state when it stops, so calls resume bit for bit
CHUNK = 1 << 24
#: flow arrivals drawn before the first call: a short run needs few (the 2e6-service dynamic bench
#: run ~70), and drawing 4096 took 0.16 ms of its 0.41 ms fixed cost; the later chunks are ``chunk``
#: long (the arrival stream gives the same arrivals however it is cut)
FIRST_CHUNK = 256
#: memory cap of the flow table, its heaps and admission queues (growth past it is refused)
MAX_TABLE_BYTES = 4 * 2**30


class KernelResult(NamedTuple):
    """What one run leaves: counters for the conservation check, batch sums, flow statistics, the trace."""

    t_end: float
    services: int
    served: np.ndarray            # [J] services completed per resource
    admitted: np.ndarray          # [J] packet arrivals per resource
    in_system: np.ndarray         # [J] packets at each resource at the end (waiting or in service)
    packets_admitted: int         # router admissions
    packets_departed: int
    in_router: int                # packets inside the router at the end
    busy_post: np.ndarray         # [J] busy time inside [warmup, t_end]
    static_departed: np.ndarray   # [n_static] departures after warm-up
    static_done_t: np.ndarray     # [n_static] completion times (nan: not completed)
    static_admitted: np.ndarray   # [n_static]
    area: np.ndarray              # [K, B] integral of class-k flows in system per batch
    departed: np.ndarray          # [K, B] class-k packets that left per batch
    done_n: np.ndarray            # [K, B] completed flows that arrived after warm-up
    done_packets: np.ndarray      # [K, B] their packets
    done_time: np.ndarray         # [K, B] their completion times
    class_arrived: np.ndarray     # [K]
    class_completed: np.ndarray   # [K]
    flows_in_system: np.ndarray   # [K] at the end
    trace_start: np.ndarray
    trace_end: np.ndarray
    trace_resource: np.ndarray
    trace_flow: np.ndarray
    trace_seq: np.ndarray
    flows_started: int
    max_active_flows: int
    arrival_time: np.ndarray      # the first trace_cap flow arrivals consumed: time,
    arrival_flow: np.ndarray      # flow id,
    arrival_class: np.ndarray     # class,
    arrival_packets: np.ndarray   # and size
    loop_services: int            # services of the loop calls after ``timed_from`` (all with 0)
    loop_cpu: float               # their CPU seconds (process time, compile excluded)
    loop_wall: float              # and wall seconds
    state_bytes: int              # bytes of the engine's arrays at the end (flow table, heaps, tags, ...)
    offered: np.ndarray           # [n_static] open-loop packet arrivals from warm-up on
    drops: np.ndarray             # [n_static] of which dropped (or pushed out, or dropped at dequeue)
    drops_by_reason: np.ndarray   # [n_static, N_REASONS] the same by reason (router.state.REASONS)
    dropped: np.ndarray           # [J] packets that left each resource's queue unserved (router/buffers.py)
    hist: np.ndarray              # [HR, J + 1, NB] delay histograms (router/delays.py)
    dmax: np.ndarray              # [HR] largest sojourn of each row
    dsum: np.ndarray              # [HR, B] sojourn sums per batch
    dcnt: np.ndarray              # [HR, B] and counts
    hbase: int                    # bucket layout (router.delays.bucket_edges)
    dep_time: np.ndarray          # the first trace_cap departures from the router: time,
    dep_arrived: np.ndarray       # the packet's arrival at the router,
    dep_flow: np.ndarray          # flow id,
    dep_seq: np.ndarray           # and sequence
    rfb: tuple | None = None      # (largest value, pair i, pair j (flow ids), unit: the largest packet's
    #                               dominant cost / w, the flow ids covered) (router/rfb.py); None: not computed
    share_x: np.ndarray | None = None  # [samples, covered flows] each covered flow's X (dominant service over
    #                                    weight) at 0, window, 2 window, ... (router/rfb.py); None: not asked
    tcp: object = None            # the TCP flows' state at the end (router.transport.Tcp), or None
    marks: np.ndarray | None = None  # [n_static] packets an AQM marked (ECN) from warm-up on


def _type_key(a):
    """What numba's ``typeof`` of an argument depends on, read cheaply: per array its dtype,
    dimensions, layout, writability and alignment; per Python int whether it needs uint64;
    tuples (and their NamedTuple class) element by element."""
    if isinstance(a, np.ndarray):
        f = a.flags
        return (a.dtype.str, a.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    if isinstance(a, tuple):
        return (type(a),) + tuple(_type_key(x) for x in a)
    if isinstance(a, int) and not isinstance(a, bool):
        return (int, a >= 2**63)
    return (type(a),)


#: (loop, argument type key) -> numba signature: numba's own typeof of the 12 arguments (NamedTuples
#: of ~35 arrays) took 0.3 ms per call, 60 % of a 3-flow run's fixed cost
_SIGNATURES: dict = {}


def _compile_seconds(fn, args, what: str = "the event loop") -> tuple[float, float]:
    """Compile (or load from numba's cache) ``fn`` for these argument types; (wall, CPU) seconds spent
    (a long first compilation says so on a terminal: fq._jit.compiling).  Both: a compilation can
    wait (for the core another process compiles on), and its wall time taken off the run's CPU time
    could leave less than none."""
    if not hasattr(fn, "typeof_pyval"):  # NUMBA_DISABLE_JIT=1: a plain function
        return 0.0, 0.0
    key = (fn, _type_key(args))
    sig = _SIGNATURES.get(key)
    if sig is None:
        sig = _SIGNATURES[key] = tuple(fn.typeof_pyval(a) for a in args)
    if sig in fn.overloads:
        return 0.0, 0.0
    t0, c0 = time.perf_counter(), time.process_time()
    with compiling(what):
        fn.compile(sig)
    return time.perf_counter() - t0, time.process_time() - c0


def is_lean(sched, opt: tuple, J: int, rtt: float, trace_cap: int, open_loop: bool = False) -> bool:
    """Whether the lean loop variant applies: rtt = 0, no trace, no open-loop packet source and the
    scheduler's options at their defaults (compiled in as constants).  Other settings take the
    generic variant, so that a run compiles at most two loops per (J, scheduler)."""
    return (rtt == 0.0 and trace_cap == 0 and not open_loop
            and compiled_opt(sched.module, opt) == compiled_opt(sched.module, sched.default_opt(J)))


def simulate_kernel(sched, opt: tuple, J: int, N: int, rtt: float, T: float, warmup: float, B: int,
                    max_services: int, trace_cap: int, specs: Specs, traffic: Traffic, n_static: int, K: int,
                    arrivals, cost_key: int, specialise: bool = True, chunk: int = 4096,
                    packet_costs: bool | None = None, timed_from: int = 0, packets=None, hist_rows=None,
                    min_cost: float = 1.0, record_delays: bool = True,
                    record_fairness: bool = True, share_window: float = 0.0, ingress: bool = False,
                    stage_caps=None, buffers=None, transport=None, cwnd_log: bool = False) -> tuple[KernelResult, float]:
    """Run the router until time T (or ``max_services`` services); see the module docstring.

    ``sched`` is a registry entry (fq.registry.SchedulerInfo) and ``opt`` its encoded options.
    Units: time units; costs ``specs.cost[s, j]`` time units per packet, ``specs.per_byte``
    per byte.  ``arrivals.take(n)`` hands out the next n flow arrivals as (times float64,
    classes int64, packets int64), fewer once they end (a flows.traffic.ArrivalStream).
    Plain Python: allocates the state with numpy (nothing to compile), runs the compiled
    loop (appending the next ``chunk`` arrivals or doubling the flow table when it asks; the
    lean variant unless ``specialise`` is false), then counts what is left in the system.
    Costs are kept per flow unless some flow has packet sizes (or ``packet_costs`` is true).
    ``timed_from`` > 0 ends the first call of the loop after that many services, and only the calls
    after it are timed (``loop_cpu``, ``loop_wall``, ``loop_services``): with 1, the work after the
    setup (every static flow's first window admitted at t = 0), which the C yardstick does before
    starting its clock (router/bench.py).  The calls resume bit for bit, so the results are the same.
    ``packets.take(n)`` hands out the next n open-loop packet arrivals as (times, static flow ids)
    (a flows.traffic.PacketStream; ``None``: no open-loop flow).  ``hist_rows``: ``(HS, [n_static]
    row of each static flow)`` for the delay histograms (default: one row per static flow), classes
    after them; ``min_cost`` the smallest positive per-packet time (the histograms' lowest resolved
    delay, router/delays.py); ``record_delays=False`` records none (same services, same trace), nor the
    relative fairness bound (router/rfb.py), which ``record_fairness=False`` alone also turns off;
    ``share_window > 0`` samples each static flow's dominant service at its multiples (the share series).
    ``ingress``: the scheduler orders resource 0 only, later resources serve first come, first served;
    ``stage_caps``: the stage buffer in front of each resource 1..J-1 (packets; inf: unbounded), or
    None (docs/middlebox.md), compiled into the lean loop where it applies.  ``buffers``: the open-loop flows' buffer
    management (router.state.make_buffers; default: each flow's ``traffic.table_buffer`` packets, tail
    drop; router/buffers.py).  ``transport``: the TCP flows (router/transport.py) as ``(list of (Transport,
    loss), their static rows, their start times, the key of their losses)``, or None; ``cwnd_log``: keep every
    change of their windows (router.transport.Tcp.log).
    Returns ``(KernelResult, (compile_seconds, compile_cpu_seconds))``: the wall and CPU time compiling.
    """
    if not np.isfinite(T):
        raise MrfqError(f"T = {T}: the run's end must be finite (the loop relies on it)")
    lay = sched.module.layout(J)
    buf_max = int(traffic.table_buffer.max()) if len(traffic.table_buffer) else 0
    NR = ring_size(max(N + 1, buf_max))  # > N: a departure's record outlives the admission it triggers
    lean = specialise and is_lean(sched, opt, J, rtt, trace_cap, packets is not None or transport is not None)
    W = pkt_width(lay, J, keeps_times(record_delays, lean), lean, bool(ingress))
    C = n_static + 64
    if hist_rows is None:
        hist_rows = (n_static, np.arange(max(n_static, 1), dtype=np.int64))
    HS = int(hist_rows[0])
    HR = HS + max(K, 1)
    # buckets up to the longest run the gate admits (flows.scenario.MAX_TIME): the histograms' size
    # depends on the smallest per-packet time only, never on the run's length
    hbase, NB = delays.layout(min_cost, MAX_TIME)
    traffic = traffic._replace(hist_row=np.ascontiguousarray(hist_rows[1], dtype=np.int64))
    pc = needs_packet_costs(specs) if packet_costs is None else bool(packet_costs)
    NFC = n_fcols(J, lay.increments)
    P = Params(N=int(N), RM=NR - 1, W=W, NFC=NFC, pc=int(pc), NF=lay.flow, NFR=lay.flow_res, rtt=float(rtt), T=float(T),
               warmup=float(warmup), B=int(B), max_services=int(max_services), trace_cap=int(trace_cap),
               n_static=n_static, K=int(K), cost_key=int(cost_key), HS=HS, NB=int(NB), hbase=int(hbase),
               dstat=(int(hbase) + int(NB)) * (J + 1), dfloor=delays.floor_value(hbase), rec_from=float(warmup) if record_delays else INF,
               rfb_on=0, rfb_lim=1 << 62, ingress=int(bool(ingress)), staged=int(stage_caps is not None),
               n_tcp=len(transport[0]) if transport is not None else 0,
               loss_key=int(transport[3]) if transport is not None else 0)
    # the relative fairness bound (router/rfb.py): with delays recorded and 2 or more static flows
    # (every pair up to RFB_MAX, above that RFB_SUBSET covered flows)
    rfb_on = record_delays and record_fairness and n_static >= 2
    rfb_state = None
    if rfb_on:
        cov = _rfb.covered(traffic.static_spec[:n_static])
        rows = traffic.static_spec[cov]
        dom, lmax, l_known = _rfb.dominant(specs, rows)
        rfb_state = _rfb.allocate(len(cov), J, specs.weight[rows], float(warmup), dom, float(share_window),
                                  _rfb.windows(T, share_window))
        P = P._replace(rfb_on=1, rfb_lim=_rfb.BUF)
    ft, S, rs, aq, acc, tr, carry = allocate(J, C, NR, W, lay, n_static, K, B, trace_cap,
                                             batch_starts(warmup, T, B), rtt, pc, HR, NB, rfb_state, linked=not lean)
    bf = buffers
    if bf is None and packets is not None:
        lim = traffic.table_buffer[traffic.static_spec[:n_static]].astype(np.float64) if n_static else None
        bf = make_buffers(n_static, J, lim=lim)
    elif bf is None:  # no open-loop flow: one row of buffer state, which the loop never reads
        bf = make_buffers(0, J)
    if stage_caps is not None:
        if len(stage_caps) != J - 1:
            raise MrfqError(f"stage_caps: {len(stage_caps)} entries, must be {J - 1} (one per resource after the first)")
        rs.ri[RI_STAGE_CAP * J + 1:(RI_STAGE_CAP + 1) * J] = [
            STAGE_UNBOUNDED if not np.isfinite(b) else int(b) for b in stage_caps]
    tc = _tcp.allocate([], [], [], 0)  # (one row of unread arrays without TCP flows)
    if transport is not None:
        tflows, trows, tstarts, _ = transport
        holds = [min(tp.max_window, int(traffic.table_buffer[traffic.static_spec[s]]) or tp.max_window)
                 for (tp, _), s in zip(tflows, trows)]
        tc = _tcp.allocate(tflows, list(trows), list(tstarts), n_static, log=cwnd_log, holds=holds)
        # the rings need no check where every TCP flow's packets in the router are held to a buffer of at
        # most its window (its ring holds twice that) and consecutive (no drops at a queue's head); a flow
        # without one can hold old packets beside the window it resends after a timeout
        held_to_buffer = all(0 < int(traffic.table_buffer[traffic.static_spec[s]]) <= tp.max_window
                             for (tp, _), s in zip(tflows, trows))
        tc.g[_tcp.G_RING_CHECK] = int(not held_to_buffer or bf.g[G_AQM] == AQM_CODEL
                                      or bf.g[G_POOL_POLICY] == POOL_LONGEST)
        # a TCP flow's packet ring holds twice the packets it may have in the router (its buffer, at most
        # its window); it doubles when drops at a queue's head spread them wider (router.transport.ring_room)
        for h, s in zip(holds, trows):
            while int(ft.ring[2 * s + 1]) + 1 < 2 * h:
                ft = grow_ring(ft, W, cost_width(J, lay.increments), int(s))
        tcp_extra = sum(tp.max_window for tp, _ in tflows)
        aq = aq._replace(now_s=np.zeros(aq.now_s.shape[0] + tcp_extra, np.int64))
    if rfb_on:
        ft.rfb_dom[cov] = (np.arange(len(cov), dtype=np.int64) << _rfb.RFB_SHIFT) | (dom + 1)
    # static flows own rows 0..n_static-1 (flow id = row)
    if n_static:
        ft.slot_i[I_UID:n_static * N_ICOLS:N_ICOLS] = np.arange(n_static)
        ft.slot_i[I_CLASS:n_static * N_ICOLS:N_ICOLS] = np.where(
            traffic.table_buffer[traffic.static_spec[:n_static]] > 0, STATIC_OPEN, STATIC_WINDOWED)
        if transport is not None:
            ft.slot_i[np.asarray(transport[1], np.int64) * N_ICOLS + I_CLASS] = STATIC_TCP
        ft.slot_f[F_WEIGHT:n_static * NFC:NFC] = specs.weight[traffic.static_spec[:n_static]]
    ft.hrow[:n_static] = traffic.hist_row[:n_static] * delays.row_width(J, NB, B) - hbase * (J + 1)  # row_offset
    carry.ci[C_NEXT_UID] = n_static
    carry.cf[C_NEXT_STATIC] = traffic.table_start[traffic.static_spec[traffic.static_order[0]]] if n_static > 0 else INF
    # the first chunk of flow arrivals (at most FIRST_CHUNK: see there); the cursor
    # carry.ci[C_ARR_CUR] points at the next one
    first = min(chunk, FIRST_CHUNK)
    arr = _take(arrivals, first if K > 0 else 0)
    carry.ci[C_ARR_LAST] = len(arr.time) < first
    carry.cf[C_NEXT_ARR] = arr.time[0] if len(arr.time) else INF
    pk = _take_packets(packets, first)
    carry.ci[C_PKT_LAST] = len(pk.time) < first
    carry.cf[C_NEXT_PKT] = pk.time[0] if len(pk.time) else INF
    opt = tuple(float(x) for x in opt)
    loop = loop_for(J, sched, opt if lean else None, len(opt), pc, NR, rec=bool(record_delays), ing=bool(ingress),
                    staged=stage_caps is not None, tcp=P.n_tcp > 0, codel=bool(bf.g[G_AQM] == AQM_CODEL))

    compile_seconds = compile_cpu = 0.0
    loop_cpu = loop_wall = 0.0
    loop_s0 = 0  # services before the first timed call
    timing = timed_from <= 0
    # the progress line on a terminal (flows.notice; None when none is set: nothing is done): drawn
    # between calls of the loop only, from the state the loop saved, so it cannot change a result
    shown = _notice.tracker(T, max_services)
    try:
        while True:
            # at most CHUNK services per call (see CHUNK); the untimed first call ends at timed_from
            done = int(carry.ci[C_SERVICES])
            stop_at = done + CHUNK
            if not timing and timed_from < stop_at:
                stop_at = int(timed_from)
            if max_services > 0 and max_services < stop_at:
                stop_at = int(max_services)
            args = (P._replace(max_services=stop_at), specs, traffic, arr, pk, carry, ft, S, opt, rs, aq, acc, tr, bf, tc)
            cw, cc = _compile_seconds(loop, args, f"the {sched.name} loop for {J} resource{'s' if J != 1 else ''}")
            compile_seconds += cw
            compile_cpu += cc
            if not timing and done >= timed_from:
                timing, loop_s0 = True, done
            c0, w0 = time.process_time(), time.perf_counter()
            try:
                code = loop(*args)
            except ValueError as e:   # a scheduler's own limit (fq.wfq.CAP): its message names the fix
                raise MrfqError(str(e)) from None
            if timing:
                loop_cpu += time.process_time() - c0
                loop_wall += time.perf_counter() - w0
            if shown is not None:
                shown.tick(carry.cf[C_T], carry.ci[C_SERVICES], compile_seconds)
            if code == DONE:
                if carry.ci[C_STOPPED] == 1 and stop_at != max_services:
                    carry.ci[C_STOPPED] = 0  # the end of a chunk, not of the run
                    continue
                break
            if code == MORE_ARRIVALS:
                # keep the arrivals not yet consumed, append the next chunk, restart the cursor
                cur = int(carry.ci[C_ARR_CUR])
                more = _take(arrivals, chunk)
                arr = ArrivalChunk(*(np.concatenate((a[cur:], b)) for a, b in zip(arr, more)))
                carry.ci[C_ARR_CUR] = 0
                carry.ci[C_ARR_LAST] = len(more.time) < chunk
                continue
            if code == MORE_PACKETS:
                cur = int(carry.ci[C_PKT_CUR])
                more = _take_packets(packets, chunk)
                pk = PacketChunk(*(np.concatenate((a[cur:], b)) for a, b in zip(pk, more)))
                carry.ci[C_PKT_CUR] = 0
                carry.ci[C_PKT_LAST] = len(more.time) < chunk
                continue
            if code == GROW_ACKS:
                tc = _tcp.grow_acks(tc)
                continue
            if code == GROW_LOG:
                if 2 * tc.log.nbytes > MAX_TABLE_BYTES:
                    raise MrfqError(f"--cwnd-series: more than {tc.log.shape[0] // _tcp.LOG_WIDTH:,} window changes (at t = "
                                    f"{carry.cf[C_T]:.6g}) would take the log past {MAX_TABLE_BYTES / 2**30:g} GiB; shorten "
                                    "run.duration")
                tc = _tcp.grow_log(tc)
                continue
            if code == TCP_OVERFLOW:
                row = int(tc.g[_tcp.G_OVERFLOW]) - 1
                raise RuntimeError(f"flow {row}: its packets in the router outgrew its packet ring at t = "
                                   f"{carry.cf[C_T]:.6g} (router.transport.ring_room should have grown it first)")
            if code == GROW_RING:
                # an open-loop flow's packets would not fit its ring: double it (router.state.grow_ring)
                row = int(carry.ci[C_GROW_ROW])
                size = int(ft.ring[2 * row + 1]) + 1
                more = 2 * size * (W + (cost_width(J, lay.increments) if pc else 0)) * 8
                if ft.pkt.nbytes + ft.cst.nbytes + more > MAX_TABLE_BYTES:
                    raise MrfqError(f"flow {row}: more than {size:,} packets in the router (at t = {carry.cf[C_T]:.6g}) would "
                                    f"take the engine's packet records past {MAX_TABLE_BYTES / 2**30:g} GiB; give the flow "
                                    "a buffer (packets) or lower its arrival rate")
                ft = grow_ring(ft, W, cost_width(J, lay.increments), row)
                continue
            # GROW_FLOWS: double the flow table, the heaps and the admission queues
            if 2 * C > heap.SLOT_MASK + 1:
                raise MrfqError(f"more than {heap.SLOT_MASK + 1:,} flows at once: the engine's heap entries hold "
                                f"{heap.SLOT_BITS}-bit row numbers; lower the flow arrival rate or the flow sizes")
            row_bytes = (sum(a.nbytes for a in ft) + S.flow.nbytes + S.flow_res.nbytes + rs.hp.nbytes
                         + sum(a.nbytes for a in aq)) / C
            if 2 * C * row_bytes > MAX_TABLE_BYTES:
                raise MrfqError(f"flow table: {2 * C:,} flows at once would need {2 * C * row_bytes / 2**30:.6g} GiB, "
                                f"more than the {MAX_TABLE_BYTES / 2**30:g} GiB cap (at t = {carry.cf[C_T]:.6g}); the "
                                "system is overloaded or nearly so: lower the load or shorten run.duration")
            C, ft, S, rs, aq = grow(C, J, NR, ft, S, rs, aq, carry, rtt)
            if transport is not None:
                aq = aq._replace(now_s=np.zeros(aq.now_s.shape[0] + tcp_extra, np.int64))
    finally:
        if shown is not None:
            shown.finish()

    ci, cf = carry.ci, carry.cf
    rfb_out = None
    if rfb_on:
        _rfb.flush(acc.rfb_log, int(ci[C_RFB_N]), acc.rfb_f, acc.rfb_g, acc.rfb_ser)
        ci[C_RFB_N] = 0
        _rfb.finish(acc.rfb_f, acc.rfb_g, acc.rfb_ser, float(cf[C_T] if ci[C_STOPPED] == 1 else T))
        best, bi, bj, l_seen = _rfb.result(acc.rfb_f, acc.rfb_g)
        rfb_out = (best, int(cov[bi]) if bi >= 0 else -1, int(cov[bj]) if bj >= 0 else -1,
                   lmax if l_known else max(lmax, l_seen), cov)
    if ci[C_NEXT_UID] > heap.UID_LIMIT:
        raise MrfqError(f"more than {heap.UID_LIMIT:,} flows in one run: the heap's tie-break holds "
                        f"{63 - heap.SLOT_BITS}-bit flow ids; split the run (run.duration)")
    _, _, served, admitted = int_views(rs.ri, J)[:4]
    busy = rs.service_end < INF  # a resource is idle when its service_end is inf
    stopped = ci[C_STOPPED] == 1
    t_end = cf[C_T] if stopped else T
    if stopped:
        # busy time was booked to the end of each service: trim what lies after t_end
        for j in range(J):
            if busy[j] and rs.service_end[j] > t_end:
                hi = rs.service_end[j] if rs.service_end[j] < T else T
                lo = t_end if t_end > warmup else warmup
                if hi > lo:
                    rs.busy_post[j] -= hi - lo
    if K > 0:
        add_area_py(acc.area, acc.x, K, cf[C_T_AREA], t_end, warmup, T, B)

    # ---- what is left in the system, for the conservation check
    slot_i = ft.slot_i.reshape(C, N_ICOLS)
    # Q_ij summed over flows: waiting, plus one in service at each busy resource
    in_system = ft.qs.reshape(C, J, QS_WIDTH)[:, :, QS_COUNT].sum(axis=0) + busy
    inflight = slot_i[:, I_INFLIGHT]
    ns1 = max(n_static, 1)
    # built in place: at 10^6 flows every temporary here is 8 MB on top of the whole flow table
    if n_static:
        static_admitted = slot_i[:ns1, I_NEXTSEQ] - 1
        np.maximum(static_admitted, 0, out=static_admitted)
    else:
        static_admitted = np.zeros(1, np.int64)
    state_bytes = sum(a.nbytes for group in (ft, S, rs, aq, acc, tr, carry, arr, pk, traffic, bf) for a in group)
    by_reason = np.zeros((n_static, N_REASONS), np.int64)  # (without open-loop flows the buffers hold one row)
    kept = bf.drops.reshape(-1, N_REASONS)[:n_static]
    by_reason[:kept.shape[0]] = kept
    dep_n = int(ci[C_DEP_N])
    dep_times = tr.dep_times.reshape(-1, 2)[:dep_n]
    dep_ids = tr.dep_ids.reshape(-1, 2)[:dep_n]
    tr_n = ci[C_TR_N]
    times = tr.times.reshape(-1, 2)[:tr_n]
    ids = tr.ids.reshape(-1, 3)[:tr_n]
    arr_ids = tr.arr_ids.reshape(-1, 3)[:ci[C_ARR_LOG_N]]
    return KernelResult(
        t_end=float(t_end), services=int(ci[C_SERVICES]), served=served.copy(), admitted=admitted.copy(),
        in_system=in_system, packets_admitted=int(ci[C_PK_ADM]), packets_departed=int(ci[C_PK_DEP]),
        in_router=int(np.sum(inflight, where=inflight > 0)), busy_post=rs.busy_post.copy(),
        static_departed=slot_i[:ns1, I_DEPPOST].copy() if n_static else np.zeros(1, np.int64),
        static_done_t=acc.static_done_t,
        static_admitted=static_admitted,
        area=acc.area, departed=acc.departed, done_n=acc.done_n, done_packets=acc.done_packets,
        done_time=acc.done_time, class_arrived=acc.class_arrived, class_completed=acc.class_completed,
        flows_in_system=acc.x,
        trace_start=times[:, 0].copy(), trace_end=times[:, 1].copy(), trace_resource=ids[:, 0].copy(),
        trace_flow=ids[:, 1].copy(), trace_seq=ids[:, 2].copy(),
        flows_started=int(ci[C_NEXT_UID]), max_active_flows=int(ci[C_MAX_ACTIVE]),
        arrival_time=tr.arr_times[:ci[C_ARR_LOG_N]].copy(), arrival_flow=arr_ids[:, 0].copy(),
        arrival_class=arr_ids[:, 1].copy(), arrival_packets=arr_ids[:, 2].copy(),
        loop_services=int(ci[C_SERVICES]) - loop_s0 if timing else 0, loop_cpu=loop_cpu, loop_wall=loop_wall,
        state_bytes=int(state_bytes),
        offered=acc.offered[:n_static].copy(), drops=by_reason.sum(axis=1), drops_by_reason=by_reason,
        dropped=int_views(rs.ri, J)[RI_DROPPED].copy(),
        **dict(zip(("hist", "dmax", "dsum", "dcnt"), delays.split(acc.dacc, HR, J, NB, B))), hbase=int(hbase),
        dep_time=dep_times[:, 0].copy(), dep_arrived=dep_times[:, 1].copy(), dep_flow=dep_ids[:, 0].copy(),
        dep_seq=dep_ids[:, 1].copy(), rfb=rfb_out,
        share_x=_rfb.samples(acc.rfb_g, acc.rfb_ser) if rfb_on and share_window > 0.0 else None,
        tcp=tc if transport is not None else None,
        marks=bf.fl[B_MARKS::buffer_width(J)][:n_static].astype(np.int64) if transport is not None else None,
    ), (compile_seconds, compile_cpu)



def _take(arrivals, n: int) -> ArrivalChunk:
    """The next n flow arrivals as contiguous (float64 times, int64 classes, int64 packets)."""
    if n > 0:
        t, k, L = arrivals.take(n)
    else:
        t, k, L = np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return ArrivalChunk(np.ascontiguousarray(t, dtype=np.float64), np.ascontiguousarray(k, dtype=np.int64),
                        np.ascontiguousarray(L, dtype=np.int64))


def _take_packets(packets, n: int) -> PacketChunk:
    """The next n open-loop packet arrivals as contiguous (float64 times, int64 flow ids)."""
    if packets is not None and n > 0:
        t, f, z = packets.take(n)
    else:
        t, f, z = np.zeros(0), np.zeros(0, np.int64), np.zeros(0)
    return PacketChunk(np.ascontiguousarray(t, dtype=np.float64), np.ascontiguousarray(f, dtype=np.int64),
                       np.ascontiguousarray(z, dtype=np.float64))


def needs_packet_costs(specs: Specs) -> bool:
    """Whether costs are kept per packet: some flow or class has packet sizes, or a packet trace
    gives sizes, or exponential costs (else per flow)."""
    return bool((np.asarray(specs.n_sizes) != 1).any() or (np.asarray(specs.law) != 0).any())


# used by compile warm-ups (analysis.sweep): the loop variant a run of these settings takes
def loop_variant(sched, opt: tuple, J: int, rtt: float, trace_cap: int, specialise: bool = True,
                 pc: bool = False, window: int = 30, record_delays: bool = True):
    opt = tuple(float(x) for x in opt)
    return loop_for(J, sched, opt if specialise and is_lean(sched, opt, J, rtt, trace_cap) else None, len(opt), pc,
                    ring_size(window + 1), rec=bool(record_delays))
