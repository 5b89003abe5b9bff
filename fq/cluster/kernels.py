"""Compiled picks of the task-level cluster mechanisms (the kernels of ``router/cluster_engine.py``).

The same decisions as the plain-Python ``pick`` functions of :mod:`fq.cluster.drf`,
:mod:`fq.cluster.drfh` and :mod:`fq.cluster.slots` (which stay the test oracle), on a
structure of arrays instead of a :class:`~fq.cluster.state.ClusterState`:

``free[S, R]``     free capacity of every server (float64, updated in place)
``thresh[U, R]``   the fit threshold ``charge[u] - FIT_TOL * total`` (computed once by numpy, so the
                   fit test ``free[s] >= thresh[u]`` has the reference's bits)
``tmax, tmin``     a segment tree over the servers: node ``n`` (root 1, children ``2n, 2n + 1``,
                   server ``s`` at leaf ``L + s``) holds the component-wise max and min of the free
                   vectors below it, ``tmax[n * R + r]``; padding leaves hold ``-inf`` / ``+inf``

Server choice
-------------
First-Fit ([DRF] Algorithm 1 on several servers; [DRFH] §V-B First-Fit): the lowest server index
with ``free[s] >= thresh[u]``: a left-to-right descent of the tree that skips every subtree whose
max misses the threshold in some resource.

Best-Fit ([DRFH] §V-B, eq. (9)): the fitting server of least
``H(u, s) = sum_r | D_ur / D_uk - c_sr / c_sk |`` with ``D_u = demand[u] / total`` and
``c_s = free[s] / total`` (ties: lowest index).  A branch-and-bound descent of the same tree: a
subtree is skipped when no server in it fits, or when a lower bound of ``H`` over its box of free
vectors (``[max(tmin, thresh), tmax]`` per resource) is above the best ``H`` found (or equal to it
with a higher first index).  Correctly rounded division, subtraction and addition are monotone, so
the bound computed in floating point with the same operations and the same summation order as
numpy (:func:`pairwise_sum`) never exceeds the ``H`` the reference computes: the choice is exactly
the reference's.  When ``thresh[u, k] <= 0`` a server with nothing free of the normalising
resource could fit, ``H`` may be NaN (numpy's ``argmin`` then returns the first NaN), and the
search falls back to a scan of every server with numpy's rule.

Blocked users: a user found to fit nowhere at instant ``p`` is stamped ``blocked_at[u] = p``.  At the
next instant it can only fit on a server freed in between (the ``dirty`` list: launches only take
capacity), so its search scans that list instead of the tree.

Best-Fit candidate lists (:func:`best_fit_topm`, :func:`cand_sync`): each user keeps its ``M`` best
fitting servers, sorted by the key ``(H, index)``, and a threshold such that every fitting server
outside the list has a larger key (``+inf`` when the list holds every fitting server).  Every
change of a server's free vector is written to a ring; before a pick the user re-keys the servers
changed since its last look (a server leaves the list, or enters it when its key is below the
threshold; an overflow lowers the threshold to the new last key), so the list's head is the exact
Best-Fit choice.  Only an empty list with a finite threshold (or a wrapped ring) needs a new search.

Best-Fit shape index (:func:`x_rebuild`, :func:`x_sync`, :func:`best_fit_index`): for a user
normalised by resource 0, ``H(u, s) = sum_r |aa[u, r] - q0[s, r]|`` with ``q0[s] = c_s / c_s0``, so
with two resources the best servers are the fitting ones whose free shape ``q0[s, 1]`` is nearest
``aa[u, 1]``.  The servers are kept sorted by ``(q0[s, 1], s)`` under a tree on the segment tree's
layout holding per node the max free vector, the min / max of ``q0`` and the least server index of
its members.  Members are servers unchanged since the last build: a changed server's leaf is
emptied and the server joins an overflow list, scanned by every search, until a rebuild merges
the list back in order.  A node's shape range is thus exact, and the bound (the distance from
``aa[u]`` to that range, per resource, summed in numpy's order) is monotone-rounding safe as above.
"""

from __future__ import annotations

import numpy as np

from mrfq.fq._jit import jit_inline


@jit_inline(error_model="numpy", wraparound=True)
def pairwise_sum(x, n):
    """``numpy.add.reduce`` of ``x[:n]`` with numpy's association order (pairwise summation:
    a plain loop below 8 terms, 8 accumulators up to 128); ``n <= 128`` (resources)."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += x[i]
        return res
    r0 = x[0]
    r1 = x[1]
    r2 = x[2]
    r3 = x[3]
    r4 = x[4]
    r5 = x[5]
    r6 = x[6]
    r7 = x[7]
    m = n - n % 8
    i = 8
    while i < m:
        r0 += x[i]
        r1 += x[i + 1]
        r2 += x[i + 2]
        r3 += x[i + 3]
        r4 += x[i + 4]
        r5 += x[i + 5]
        r6 += x[i + 6]
        r7 += x[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for j in range(m, n):
        res += x[j]
    return res


@jit_inline(error_model="numpy", wraparound=True)
def fits_server(free, thresh, u, s, R):
    """One more task of user ``u`` fits on server ``s`` (:meth:`ClusterState.fits`)."""
    for r in range(R):
        if not free[s, r] >= thresh[u, r]:
            return False
    return True


@jit_inline(error_model="numpy", wraparound=True)
def fits_node(tmax, thresh, u, node, R):
    """Some server below ``node`` may fit (its component-wise max reaches the threshold)."""
    b = node * R
    for r in range(R):
        if not tmax[b + r] >= thresh[u, r]:
            return False
    return True


@jit_inline(error_model="numpy", wraparound=True)
def tree_update(tmax, tmin, free, s, L, R):
    """Server ``s``'s free vector changed: refresh its leaf and the path up to the first node whose
    max and min keep their bits (its ancestors then keep theirs)."""
    n = L + s
    b = n * R
    for r in range(R):
        tmax[b + r] = free[s, r]
        tmin[b + r] = free[s, r]
    n >>= 1
    while n >= 1:
        b = n * R
        lft = 2 * n * R
        rgt = lft + R
        same = True
        for r in range(R):
            a = tmax[lft + r]
            c = tmax[rgt + r]
            x = a if a >= c else c
            if x != tmax[b + r] or x == 0.0:  # (a zero may change its sign)
                same = False
                tmax[b + r] = x
            a = tmin[lft + r]
            c = tmin[rgt + r]
            x = a if a <= c else c
            if x != tmin[b + r] or x == 0.0:
                same = False
                tmin[b + r] = x
        if same:
            break
        n >>= 1


@jit_inline(error_model="numpy", wraparound=True)
def fitness(free, total, aa, kref, u, s, R, work, q0):
    """[DRFH] eq. (9) ``H(u, s)``, operation for operation as :func:`fq.cluster.drfh.fitness`
    (``aa[u] = D_u / D_uk`` precomputed by numpy; ``q0[s] = c_s / c_s0``, kept by
    :func:`shape_update`, serves the users normalised by resource 0 without a division)."""
    k = kref[u]
    if k == 0:
        for r in range(R):
            work[r] = abs(aa[u, r] - q0[s, r])
    else:
        ck = free[s, k] / total[k]
        for r in range(R):
            work[r] = abs(aa[u, r] - (free[s, r] / total[r]) / ck)
    return pairwise_sum(work, R)


@jit_inline(error_model="numpy", wraparound=True)
def shape_update(q0, free, total, s, R):
    """``q0[s, r] = (free[s, r] / total[r]) / (free[s, 0] / total[0])``: server s's free shape
    normalised by resource 0, the operations of eq. (9)."""
    ck = free[s, 0] / total[0]
    for r in range(R):
        q0[s, r] = (free[s, r] / total[r]) / ck


@jit_inline(error_model="numpy", wraparound=True)
def _better(h, s, bh, bs):
    """(h, s) before (bh, bs) in numpy argmin order: NaN first, then least H, then least index."""
    if bs < 0:
        return True
    if h != h:
        return bh == bh or s < bs
    if bh != bh:
        return False
    return h < bh or (h == bh and s < bs)


@jit_inline(error_model="numpy", wraparound=True)
def first_fit_tree(tmax, thresh, u, L, R, stack):
    """Lowest server index that fits user ``u``, or -1 (left-to-right descent with pruning)."""
    top = 0
    stack[0] = 1
    top = 1
    while top > 0:
        top -= 1
        n = stack[top]
        if not fits_node(tmax, thresh, u, n, R):
            continue
        if n >= L:
            return n - L
        stack[top] = 2 * n + 1
        stack[top + 1] = 2 * n
        top += 2
    return -1


@jit_inline(error_model="numpy", wraparound=True)
def _lower_bound(tmax, tmin, thresh, total, aa, kref, u, n, R, work):
    """A lower bound of ``H(u, s)`` over the fitting servers below node ``n`` (see the module doc)."""
    k = kref[u]
    b = n * R
    lo = tmin[b + k]
    if thresh[u, k] > lo:
        lo = thresh[u, k]
    cklo = lo / total[k]
    ckhi = tmax[b + k] / total[k]
    for r in range(R):
        lo = tmin[b + r]
        if thresh[u, r] > lo:
            lo = thresh[u, r]
        clo = lo / total[r]
        chi = tmax[b + r] / total[r]
        q1 = clo / cklo
        q2 = clo / ckhi
        qlo = q1 if q1 <= q2 else q2
        q1 = chi / cklo
        q2 = chi / ckhi
        qhi = q1 if q1 >= q2 else q2
        a = aa[u, r]
        if a < qlo:
            work[r] = abs(a - qlo)
        elif a > qhi:
            work[r] = abs(a - qhi)
        else:
            work[r] = 0.0
    return pairwise_sum(work, R)


@jit_inline(error_model="numpy", wraparound=True)
def best_fit_scan(free, thresh, total, aa, kref, u, S, R, work, q0):
    """Every server, numpy's argmin rule (the fallback when H may be NaN)."""
    bs = -1
    bh = 0.0
    for s in range(S):
        if fits_server(free, thresh, u, s, R):
            h = fitness(free, total, aa, kref, u, s, R, work, q0)
            if _better(h, s, bh, bs):
                bh = h
                bs = s
    return bs


@jit_inline(error_model="numpy", wraparound=True)
def best_fit_tree(free, tmax, tmin, thresh, total, aa, kref, u, S, L, R, stack, lbs, work, q0):
    """The fitting server of least H (ties: lowest index), or -1: branch and bound on the tree."""
    if not thresh[u, kref[u]] > 0.0:
        return best_fit_scan(free, thresh, total, aa, kref, u, S, R, work, q0)
    if not fits_node(tmax, thresh, u, 1, R):
        return -1
    bs = -1
    bh = np.inf
    stack[0] = 1
    lbs[0] = 0.0
    top = 1
    while top > 0:
        top -= 1
        n = stack[top]
        lb = lbs[top]
        if bs >= 0:
            if lb > bh:
                continue
            if lb == bh:
                first = n
                while first < L:
                    first = 2 * first
                if first - L > bs:
                    continue
        if n >= L:
            s = n - L
            h = fitness(free, total, aa, kref, u, s, R, work, q0)
            if bs < 0 or h < bh or (h == bh and s < bs):
                bh = h
                bs = s
            continue
        c0 = 2 * n
        c1 = c0 + 1
        f0 = fits_node(tmax, thresh, u, c0, R)
        f1 = fits_node(tmax, thresh, u, c1, R)
        if f0 and f1:
            l0 = _lower_bound(tmax, tmin, thresh, total, aa, kref, u, c0, R, work)
            l1 = _lower_bound(tmax, tmin, thresh, total, aa, kref, u, c1, R, work)
            if l1 < l0:  # the smaller bound is visited first (pushed last)
                stack[top] = c0
                lbs[top] = l0
                stack[top + 1] = c1
                lbs[top + 1] = l1
            else:
                stack[top] = c1
                lbs[top] = l1
                stack[top + 1] = c0
                lbs[top + 1] = l0
            top += 2
        elif f0:
            stack[top] = c0
            lbs[top] = _lower_bound(tmax, tmin, thresh, total, aa, kref, u, c0, R, work)
            top += 1
        elif f1:
            stack[top] = c1
            lbs[top] = _lower_bound(tmax, tmin, thresh, total, aa, kref, u, c1, R, work)
            top += 1
    return bs


@jit_inline(error_model="numpy", wraparound=True)
def dirty_search(free, thresh, total, aa, kref, u, best, dirty, ndirty, R, work, q0):
    """The server for a user that fitted nowhere at the previous instant: only the servers freed
    since (``dirty[:ndirty]``) can fit; First-Fit takes the least index, Best-Fit the least H."""
    bs = -1
    bh = 0.0
    known = False  # bh is H(u, bs): computed only once a second server fits
    for i in range(ndirty):
        s = dirty[i]
        if fits_server(free, thresh, u, s, R):
            if best:
                if bs < 0:
                    bs = s
                    continue
                if not known:
                    bh = fitness(free, total, aa, kref, u, bs, R, work, q0)
                    known = True
                h = fitness(free, total, aa, kref, u, s, R, work, q0)
                if _better(h, s, bh, bs):
                    bh = h
                    bs = s
            elif bs < 0 or s < bs:
                bs = s
    return bs


def build_tree(free: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The segment tree (``tmax``, ``tmin``, ``L``) of a free-capacity matrix (S, R)."""
    S, R = free.shape
    L = 1
    while L < S:
        L *= 2
    tmax = np.full((2 * L, R), -np.inf)
    tmin = np.full((2 * L, R), np.inf)
    tmax[L:L + S] = free
    tmin[L:L + S] = free
    lo = L // 2
    while lo >= 1:  # one level at a time, leaves up
        tmax[lo:2 * lo] = np.maximum(tmax[2 * lo:4 * lo:2], tmax[2 * lo + 1:4 * lo:2])
        tmin[lo:2 * lo] = np.minimum(tmin[2 * lo:4 * lo:2], tmin[2 * lo + 1:4 * lo:2])
        lo //= 2
    return tmax.reshape(-1), tmin.reshape(-1), L


# ---------------------------------------------------------------------------
# Best-Fit candidate lists: each user keeps its M best servers between picks
@jit_inline(error_model="numpy", wraparound=True)
def _key_less(h, s, bh, bs):
    """(h, s) < (bh, bs): least H, then least server index (H finite here)."""
    return h < bh or (h == bh and s < bs)


@jit_inline(error_model="numpy", wraparound=True)
def cand_insert(ch, cs, cn, u, h, s, M):
    """Insert (h, s) into user u's sorted list of ``cn[u]`` candidates; drops the last beyond M and
    returns True when it did."""
    i = cn[u]
    while i > 0 and _key_less(h, s, ch[u, i - 1], cs[u, i - 1]):
        if i < M:
            ch[u, i] = ch[u, i - 1]
            cs[u, i] = cs[u, i - 1]
        i -= 1
    if i < M:
        ch[u, i] = h
        cs[u, i] = s
        if cn[u] < M:
            cn[u] += 1
            return False
        return True
    return True


@jit_inline(error_model="numpy", wraparound=True)
def cand_remove(cs, ch, cn, u, s):
    """Remove server s from user u's list if it is there."""
    n = cn[u]
    j = -1
    for i in range(n):
        if cs[u, i] == s:
            j = i
            break
    if j < 0:
        return
    for i in range(j, n - 1):
        ch[u, i] = ch[u, i + 1]
        cs[u, i] = cs[u, i + 1]
    cn[u] = n - 1


@jit_inline(error_model="numpy", wraparound=True)
def best_fit_topm(free, tmax, tmin, thresh, total, aa, kref, u, L, R, stack, lbs, work, ch, cs, cn, thh, ths, M, q0):
    """Branch and bound for user u's M best fitting servers (keys (H, index)), into its list;
    ``thh[u], ths[u]``: every fitting server outside the list has a larger key (+inf: none).  The
    users normalised by another resource than 0 (the others search :func:`best_fit_index`)."""
    cn[u] = 0
    thh[u] = np.inf
    ths[u] = -1
    if not fits_node(tmax, thresh, u, 1, R):
        return
    stack[0] = 1
    lbs[0] = 0.0
    top = 1
    while top > 0:
        top -= 1
        n = stack[top]
        lb = lbs[top]
        if cn[u] == M:
            bh = ch[u, M - 1]
            if lb > bh:
                continue
            if lb == bh:
                first = n
                while first < L:
                    first = 2 * first
                if first - L > cs[u, M - 1]:
                    continue
        if n >= L:
            s = n - L
            h = fitness(free, total, aa, kref, u, s, R, work, q0)
            if cn[u] < M or _key_less(h, s, ch[u, M - 1], cs[u, M - 1]):
                cand_insert(ch, cs, cn, u, h, s, M)
            continue
        c0 = 2 * n
        c1 = c0 + 1
        f0 = fits_node(tmax, thresh, u, c0, R)
        f1 = fits_node(tmax, thresh, u, c1, R)
        if f0 and f1:
            l0 = _lower_bound(tmax, tmin, thresh, total, aa, kref, u, c0, R, work)
            l1 = _lower_bound(tmax, tmin, thresh, total, aa, kref, u, c1, R, work)
            if l1 < l0:
                stack[top] = c0
                lbs[top] = l0
                stack[top + 1] = c1
                lbs[top + 1] = l1
            else:
                stack[top] = c1
                lbs[top] = l1
                stack[top + 1] = c0
                lbs[top + 1] = l0
            top += 2
        elif f0:
            stack[top] = c0
            lbs[top] = _lower_bound(tmax, tmin, thresh, total, aa, kref, u, c0, R, work)
            top += 1
        elif f1:
            stack[top] = c1
            lbs[top] = _lower_bound(tmax, tmin, thresh, total, aa, kref, u, c1, R, work)
            top += 1
    if cn[u] == M:
        thh[u] = ch[u, M - 1]
        ths[u] = cs[u, M - 1]


@jit_inline(error_model="numpy", wraparound=True)
def cand_sync(free, thresh, total, aa, kref, u, R, work, ch, cs, cn, thh, ths, M, log, G, lpos, upos, q0):
    """Bring user u's list up to date with the servers changed since its last look (``log``, a ring
    of G server indices written up to ``lpos``).  Returns False when the ring has wrapped (the list
    is then unknown)."""
    if lpos - upos[u] > G:
        return False
    for p in range(upos[u], lpos):
        x = log[p % G]
        cand_remove(cs, ch, cn, u, x)
        if fits_server(free, thresh, u, x, R):
            h = fitness(free, total, aa, kref, u, x, R, work, q0)
            if ths[u] < 0 or _key_less(h, x, thh[u], ths[u]) or (x == ths[u] and h == thh[u]):
                if cand_insert(ch, cs, cn, u, h, x, M):
                    thh[u] = ch[u, M - 1]
                    ths[u] = cs[u, M - 1]
    upos[u] = lpos
    return True


# ---------------------------------------------------------------------------
# Best-Fit shape index: the servers sorted by free shape, for the users normalised by resource 0
@jit_inline(error_model="numpy", wraparound=True)
def _x_less(q0, a, b, kc):
    """Server a before server b in the shape index: key ``(q0[., kc], index)``."""
    x = q0[a, kc]
    y = q0[b, kc]
    return x < y or (x == y and a < b)


@jit_inline(error_model="numpy", wraparound=True)
def _x_sift(v, i, n, q0, kc):
    """Heap sort's sift-down of ``v[i]`` in the max-heap ``v[:n]`` (order :func:`_x_less`)."""
    x = v[i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _x_less(q0, v[c], v[c + 1], kc):
            c += 1
        if not _x_less(q0, x, v[c], kc):
            break
        v[i] = v[c]
        i = c
    v[i] = x


@jit_inline(error_model="numpy", wraparound=True)
def _x_member(free, q0, s):
    """Server s enters the index: free resource 0 positive and a finite shape normalised by it (the
    others fit no user of the index but the ones whose share of resource 0 underflows, which stay
    in the overflow list)."""
    return free[s, 0] > 0.0 and q0[s, 0] == 1.0


@jit_inline(error_model="numpy", wraparound=True)
def x_rebuild(free, q0, S, L, R, xord, xn, xout, ov, nov, xbuf, xfmax, xqmn, xqmx, xsmin, full, xpos_of):
    """Rebuild the shape index: the members unchanged since the last build (``xord[:xn]``, already in
    order) merged with the changed servers (``ov[:nov]``, heap-sorted), or every server when
    ``full``; then the tree over the order, bottom-up: per node the component-wise max free
    capacity (``xfmax``), min / max free shape ``q0`` (``xqmn, xqmx``) and least server index
    (``xsmin``) of its members; ``xpos_of[s]``: server s's place in the order (-1: not a member).
    Returns ``(xn, nov)``: members and servers left in the overflow."""
    kc = 1 if R > 1 else 0
    j = 0
    if full:
        for s in range(S):
            xout[s] = False
            xpos_of[s] = -1
        nov = 0
        for s in range(S):
            if _x_member(free, q0, s):
                xbuf[j] = s
                j += 1
            elif free[s, 0] > 0.0:
                xout[s] = True
                ov[nov] = s
                nov += 1
        m = j
        j = 0
    else:
        for i in range(xn):  # the unchanged members, in order
            s = xord[i]
            if not xout[s]:
                xord[j] = s
                j += 1
        m = 0
        k = 0
        for i in range(nov):
            s = ov[i]
            if _x_member(free, q0, s):
                xout[s] = False
                xbuf[m] = s
                m += 1
            elif free[s, 0] > 0.0:
                ov[k] = s
                k += 1
            else:  # fits no user of the index until it changes (then the ring brings it back)
                xout[s] = False
        nov = k
    for i in range(m // 2 - 1, -1, -1):  # heap sort of the changed members
        _x_sift(xbuf, i, m, q0, kc)
    for e in range(m - 1, 0, -1):
        x = xbuf[0]
        xbuf[0] = xbuf[e]
        xbuf[e] = x
        _x_sift(xbuf, 0, e, q0, kc)
    i1 = j - 1  # merge from the back, in place
    i2 = m - 1
    n = j + m
    for p in range(n - 1, -1, -1):
        if i2 < 0:
            break
        if i1 >= 0 and _x_less(q0, xbuf[i2], xord[i1], kc):
            xord[p] = xord[i1]
            i1 -= 1
        else:
            xord[p] = xbuf[i2]
            i2 -= 1
    for i in range(L):
        b = (L + i) * R
        if i < n:
            s = xord[i]
            xpos_of[s] = i
            for r in range(R):
                xfmax[b + r] = free[s, r]
                xqmn[b + r] = q0[s, r]
                xqmx[b + r] = q0[s, r]
            xsmin[L + i] = s
        else:
            for r in range(R):
                xfmax[b + r] = -np.inf
                xqmn[b + r] = np.inf
                xqmx[b + r] = -np.inf
            xsmin[L + i] = S
    for nd in range(L - 1, 0, -1):
        b = nd * R
        lft = 2 * nd * R
        rgt = lft + R
        for r in range(R):
            a = xfmax[lft + r]
            c = xfmax[rgt + r]
            xfmax[b + r] = a if a >= c else c
            a = xqmn[lft + r]
            c = xqmn[rgt + r]
            xqmn[b + r] = a if a <= c else c
            a = xqmx[lft + r]
            c = xqmx[rgt + r]
            xqmx[b + r] = a if a >= c else c
        a = xsmin[2 * nd]
        c = xsmin[2 * nd + 1]
        xsmin[nd] = a if a <= c else c
    return n, nov


@jit_inline(error_model="numpy", wraparound=True)
def x_sync(log, G, lpos, xpos, xout, ov, nov, xpos_of, L, R, xfmax, xqmn, xqmx, xsmin, S):
    """The servers changed since ``xpos`` (the ring ``log``) leave the index for the overflow list
    (``xout[s]``: s is in ``ov[:nov]``): a member's leaf is emptied and its path refreshed up to the
    first node that keeps its values.  Returns the new ``nov``.  The caller checks the ring has not
    wrapped."""
    for p in range(xpos, lpos):
        s = log[p % G]
        if xout[s]:
            continue
        xout[s] = True
        ov[nov] = s
        nov += 1
        i = xpos_of[s]
        if i < 0:
            continue
        xpos_of[s] = -1
        n = L + i
        b = n * R
        for r in range(R):
            xfmax[b + r] = -np.inf
            xqmn[b + r] = np.inf
            xqmx[b + r] = -np.inf
        xsmin[n] = S
        n >>= 1
        while n >= 1:
            b = n * R
            lft = 2 * n * R
            rgt = lft + R
            same = True
            for r in range(R):
                a = xfmax[lft + r]
                c = xfmax[rgt + r]
                x = a if a >= c else c
                if x != xfmax[b + r]:
                    same = False
                    xfmax[b + r] = x
                a = xqmn[lft + r]
                c = xqmn[rgt + r]
                x = a if a <= c else c
                if x != xqmn[b + r]:
                    same = False
                    xqmn[b + r] = x
                a = xqmx[lft + r]
                c = xqmx[rgt + r]
                x = a if a >= c else c
                if x != xqmx[b + r]:
                    same = False
                    xqmx[b + r] = x
            a = xsmin[2 * n]
            c = xsmin[2 * n + 1]
            x = a if a <= c else c
            if x != xsmin[n]:
                same = False
                xsmin[n] = x
            if same:
                break
            n >>= 1
    return nov


@jit_inline(error_model="numpy", wraparound=True)
def _x_bound(xqmn, xqmx, aa, u, n, R, work):
    """A lower bound of ``H(u, s)`` (eq. (9), user normalised by resource 0) over the members below
    node ``n``: per resource the distance from ``aa[u, r]`` to their range of free shapes, summed in
    numpy's order; each term is at most the term numpy computes (monotone rounding)."""
    b = n * R
    for r in range(R):
        a = aa[u, r]
        lo = xqmn[b + r]
        hi = xqmx[b + r]
        if a < lo:
            work[r] = abs(a - lo)
        elif a > hi:
            work[r] = abs(a - hi)
        else:
            work[r] = 0.0
    return pairwise_sum(work, R)


@jit_inline(error_model="numpy", wraparound=True)
def best_fit_index(free, thresh, total, aa, kref, u, L, R, stack, lbs, work, ch, cs, cn, thh, ths, M, q0,
                   xord, xn, xout, ov, nov, xfmax, xqmn, xqmx, xsmin):
    """User u's M best fitting servers (keys (H, index), ``kref[u] == 0``) into its list, as
    :func:`best_fit_topm`: a branch and bound on the shape index (the members are unchanged since
    its build, so a node's range of shapes is exact and narrow: the bound prunes all but the
    nodes near ``aa[u]``; a node is also skipped when its max free capacity misses the threshold,
    or when its bound equals the M-th key and its least server index is above that key's), then
    the changed servers ``ov[:nov]`` one by one."""
    cn[u] = 0
    thh[u] = np.inf
    ths[u] = -1
    if xn > 0 and fits_node(xfmax, thresh, u, 1, R):
        stack[0] = 1
        lbs[0] = 0.0
        top = 1
        while top > 0:
            top -= 1
            n = stack[top]
            lb = lbs[top]
            if cn[u] == M:
                bh = ch[u, M - 1]
                if lb > bh:
                    continue
                if lb == bh and xsmin[n] > cs[u, M - 1]:
                    continue
            if n >= L:
                s = xord[n - L]
                if xout[s]:
                    continue
                h = fitness(free, total, aa, kref, u, s, R, work, q0)
                if cn[u] < M or _key_less(h, s, ch[u, M - 1], cs[u, M - 1]):
                    cand_insert(ch, cs, cn, u, h, s, M)
                continue
            c0 = 2 * n
            c1 = c0 + 1
            f0 = fits_node(xfmax, thresh, u, c0, R)
            f1 = fits_node(xfmax, thresh, u, c1, R)
            if f0 and f1:
                l0 = _x_bound(xqmn, xqmx, aa, u, c0, R, work)
                l1 = _x_bound(xqmn, xqmx, aa, u, c1, R, work)
                if l1 < l0:
                    stack[top] = c0
                    lbs[top] = l0
                    stack[top + 1] = c1
                    lbs[top + 1] = l1
                else:
                    stack[top] = c1
                    lbs[top] = l1
                    stack[top + 1] = c0
                    lbs[top + 1] = l0
                top += 2
            elif f0:
                stack[top] = c0
                lbs[top] = _x_bound(xqmn, xqmx, aa, u, c0, R, work)
                top += 1
            elif f1:
                stack[top] = c1
                lbs[top] = _x_bound(xqmn, xqmx, aa, u, c1, R, work)
                top += 1
    for i in range(nov):
        s = ov[i]
        if fits_server(free, thresh, u, s, R):
            h = fitness(free, total, aa, kref, u, s, R, work, q0)
            if cn[u] < M or _key_less(h, s, ch[u, M - 1], cs[u, M - 1]):
                cand_insert(ch, cs, cn, u, h, s, M)
    if cn[u] == M:
        thh[u] = ch[u, M - 1]
        ths[u] = cs[u, M - 1]
