"""The fluid flow-level model driven by a given arrival sample path (a control variate).

The packet emulator's flow arrivals (times, classes, sizes) depend only on the
seed, never on the scheduler: both take them from
:class:`flows.traffic.ArrivalStream` (:func:`arrival_path`), whatever the
size law or a trace says.
Feeding the *same* arrivals to the fluid model of [BR] §4.1 — every class-k
flow served at the per-flow rate ``phi_k(x)`` of the objective, processor
sharing within the class — gives a number-in-system process that moves with
the packet system's.  Its mean service rate has a known expectation (the
Markov model's gamma_k, computed exactly by :mod:`analysis.markov`), so

    gamma_hat = gamma_markov + (gamma_packet_path - gamma_fluid_path)

is a control-variate estimator of the packet system's gamma_k: unbiased as
the paths get long, with a variance set by how much the packet and fluid
systems *differ* rather than by the (very large) variance of the arrival
process near saturation.  Batch sums are accumulated on the same batches as
the engine's (``[warmup, T]`` cut into ``B`` equal pieces).

Within class k all flows drain at the same rate, so a class keeps a virtual
time ``V_k = integral of phi_k dt`` and a min-heap of the flows' finish
virtual times ``V_k(arrival) + size``.

The Markov model's gamma is the expectation of the fluid path's only for
geometric sizes and Poisson arrivals (the model's assumptions).  With another
size law the fluid path still runs on the engine's very arrivals (so the
packet-minus-fluid difference stays a low-variance measurement of
packetisation), but its mean need not be the Markov value: ``mrfq compare``
flags such rows (``insensitivity_guaranteed: false``).
"""

from __future__ import annotations

import numpy as np

from mrfq.analysis import objectives
from mrfq.analysis.state_rates import kernel_norm, state_phi
from mrfq.flows.traffic import arrivals_until
from mrfq.fq._jit import jit
from mrfq.router.batches import add_area as _area


def arrival_path(scenario, seed: int, T: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times, classes, sizes) of every flow arrival in [0, T]: the engine's, from the one
    implementation :func:`flows.traffic.arrivals_until` (sizes as float64 packets)."""
    times, classes, sizes = arrivals_until(scenario, seed, T)
    return times, classes, sizes.astype(np.float64)


@jit
def _heap_push(h, n, v):
    i = n
    while i > 0:
        p = (i - 1) >> 1
        if h[p] <= v:
            break
        h[i] = h[p]
        i = p
    h[i] = v


@jit
def _heap_pop(h, n):
    """Remove the root of a heap of size n (returns nothing; size becomes n - 1)."""
    n -= 1
    v = h[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and h[c + 1] < h[c]:
            c += 1
        if h[c] >= v:
            break
        h[i] = h[c]
        i = c
    h[i] = v


@jit
def fluid_path_kernel(code, a, w, norm, times, classes, sizes, warmup, T, B, area, served):
    """Event-driven fluid model on a given arrival path; fills area[k, b] (integral of x_k)
    and served[k, b] (integral of x_k phi_k: packets served) over batches of [warmup, T]."""
    K = a.shape[0]
    n = times.shape[0]
    heaps = np.zeros((K, n + 1))
    hn = np.zeros(K, np.int64)
    V = np.zeros(K)
    x = np.zeros(K)
    phi = np.zeros(K)
    xphi = np.zeros(K)
    t = 0.0
    i = 0
    while True:
        # per-flow rates in the current state
        for k in range(K):
            phi[k] = 0.0
        if x.sum() > 0:
            state_phi(code, x, a, w, norm, phi)
        # next event: an arrival or the first class-level completion
        tn = times[i] if i < n else T
        kc = -1
        for k in range(K):
            if hn[k] > 0 and phi[k] > 0:
                tc = t + (heaps[k, 0] - V[k]) / phi[k]
                if tc < tn:
                    tn = tc
                    kc = k
        if tn > T:
            tn = T
            kc = -2
        # integrate x and x * phi over [t, tn] on the batches (the engine's own accumulator)
        for k in range(K):
            xphi[k] = x[k] * phi[k]
        _area(area, x, K, t, tn, warmup, T, B)
        _area(served, xphi, K, t, tn, warmup, T, B)
        for k in range(K):
            V[k] += phi[k] * (tn - t)
        t = tn
        if kc == -2 or (i >= n and kc == -1):
            break
        if kc >= 0:
            _heap_pop(heaps[kc], hn[kc])
            hn[kc] -= 1
            x[kc] -= 1.0
        else:
            k = classes[i]
            _heap_push(heaps[k], hn[k], V[k] + sizes[i])
            hn[k] += 1
            x[k] += 1.0
            i += 1


def fluid_path(scenario, objective: str, seed: int, *, batches: int, keep_arrivals: bool = False) -> dict | None:
    """Batch sums of the fluid model on the engine's arrival path for this seed, or None
    where the objective has no Markov model or no per-state kernel for this many resources
    (PF/BMF with three or more resources; :data:`analysis.objectives.TABLE`).  With
    ``keep_arrivals`` the result also holds the arrivals the kernel consumed (``"arrivals"``:
    times, classes, sizes as lists)."""
    if objective not in objectives.MARKOV or not scenario.classes:
        return None
    a = np.ascontiguousarray([c.mean_cost() for c in scenario.classes], dtype=np.float64)
    if not objectives.kernel_handles(objective, a.shape[1]):
        return None
    w = np.ascontiguousarray([c.weight for c in scenario.classes], dtype=np.float64)
    T, warmup = scenario.run.duration, scenario.run.warmup
    times, classes, sizes = arrival_path(scenario, seed, T)
    K = a.shape[0]
    area = np.zeros((K, batches))
    served = np.zeros((K, batches))
    fluid_path_kernel(objectives.TABLE[objective].state_code, a, w, np.ascontiguousarray(kernel_norm(objective, a)), times, classes, sizes,
                      float(warmup), float(T), batches, area, served)
    out = {"area": area.tolist(), "departed": served.tolist()}
    if keep_arrivals:
        out["arrivals"] = {"times": times.tolist(), "classes": classes.tolist(),
                           "sizes": [int(v) for v in sizes]}
    return out
