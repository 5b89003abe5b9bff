"""Per-resource binary min-heaps of flow heads, ordered by (key, flow id).

Row j of ``hp`` holds resource j's heap as pairs of int64 words: the key's
IEEE-754 bits (keys are finite and >= +0.0, so their bit patterns order like
the values) and ``uid << SLOT_BITS | slot``.  The pair is compared as one
128-bit unsigned integer (``key << 64 | uid``: both words are >= 0, so this is
the lexicographic order; a compare and a subtract-with-borrow, no branch);
every position from the heap's size on holds a
sentinel above every entry (the array starts full of them, a pop puts one
back), so a node's second child is read without a bounds test (the layout of
the C yardstick's heap).  Positions are word offsets (node i at ``2 i``).
The heap's size is the number of flows with packets
waiting at j, so a service costs O(log flows).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import config, types
from numba.core import cgutils
from numba.extending import intrinsic

from mrfq.fq._jit import jit, jit_inline, no_wraparound

SLOT_BITS = 24
SLOT_MASK = (1 << SLOT_BITS) - 1
UID_LIMIT = 1 << (63 - SLOT_BITS)
SENTINEL = np.iinfo(np.int64).max
#: heaps of at least this many flows prefetch two levels ahead as the hole walks down
#: (:func:`_fill_root_far`): a heap of 2^18 entries is 4 MiB, past the caches the lower levels
#: live in; at 10^5 flows (1.6 MiB) the prefetches ran 2-5 % slower, at 10^6 17-20 % faster
PREFETCH_FLOWS = 1 << 18

# indices here are never negative (see fq._jit.no_wraparound)
NO_WRAPAROUND = no_wraparound(__name__)

if config.DISABLE_JIT:  # plain-Python twins of the intrinsics
    def f2i(x):
        return int(np.float64(x).view(np.int64))

    def _lt(k1, u1, k2, u2):
        return int(k1 < k2 or (k1 == k2 and u1 < u2))

    def _prefetch(hp, j, i):
        return None
else:
    @intrinsic
    def _prefetch(typingctx, hp, j, i):
        """Ask for the cache line of ``hp[j, i]`` (llvm.prefetch: read, high locality, data); a
        hint only, it never faults, so ``i`` may lie past the row."""
        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            row_stride, item_stride = cgutils.unpack_tuple(builder, ary.strides)
            # integer arithmetic, not an inbounds getelementptr: the address may lie past the array
            i64 = ir.IntType(64)
            addr = builder.add(builder.ptrtoint(ary.data, i64),
                               builder.add(builder.mul(args[1], row_stride), builder.mul(args[2], item_stride)))
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                                                "llvm.prefetch.p0")
            builder.call(fn, [builder.inttoptr(addr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
            return context.get_dummy_value()
        return types.none(hp, j, i), codegen

    @intrinsic
    def f2i(typingctx, x):
        """The bits of a float64 as an int64 (no conversion)."""
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(64))
        return types.int64(types.float64), codegen

    @intrinsic
    def _lt(typingctx, k1, u1, k2, u2):
        """1 if (k1, u1) < (k2, u2) lexicographically, else 0 (int64 words, all >= 0): one
        128-bit unsigned compare."""
        def codegen(context, builder, signature, args):
            w = ir.IntType(128)

            def wide(k, u):
                return builder.or_(builder.shl(builder.zext(k, w), ir.Constant(w, 64)), builder.zext(u, w))

            lt = builder.icmp_unsigned("<", wide(args[0], args[1]), wide(args[2], args[3]))
            return builder.zext(lt, ir.IntType(64))
        return types.int64(types.int64, types.int64, types.int64, types.int64), codegen


@jit_inline
def _sift_up(hp, j, i, kb, u):
    """Entry (kb, u) goes in at word offset i or above (i = 2 x node): parents larger than it
    move down."""
    while i > 0:
        p = ((i - 2) >> 2) << 1  # the parent node (i / 2 - 1) // 2, as a word offset
        pk = hp[j, p]
        pu = hp[j, p + 1]
        if _lt(kb, u, pk, pu) == 0:
            break
        hp[j, i] = pk
        hp[j, i + 1] = pu
        i = p
    hp[j, i] = kb
    hp[j, i + 1] = u


@jit_inline
def push(hp, hn, h, j, key, uid, slot):
    """Add flow head (key, uid, slot) to resource j's heap, of size ``hn[h]`` (sift up)."""
    n = hn[h]
    hn[h] = n + 1
    _sift_up(hp, j, 2 * n, f2i(key + 0.0), (uid << SLOT_BITS) | slot)  # + 0.0 turns a -0.0 into +0.0


@jit_inline
def _walk_down(hp, n, j, kb, u, far):
    """The root of resource j's heap (size n >= 1) is vacant: walk the hole down to a leaf
    along the smaller children (branch-free), then sift (kb, u) up from there.  ``far`` (a
    constant at each call site) asks for the next two levels' cache lines at every step."""
    i = 0
    c = 2
    n2 = 2 * n
    while c < n2:
        if far:
            # the four grandchildren (words 2 c + 2 .. 2 c + 9) and the eight great-grandchildren
            # (4 c + 6 .. 4 c + 21): the next two levels' reads, whichever children win
            _prefetch(hp, j, 2 * c + 2)
            _prefetch(hp, j, 2 * c + 9)
            _prefetch(hp, j, 4 * c + 6)
            _prefetch(hp, j, 4 * c + 14)
            _prefetch(hp, j, 4 * c + 21)
        k1 = hp[j, c]
        u1 = hp[j, c + 1]
        k2 = hp[j, c + 2]
        u2 = hp[j, c + 3]
        second = _lt(k2, u2, k1, u1)  # the second child is the smaller (its sentinel never is)
        if second:
            k1 = k2
            u1 = u2
        c += 2 * second
        hp[j, i] = k1
        hp[j, i + 1] = u1
        i = c
        c = 2 * c + 2
    _sift_up(hp, j, i, kb, u)


@jit_inline
def _fill_root(hp, n, j, kb, u):
    """Fill the vacant root of resource j's heap (size n >= 1) with (kb, u): :func:`_walk_down`,
    which a heap of :data:`PREFETCH_FLOWS` or more takes in :func:`_fill_root_far`."""
    if n >= PREFETCH_FLOWS:
        _fill_root_far(hp, n, j, kb, u)
    else:
        _walk_down(hp, n, j, kb, u, False)


@jit
def _fill_root_far(hp, n, j, kb, u):
    """The walk of a heap larger than the caches, prefetching, so that it overlaps its cache
    misses instead of waiting for each level's (interleaved A/B, 5 pairs, static drfq at 10^6
    flows: 51-55 -> 44-46 ns per service).  A function of its own, not inlined, so that the
    small heaps' walk compiles as before: with the prefetching walk inlined beside it, the 30-
    to 10^4-flow rows ran 2-4 % slower."""
    _walk_down(hp, n, j, kb, u, True)


@jit_inline
def replace_top(hp, hn, h, j, key, uid, slot):
    """The top flow's next head (key, uid, slot) replaces it (heap size ``hn[h]``)."""
    _fill_root(hp, hn[h], j, f2i(key + 0.0), (uid << SLOT_BITS) | slot)


@jit_inline
def _take_last(hp, hn, h, j):
    """Resource j's heap loses its last entry (a sentinel takes its place): (new size, key, uid)."""
    n = hn[h] - 1
    hn[h] = n
    kb = hp[j, 2 * n]
    u = hp[j, 2 * n + 1]
    hp[j, 2 * n] = SENTINEL
    hp[j, 2 * n + 1] = SENTINEL
    return n, kb, u


@jit_inline
def pop(hp, hn, h, j):
    """Remove the top of resource j's heap (size ``hn[h]``)."""
    n, kb, u = _take_last(hp, hn, h, j)
    if n > 0:
        _fill_root(hp, n, j, kb, u)


@jit_inline
def find(hp, n, j, slot):
    """The word offset of flow row ``slot``'s entry in resource j's heap (size n), or -1 (a linear
    scan: for the rare removal of a head other than the top, router/buffers.py)."""
    for i in range(n):
        if (hp[j, 2 * i + 1] & SLOT_MASK) == slot:
            return 2 * i
    return -1


@jit_inline
def lt_at(hp, j, a, b):
    """Whether the entry at word offset a of resource j's heap orders before the one at b."""
    return _lt(hp[j, a], hp[j, a + 1], hp[j, b], hp[j, b + 1]) != 0


@jit_inline
def _sift_down(hp, n, j, i, kb, u):
    """Entry (kb, u) goes in at word offset i or below (heap size n): smaller children move up."""
    c = 2 * i + 2
    while c < 2 * n:
        k1 = hp[j, c]
        u1 = hp[j, c + 1]
        k2 = hp[j, c + 2]
        u2 = hp[j, c + 3]
        if _lt(k2, u2, k1, u1):
            c += 2
            k1 = k2
            u1 = u2
        if _lt(k1, u1, kb, u) == 0:
            break
        hp[j, i] = k1
        hp[j, i + 1] = u1
        i = c
        c = 2 * i + 2
    hp[j, i] = kb
    hp[j, i + 1] = u


@jit_inline
def _place(hp, n, j, i, kb, u):
    """Put (kb, u) at word offset i of a heap of size n, restoring the order up or down."""
    if i > 0:
        p = ((i - 2) >> 2) << 1
        if _lt(kb, u, hp[j, p], hp[j, p + 1]):
            _sift_up(hp, j, i, kb, u)
            return
    _sift_down(hp, n, j, i, kb, u)


@jit_inline
def remove_at(hp, hn, h, j, i):
    """Remove the entry at word offset i of resource j's heap (size ``hn[h]``)."""
    n, kb, u = _take_last(hp, hn, h, j)
    if i < 2 * n:
        _place(hp, n, j, i, kb, u)


@jit_inline
def rekey_at(hp, hn, h, j, i, key, uid, slot):
    """The entry at word offset i of resource j's heap becomes (key, uid, slot)."""
    _place(hp, hn[h], j, i, f2i(key + 0.0), (uid << SLOT_BITS) | slot)


def allocate(J: int, capacity: int) -> np.ndarray:
    """Heaps for J resources with room for ``capacity`` flows, full of sentinels."""
    return np.full((J, 2 * capacity + 4), SENTINEL, np.int64)


def grow(hp: np.ndarray, capacity: int) -> np.ndarray:
    """The same heaps with room for ``capacity`` flows."""
    out = allocate(hp.shape[0], capacity)
    out[:, : hp.shape[1]] = hp
    return out
