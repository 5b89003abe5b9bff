"""The per-resource heaps of flow heads (router.heap) against Python's heapq: the same order of
(key, flow id) under the engine's operations (push, replace the top by a later head, pop), for
small heaps and for heaps large enough to take the prefetching walk (heap.PREFETCH_FLOWS)."""

from __future__ import annotations

import heapq

import numpy as np
import pytest

from mrfq.fq._jit import jit
from mrfq.router import heap


@jit
def _run(hp, hn, keys, uids, ops, next_keys, out_key, out_uid, cur):
    """Push every (key, uid) at resource 1 (row 1: row 0 stays full of sentinels), then one op
    per ``ops`` entry: 1 = the top's flow gets its next head ``top key + next_keys[i]`` (replace
    the top), 0 = the top's flow has nothing left there (pop); the tops seen go to out_*."""
    for i in range(keys.shape[0]):
        cur[i] = keys[i]
        heap.push(hp, hn, 1, 1, keys[i], uids[i], i)
    m = 0
    for i in range(ops.shape[0]):
        if hn[1] == 0:
            break
        u = hp[1, 1]
        s = u & heap.SLOT_MASK
        out_key[m] = cur[s]
        out_uid[m] = u >> heap.SLOT_BITS
        m += 1
        if ops[i] == 1:
            cur[s] += next_keys[i]
            heap.replace_top(hp, hn, 1, 1, cur[s], u >> heap.SLOT_BITS, s)
        else:
            heap.pop(hp, hn, 1, 1)
    return m


def _reference(keys, uids, ops, next_keys):
    h = [(float(k), int(u)) for k, u in zip(keys, uids)]
    heapq.heapify(h)
    seen = []
    for op, dk in zip(ops, next_keys):
        if not h:
            break
        k, u = h[0]
        seen.append((k, u))
        if op == 1:
            heapq.heapreplace(h, (k + float(dk), u))
        else:
            heapq.heappop(h)
    return seen


@pytest.mark.parametrize("n", [1, 5, 300, heap.PREFETCH_FLOWS + 777])
def test_heap_order_is_heapqs(n):
    rng = np.random.default_rng(n)
    keys = rng.integers(0, max(n // 4, 1), n).astype(np.float64) * 0.25  # many equal keys: uid breaks ties
    keys[0] = -0.0  # stored as +0.0
    uids = rng.permutation(n).astype(np.int64) + 7
    steps = 4 * n + 50
    ops = (rng.random(steps) < 0.8).astype(np.int64)
    next_keys = rng.integers(0, 8, steps).astype(np.float64) * 0.5  # 0 too: the same key again
    hp = heap.allocate(2, n)
    hn = np.zeros(2, np.int64)
    out_key = np.zeros(steps)
    out_uid = np.zeros(steps, np.int64)
    m = _run(hp, hn, keys, uids, ops, next_keys, out_key, out_uid, np.zeros(n))
    got = list(zip(out_key[:m].tolist(), out_uid[:m].tolist()))
    assert got == _reference(keys, uids, ops, next_keys)
    assert m == len(got) > n // 2
    # what is left is a heap of the right size, padded with sentinels, and row 0 is untouched
    size = int(hn[1])
    assert np.all(hp[1, 2 * size:] == heap.SENTINEL) and np.all(hp[0] == heap.SENTINEL)
    words = hp[1, : 2 * size].reshape(-1, 2)
    for c in range(1, size):
        p = (c - 1) // 2
        assert (words[p, 0], words[p, 1] >> heap.SLOT_BITS) <= (words[c, 0], words[c, 1] >> heap.SLOT_BITS)


@pytest.mark.nojit
def test_heap_order_is_heapqs_small():
    test_heap_order_is_heapqs(40)
