"""Per-packet sizes: a counter-based hash, identical for every scheduler (common random numbers).

Packet ``seq`` of flow ``uid`` draws its size from ``packet_uniform(cost_key,
uid, seq)``; ``cost_key`` comes from its own child of the run's SeedSequence,
so the packets a flow sends do not depend on the scheduler or on the order
in which the engine handles them.  ``router/reference.py`` has a plain-Python
twin, checked against this one by the tests.
"""

from __future__ import annotations

import math

from mrfq.fq._jit import jit_inline

M32 = 0xFFFFFFFF


@jit_inline
def hash32(x):
    """A 32-bit integer mixer (xorshift-multiply); products stay below 2**63."""
    x = x & M32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & M32
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & M32
    x ^= x >> 16
    return x


@jit_inline
def packet_exponential(cost_key, uid, seq, j):
    """Exponential of mean 1 for packet ``seq`` of flow ``uid`` at resource j (``cost_law =
    "exponential"``): ``-log(1 - u)`` with ``u = (h + 1/2) / 2**32`` and ``h`` the hash of
    ``(h(key + 0x632BE5AB (j + 1)), uid, seq)``, between 1.2e-10 and 22.9, never 0."""
    h = hash32(hash32(hash32(hash32(cost_key + 0x632BE5AB * (j + 1)) ^ (uid & M32)) + (seq & M32)) + (uid >> 32))
    return -math.log1p(-((h + 0.5) / 4294967296.0))


@jit_inline
def packet_uniform(cost_key, uid, seq):
    """Uniform in [0, 1) for packet ``seq`` of flow ``uid``: ``h(h(h(key ^ uid) + seq))``."""
    h = hash32(hash32(hash32(cost_key ^ (uid & M32)) + (seq & M32)) + (uid >> 32))
    return h / 4294967296.0


@jit_inline
def packet_size(sp, row, cost_key, uid, seq, trace_size):
    """The size in bytes of packet ``seq`` of flow ``uid`` with Specs row ``row``: its profile's one
    size, a draw from its size distribution (``packet_uniform`` against the row's cdf), or (a packet
    trace: ``n_sizes = 0``) ``trace_size``."""
    n = sp.n_sizes[row]
    if n > 1:
        u = packet_uniform(cost_key, uid, seq)
        z = 0
        while z < n - 1 and u >= sp.cdf[row, z]:
            z += 1
        return sp.sizes[row, z]
    if n == 1:
        return sp.sizes[row, 0]
    return trace_size
