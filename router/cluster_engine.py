"""The compiled task-level cluster simulator: the event loop of ``router/cluster.py`` in numba.

The plain-Python simulator (:func:`router.cluster.simulate` with ``engine="reference"``) is the
oracle: this engine launches the same tasks on the same servers at the same instants (the tests
compare whole launch traces on every preset and on random small scenarios) and returns the same
:class:`~router.cluster.ClusterRun`.

Allocators: ``drf`` and ``drfh-first-fit`` (First-Fit), ``drfh-best-fit`` (Best-Fit, [DRFH] §V-B
eq. (9)) and ``slots`` ([DRFH] §VI), with all their options; the picks are the kernels of
:mod:`fq.cluster.kernels`.  Every other allocator runs on the reference simulator.

Structure (the wrapper + kernel pattern of the packet engine): :func:`simulate_compiled` draws the
jobs (``flows.cluster.draw_jobs``), sorts the static events (job arrivals, backlog starts and
stops) in the reference's heap order, allocates every array and calls :func:`_run`, an ``@jit``
kernel over arrays only.  The kernel keeps

* the running tasks in a binary heap of finish events keyed ``(time, launch number)``: the
  reference's ``(time, kind, seq)`` order, since finishes (kind 0) come first at an instant and
  their ``seq`` grows with the launches;
* per user: running tasks, pending tasks, the fairness key (weighted dominant share, or slots
  held per weight), the FIFO of its jobs as a pointer into its arrival-ordered job list;
* per server: free capacity and the number of running tasks (an idle server's free vector is
  reset to its capacity, as in :meth:`ClusterState.finish`), indexed by a segment tree of
  component-wise max / min free capacity (:func:`fq.cluster.kernels.build_tree`) and, for
  Best-Fit, by the shape index (the servers sorted by free shape, :func:`fq.cluster.kernels.x_rebuild`),
  each user's list of best servers and the ring of changed servers that keeps both up to date.

The kernel returns to the wrapper (which then resumes it where it stopped: the whole state lives
in the arrays) when a backlogged user's pre-drawn durations run out (the wrapper draws the next
block from the user's own generator: one standard exponential per task, the reference's
numbers), or when the heap or the launch trace is full.

One instant, as in the reference: (1) the finishes at ``t`` in launch order, (2) the static events
at ``t`` in file order, (3) picks until none; the piecewise-constant shares, running tasks and
utilisation are integrated over ``[warmup, duration]`` and over the sample bins with the
reference's arithmetic (the utilisation's sum over users is a plain loop where the reference
calls a matrix product: it may differ in the last bit).
"""

from __future__ import annotations

import time as _time

import numpy as np

from mrfq.flows.cluster import ClusterScenario, backlog_streams, draw_jobs
from mrfq.flows.notice import compiling
from mrfq.fq._jit import jit, jit_inline
from mrfq.fq.cluster import kernels as K
from mrfq.fq.cluster import registry
from mrfq.fq.cluster import slots as _slots
from mrfq.fq.cluster.state import BACKLOGGED, FIT_TOL

#: allocators this engine runs; the value is the kernel's server rule
ALG_FIRST_FIT, ALG_BEST_FIT, ALG_SLOTS = 0, 1, 2
COMPILED = {"drf": ALG_FIRST_FIT, "drfh-first-fit": ALG_FIRST_FIT, "drfh-best-fit": ALG_BEST_FIT,
            "slots": ALG_SLOTS}

_FINISH, _ARRIVE, _START, _STOP = 0, 1, 2, 3
#: kernel exit codes
DONE, NEED_DRAWS, NEED_HEAP, NEED_TRACE = 0, 1, 2, 3
# integer registers (the loop's scalars, kept across exits)
(_IN_PHASE, _PHASE, _EV, _HN, _NL, _NDONE, _BIN, _EVENTS, _PICKS, _NDIRTY, _NCHG, _ARG, _LPOS, _NFULL, _NLIVE,
 _XPOS, _XN, _NOV, _XLIM, _NBUILD, _SYNCLIM, _MX) = range(22)
_NREG = 22
#: Best-Fit candidates kept per user (searching the server tree; searching the shape index), and the ring
#: of changed servers they are brought up to date from
CAND_M = 256
CAND_M_INDEX = 64
LOG_SIZE = 1 << 16
#: a user of the shape index whose list is more than this many server changes behind searches afresh
SYNC_LIMIT = 256


@jit_inline(error_model="numpy", wraparound=True)
def _heap_push(hp, n, t, q, us, k):
    """Push a finish event (t, q) with payload (us = user * S + server, k = job) on a heap of n records.

    A record is one row of the float64 array ``hp``, (time, launch number, us, k), the integers
    exact below 2^53: 32 bytes, two records per cache line."""
    i = n
    while i > 0:
        p = (i - 1) >> 1
        if hp[p, 0] < t or (hp[p, 0] == t and hp[p, 1] < q):
            break
        hp[i, 0] = hp[p, 0]
        hp[i, 1] = hp[p, 1]
        hp[i, 2] = hp[p, 2]
        hp[i, 3] = hp[p, 3]
        i = p
    hp[i, 0] = t
    hp[i, 1] = q
    hp[i, 2] = us
    hp[i, 3] = k


@jit_inline(error_model="numpy", wraparound=True)
def _heap_pop(hp, n):
    """Remove the root of a heap of n records (the caller read it first)."""
    n -= 1
    t = hp[n, 0]
    q = hp[n, 1]
    us = hp[n, 2]
    k = hp[n, 3]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and (hp[c + 1, 0] < hp[c, 0] or (hp[c + 1, 0] == hp[c, 0] and hp[c + 1, 1] < hp[c, 1])):
            c += 1
        if t < hp[c, 0] or (t == hp[c, 0] and q < hp[c, 1]):
            break
        hp[i, 0] = hp[c, 0]
        hp[i, 1] = hp[c, 1]
        hp[i, 2] = hp[c, 2]
        hp[i, 3] = hp[c, 3]
        i = c
    if n > 0:
        hp[i, 0] = t
        hp[i, 1] = q
        hp[i, 2] = us
        hp[i, 3] = k


@jit_inline(error_model="numpy", wraparound=True)
def _integrate(t0, t1, T, warmup, edges, nbins, b, tot, binned, v, width):
    """``_Integrator.add`` of router/cluster.py: returns the new bin index."""
    if t1 > T:
        t1 = T
    if t1 <= t0:
        return b
    lo = t0 if t0 >= warmup else warmup
    if t1 > lo:
        for i in range(width):
            tot[i] += (t1 - lo) * v[i]
    if nbins == 0:
        return b
    t = t0
    while t < t1:
        while b < nbins - 1 and edges[b + 1] <= t:
            b += 1
        end = t1
        if b < nbins - 1 and edges[b + 1] < t1:
            end = edges[b + 1]
        for i in range(width):
            binned[b, i] += (end - t) * v[i]
        t = end
    return b


@jit_inline(error_model="numpy", wraparound=True)
def _key_lt(key, a, b):
    """User a before user b in the pick order: (key, index) lexicographic."""
    return key[a] < key[b] or (key[a] == key[b] and a < b)


@jit_inline(error_model="numpy", wraparound=True)
def _order_fix(order, pos, key, u, U):
    """User u's key changed: move it to its place in ``order``, the users sorted by (key, index)."""
    i = pos[u]
    while i > 0 and _key_lt(key, u, order[i - 1]):
        v = order[i - 1]
        order[i] = v
        pos[v] = i
        i -= 1
    while i < U - 1 and _key_lt(key, order[i + 1], u):
        v = order[i + 1]
        order[i] = v
        pos[v] = i
        i += 1
    order[i] = u
    pos[u] = i


@jit_inline(error_model="numpy", wraparound=True)
def _user_key(alg, u, nt, demand, total, weight, kslots, R):
    """[DRF] §4.3 weighted dominant share ``max_r tasks_u d_ur / R_r / w_u`` (slots: slots held per
    weight), with the reference's operations."""
    if alg == ALG_SLOTS:
        return (nt[u] * kslots[u]) / weight[u]
    x = float(nt[u])
    m = (x * demand[u, 0]) / total[0]
    for r in range(1, R):
        y = (x * demand[u, r]) / total[r]
        if y > m:
            m = y
    return m / weight[u]


# _nrt=False: the loop allocates nothing, and without numba's runtime the arrays handed to the inlined
# kernels cost no atomic reference counting (an increment and a decrement per array and call)
@jit(nogil=True, error_model="numpy", _nrt=False)
def _run(ireg, freg, T, warmup, alg, stop_mode, record,
         capacity, free, total, demand, charge, thresh, aa, kref, weight, kslots, dem_frac, charge_frac,
         tmax, tmin, L, stack, lbs, work,
         nt, pending, key, blocked_at, backlogged, dmean, dexpo, bbuf, bpos,
         nrun, dirty, dmark, order, opos, chg, cmark,
         ev_time, ev_kind, ev_arg,
         job_time, job_user, job_tasks, job_first, task_dur, ujobs, uptr, qhead, qtask, left,
         hp,
         edges, share_tot, share_bin, tasks_tot, use_tot, use_bin, share_now, tasks_now, use_now,
         done_user, done_arr, done_fin, done_tasks, launched,
         cand_h, cand_s, cand_n, cand_th, cand_ts, cand_pos, cachable, log, live, q0,
         xord, xout, ov, xbuf, xfmax, xqmn, xqmx, xsmin, xpos_of,
         tr_time, tr_user, tr_server):
    """The event loop (router/cluster.py's ``simulate``); returns an exit code (module constants)."""
    S, R = free.shape
    U = demand.shape[0]
    nbins = share_bin.shape[0]
    nev = ev_time.shape[0]
    hcap = hp.shape[0]
    trcap = tr_time.shape[0]
    B = bbuf.shape[1]
    in_phase = ireg[_IN_PHASE]
    phase = ireg[_PHASE]
    ev = ireg[_EV]
    hn = ireg[_HN]
    nl = ireg[_NL]
    ndone = ireg[_NDONE]
    b = ireg[_BIN]
    events = ireg[_EVENTS]
    picks = ireg[_PICKS]
    ndirty = ireg[_NDIRTY]
    nchg = ireg[_NCHG]
    lpos = ireg[_LPOS]
    nlive = ireg[_NLIVE]
    M = cand_h.shape[1]
    G = log.shape[0]
    now = freg[0]
    code = DONE
    while True:
        if in_phase == 0:
            t = np.inf
            if hn > 0:
                t = hp[0, 0]
            if ev < nev and ev_time[ev] < t:
                t = ev_time[ev]
            if not t < T:
                break
            b0 = b
            b = _integrate(now, t, T, warmup, edges, nbins, b0, share_tot, share_bin, share_now, U)
            _integrate(now, t, T, warmup, edges, 0, 0, tasks_tot, share_bin, tasks_now, U)
            _integrate(now, t, T, warmup, edges, nbins, b0, use_tot, use_bin, use_now, R)
            now = t
            phase += 1
            ndirty = 0
            while hn > 0 and hp[0, 0] == t:  # (1) finishes, in launch order
                us = int(hp[0, 2])
                u = us // S
                s = us - u * S
                k = int(hp[0, 3])
                _heap_pop(hp, hn)
                hn -= 1
                events += 1
                nrun[s] -= 1
                for r in range(R):
                    free[s, r] += charge[u, r]
                if nrun[s] == 0:
                    for r in range(R):
                        free[s, r] = capacity[s, r]
                K.tree_update(tmax, tmin, free, s, L, R)
                if alg == ALG_BEST_FIT:
                    K.shape_update(q0, free, total, s, R)
                log[lpos % G] = s
                lpos += 1
                nt[u] -= 1
                key[u] = _user_key(alg, u, nt, demand, total, weight, kslots, R)
                _order_fix(order, opos, key, u, U)
                if cmark[u] != phase:
                    cmark[u] = phase
                    chg[nchg] = u
                    nchg += 1
                if dmark[s] != phase:
                    dmark[s] = phase
                    dirty[ndirty] = s
                    ndirty += 1
                if k >= 0:
                    left[k] -= 1
                    if left[k] == 0:
                        done_user[ndone] = u
                        done_arr[ndone] = job_time[k]
                        done_fin[ndone] = t
                        done_tasks[ndone] = job_tasks[k]
                        ndone += 1
            while ev < nev and ev_time[ev] == t:  # (2) arrivals, starts, stops in file order
                kind = ev_kind[ev]
                a = ev_arg[ev]
                ev += 1
                events += 1
                if kind == _ARRIVE:
                    u = job_user[a]
                    left[a] = job_tasks[a]
                    pending[u] += job_tasks[a]
                elif kind == _START:
                    pending[a] = BACKLOGGED
                else:
                    pending[a] = 0
            # the users that may launch now, sorted by (key, index) from the last (live[0]) to the first
            # (live[nlive - 1]): pending ones; a user that fitted nowhere at the previous instant and
            # fits none of the servers freed since is left out (skip mode)
            nlive = 0
            for j in range(U - 1, -1, -1):
                u = order[j]
                if pending[u] <= 0:
                    continue
                if not stop_mode and blocked_at[u] == phase - 1:
                    if K.dirty_search(free, thresh, total, aa, kref, u, False, dirty, ndirty, R, work, q0) < 0:
                        blocked_at[u] = phase
                        continue
                live[nlive] = u
                nlive += 1
            in_phase = 1
        # (3) picks until none
        while True:
            picks += 1
            # the allocator's pick: the user of least key with a fitting server ([DRF] Algorithm 1);
            # the keys of the listed users change only at their launches, so the list stays sorted
            cu = -1
            cs = -1
            while True:
                if nlive == 0:
                    break
                bu = live[nlive - 1]
                if blocked_at[bu] == phase:
                    break
                if blocked_at[bu] == phase - 1:
                    s = K.dirty_search(free, thresh, total, aa, kref, bu, alg == ALG_BEST_FIT, dirty, ndirty, R,
                                       work, q0)
                elif alg == ALG_BEST_FIT and cachable[bu]:
                    # a user of the shape index whose list is far behind the ring searches afresh
                    mu = ireg[_MX] if kref[bu] == 0 else M
                    if cand_pos[bu] < 0 or (kref[bu] == 0 and lpos - cand_pos[bu] > ireg[_SYNCLIM]) \
                            or not K.cand_sync(free, thresh, total, aa, kref, bu, R, work, cand_h, cand_s,
                                               cand_n, cand_th, cand_ts, mu, log, G, lpos, cand_pos, q0) \
                            or (cand_n[bu] == 0 and cand_ts[bu] >= 0):
                        ireg[_NFULL] += 1
                        if kref[bu] == 0:  # the shape index, brought up to date from the ring
                            full = ireg[_XPOS] < 0 or lpos - ireg[_XPOS] > G
                            if not full:
                                ireg[_NOV] = K.x_sync(log, G, lpos, ireg[_XPOS], xout, ov, ireg[_NOV], xpos_of, L,
                                                         R, xfmax, xqmn, xqmx, xsmin, S)
                            if full or ireg[_NOV] > ireg[_XLIM]:
                                ireg[_NBUILD] += 1
                                ireg[_XN], ireg[_NOV] = K.x_rebuild(free, q0, S, L, R, xord, ireg[_XN], xout, ov,
                                                                    ireg[_NOV], xbuf, xfmax, xqmn, xqmx, xsmin, full,
                                                                    xpos_of)
                            ireg[_XPOS] = lpos
                            K.best_fit_index(free, thresh, total, aa, kref, bu, L, R, stack, lbs, work, cand_h,
                                             cand_s, cand_n, cand_th, cand_ts, mu, q0, xord, ireg[_XN], xout, ov,
                                             ireg[_NOV], xfmax, xqmn, xqmx, xsmin)
                        else:
                            K.best_fit_topm(free, tmax, tmin, thresh, total, aa, kref, bu, L, R, stack, lbs, work,
                                            cand_h, cand_s, cand_n, cand_th, cand_ts, M, q0)
                        cand_pos[bu] = lpos
                    s = cand_s[bu, 0] if cand_n[bu] > 0 else -1
                elif alg == ALG_BEST_FIT:
                    ireg[_NFULL] += 1
                    s = K.best_fit_tree(free, tmax, tmin, thresh, total, aa, kref, bu, S, L, R, stack, lbs, work, q0)
                else:
                    ireg[_NFULL] += 1
                    s = K.first_fit_tree(tmax, thresh, bu, L, R, stack)
                if s >= 0:
                    cu = bu
                    cs = s
                    break
                blocked_at[bu] = phase
                if stop_mode:
                    break
                nlive -= 1
            if cu < 0:
                break
            u = cu
            s = cs
            # its duration: the next task of the user's oldest job, or the user's next backlog draw
            if backlogged[u]:
                if bpos[u] == B:
                    ireg[_ARG] = u
                    code = NEED_DRAWS
                    picks -= 1
                    break
                e = bbuf[u, bpos[u]]
                d = e * dmean[u] if dexpo[u] else dmean[u]
                k = -1
            else:
                k = ujobs[uptr[u] + qhead[u]]
                d = task_dur[job_first[k] + qtask[u]]
            if hn == hcap:
                code = NEED_HEAP
                picks -= 1
                break
            if record and nl == trcap:
                code = NEED_TRACE
                picks -= 1
                break
            if backlogged[u]:
                bpos[u] += 1
            else:
                qtask[u] += 1
                if qtask[u] == job_tasks[k]:
                    qhead[u] += 1
                    qtask[u] = 0
            # the launch (ClusterState.launch)
            for r in range(R):
                free[s, r] -= charge[u, r]
            nrun[s] += 1
            K.tree_update(tmax, tmin, free, s, L, R)
            if alg == ALG_BEST_FIT:
                K.shape_update(q0, free, total, s, R)
            log[lpos % G] = s
            lpos += 1
            nt[u] += 1
            key[u] = _user_key(alg, u, nt, demand, total, weight, kslots, R)
            _order_fix(order, opos, key, u, U)
            if cmark[u] != phase:
                cmark[u] = phase
                chg[nchg] = u
                nchg += 1
            if pending[u] != BACKLOGGED:
                pending[u] -= 1
            if pending[u] == 0:
                nlive -= 1
            else:  # its key grew: back to its place in the list
                i = nlive - 1
                while i > 0 and _key_lt(key, live[i - 1], u):
                    live[i] = live[i - 1]
                    i -= 1
                live[i] = u
            launched[u] += 1
            if record:
                tr_time[nl] = now
                tr_user[nl] = u
                tr_server[nl] = s
            _heap_push(hp, hn, now + d, nl, u * S + s, k)
            hn += 1
            nl += 1
        if code != DONE:
            break
        if nchg > 0:  # the piecewise-constant rates of the users whose running tasks changed
            for i in range(nchg):
                u = chg[i]
                x = float(nt[u])
                tasks_now[u] = x
                m = x * dem_frac[u, 0]
                for r in range(1, R):
                    y = x * dem_frac[u, r]
                    if y > m:
                        m = y
                share_now[u] = m
            for r in range(R):
                acc = 0.0
                for u in range(U):
                    acc += tasks_now[u] * charge_frac[u, r]
                use_now[r] = acc
            nchg = 0
        in_phase = 0
    if code == DONE:
        b0 = b
        b = _integrate(now, T, T, warmup, edges, nbins, b0, share_tot, share_bin, share_now, U)
        _integrate(now, T, T, warmup, edges, 0, 0, tasks_tot, share_bin, tasks_now, U)
        _integrate(now, T, T, warmup, edges, nbins, b0, use_tot, use_bin, use_now, R)
    ireg[_IN_PHASE] = in_phase
    ireg[_PHASE] = phase
    ireg[_EV] = ev
    ireg[_HN] = hn
    ireg[_NL] = nl
    ireg[_NDONE] = ndone
    ireg[_BIN] = b
    ireg[_EVENTS] = events
    ireg[_PICKS] = picks
    ireg[_NDIRTY] = ndirty
    ireg[_NCHG] = nchg
    ireg[_LPOS] = lpos
    ireg[_NLIVE] = nlive
    freg[0] = now
    return code


def supported(allocator: str) -> bool:
    """True when the compiled engine runs ``allocator`` (else the reference simulator does)."""
    return allocator in COMPILED


def simulate_compiled(sc: ClusterScenario, opts: dict, *, trace: list | None = None, stats: dict | None = None,
                      cand_m: int = CAND_M, x_limit: int | None = None,
                      sync_limit: int = SYNC_LIMIT, log_size: int = LOG_SIZE):
    """Run a validated scenario (``run`` fields already applied) on the compiled engine.

    ``opts`` are the allocator's options, already validated by :func:`fq.cluster.registry.bind`;
    ``trace``, when a list, receives every launch as ``(time, user, server)``; ``stats``, when a
    dict, receives ``full_searches`` (the picks that searched the server tree or the shape index) and
    ``index_builds`` (the shape index's builds).  Best-Fit's bookkeeping, which the tests shrink to
    exercise every path: ``cand_m``, candidates kept per user (at most ``CAND_M_INDEX`` for the users
    of the shape index); ``x_limit``, changed servers kept outside the shape index before it is
    rebuilt (default ``max(512, S // 10)``); ``sync_limit``, server changes a user of the index
    catches up with before it searches afresh; ``log_size``, the ring of changed servers.
    """
    from mrfq.router.cluster import ClusterRun, make_state

    name = sc.run.allocator
    alg = COMPILED[name]
    T = sc.run.duration
    state = make_state(sc)
    registry.bind(name, state, **opts)  # validates the options; the slot scheduler's prepare sets charge
    if alg == ALG_SLOTS:
        slot = _slots.slot_size(state.capacity, opts.get("n_slots", 14))
        kslots = _slots.slots_per_task(state.demand, slot, opts.get("task_slots", "ceil")).astype(np.int64)
    else:
        kslots = np.ones(state.n_users, dtype=np.int64)
    stop_mode = opts.get("blocked", "skip") == "stop"
    ref = opts.get("fitness_ref", "first")
    U, R = state.demand.shape
    S = state.capacity.shape[0]
    total = state.total
    charge = np.ascontiguousarray(state.charge, dtype=np.float64)
    thresh = np.ascontiguousarray(charge - FIT_TOL * total)
    Dn = state.demand / total
    kref = np.array([0 if ref == "first" and Dn[u, 0] > 0 else int(np.argmax(Dn[u])) for u in range(U)],
                    dtype=np.int64)
    aa = np.ascontiguousarray(np.stack([Dn[u] / Dn[u, kref[u]] for u in range(U)]) if U else Dn)
    inv_total = 1.0 / total
    dem_frac = np.ascontiguousarray(state.demand * inv_total)
    charge_frac = np.ascontiguousarray(charge * inv_total)
    free = state.free.copy()
    tmax, tmin, L = K.build_tree(free)

    jobs = draw_jobs(sc, T)
    brng = backlog_streams(sc)
    users = sc.users
    backlogged = np.array([u.backlogged for u in users], dtype=np.bool_)
    dmean = np.array([u.duration for u in users], dtype=np.float64)
    dexpo = np.array([u.duration_law == "exponential" for u in users], dtype=np.bool_)
    B = int(max(16, min(4096, 2 ** 21 // max(1, U))))
    bbuf = np.zeros((U, B))
    bpos = np.full(U, B, dtype=np.int64)

    # static events in the reference's heap order (time, kind, seq)
    rows = [(float(jobs.time[k]), _ARRIVE, k, k) for k in range(jobs.n_jobs)]
    seq = jobs.n_jobs
    for u, spec in enumerate(users):
        if spec.backlogged:
            rows.append((spec.start, _START, seq, u))
            seq += 1
            if spec.stop < T:
                rows.append((spec.stop, _STOP, seq, u))
                seq += 1
    rows.sort()
    ev_time = np.array([r[0] for r in rows], dtype=np.float64)
    ev_kind = np.array([r[1] for r in rows], dtype=np.int64)
    ev_arg = np.array([r[3] for r in rows], dtype=np.int64)
    order = np.argsort(jobs.user, kind="stable")
    ujobs = np.ascontiguousarray(order, dtype=np.int64)
    uptr = np.zeros(U + 1, dtype=np.int64)
    np.cumsum(np.bincount(jobs.user, minlength=U), out=uptr[1:])

    hcap = 1024
    heap = [np.zeros((hcap, 4))]
    record = trace is not None
    trcap = 1024 if record else 0
    tr = [np.zeros(trcap), np.zeros(trcap, np.int64), np.zeros(trcap, np.int64)]
    nb = sc.run.samples
    edges = np.linspace(0.0, T, nb + 1)
    Kj = jobs.n_jobs
    ireg = np.zeros(_NREG, dtype=np.int64)
    ireg[_PHASE] = 1  # blocked_at starts at 0: never the previous instant of the first one
    freg = np.zeros(1)
    arrays = dict(
        nt=np.zeros(U, np.int64), pending=np.zeros(U, np.int64), key=np.zeros(U), blocked_at=np.zeros(U, np.int64),
        order=np.arange(U, dtype=np.int64), opos=np.arange(U, dtype=np.int64), chg=np.zeros(U, np.int64),
        cmark=np.zeros(U, np.int64),
        nrun=np.zeros(S, np.int64), dirty=np.zeros(S, np.int64), dmark=np.zeros(S, np.int64),
        left=np.zeros(Kj, np.int64), qhead=np.zeros(U, np.int64), qtask=np.zeros(U, np.int64),
        share_tot=np.zeros(U), share_bin=np.zeros((nb, U)), tasks_tot=np.zeros(U), use_tot=np.zeros(R),
        use_bin=np.zeros((nb, R)), share_now=np.zeros(U), tasks_now=np.zeros(U), use_now=np.zeros(R),
        done_user=np.zeros(Kj, np.int64), done_arr=np.zeros(Kj), done_fin=np.zeros(Kj),
        done_tasks=np.zeros(Kj, np.int64), launched=np.zeros(U, np.int64))
    a = arrays
    M = cand_m if alg == ALG_BEST_FIT else 1
    cand_h, cand_s = np.zeros((U, M)), np.zeros((U, M), np.int64)
    a.update(cand_n=np.zeros(U, np.int64), cand_th=np.zeros(U), cand_ts=np.zeros(U, np.int64),
             cand_pos=np.full(U, -1, np.int64), live=np.zeros(U, np.int64))
    # a user's H is finite on every server that fits it when the normalising resource's threshold is
    # positive: only then the candidate lists (numpy's NaN-first argmin needs the scan otherwise)
    cachable = np.array([thresh[u, kref[u]] > 0 for u in range(U)], dtype=np.bool_)
    log = np.zeros(log_size if alg == ALG_BEST_FIT else 1, np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = free / total
        q0 = np.ascontiguousarray(c / c[:, 0:1])
    # the shape index (kernels.x_rebuild), built at the first search
    nx = S if alg == ALG_BEST_FIT else 1
    xord, ov, xbuf = np.zeros(nx, np.int64), np.zeros(nx, np.int64), np.zeros(nx, np.int64)
    xout = np.zeros(nx, np.bool_)
    xpos_of = np.full(nx, -1, np.int64)
    xfmax, xqmn, xqmx = (np.zeros(2 * L * R if alg == ALG_BEST_FIT else 1) for _ in range(3))
    xsmin = np.zeros(2 * L if alg == ALG_BEST_FIT else 1, np.int64)
    ireg[_XPOS] = -1
    ireg[_XLIM] = max(512, S // 10) if x_limit is None else x_limit
    ireg[_SYNCLIM] = sync_limit
    ireg[_MX] = min(M, CAND_M_INDEX)
    stack = np.zeros(4 * 64, np.int64)
    lbs = np.zeros(4 * 64)
    work = np.zeros(max(R, 8))
    wall0 = _time.perf_counter()
    while True:
        with compiling("the task simulator", hasattr(_run, "signatures") and not _run.signatures):
            code = _run(ireg, freg, T, sc.run.warmup, alg, stop_mode, record,
                        state.capacity, free, total, state.demand, charge, thresh, aa, kref, state.weight, kslots,
                        dem_frac, charge_frac, tmax, tmin, L, stack, lbs, work,
                        a["nt"], a["pending"], a["key"], a["blocked_at"], backlogged, dmean, dexpo, bbuf, bpos,
                        a["nrun"], a["dirty"], a["dmark"], a["order"], a["opos"], a["chg"], a["cmark"], ev_time, ev_kind, ev_arg,
                        jobs.time, jobs.user, jobs.tasks, jobs.first, jobs.task_duration, ujobs, uptr,
                        a["qhead"], a["qtask"], a["left"], *heap,
                        edges, a["share_tot"], a["share_bin"], a["tasks_tot"], a["use_tot"], a["use_bin"],
                        a["share_now"], a["tasks_now"], a["use_now"],
                        a["done_user"], a["done_arr"], a["done_fin"], a["done_tasks"], a["launched"],
                        cand_h, cand_s, a["cand_n"], a["cand_th"], a["cand_ts"], a["cand_pos"], cachable, log, a["live"],
                        q0, xord, xout, ov, xbuf, xfmax, xqmn, xqmx, xsmin, xpos_of, *tr)
        if code == DONE:
            break
        if code == NEED_DRAWS:
            u = int(ireg[_ARG])
            bbuf[u] = brng[u].standard_exponential(B)
            bpos[u] = 0
        elif code == NEED_HEAP:
            heap = [np.concatenate((heap[0], np.zeros_like(heap[0])))]
        else:
            tr = [np.concatenate((x, np.zeros_like(x))) for x in tr]
    wall = _time.perf_counter() - wall0
    nl = int(ireg[_NL])
    opts_out = dict(opts)
    if stats is not None:
        stats["full_searches"] = int(ireg[_NFULL])
        stats["index_builds"] = int(ireg[_NBUILD])
    if record:
        trace.extend(zip(tr[0][:nl].tolist(), tr[1][:nl].tolist(), tr[2][:nl].tolist()))
    nd = int(ireg[_NDONE])
    span = T - sc.run.warmup
    width = np.diff(edges)
    return ClusterRun(
        allocator=name, users=tuple(sc.user_names()), resources=sc.resources,
        share_mean=a["share_tot"] / span, tasks_mean=a["tasks_tot"] / span, utilisation=a["use_tot"] / span,
        sample_time=0.5 * (edges[:-1] + edges[1:]),
        share_time=a["share_bin"] / width[:, None], util_time=a["use_bin"] / width[:, None],
        job_user=a["done_user"][:nd].copy(), job_arrival=a["done_arr"][:nd].copy(),
        job_finish=a["done_fin"][:nd].copy(), job_tasks=a["done_tasks"][:nd].copy(),
        launched=a["launched"], events=int(ireg[_EVENTS]), picks=int(ireg[_PICKS]), wall=wall,
        jobs_arrived=int(np.count_nonzero(jobs.time < T)), options=opts_out, engine="compiled")
