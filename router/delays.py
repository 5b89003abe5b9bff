"""Per-packet delays: streaming log-bucket histograms, filled by the event loop.

Every packet that leaves the router after warm-up adds its *sojourn* (departure
from the last resource it visits minus its arrival at the router: for a windowed
flow its admission, for an open-loop source the instant it was generated) and
its *wait* at each resource it visited (start of service minus the instant it
joined the resource's queue) to the histograms of its row.
docs/packet-sources-and-delay.md, 'Per-packet delay'.  The loop stores the start
of each of its services in the packet's record (one store) and records
everything at its departure, after the admission that departure triggers, so the
recording is off the instant's critical path: the instant it joined a queue is
its arrival at the first resource it visits and, at the others, the end of its
previous service (start + cost, the very sum the loop computed).  A row is a
static flow (or, with more than :data:`PER_FLOW_MAX` static flows, a
``[[flow]]`` table) or a class; each row holds ``J + 1`` histograms (the wait at
each resource, then the sojourn).

The buckets are the float64 bit patterns of the values cut after
:data:`SUB_BITS` mantissa bits: bucket ``i >= 1`` holds
``[2^e (1 + m / 64), 2^e (1 + (m + 1) / 64))`` with ``i = (bits(x) >> 46) -
base``, ``e`` and ``m`` the exponent and top six mantissa bits of the bucket's
code ``i + base``.  No logarithm per sample: in the loop, one float maximum
(:func:`floor_value`), one bit cast and one shift; the row's offset
(:func:`row_offset`) takes the subtraction.  A bucket's midpoint is within ``1/128 < 0.8 %``
of every value in it, so a quantile read as the midpoint of the bucket that
holds it has a relative error below 0.8 %.  Bucket 0 holds zero and every
value below ``2^e_lo``, the smallest resolved value, ``2^-LOW_OCTAVES`` times
the smallest positive per-packet time rounded down to a power of two (a
sojourn is never below that time, so only waits land there); the top bucket
is above the run's duration, which no delay exceeds.  Memory: ``64`` buckets
per octave between the two, 8 bytes each, fixed for the run (independent of
its length).
"""

from __future__ import annotations

import math

import numpy as np

from mrfq.fq._jit import jit_inline
from mrfq.router.heap import f2i

#: mantissa bits kept in a bucket code: 2^SUB_BITS buckets per octave, relative width 2^-SUB_BITS
SUB_BITS = 6
SHIFT = 52 - SUB_BITS
#: octaves resolved below the smallest positive per-packet time
LOW_OCTAVES = 8
#: at most this many static flows get histograms of their own; above, one row per [[flow]] table
PER_FLOW_MAX = 256
#: the bound on a quantile's relative error (the half-width of a bucket relative to its lower edge)
REL_ERROR = 2.0 ** -(SUB_BITS + 1)


def layout(min_cost: float, T: float) -> tuple[int, int]:
    """``(base, NB)``: the bucket offset and the number of buckets for delays between
    ``min_cost 2^-LOW_OCTAVES`` and ``T`` (time units)."""
    e_lo = math.floor(math.log2(min_cost)) - LOW_OCTAVES
    e_hi = max(math.floor(math.log2(T)) + 2, e_lo + 1)
    base = ((e_lo + 1023) << SUB_BITS) - 1
    return base, (e_hi - e_lo) * (1 << SUB_BITS) + 1


@jit_inline
def bucket(x, base, NB):
    """The bucket of a delay ``x >= 0`` (module docstring)."""
    i = (f2i(x) >> SHIFT) - base
    if i < 0:
        i = 0
    if i >= NB:
        i = NB - 1
    return i


def floor_value(base: int) -> float:
    """The largest float64 of bucket 0's code: a delay ``x`` lands in the bucket of ``max(x,
    floor_value)``, the same as :func:`bucket`'s lower clamp with one float maximum."""
    return float(np.int64(((base + 1) << SHIFT) - 1).view(np.float64))


def row_width(J: int, NB: int, B: int) -> int:
    """Words of one row's block in the delay accumulator (the loop's ``acc.dacc``): the ``J + 1``
    histograms interleaved bucket by bucket (bucket ``i`` of histogram ``j`` at ``i (J + 1) + j``:
    a packet's delays land in neighbouring words), then the largest sojourn, then the sum and the
    number of sojourns of each batch (``2 B`` words, in pairs)."""
    return NB * (J + 1) + 1 + 2 * B


@jit_inline
def row_offset(r, J, NB, B, base):
    """What the flow table keeps for a packet of row ``r`` (``FlowTable.hrow``): its block's offset
    less ``base (J + 1)``, so that a delay of bit code ``c = bits >> SHIFT`` at histogram j lands at
    ``row_offset + max(c, base) (J + 1) + j`` (one shift, one clamp, no multiplication by NB)."""
    return r * (NB * (J + 1) + 1 + 2 * B) - base * (J + 1)


def split(dacc: np.ndarray, rows: int, J: int, NB: int, B: int):
    """``(hist [rows, J + 1, NB] int64, dmax [rows], dsum [rows, B], dcnt [rows, B])`` from the
    accumulator (:func:`row_width`; the counts are its words read as int64)."""
    a = dacc.reshape(rows, row_width(J, NB, B))
    n = a.view(np.int64)
    h = NB * (J + 1)
    hist = np.ascontiguousarray(n[:, :h].reshape(rows, NB, J + 1).transpose(0, 2, 1))
    return hist, a[:, h].copy(), a[:, h + 1::2].copy(), n[:, h + 2::2].astype(np.float64)


def bucket_py(x: float, base: int, NB: int) -> int:
    """:func:`bucket` in plain Python (the SimPy reference's twin)."""
    i = (int(np.float64(x).view(np.int64)) >> SHIFT) - base
    return min(max(i, 0), NB - 1)


def bucket_edges(base: int, NB: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)`` edge of every bucket (time units); bucket 0 is ``[0, 2^e_lo)``."""
    i = np.arange(NB, dtype=np.int64)
    code = i + base
    e = (code >> SUB_BITS) - 1023
    m = code & ((1 << SUB_BITS) - 1)
    lo = np.ldexp(1.0 + m / float(1 << SUB_BITS), e.astype(np.int32))
    hi = np.ldexp(1.0 + (m + 1) / float(1 << SUB_BITS), e.astype(np.int32))
    lo[0] = 0.0
    hi[0] = np.ldexp(1.0, int(((base + 1) >> SUB_BITS) - 1023))
    return lo, hi
