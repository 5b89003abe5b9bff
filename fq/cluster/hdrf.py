"""Hierarchical DRF with discrete tasks ([H-DRF] Bhattacharya, Culler, Friedman, Ghodsi, Shenker,
Stoica, *Hierarchical scheduling for diverse datacenter workloads*, SoCC 2013, §3).

The cluster is a weighted tree (:class:`fq.cluster.state.Tree`): users are the leaves, internal
nodes are organisations.  A node's *dominant share* is ``s_n = max_j U_nj / R_j`` where ``U_n``
is the resource consumption attributed to it and ``R`` the pooled capacity.  Every mechanism here
launches one task by the allocation walk of [H-DRF] Algorithm 4 (``Alloc``): from the root, go to
the child with the lowest weighted dominant share ``s_c / w_c`` among the children that have a
task in their subtree that fits on some server now, until a leaf; launch one of its tasks.  They
differ in how ``U_n`` is attributed to internal nodes:

``pick_naive`` — naive H-DRF (§3.3)
    ``U_n`` = the sum of the children's consumption (Algorithm 1's attribution, used online).
    From an empty cluster it computes the static H-DRF allocation of Algorithm 1 with discrete
    tasks; online, once tasks finish, it can starve a job (Fig. 4: n2,1).
``pick`` — dynamic H-DRF (§3.4, Algorithms 2-4), both fixes:
    *rescaling to the minimum node*: at every internal node, ``f`` = the minimum dominant share
    of its non-blocked children; every non-blocked child's vector is rescaled to dominant share
    ``f`` before the children's vectors are summed (Algorithm 3 ``UpdateS``);
    *ignoring blocked nodes*: a leaf is blocked when it has no pending task or a resource it needs
    is saturated; an internal node when all its children are; blocked children are summed
    unscaled and left out of the minimum; dominant shares of every node (Algorithm 3 ``s_i``)
    are taken over the unsaturated resources ``Y`` only.
    The options ``rescale=False`` / ``ignore_blocked=False`` switch either fix off (the paper's
    counter-examples: Fig. 5 defeats rescaling alone; §3.4's ``<1, eps>`` variant of Fig. 4
    defeats ignoring blocked nodes alone); both off is naive H-DRF.
``pick_collapsed`` — collapsed hierarchy (§3.2)
    each leaf gets the flat weight ``prod over its path of w_n / sum of the weights of n's
    demanding siblings (n included)``, then flat weighted DRF ([DRF] §4.3) picks the user with the
    lowest ``s_u / w_u`` whose task fits.  Violates the share guarantee of internal nodes whose
    children dovetail.

Choices the paper leaves open (it allocates a divisible sliver of the free resources ``W`` of
one server), named as options:

``weighted rescaling`` (not an option: the only consistent generalisation of the paper's
    equal-weight text): ``f = min_c s_c / w_c`` over non-blocked children and child ``c``'s
    vector is rescaled to dominant share ``f w_c``.
``saturation``
    when a resource counts as *saturated* and a leaf as *blocked*; with discrete tasks a
    resource rarely reaches exactly zero free.  ``"resource"`` (default): resource ``j`` is
    saturated when no demanding leaf's per-task need of ``j`` fits in the free ``j`` of any
    server; a leaf is blocked when it has no pending task or needs a saturated resource (the
    paper's definition, §3.4, read per resource).  ``"fit"``: a leaf is blocked when its whole
    next task fits on no server, and ``j`` is saturated when no unblocked leaf needs it; this
    reading fails §3.4's ``<1, eps>`` example (a leaf whose task just misses is summed
    unscaled, so its parent looks full and its sibling starves: see the tests).
    ``"exhausted"``: ``j`` is saturated only when its pooled free amount is zero (to
    ``FIT_TOL``); blocked as for ``"resource"``.
``server``
    ``"first-fit"`` (default): the lowest-index server on which the task fits; ``"best-fit"``:
    the server of least [DRFH] eq. (9) fitness (:func:`fq.cluster.drfh.fitness`).
``blocked``
    ``"skip"`` (default, Algorithm 4: "the child with the lowest dominant share ... which also has a
    task in its subtree that can be scheduled"); ``"stop"``: the walk follows the lowest child with
    a pending task even when nothing below it fits, and then launches nothing, as
    :mod:`fq.cluster.drf`'s ``blocked="stop"``: a scheduler that only ever serves the most deserving
    queue and leaves resources idle (Fig. 4: 5 of the 10 GPUs; [H-DRF] §1 and §5.2 report such
    non-Pareto-efficient hierarchical schedulers without giving their rule).
``recompute`` (collapsed only)
    ``True`` (default, §3.2 "each time jobs are added, removed, or change their
    demand-status, the weights are recalculated"): sibling sums over demanding siblings only;
    ``False``: over all siblings (the weights fixed once).

Ties between children with equal ``s_c / w_c`` go to the lowest node index (declaration order
within internal nodes and within leaves; internal nodes come first).
"""

from __future__ import annotations

import numpy as np

from mrfq.fq.cluster.drfh import fitness
from mrfq.fq.cluster.state import FIT_TOL, ClusterState, Tree

SATURATION = ("resource", "fit", "exhausted")
SERVER = ("first-fit", "best-fit")
RECOMPUTE = (True, False)
BLOCKED = ("skip", "stop")
FLAGS = (True, False)


def _tree(state: ClusterState) -> Tree:
    if state.tree is not None:
        return state.tree
    U = state.n_users  # no tree given: the flat tree, on which every variant is weighted DRF
    key = (U, state.weight.tobytes())
    if key not in _FLAT:
        if len(_FLAT) > 256:
            _FLAT.clear()
        _FLAT[key] = _flat_tree(state)
    return _FLAT[key]


_FLAT: dict[tuple, Tree] = {}


def _flat_tree(state: ClusterState) -> Tree:
    U = state.n_users
    return Tree(parent=np.concatenate(([-1], np.zeros(U, dtype=np.int64))),
                weight=np.concatenate(([1.0], state.weight)), leaf=np.arange(1, U + 1, dtype=np.int64))


#: per-tree structure, keyed by id(tree); the tree itself is kept in the value so the id stays valid
_STRUCT: dict[int, tuple] = {}


def _structure(tree: Tree) -> tuple[Tree, list[np.ndarray], list[int], dict[int, int]]:
    """(tree, children[n], internal nodes children-first, leaf node -> user), computed once per tree."""
    hit = _STRUCT.get(id(tree))
    if hit is not None and hit[0] is tree:
        return hit
    N = tree.parent.shape[0]
    children = [np.flatnonzero(tree.parent == n) for n in range(N)]
    internal = [n for n in range(N - 1, -1, -1) if children[n].size]
    if len(_STRUCT) > 256:
        _STRUCT.clear()
    hit = (tree, children, internal, {int(v): u for u, v in enumerate(tree.leaf)})
    _STRUCT[id(tree)] = hit
    return hit


def _launchable(state: ClusterState) -> tuple[np.ndarray, np.ndarray]:
    """(can[U], fits[U, S]): whether user u has a pending task that fits on some server."""
    T = state.total
    fits = np.all(state.free[None, :, :] >= state.charge[:, None, :] - FIT_TOL * T, axis=2)
    can = (state.pending > 0) & fits.any(axis=1)
    return can, fits


def _subtree_any(tree: Tree, leaf_flag: np.ndarray) -> np.ndarray:
    """flag[N]: some leaf below node n (n included) has ``leaf_flag`` set."""
    N = tree.parent.shape[0]
    flag = np.zeros(N, dtype=bool)
    flag[tree.leaf] = leaf_flag
    for n in range(N - 1, 0, -1):  # parents before children: children have larger indices
        if flag[n]:
            flag[tree.parent[n]] = True
    return flag


def node_shares(state: ClusterState, *, rescale: bool = True, ignore_blocked: bool = True,
                saturation: str = "resource", can: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """[H-DRF] Algorithm 3 ``UpdateS``: (s[N], U[N, R]) the dominant share and attributed consumption
    (as fractions of the pooled capacity) of every node, with the chosen fixes."""
    tree = _tree(state)
    T = state.total
    N = tree.parent.shape[0]
    R = T.shape[0]
    if can is None:
        can = _launchable(state)[0]
    demanding = state.pending > 0
    if ignore_blocked:
        if saturation == "fit":
            sat = ~np.any(can[:, None] & (state.demand > 0), axis=0)
            unblocked = can
        else:
            if saturation == "resource":  # no demanding task's j-component fits on any server
                room = state.free.max(axis=0)[None, :] >= state.charge - FIT_TOL * T
                sat = ~np.any(demanding[:, None] & (state.demand > 0) & room, axis=0)
            else:  # "exhausted"
                sat = state.free.sum(axis=0) <= FIT_TOL * T
            unblocked = demanding & ~np.any((state.demand > 0) & sat[None, :], axis=1)
        Y = ~sat
        active = _subtree_any(tree, unblocked)
    else:
        Y = np.ones(R, dtype=bool)
        active = _subtree_any(tree, demanding)
    Uv = np.zeros((N, R))
    Uv[tree.leaf] = state.allocation() / T
    s = np.zeros(N)
    mask = Y.astype(np.float64)
    s[tree.leaf] = (Uv[tree.leaf] * mask).max(axis=1)
    w = tree.weight
    _, children, internal, _ = _structure(tree)
    for n in internal:
        ch = children[n]
        vec = Uv[ch].copy()
        if rescale:
            act = ch[active[ch]]
            if act.size:
                f = float(np.min(s[act] / w[act]))
                for i, c in enumerate(ch):
                    if active[c] and s[c] > 0:
                        vec[i] *= f * w[c] / s[c]
        Uv[n] = vec.sum(axis=0)
        s[n] = float((Uv[n] * mask).max())
    return s, Uv


def _walk(state: ClusterState, s: np.ndarray, can: np.ndarray, blocked: str = "skip") -> int | None:
    """[H-DRF] Algorithm 4 ``Alloc``: from the root to a leaf, lowest ``s_c / w_c`` among children
    with a launchable task below (``blocked="skip"``), or among children with a pending task below
    (``"stop"``: the walk may end at a leaf whose task fits nowhere, and nothing is launched);
    returns the user, or None."""
    tree = _tree(state)
    reach = _subtree_any(tree, can if blocked == "skip" else state.pending > 0)
    if not reach[0]:
        return None
    n = 0
    _, children, _, leaf_user = _structure(tree)
    while n not in leaf_user:
        ch = children[n][reach[children[n]]]
        key = s[ch] / tree.weight[ch]
        n = int(ch[int(np.argmin(key))])  # argmin: first minimum = lowest index
    u = leaf_user[n]
    return u if can[u] else None


def _server(state: ClusterState, u: int, fits_u: np.ndarray, server: str) -> int:
    ok = np.flatnonzero(fits_u)
    if server == "first-fit" or ok.size == 1:
        return int(ok[0])
    return int(ok[int(np.argmin(fitness(state, u, ok, fitness_ref="dominant")))])


def pick(state: ClusterState, *, rescale: bool = True, ignore_blocked: bool = True,
         saturation: str = "resource", server: str = "first-fit", blocked: str = "skip") -> tuple[int, int] | None:
    """Next launch of dynamic H-DRF ([H-DRF] Algorithms 2-4), or None when no pending task fits."""
    assert saturation in SATURATION and server in SERVER and blocked in BLOCKED
    can, fits = _launchable(state)
    if not can.any():
        return None
    s, _ = node_shares(state, rescale=rescale, ignore_blocked=ignore_blocked, saturation=saturation, can=can)
    u = _walk(state, s, can, blocked)
    return None if u is None else (u, _server(state, u, fits[u], server))


def pick_naive(state: ClusterState, *, server: str = "first-fit", blocked: str = "skip") -> tuple[int, int] | None:
    """Next launch of naive H-DRF ([H-DRF] §3.3): plain sums at internal nodes, no fixes."""
    return pick(state, rescale=False, ignore_blocked=False, server=server, blocked=blocked)


def collapsed_weights(state: ClusterState, *, recompute: bool = True) -> np.ndarray:
    """[H-DRF] §3.2: the flat weight of each user, the product over its path of
    ``w_n / sum of the weights of n's (demanding, with recompute) siblings, n included``."""
    tree = _tree(state)
    N = tree.parent.shape[0]
    live = _subtree_any(tree, state.pending > 0) if recompute else np.ones(N, dtype=bool)
    flat = np.ones(N)
    for n in range(1, N):
        p = tree.parent[n]
        sib = np.flatnonzero((tree.parent == p) & live)
        tot = tree.weight[sib].sum()
        flat[n] = flat[p] * (tree.weight[n] / tot if live[n] and tot > 0 else 0.0)
    return flat[tree.leaf]


def pick_collapsed(state: ClusterState, *, recompute: bool = True,
                   server: str = "first-fit") -> tuple[int, int] | None:
    """Next launch of the collapsed hierarchy ([H-DRF] §3.2): flat weighted DRF ([DRF] §4.3) with
    the flattened weights of :func:`collapsed_weights`."""
    can, fits = _launchable(state)
    if not can.any():
        return None
    wf = collapsed_weights(state, recompute=recompute)
    key = np.full(state.n_users, np.inf)
    ok = can & (wf > 0)
    key[ok] = state.dominant_share()[ok] / wf[ok]
    if not ok.any():
        return None
    u = int(np.argmin(key))
    return u, _server(state, u, fits[u], server)
