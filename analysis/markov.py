"""The flow-level Markov model of [BR] §4.1 (docs/allocators.md): exact truncated solve and simulation.

Units are packets.  Class k has requirement vector ``a_k`` (time units per
packet at each resource, the scenario's mean per-packet cost), Poisson flow
arrivals of rate ``lambda_k`` (flows per time unit) and geometric/exponential
flow sizes of mean ``sigma_k`` packets.  In state ``x`` (flows per class) every
class-k flow is served at the per-flow packet rate ``phi_k(x)`` of the chosen
objective (DRF, PF or BMF, :mod:`analysis.state_rates`), so the death rate of
class k is ``x_k phi_k(x) / sigma_k``.  Stable iff every resource load
``sum_k lambda_k sigma_k a_kj < 1`` ([BR] eq. (8)).

The metric is the mean flow throughput ``gamma_k = lambda_k sigma_k / E[x_k]``
(packets per time unit, Little's law); in light traffic
``gamma_k -> 1 / max_j a_kj``.

Exact method, box truncation (``truncation="box"``; the default, the region truncation, is
below).  Truncate ``x_k <= X_k`` (arrivals of class k blocked at its cap),
build the sparse transposed generator ``Q^T`` (7 non-zeros per row for K = 3),
set ``pi_0 = 1`` and drop the balance equation of state 0 (the system stays as
sparse as ``Q``; replacing a row by ones would not).  The reduced system is
assembled straight into CSR (:func:`box_system`; int32 columns) and solved by BiCGSTAB
(:func:`bicgstab`; ``KRYLOV = "gmres"``: restarted GMRES, also the fallback) right-preconditioned
with ILU(0) (factors in single precision, ``ILU_FLOAT32``) (numba kernels: ``-A`` is a column diagonally
dominant M-matrix, so ILU(0) exists and is effective) followed, when a warm start
from the previous truncation gives the shape of the law within each total
population, by an exact solve of the chain aggregated by total population
(:func:`precond`: a birth-death chain, tridiagonal; the slow radial mode near
saturation that ILU(0) cannot see): 50 instead of 92 iterations on 587 594 states
at load 0.95.  SuperLU is the fallback.  Caps grow (per class, extrapolating the
geometric tail of each marginal) until the boundary mass ``P(some x_k = X_k)`` is
below ``tol_boundary`` and gamma moved by less than ``tol_gamma`` (relative) since
the previous truncation.  The caps are per class ((choice): a single cap X
for every class is the special case ``caps=(X,) * K``; per-class caps make the
unbalanced presets several times cheaper).

Why the hand-written solver stays (``python scripts/markov_solvers.py``: the same reduced
system, br-unbalanced, DRF, load 0.95, caps (265, 46, 46) = 587 594 states, each solver in a
fresh process, residual 1e-11, the same gamma to 6 digits; CPU s / peak RSS on a 2-core
machine, BLAS single-threaded unless said):

* this module (BiCGSTAB, padded layout, ILU(0) + two-level, warm start): 0.67 s, 28
  iterations, 420 MiB; ILU(0) alone, cold start: 1.81 s, 103 iterations, 400 MiB;
* scipy's ``gmres`` with this module's preconditioner (a LinearOperator): 1.14 s, 49
  iterations, 608 MiB; it runs on BLAS, and with OpenBLAS's default threads on a machine whose
  cores are busy (a sweep's other workers) a solve of 44 541 states took 5.3 s against 0.08 s,
  while the numba loop uses no BLAS;
* scipy's ``spilu`` (SuperLU ILUTP, scipy's defaults drop_tol 1e-4, fill_factor 10) + scipy's
  ``gmres``: 67 s, 193 iterations, 1148 MiB; ``spilu`` closest to ILU(0) (drop_tol 0,
  fill_factor 1, natural order): 24 s, 306 iterations, 866 MiB;
* scipy's ``spsolve`` (SuperLU, a direct solve): 0.77 s at 44 541 states, but 222 s and
  2.5 GB at 129 195 (the 3-D stencil's fill-in); PyAMG smoothed aggregation 71 s at 129 195,
  66 s of it in the setup; its Ruge-Stuben and AIR solvers build no useful hierarchy for this
  non-symmetric generator.

So the preconditioner stays: the numba ILU(0) alone needs 6x less CPU than the closest
``spilu``, and with the level aggregation 16-45x less than scipy's preconditioned solves; the
Krylov loop is 1.7x faster than scipy's GMRES around the same preconditioner, BLAS-free
(predictable beside other workers) and one compiled kernel with the preconditioner.

How the solve is built for speed.  BiCGSTAB is the default Krylov loop (GMRES's
Gram-Schmidt over a basis of up to 100 vectors was most of its time, and its basis most of
the memory; the GMRES basis is allocated uninitialised, so only the rows a restart cycle
reaches are resident).  The ILU(0) factors are single precision; A and the factors are stored
in a padded row-major layout (:func:`ell_split`), about 350 bytes per state in all.  The
unknowns are split into ``KRYLOV_BLOCKS`` (2) contiguous row blocks; the ILU(0) is that of the
block-diagonal part (block Jacobi with ILU(0) blocks [Saad 2003, §12.2], PETSc's default
parallel preconditioner: :func:`ilu0`), so each block's triangular sweeps run on a core of
their own, as do the products with A, the vector updates (:func:`bicgstab`), the
factorisation, the padded layout and the rates of the states
(:func:`analysis.state_rates.rates_kernel_parallel`); the coarse correction still uses the
whole A.  Inner products are summed per block, then in block order, so the iterates depend on
the blocks and not on the number of threads.  The first region is solved to
``FIRST_REGION_RTOL`` (its solution is never the result).  BiCGSTAB's vector updates before
each preconditioner application run in its forward sweep (:func:`precond`'s ``upd``), the
region solves' start is interpolated by :func:`multilinear`, and the rows of A and of the
factors are summed written out for 2-4 classes (:func:`_row_dot`, :func:`_row_sub`): the loop
over a row length known only at run time, not memory traffic, bounded the products and the
sweeps.
The GMRES fallback's basis (``restart`` vectors of N doubles) stays under ``KRYLOV_BYTES``,
and a truncation whose estimated footprint (:func:`exact_memory_bytes`) exceeds
``max_memory`` is refused like one with more than ``max_states`` states.

Lumping by symmetry (region truncation, ``symmetry="auto"``).  When a swap of the resources
exchanges two classes with equal rates, sizes and weights (:func:`mirror_pair`; br-balanced:
c1 = (1/4, 1) and c2 = (1, 1/4)), the chain is symmetric under swapping their counts and is
solved lumped on the orbits ``{x, mirror x}`` (exact lumpability; half the states, the same
law; :func:`analysis.markov_region.region_system`).

Region truncation (``truncation="region"``, the default; :func:`_solve_region_exact`,
:mod:`analysis.markov_region`; the box above is ``truncation="box"``).  Near saturation the
box wastes most of its states: the law lies along a ridge where the classes are large
together, and near the axes (a heavily loaded class with few flows) or in the corners it holds
almost nothing.  The region keeps, column by column, the interval of states whose probability
under the graded lattice's estimate (below, grading ``REGION_GRADING``) is above the threshold
that leaves out ``REGION_START * tol_boundary`` of the estimate's mass, connected and with the
origin; every transition out of it is blocked (departures too: their error, like the blocked
arrivals', is of the order of the probability on the region's boundary, which is reported and
bounded).  The next regions leave out less (a factor aimed at the boundary mass; 3 times less
once only gamma is left to check), from the previous solution, until the boundary mass is below
``tol_boundary`` and gamma moved by less than ``tol_gamma``, as for the box.  Measured
(DRF; ``scripts/bench_fluid.py --near-saturation``, the other core busy):

* br-unbalanced at 0.95: 0.18 M states, 0.6 s; at 0.98: 1.13 M states, 3.2 s, 0.55 GiB,
  gamma = 0.020367 0.020972 0.020365 (the box, 8.4 M states, 232 s, 3.86 GiB with its guard
  lifted: the same to 6 digits); at 0.985: 1.96 M states, 6.0 s;
* br-balanced (lumped) at 0.95: 0.66 M states, 2.6 s, 0.41 GiB; at
  0.98: 5.8 M then 7.0 M states, 50 s, 2.35 GiB, gamma = 0.0039282 0.0039282 0.0039171 (the
  unlumped region of 17.6 M states, boundary mass 1e-7, gave 0.0039281 0.0039281 0.0039171);
* the 4-class, 3-resource case (lumped: classes 2 and 3) at 0.9: 0.34 M states, 5.8 s; at
  0.95: 2.2 M states, 21.5 s.

The exact solve refuses loads above ``EXACT_MAX_LOAD`` (per truncation) at once and
truncations beyond ``max_states`` or ``max_memory``.

Graded lattice (method "graded", an approximation: :func:`solve_graded`).  The
rates ``x_k phi_k(x)`` are homogeneous of degree 0, so far from the origin the
chain changes slowly with x: the lattice keeps every integer below ``2 /
grading`` and then spaces its nodes ``floor(grading * x_k)`` apart, with
exponentially fitted edge rates that keep a birth-death chain's geometric law
node for node.  Nodes grow like ``log(X_k) / grading`` per class, so caps far
out (boundary mass 1e-7 at load 0.98) cost little.  Its error is measured, not
bounded: it falls quickly with the grading and grows with the load (DRF, default
grading 0.05: 6e-5 relative on br-balanced at load 0.9, 5e-4 on br-unbalanced at
0.95; at 0.98 about 0.3 % on br-unbalanced and 3 % on br-balanced, estimated from
the gradings 0.1 / 0.07 / 0.05 / 0.035; there a 4e8-event simulation of br-balanced
gives 0.00391 +- 3 % and the graded lattice 0.00402; documentation, Performance).

Simulation.  An event-driven (Gillespie) simulation of the same chain in numba,
with randomness from a ``numpy.random.Generator`` passed in.  Time averages use
the expected holding time ``1 / R(x)`` of each visited state instead of a
sampled exponential (conditional Monte Carlo: unbiased, less variance).
Confidence intervals by batch means (equal numbers of events per batch, ratio
estimator).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from numba import prange

from mrfq.analysis import objectives
from mrfq.analysis.state_rates import kernel_norm, state_phi
from mrfq.flows.errors import MrfqError, quote
from mrfq.fq._jit import jit

#: memory for the GMRES Krylov basis (bytes); the restart length shrinks with N to fit
KRYLOV_BYTES = 800 * 2**20
#: GMRES restart length when memory allows
RESTART = 100
#: precondition with ILU(0) and the level (total population) aggregation (see precond)
TWO_LEVEL = True
#: Krylov method of the exact and graded solves: "bicgstab" (the default: two preconditioner
#: solves per iteration and seven vectors, no growing basis; 1.7-2.4x faster than GMRES on the
#: region systems near saturation, see :func:`bicgstab`) or "gmres" (restarted; also the
#: fallback when BiCGSTAB breaks down or stalls)
KRYLOV = "bicgstab"
#: the exact solves' relative residual ``||b - A y|| / ||b||``: the mean total population (so
#: gamma) is then within 3e-8 of the converged value (1e-11: 3e-9; br-balanced 0.95, 1.37 M
#: states), far inside the truncation's ``tol_gamma`` (1e-4), for 14 % fewer iterations
EXACT_RTOL = 1e-10
#: the first region's relative residual: its solution is never the result (the gamma change that
#: ends the loop needs a previous region), only the boundary mass that sizes the next region, the
#: gamma the next is compared with and the next one's start; at 1e-8 gamma is within ~3e-6 (the
#: scaling of ``EXACT_RTOL``'s 3e-8 at 1e-10), far inside ``tol_gamma`` (1e-4).  br-balanced,
#: load 0.98: 85 instead of 117 iterations on the first region's 5.8 M states, and the next
#: region's solve from it as fast (72-80 iterations)
FIRST_REGION_RTOL = 1e-8
#: keep the ILU(0) factors in single precision (the preconditioner only; A, the vectors and the
#: residual stay double): a quarter less memory traffic per solve (21 -> 16.5 ms per
#: application at 1.37 M states, 50 -> 52 iterations)
ILU_FLOAT32 = True
#: the unknowns of a solve split into this many contiguous blocks of rows (:func:`block_bounds`):
#: the ILU(0) is that of the block-diagonal part (block Jacobi with ILU(0) blocks, :func:`ilu0`),
#: so that every block's triangular sweeps, products with A and vector updates run on a core of
#: their own (numba ``prange``).  Inner products are summed per block, then in block order: the
#: result depends on this number, never on the number of threads (``NUMBA_NUM_THREADS``, 1 runs
#: the blocks one after the other).  1: the plain ILU(0), one sequential sweep.  Measured on
#: br-balanced, DRF, load 0.98 (7.0 M lumped states), 2 cores: see the module's docstring.
KRYLOV_BLOCKS = 2
#: systems with fewer unknowns than this are solved as one block (a thread's start costs more
#: than their sweeps)
KRYLOV_BLOCK_MIN_ROWS = 50_000
#: BiCGSTAB: iterations per kernel call (the time limit is checked between calls), and in all
BICGSTAB_CHUNK = 25
BICGSTAB_MAXITER = 1500
#: Krylov iterations and method of the last solve (diagnostics)
LAST_ITERATIONS = 0
LAST_KRYLOV = ""


def restart_for(n: int) -> int:
    """GMRES restart length for ``n`` unknowns: RESTART, fewer when the basis would pass KRYLOV_BYTES."""
    return int(max(20, min(RESTART, KRYLOV_BYTES // (8 * max(n, 1)) - 1)))


def block_bounds(n: int, blocks: int | None = None) -> np.ndarray:
    """Row blocks of an ``n``-unknown system: ``KRYLOV_BLOCKS`` (or ``blocks``) contiguous ranges
    of nearly equal length, ``bnd[b] .. bnd[b + 1] - 1`` (int64, ``blocks + 1`` bounds); one
    block below ``KRYLOV_BLOCK_MIN_ROWS`` unknowns."""
    nb = KRYLOV_BLOCKS if blocks is None else blocks
    if nb < 1:
        raise ValueError(f"KRYLOV_BLOCKS = {nb}: give 1 or more")
    if n < KRYLOV_BLOCK_MIN_ROWS:
        nb = 1
    nb = max(1, min(nb, n))
    return (np.arange(nb + 1, dtype=np.int64) * n) // nb


def exact_memory_bytes(n_states: int, K: int) -> int:
    """Peak memory estimate of one truncated solve with ``n_states`` states and K classes:
    the states and rates (about 4K + 4 doubles per state), the reduced system in CSR form and its
    ILU(0) values (2K + 1 non-zeros per row, 20 bytes each: int32 column, value, factor) and
    about 20 vectors of the preconditioner and BiCGSTAB (the GMRES fallback's basis is bounded
    by ``KRYLOV_BYTES`` besides)."""
    nnz = (2 * K + 1) * n_states
    return int(8 * (4 * K + 4) * n_states + 20 * nnz + 8 * 20 * n_states)


#: the exact solve's default state limit (solve's ``max_states``; the memory limit, 4 GB by
#: default, binds first past about 9 M states at ~430 bytes each)
MAX_STATES = 8_000_000
#: the exact solve refuses at once above this load of the most loaded resource, per truncation
#: (states grow like (1 - rho)^-3: in the box br-unbalanced at 0.95 takes 3 s, at 0.98 8.4 M states
#: and minutes; in regions 0.98 takes 11 s, and past the limits the size estimate refuses quickly)
EXACT_MAX_LOAD = {"box": 0.96, "region": 0.99}
#: exact: the shapes of the truncated state space (solve's ``truncation``)
TRUNCATIONS = ("region", "box")


class TruncationTooLarge(MrfqError):
    """The exact solve would need more than ``max_states`` states (use the simulation)."""


class SolveTimeLimit(TruncationTooLarge):
    """The exact solve ran past its wall-clock budget (``time_limit``); use the simulation.

    A subclass of :class:`TruncationTooLarge`, so ``--method auto`` and the sweep fall back
    to the simulation in the same way."""


#: wall-clock budget of one exact solve (seconds), checked between truncations and between
#: Krylov chunks (BiCGSTAB) or restart cycles (GMRES); ``mrfq fluid --time-limit``
TIME_LIMIT = 300.0
#: events per call of the Gillespie kernel: Ctrl-C is seen between calls (well under a second)
SIM_CHUNK = 1 << 20


def _check_deadline(deadline: float | None, where: str) -> None:
    """Raise :class:`SolveTimeLimit` once ``time.monotonic()`` is past ``deadline``."""
    if deadline is not None and time.monotonic() > deadline:
        raise SolveTimeLimit(f"time limit: the Markov solve gave up {where} (its wall-clock budget, "
                             "--time-limit, is spent); use --method simulate (or auto), or a lower load")


def _krylov_chunked(cycle, n_states: int, chunk: int, maxiter: int, rtol: float, deadline: float | None,
                    name: str):
    """A Krylov kernel run at most ``chunk`` iterations per call (``cycle(maxiter)``: one kernel
    call of at most ``maxiter`` iterations, continuing from the current ``y`` (and, for
    BiCGSTAB, its vectors and scalars), returning (iterations, relative residual)), with
    :func:`_check_deadline` (and so Ctrl-C) between calls.  BiCGSTAB gives the one-call iterates;
    GMRES (``chunk`` = one restart cycle) too, except when a cycle's residual estimate says
    converged and the true residual disagrees (one call then runs a full cycle more, this a
    shorter one)."""
    total = 0
    while True:
        _check_deadline(deadline, f"in {name} after {total} iterations on {n_states} states")
        it, res = cycle(min(chunk, maxiter - total))
        total += it
        if res <= rtol or total >= maxiter or it == 0 or not np.isfinite(res):
            return total, res


METHODS = ("exact", "graded", "simulate")


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class FluidModel:
    """Validated class data for the Markov model (arrays of float64)."""

    names: tuple[str, ...]
    a: np.ndarray          # (K, J) time units per packet
    lam: np.ndarray        # (K,) flow arrivals per time unit
    sigma: np.ndarray      # (K,) mean flow size, packets
    w: np.ndarray          # (K,) weights
    resources: tuple[str, ...]

    @property
    def rho(self) -> np.ndarray:
        """Offered packets per time unit of each class, lambda_k sigma_k."""
        return self.lam * self.sigma

    def resource_loads(self) -> np.ndarray:
        return self.rho @ self.a

    @property
    def max_load(self) -> float:
        return float(self.resource_loads().max())

    def light_traffic_gamma(self) -> np.ndarray:
        return 1.0 / self.a.max(axis=1)


def model_from(src, *, load: float | None = None, resources=None) -> FluidModel:
    """Build a :class:`FluidModel` from a Scenario or a sequence of class specs.

    A class spec needs ``.name``, ``.mean_cost()`` (or ``.cost``), ``.rate``,
    ``.mean_packets`` and ``.weight`` (``flows.ClassSpec`` has them).  With ``load``
    the rates are rescaled so the most loaded resource has that load (a Scenario
    with ``[traffic] load`` uses :meth:`Scenario.with_load`).  Refuses unstable loads.
    """
    if load is not None:
        if isinstance(load, bool) or not isinstance(load, (int, float)) or not math.isfinite(load) or load <= 0:
            raise MrfqError(f"load = {quote(load)}: must be a number in (0, 1)")
        if load >= 1:
            raise MrfqError(f"load = {load:g}: must be < 1; the Markov model needs every resource load < 1")
    classes = src
    if hasattr(src, "classes") and hasattr(src, "resources"):
        if not src.classes:
            raise MrfqError(f"scenario {getattr(src, 'name', '')!r}: has no [[class]]; the fluid model needs "
                            "Poisson classes (static [[flow]]s: use `mrfq alloc`)")
        if load is not None and getattr(src, "load", None) is not None:
            src = src.with_load(float(load))
            load = None
        resources = tuple(src.resources) if resources is None else resources
        classes = src.classes
    classes = list(classes)
    if not classes:
        raise MrfqError("classes: none given; the Markov model needs at least one class")
    names, a, lam, sig, w = [], [], [], [], []
    for i, c in enumerate(classes):
        cost = c.mean_cost() if hasattr(c, "mean_cost") else c.cost
        names.append(str(getattr(c, "name", f"c{i + 1}")))
        a.append([float(v) for v in cost])
        lam.append(float(c.rate))
        sig.append(float(getattr(c, "mean_packets", 1.0)))
        w.append(float(getattr(c, "weight", 1.0)))
    J = len(a[0])
    for i, row in enumerate(a):
        if len(row) != J:
            raise MrfqError(f"class[{i}].cost: has {len(row)} entries; must have {J}, one per resource")
        if any((not math.isfinite(v)) or v < 0 for v in row) or max(row) <= 0:
            raise MrfqError(f"class[{i}].cost = {row}: entries must be >= 0 with at least one > 0")
        if not (math.isfinite(lam[i]) and lam[i] > 0):
            raise MrfqError(f"class[{i}].rate = {lam[i]:g}: must be > 0 for the Markov model")
        if not (math.isfinite(sig[i]) and sig[i] > 0):
            raise MrfqError(f"class[{i}].mean_packets = {sig[i]:g}: must be > 0")
        if not (math.isfinite(w[i]) and w[i] > 0):
            raise MrfqError(f"class[{i}].weight = {w[i]:g}: must be > 0")
    A = np.ascontiguousarray(a, dtype=np.float64)
    lam_a = np.array(lam)
    if load is not None:
        cur = (lam_a * np.array(sig)) @ A
        lam_a = lam_a * (float(load) / cur.max())
    if resources is None:
        resources = tuple(f"r{j + 1}" for j in range(J))
    m = FluidModel(names=tuple(names), a=A, lam=lam_a, sigma=np.array(sig), w=np.array(w),
                   resources=tuple(resources))
    check_stable(m)
    return m


def check_stable(m: FluidModel) -> None:
    """Refuse a load at or above capacity on any resource ([BR] eq. (8))."""
    loads = m.resource_loads()
    for j, r in enumerate(loads):
        if r >= 1.0:
            raise MrfqError(f"load: resource '{m.resources[j]}' has load {r:.4g} >= 1; "
                            "the Markov model needs every resource load < 1")


# ---------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class MarkovResult:
    """gamma_k per class (packets per time unit) and how it was obtained."""

    objective: str
    names: tuple[str, ...]
    gamma: np.ndarray
    mean_flows: np.ndarray
    method: str                         # "exact" or "simulate"
    solve_seconds: float
    resource_loads: tuple[float, ...]
    truncation: tuple[int, ...] | None = None   # exact: cap X_k of each class
    boundary_mass: float | None = None          # exact: P(some x_k = X_k)
    gamma_change: float | None = None           # exact: relative change since the previous truncation
    n_states: int | None = None
    iterations: int | None = None               # exact: truncations solved
    gamma_low: np.ndarray | None = None         # simulate: confidence interval
    gamma_high: np.ndarray | None = None
    events: int | None = None
    confidence: float | None = None
    history: tuple = field(default=())          # exact: (caps, boundary, gamma) per truncation
    grading: float | None = None                # graded: the lattice's grading (solve_graded)
    truncation_shape: str | None = None         # exact: "box" or "region" (solve's truncation)
    lumped: tuple[str, str] | None = None       # exact, region: the two classes of the symmetry lumped

    def to_dict(self) -> dict:
        d = {"objective": self.objective, "method": self.method,
             "solve_seconds": round(self.solve_seconds, 4),
             "classes": [{"name": n, "gamma": float(g), "mean_flows": float(e)}
                         for n, g, e in zip(self.names, self.gamma, self.mean_flows)]}
        if self.method in ("exact", "graded"):
            d.update(truncation=list(self.truncation), boundary_mass=self.boundary_mass,
                     gamma_change=self.gamma_change, n_states=self.n_states)
            if self.method == "graded":
                d.update(grading=self.grading)
            else:
                d.update(truncation_shape=self.truncation_shape, lumped=list(self.lumped) if self.lumped else None)
        else:
            for c, lo, hi in zip(d["classes"], self.gamma_low, self.gamma_high):
                c["gamma_low"] = float(lo)
                c["gamma_high"] = float(hi) if math.isfinite(hi) else None
            d.update(events=self.events, confidence=self.confidence)
        return d


# ---------------------------------------------------------------------------
# numba kernels: CSR matvec, ILU(0), GMRES, Gillespie
# ---------------------------------------------------------------------------
@jit
def csr_mv(indptr, indices, data, x, out):
    for i in range(out.shape[0]):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * x[indices[p]]
        out[i] = s


@jit(parallel=True)
def ell_split(indptr, indices, data, lu, diag, bnd):
    """The CSR matrix ``A`` and its ILU(0) factors ``lu`` in row-major padded layouts (ELLPACK):
    ``Av, Ai`` (n, max row length) the values and columns of A; ``Lv, Li`` the strictly lower
    factor, ascending columns, and ``Uv, Ui`` the strictly upper one, descending columns (each
    row's neighbour ``i -+ 1`` last: the recurrences' critical path), both padded at the front
    with zeros (columns: the row's block's first and last row, finite values multiplied by zero).
    Every row's entries in one cache line and loops of fixed length: 1.65x faster triangular
    solves and 1.25x faster products than the CSR kernels at 5.8 M states.

    ``bnd``: the row blocks (:func:`block_bounds`); the factors keep only the entries inside the
    row's block (those of :func:`ilu0`'s block-diagonal factorisation), A keeps all."""
    n = indptr.shape[0] - 1
    nb = bnd.shape[0] - 1
    wid = np.ones((nb, 3), np.int64)        # per block: the widest row of A, L and U
    for blk in prange(nb):
        s0 = bnd[blk]
        s1 = bnd[blk + 1]
        for i in range(s0, s1):
            wid[blk, 0] = max(wid[blk, 0], indptr[i + 1] - indptr[i])
            pl = diag[i]
            while pl > indptr[i] and indices[pl - 1] >= s0:
                pl -= 1
            pu = diag[i] + 1
            while pu < indptr[i + 1] and indices[pu] < s1:
                pu += 1
            wid[blk, 1] = max(wid[blk, 1], diag[i] - pl)
            wid[blk, 2] = max(wid[blk, 2], pu - diag[i] - 1)
    wa = 1
    wl = 1
    wu = 1
    for blk in range(nb):
        wa = max(wa, wid[blk, 0])
        wl = max(wl, wid[blk, 1])
        wu = max(wu, wid[blk, 2])
    Av = np.zeros((n, wa))
    Ai = np.empty((n, wa), np.int32)
    Lv = np.zeros((n, wl), lu.dtype)
    Li = np.zeros((n, wl), np.int32)
    Uv = np.zeros((n, wu), lu.dtype)
    Ui = np.zeros((n, wu), np.int32)
    for blk in prange(nb):
        s0 = bnd[blk]
        s1 = bnd[blk + 1]
        for i in range(s0, s1):
            q = 0
            for p in range(indptr[i], indptr[i + 1]):
                Av[i, q] = data[p]
                Ai[i, q] = indices[p]
                q += 1
            while q < wa:
                Ai[i, q] = i
                q += 1
            pl = diag[i]
            while pl > indptr[i] and indices[pl - 1] >= s0:
                pl -= 1
            nl = diag[i] - pl
            for t in range(wl - nl):
                Li[i, t] = s0
            for t in range(nl):
                Lv[i, wl - nl + t] = lu[pl + t]
                Li[i, wl - nl + t] = indices[pl + t]
            pu = diag[i] + 1
            while pu < indptr[i + 1] and indices[pu] < s1:
                pu += 1
            nu = pu - diag[i] - 1
            for t in range(wu - nu):
                Ui[i, t] = s1 - 1
            for t in range(nu):
                Uv[i, wu - nu + t] = lu[pu - 1 - t]
                Ui[i, wu - nu + t] = indices[pu - 1 - t]
    return Av, Ai, Lv, Li, Uv, Ui


@jit(inline="always")
def _row_dot(Av, Ai, x, i):
    """Row i of A times x, A in :func:`ell_split`'s layout, summed in column order.  The
    stencils of 2, 3 and 4 classes (rows of 5, 7 and 9) are written out: the same sums, but
    12-15 % faster than the loop over a row length known only at run time (br-balanced, load
    0.98, 7.0 M states)."""
    w = Av.shape[1]
    if w == 7:
        return ((((((Av[i, 0] * x[Ai[i, 0]] + Av[i, 1] * x[Ai[i, 1]]) + Av[i, 2] * x[Ai[i, 2]])
                   + Av[i, 3] * x[Ai[i, 3]]) + Av[i, 4] * x[Ai[i, 4]]) + Av[i, 5] * x[Ai[i, 5]])
                + Av[i, 6] * x[Ai[i, 6]])
    if w == 9:
        return ((((((((Av[i, 0] * x[Ai[i, 0]] + Av[i, 1] * x[Ai[i, 1]]) + Av[i, 2] * x[Ai[i, 2]])
                     + Av[i, 3] * x[Ai[i, 3]]) + Av[i, 4] * x[Ai[i, 4]]) + Av[i, 5] * x[Ai[i, 5]])
                  + Av[i, 6] * x[Ai[i, 6]]) + Av[i, 7] * x[Ai[i, 7]]) + Av[i, 8] * x[Ai[i, 8]])
    if w == 5:
        return ((((Av[i, 0] * x[Ai[i, 0]] + Av[i, 1] * x[Ai[i, 1]]) + Av[i, 2] * x[Ai[i, 2]])
                 + Av[i, 3] * x[Ai[i, 3]]) + Av[i, 4] * x[Ai[i, 4]])
    s = 0.0
    for q in range(w):
        s += Av[i, q] * x[Ai[i, q]]
    return s


@jit(inline="always")
def _row_sub(Tv, Ti, z, i, s):
    """``s - sum_q T_iq z_q`` for row i of a triangular factor in :func:`ell_split`'s layout,
    subtracted in column order; rows of 2, 3 and 4 (the factors of 2, 3 and 4 classes) written
    out, as in :func:`_row_dot` (the same bits; the preconditioner 12 % faster)."""
    w = Tv.shape[1]
    if w == 3:
        return ((s - Tv[i, 0] * z[Ti[i, 0]]) - Tv[i, 1] * z[Ti[i, 1]]) - Tv[i, 2] * z[Ti[i, 2]]
    if w == 4:
        return (((s - Tv[i, 0] * z[Ti[i, 0]]) - Tv[i, 1] * z[Ti[i, 1]]) - Tv[i, 2] * z[Ti[i, 2]]) - Tv[i, 3] * z[Ti[i, 3]]
    if w == 2:
        return (s - Tv[i, 0] * z[Ti[i, 0]]) - Tv[i, 1] * z[Ti[i, 1]]
    for q in range(w):
        s -= Tv[i, q] * z[Ti[i, q]]
    return s


@jit(parallel=True)
def ell_mv(Av, Ai, x, out, bnd):
    """out = A x, A in :func:`ell_split`'s layout; the row blocks ``bnd`` in parallel."""
    for blk in prange(bnd.shape[0] - 1):
        for i in range(bnd[blk], bnd[blk + 1]):
            out[i] = _row_dot(Av, Ai, x, i)


@jit(parallel=True)
def ilu0(indptr, indices, data, bnd):
    """ILU(0) (IKJ variant) of the block-diagonal part of a CSR matrix with sorted indices and a
    full diagonal: the row blocks ``bnd`` (:func:`block_bounds`) are factorised independently
    (in parallel), each row's entries outside its block left out of the elimination (block
    Jacobi with ILU(0) blocks [Saad 2003, §12.2 and §14.3], PETSc's default parallel
    preconditioner; one block: the plain ILU(0)).  Returns the factors (in ``data``'s pattern;
    the entries outside the blocks keep A's values, unused), the position of each row's
    diagonal and its inverse."""
    n = indptr.shape[0] - 1
    lu = data.copy()
    diag = np.empty(n, np.int64)
    inv = np.empty(n)
    marker = np.full(n, -1, np.int64)      # a block writes only its own columns' entries
    for blk in prange(bnd.shape[0] - 1):
        s0 = bnd[blk]
        s1 = bnd[blk + 1]
        for i in range(s0, s1):
            for p in range(indptr[i], indptr[i + 1]):
                c = indices[p]
                if c >= s0 and c < s1:
                    marker[c] = p
            for p in range(indptr[i], indptr[i + 1]):
                k = indices[p]
                if k >= i:
                    break
                if k < s0:
                    continue
                lu[p] /= lu[diag[k]]
                lik = lu[p]
                for q in range(diag[k] + 1, indptr[k + 1]):
                    c = indices[q]
                    if c < s1:
                        mm = marker[c]
                        if mm >= 0:
                            lu[mm] -= lik * lu[q]
            d = -1
            for p in range(indptr[i], indptr[i + 1]):
                c = indices[p]
                if c == i:
                    d = p
                if c >= s0 and c < s1:
                    marker[c] = -1
            diag[i] = d
            inv[i] = 1.0 / lu[d]
    return lu, diag, inv


@jit(inline="always")
def _lower_solve(Lv, Li, r, z, s0, s1, upd, c1, c2, x1, x2):
    """z = L^-1 r on the rows ``s0 .. s1 - 1`` of one block (unit lower factor in
    :func:`ell_split`'s layout), in row order.  ``z[s0]`` is zeroed first: the padding reads it
    (times zero) before the sweep writes it.  ``upd`` (:func:`precond`): r is first updated in
    the same pass, ``r_i = x1_i + c1 (r_i - c2 x2_i)`` (1) or ``r_i = r_i - c1 x2_i`` (2)."""
    z[s0] = 0.0
    for i in range(s0, s1):
        if upd == 1:
            s = x1[i] + c1 * (r[i] - c2 * x2[i])
            r[i] = s
        elif upd == 2:
            s = r[i] - c1 * x2[i]
            r[i] = s
        else:
            s = r[i]
        z[i] = _row_sub(Lv, Li, z, i, s)


@jit(inline="always")
def _upper_row(Uv, Ui, inv, z, i):
    """Row i of the backward solve with the upper factor: ``(z_i - sum U_iq z_q) / U_ii``.
    The triangular solves are a recurrence along the rows; the neighbour ``i -+ 1`` (the last
    class's) is summed last and the diagonal is a multiplication by its inverse, so each row
    waits for the previous one by a single multiply-add."""
    return _row_sub(Uv, Ui, z, i, z[i]) * inv[i]


@jit
def coarse_levels(indptr, indices, data, level, pw, nlev):
    """The aggregated operator ``A_c = R A P`` of a two-level preconditioner: ``R`` sums the
    rows of one level (total population), ``P`` spreads a level's value over its states with
    weights ``pw`` (summing to 1 per level).  Transitions change the total by one, so ``A_c`` is
    tridiagonal: returns its sub-, main and super-diagonal (the aggregated birth-death chain of
    iterative aggregation-disaggregation, [Stewart 1994] §6.3)."""
    lo = np.zeros(nlev)
    di = np.zeros(nlev)
    up = np.zeros(nlev)
    for i in range(indptr.shape[0] - 1):
        n = level[i]
        for q in range(indptr[i], indptr[i + 1]):
            m = level[indices[q]]
            v = data[q] * pw[indices[q]]
            if m == n:
                di[n] += v
            elif m == n - 1:
                lo[n] += v
            else:
                up[n] += v
    return lo, di, up


@jit
def level_columns(indptr, indices, data, level):
    """``colc[j, d]``: the sum of column j of A over the rows of level ``level[j] + d - 1``
    (d = 0, 1, 2: a transition changes the total population by one), so that ``R A z`` costs
    three multiply-adds per state instead of a product with A."""
    n = indptr.shape[0] - 1
    colc = np.zeros((n, 3))
    for i in range(n):
        for q in range(indptr[i], indptr[i + 1]):
            j = indices[q]
            colc[j, level[i] - level[j] + 1] += data[q]
    return colc


@jit(parallel=True)
def precond(Lv, Li, Uv, Ui, inv, level, pw, colc, clo, cdi, cup, bnd, r, z, rc, upd, c1, c2, x1, x2):
    """z = M^-1 r: ILU(0) of the block-diagonal part (:func:`ilu0`; the row blocks ``bnd``
    swept in parallel), then (when ``cdi`` is not empty) the coarse correction
    ``z += P A_c^-1 R (r - A z)``, the level chain solved exactly (Thomas algorithm; ``A_c`` is
    a column diagonally dominant M-matrix, no pivoting needed); ``R (r - A z)`` (the whole A) is
    summed in the backward sweeps from the level column sums ``colc`` (:func:`level_columns`),
    per block, then over the blocks in their order (the same sums whatever the number of
    threads).  ``rc``: work, (blocks + 1, levels).

    ``upd`` 1 or 2: r is first updated by a vector operation of BiCGSTAB's (:func:`_lower_solve`:
    ``r = x1 + c1 (r - c2 x2)`` or ``r = r - c1 x2``), in the forward sweep rather than a pass of
    its own (the same operations, the same bits; one pass less over three vectors).  Callers pass
    ``upd`` as ``np.int64``, not a literal: numba would compile this kernel once per literal value
    (8 s each with ``parallel=True``)."""
    nb = bnd.shape[0] - 1
    nlev = cdi.shape[0]
    for blk in prange(nb):
        s0 = bnd[blk]
        s1 = bnd[blk + 1]
        _lower_solve(Lv, Li, r, z, s0, s1, upd, c1, c2, x1, x2)
        if nlev == 0:
            for i in range(s1 - 1, s0 - 1, -1):
                z[i] = _upper_row(Uv, Ui, inv, z, i)
        else:
            rsb = rc[blk]
            for lv in range(nlev):
                rsb[lv] = 0.0
            for i in range(s1 - 1, s0 - 1, -1):
                zi = _upper_row(Uv, Ui, inv, z, i)
                z[i] = zi
                lv = level[i]
                rsb[lv] += r[i] - colc[i, 1] * zi
                if lv > 0:
                    rsb[lv - 1] -= colc[i, 0] * zi
                if lv + 1 < nlev:
                    rsb[lv + 1] -= colc[i, 2] * zi
    if nlev == 0:
        return
    rs = rc[0]
    for blk in range(1, nb):
        for m in range(nlev):
            rs[m] += rc[blk, m]
    cp = rc[nb]
    # forward elimination on (lo, di, up), rs; the solution overwrites rs
    den = cdi[0]
    cp[0] = cup[0] / den
    rs[0] = rs[0] / den
    for m in range(1, nlev):
        den = cdi[m] - clo[m] * cp[m - 1]
        cp[m] = cup[m] / den
        rs[m] = (rs[m] - clo[m] * rs[m - 1]) / den
    for m in range(nlev - 2, -1, -1):
        rs[m] -= cp[m] * rs[m + 1]
    for blk in prange(nb):
        for i in range(bnd[blk], bnd[blk + 1]):
            z[i] += pw[i] * rs[level[i]]


@jit
def gmres(Av, Ai, Lv, Li, Uv, Ui, inv, level, pw, colc, clo, cdi, cup, bnd, b, x, restart, maxiter, rtol):
    """Restarted GMRES(restart), right-preconditioned by ILU(0) and (``cdi`` not empty) the level
    aggregation of :func:`precond`; x is the start and the result.

    Returns (iterations, final relative residual ||b - A x|| / ||b||).
    """
    n = b.shape[0]
    rc = np.zeros((bnd.shape[0], cdi.shape[0]))
    V = np.empty((restart + 1, n))  # row k+1 is written before it is read: untouched rows cost no memory
    H = np.zeros((restart + 1, restart))
    cs = np.zeros(restart)
    sn = np.zeros(restart)
    g = np.zeros(restart + 1)
    w = np.zeros(n)
    z = np.zeros(n)
    r = np.zeros(n)
    bnorm = np.sqrt(np.sum(b * b))
    if bnorm == 0:
        bnorm = 1.0
    it = 0
    while it < maxiter:
        ell_mv(Av, Ai, x, r, bnd)
        for i in range(n):
            r[i] = b[i] - r[i]
        beta = np.sqrt(np.sum(r * r))
        if beta <= rtol * bnorm:
            return it, beta / bnorm
        for i in range(n):
            V[0, i] = r[i] / beta
        g[:] = 0.0
        g[0] = beta
        k = 0
        while k < restart and it < maxiter:
            precond(Lv, Li, Uv, Ui, inv, level, pw, colc, clo, cdi, cup, bnd, V[k], z, rc, np.int64(0), 0.0, 0.0, z, z)
            ell_mv(Av, Ai, z, w, bnd)
            for j in range(k + 1):  # modified Gram-Schmidt
                h = 0.0
                for i in range(n):
                    h += w[i] * V[j, i]
                H[j, k] = h
                for i in range(n):
                    w[i] -= h * V[j, i]
            hn = np.sqrt(np.sum(w * w))
            H[k + 1, k] = hn
            if hn > 0:
                for i in range(n):
                    V[k + 1, i] = w[i] / hn
            for j in range(k):
                t = cs[j] * H[j, k] + sn[j] * H[j + 1, k]
                H[j + 1, k] = -sn[j] * H[j, k] + cs[j] * H[j + 1, k]
                H[j, k] = t
            d = np.sqrt(H[k, k] ** 2 + H[k + 1, k] ** 2)
            if d == 0:
                d = 1e-300
            cs[k] = H[k, k] / d
            sn[k] = H[k + 1, k] / d
            H[k, k] = d
            H[k + 1, k] = 0.0
            g[k + 1] = -sn[k] * g[k]
            g[k] = cs[k] * g[k]
            k += 1
            it += 1
            if abs(g[k]) <= rtol * bnorm or hn == 0:
                break
        y = np.zeros(k)
        for i in range(k - 1, -1, -1):
            s = g[i]
            for j in range(i + 1, k):
                s -= H[i, j] * y[j]
            y[i] = s / H[i, i]
        w[:] = 0.0
        for j in range(k):
            for i in range(n):
                w[i] += y[j] * V[j, i]
        precond(Lv, Li, Uv, Ui, inv, level, pw, colc, clo, cdi, cup, bnd, w, z, rc, np.int64(0), 0.0, 0.0, w, w)
        for i in range(n):
            x[i] += z[i]
    ell_mv(Av, Ai, x, r, bnd)
    for i in range(n):
        r[i] = b[i] - r[i]
    return it, np.sqrt(np.sum(r * r)) / bnorm


#: BiCGSTAB: consecutive breakdowns (a zero inner product) before it gives up (GMRES takes over)
BICGSTAB_BREAKDOWNS = 3


@jit(parallel=True)
def ell_mv_dots(Av, Ai, x, out, w, bnd, part):
    """out = A x (:func:`ell_mv`); returns ``(out . out, out . w)`` from the same pass, summed
    per row block and then in block order.  ``part``: work, (2, blocks)."""
    nb = bnd.shape[0] - 1
    for blk in prange(nb):
        acc = 0.0
        acc1 = 0.0
        for i in range(bnd[blk], bnd[blk + 1]):
            s = _row_dot(Av, Ai, x, i)
            out[i] = s
            acc += s * s
            acc1 += s * w[i]
        part[0, blk] = acc
        part[1, blk] = acc1
    oo = part[0, 0]
    ow = part[1, 0]
    for blk in range(1, nb):
        oo += part[0, blk]
        ow += part[1, blk]
    return oo, ow


@jit(parallel=True)
def bicgstab(Av, Ai, Lv, Li, Uv, Ui, inv, level, pw, colc, clo, cdi, cup, bnd, b, x, W, sc, maxiter, rtol):
    """BiCGSTAB [van der Vorst 1992, Alg. 1], right-preconditioned by :func:`precond`; x is the
    start and the result.  ``W`` (7, n) holds its vectors ``r, r^, p, v, p^, s^, t`` and ``sc``
    its scalars ``rho, alpha, omega, started, breakdowns, r^ . r`` between calls, so that calls
    of at most ``maxiter`` iterations continue one run (``sc[3] = 0``: start afresh from the true
    residual).  A residual that the recurrence says converged is checked against ``b - A x``;
    if they disagree, or an inner product vanishes (breakdown), it starts afresh from ``x``.  The
    inner products are summed in the passes that write their vectors.

    Two preconditioner solves and two products with A per iteration, seven vectors, no growing
    basis: on the region systems (1.1-1.4 M states, load 0.95-0.98) 42-50 iterations and 3.1-4.3
    s where GMRES(73) takes 60-81 iterations and 4.0-8.0 s, most of it in Gram-Schmidt.

    Every pass over the vectors runs on the row blocks ``bnd`` in parallel (numba ``prange``), its
    inner products summed per block and then in block order: the iterates depend on the blocks,
    not on the number of threads.

    Returns (iterations, relative residual; NaN after ``BICGSTAB_BREAKDOWNS`` breakdowns in a row).
    """
    nb = bnd.shape[0] - 1
    r = W[0]
    rh = W[1]
    p = W[2]
    v = W[3]
    ph = W[4]
    sh = W[5]
    t = W[6]
    rc = np.zeros((nb + 1, cdi.shape[0]))
    part = np.zeros((2, nb))
    bb = 0.0
    for i in range(b.shape[0]):
        bb += b[i] * b[i]
    bnorm = np.sqrt(bb)
    if bnorm == 0:
        bnorm = 1.0
    it = 0
    res = np.inf
    while it < maxiter:
        if sc[3] == 0.0:
            ell_mv(Av, Ai, x, r, bnd)
            for blk in prange(nb):
                acc = 0.0
                for i in range(bnd[blk], bnd[blk + 1]):
                    ri0 = b[i] - r[i]
                    r[i] = ri0
                    rh[i] = ri0
                    p[i] = 0.0
                    v[i] = 0.0
                    acc += ri0 * ri0
                part[0, blk] = acc
            rr = part[0, 0]
            for blk in range(1, nb):
                rr += part[0, blk]
            res = np.sqrt(rr) / bnorm
            if res <= rtol or not np.isfinite(res):
                return it, res
            sc[0] = 1.0
            sc[1] = 1.0
            sc[2] = 1.0
            sc[3] = 1.0
            sc[5] = rr                              # r^ . r with r^ = r
        rho, alpha, omega = sc[0], sc[1], sc[2]
        rho1 = sc[5]
        if rho1 == 0.0 or not np.isfinite(rho1):
            sc[3] = 0.0
            sc[4] += 1.0
            if sc[4] > BICGSTAB_BREAKDOWNS:
                return it, np.nan
            continue
        beta = (rho1 / rho) * (alpha / omega)
        # p = r + beta (p - omega v), in the preconditioner's forward sweep
        precond(Lv, Li, Uv, Ui, inv, level, pw, colc, clo, cdi, cup, bnd, p, ph, rc, np.int64(1), beta, omega, r, v)
        _, rv = ell_mv_dots(Av, Ai, ph, v, rh, bnd, part)
        if rv == 0.0 or not np.isfinite(rv):
            sc[3] = 0.0
            sc[4] += 1.0
            if sc[4] > BICGSTAB_BREAKDOWNS:
                return it, np.nan
            continue
        alpha = rho1 / rv
        # r -= alpha v (r is now s), in the preconditioner's forward sweep
        precond(Lv, Li, Uv, Ui, inv, level, pw, colc, clo, cdi, cup, bnd, r, sh, rc, np.int64(2), alpha, 0.0, r, v)
        tt, ts = ell_mv_dots(Av, Ai, sh, t, r, bnd, part)
        omega = ts / tt if tt > 0.0 else 0.0
        for blk in prange(nb):
            acc = 0.0
            acc1 = 0.0
            for i in range(bnd[blk], bnd[blk + 1]):
                x[i] += alpha * ph[i] + omega * sh[i]
                ri = r[i] - omega * t[i]
                r[i] = ri
                acc += ri * ri
                acc1 += rh[i] * ri
            part[0, blk] = acc
            part[1, blk] = acc1
        rr = part[0, 0]
        rhr = part[1, 0]
        for blk in range(1, nb):
            rr += part[0, blk]
            rhr += part[1, blk]
        it += 1
        sc[0] = rho1
        sc[1] = alpha
        sc[2] = omega
        sc[5] = rhr
        res = np.sqrt(rr) / bnorm
        if omega == 0.0 or not np.isfinite(res):
            sc[3] = 0.0
            sc[4] += 1.0
            if sc[4] > BICGSTAB_BREAKDOWNS:
                return it, np.nan
            continue
        sc[4] = 0.0
        if res <= rtol:
            ell_mv(Av, Ai, x, t, bnd)
            for blk in prange(nb):
                acc = 0.0
                for i in range(bnd[blk], bnd[blk + 1]):
                    d = b[i] - t[i]
                    acc += d * d
                part[0, blk] = acc
            tr = part[0, 0]
            for blk in range(1, nb):
                tr += part[0, blk]
            res = np.sqrt(tr) / bnorm
            if res <= rtol:
                return it, res
            sc[3] = 0.0                             # the recurrence drifted: start afresh from x
    return it, res


@jit(cache=False)  # calls kernels of another module: never cache (stale code)
def gillespie(code, a, w, norm, lam, sigma, rng, x, ev0, ev1, n_warm, batch_events, integ, dur):
    """Events ``ev0 <= ev < ev1`` of the chain from the state ``x`` (updated in place; the run
    starts from the empty state at ``ev = 0``); events from ``n_warm`` on add to integ (B, K),
    the time integral of x per batch of ``batch_events``, and dur (B,), the batch durations.
    Holding times are the expected 1 / R(x).  Calls over consecutive ranges give the same
    result as one call (the state is x and the generator's)."""
    K = a.shape[0]
    phi = np.zeros(K)
    rates = np.zeros(2 * K)
    for ev in range(ev0, ev1):
        state_phi(code, x, a, w, norm, phi)
        R = 0.0
        for k in range(K):
            rates[k] = lam[k]
            rates[K + k] = x[k] * phi[k] / sigma[k] if x[k] > 0 else 0.0
            R += rates[k] + rates[K + k]
        hold = 1.0 / R
        if ev >= n_warm:
            b = (ev - n_warm) // batch_events
            dur[b] += hold
            for k in range(K):
                integ[b, k] += x[k] * hold
        u = rng.random() * R
        e = 0
        acc = rates[0]
        while acc < u and e < 2 * K - 1:
            e += 1
            acc += rates[e]
        while rates[e] <= 0:  # guard against u landing on a zero-rate event by rounding
            e -= 1
        if e < K:
            x[e] += 1.0
        else:
            x[e - K] -= 1.0


def _kernels():
    return dict(csr_mv=csr_mv, ilu0=ilu0, gmres=gmres, bicgstab=bicgstab, gillespie=gillespie,
                coarse_levels=coarse_levels, level_columns=level_columns, box_system=box_system, ell_split=ell_split)


# ---------------------------------------------------------------------------
# exact truncated solve
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _Truncated:
    caps: tuple[int, ...]
    pi: np.ndarray          # (N,) normalised, C order over shape caps + 1
    gamma: np.ndarray
    mean_flows: np.ndarray
    boundary: float         # P(some x_k = X_k)
    marg_tail: np.ndarray   # (K, q+1) marginal P(x_k = X_k - q .. X_k)
    residual: float
    node_p: np.ndarray | None = None    # graded: probability per fine state at each node (p_0 = 1)
    axes: tuple | None = None           # graded: node coordinates of each class
    region: object = None               # region solves: the analysis.markov_region.Region
    node_scale: float = 1.0             # graded: probability per fine state at node i = node_p[i] / node_scale


def _states(caps) -> np.ndarray:
    shape = tuple(int(c) + 1 for c in caps)
    return np.indices(shape).reshape(len(shape), -1).T.astype(np.float64)


def _reduced(QT):
    """CSR arrays of ``A = QT[1:, 1:]`` (sorted indices) and ``b = -QT[1:, 0]``: the system for
    ``pi_1 .. pi_{N-1}`` once ``pi_0 = 1`` and the balance equation of state 0 is dropped."""
    A = QT[1:, 1:].tocsr()
    A.sort_indices()
    b = -np.asarray(QT[1:, 0].todense()).ravel()
    return (A.indptr.astype(np.int64), A.indices.astype(np.int32),
            np.ascontiguousarray(A.data, dtype=np.float64)), b


@jit
def box_system(shape, strides, birth, death):
    """The reduced system of the box-truncated chain (rows and columns of states 1..N-1 of the
    transposed generator, state 0 moved to the right-hand side), assembled straight into CSR with
    sorted columns: row i holds the inflows from ``i - s_k`` (births), the diagonal (minus the
    total outflow of i) and the inflows from ``i + s_k`` (deaths), ``s_k`` the C-order strides.
    Same matrix as the COO assembly of ``Q^T`` followed by ``QT[1:, 1:]``, without its copies."""
    N, K = birth.shape
    indptr = np.zeros(N, np.int64)
    indices = np.empty((N - 1) * (2 * K + 1), np.int32)
    data = np.empty((N - 1) * (2 * K + 1))
    b = np.zeros(N - 1)
    nz = 0
    for i in range(1, N):
        for k in range(K):                        # i - s_0 < i - s_1 < ... : ascending columns
            if (i // strides[k]) % shape[k] >= 1:
                j = i - strides[k]
                v = birth[j, k]
                if v > 0:
                    if j == 0:
                        b[i - 1] = -v
                    else:
                        indices[nz] = j - 1
                        data[nz] = v
                        nz += 1
        ob = 0.0
        od = 0.0
        for k in range(K):
            ob += birth[i, k]
            od += death[i, k]
        indices[nz] = i - 1
        data[nz] = -(ob + od)
        nz += 1
        for k in range(K - 1, -1, -1):
            if (i // strides[k]) % shape[k] < shape[k] - 1:
                j = i + strides[k]
                v = death[j, k]
                if v > 0:
                    indices[nz] = j - 1
                    data[nz] = v
                    nz += 1
        indptr[i] = nz
    return indptr, indices[:nz], data[:nz], b      # views: the unused tail is never touched (not resident)


def preconditioner(Acsr, total: np.ndarray | None = None, shape_w: np.ndarray | None = None):
    """``A`` and the arrays of :func:`precond` for the reduced system ``Acsr`` (CSR arrays), in
    :func:`ell_split`'s layout: ``(Av, Ai), (Lv, Li, Uv, Ui, inv, level, pw, colc, clo, cdi,
    cup, bnd)``, ``bnd`` the row blocks (:func:`block_bounds`).  ILU(0) and, given the total population ``total`` (N,) of each state and a warm
    start ``shape_w`` (N,), the level aggregation (weights within a level from the warm start;
    measured on br-unbalanced at 0.95, 587 594 states: 50 GMRES iterations instead of 92; with
    uniform weights, as from a cold start, it needs more iterations than ILU(0) alone, so a cold
    start uses ILU(0) only).  The coarse correction's arrays are single precision (it is a
    preconditioner), the levels int32."""
    indptr, indices, data = Acsr
    n = indptr.shape[0] - 1
    kr = _kernels()
    bnd = block_bounds(n)
    lu, diag, inv = kr["ilu0"](indptr, indices, data, bnd)
    if ILU_FLOAT32:
        lu = lu.astype(np.float32)
    Av, Ai, Lv, Li, Uv, Ui = kr["ell_split"](indptr, indices, data, lu, diag, bnd)
    del lu, diag
    if total is None or shape_w is None or not TWO_LEVEL:  # level weights need a shape (a warm start)
        level = np.zeros(n, dtype=np.int32)
        pw = np.zeros(n)
        colc = np.zeros((n, 3), np.float32)
        clo = cdi = cup = np.zeros(0)
    else:
        level = np.ascontiguousarray(total[1:], dtype=np.int32) - 1     # state 0 is the only one at total 0
        wgt = np.maximum(shape_w[1:], 1e-300)
        nlev = int(level.max()) + 1
        pw = wgt / np.bincount(level, wgt, minlength=nlev)[level]
        del wgt
        clo, cdi, cup = kr["coarse_levels"](indptr, indices, data, level, pw, nlev)
        colc = kr["level_columns"](indptr, indices, data, level).astype(np.float32)
    return (Av, Ai), (Lv, Li, Uv, Ui, inv, level, pw, colc, clo, cdi, cup, bnd)


def _stationary(Acsr, b: np.ndarray, y: np.ndarray, rtol: float, total: np.ndarray | None = None,
                shape_w: np.ndarray | None = None, *, deadline: float | None = None) -> float:
    """Solve the reduced system ``A y = b`` (:func:`_reduced`, :func:`box_system`: ``pi Q = 0``
    with ``pi_0 = 1``); ``y`` (N - 1,) is the start and receives ``pi_1 .. pi_{N-1}``.  Krylov
    method ``KRYLOV`` right-preconditioned by :func:`preconditioner`; GMRES if BiCGSTAB breaks
    down or stalls, SuperLU if GMRES does.  ``Acsr``: the CSR arrays; a list is emptied once
    the solver's layout is built (so that they are freed if the caller keeps no other
    reference).  Returns the relative residual."""
    n = b.shape[0]
    if n == 0:
        return 0.0
    N = n + 1
    kr = _kernels()
    (Av, Ai), P = preconditioner(Acsr, total, shape_w)
    if isinstance(Acsr, list):
        Acsr.clear()
    global LAST_ITERATIONS, LAST_KRYLOV
    it, res = 0, np.inf
    if KRYLOV == "bicgstab":
        start = y.copy()
        W = np.empty((7, n))                     # rows are written before they are read
        sc = np.zeros(6)
        it, res = _krylov_chunked(
            lambda maxiter: kr["bicgstab"](Av, Ai, *P, b, y, W, sc, maxiter, rtol),
            N, BICGSTAB_CHUNK, BICGSTAB_MAXITER, rtol, deadline, "BiCGSTAB")
        del W
        LAST_KRYLOV = "bicgstab"
        if not np.isfinite(res) or res > 1e3 * rtol:
            if not np.all(np.isfinite(y)):
                y[:] = start
        del start
    if KRYLOV == "gmres" or not np.isfinite(res) or res > 1e3 * rtol:
        restart = restart_for(N - 1)
        it2, res = _krylov_chunked(
            lambda maxiter: kr["gmres"](Av, Ai, *P, b, y, restart, maxiter, rtol),
            N, restart, 3000, rtol, deadline, "GMRES")
        it += it2
        LAST_KRYLOV = "gmres"
    LAST_ITERATIONS = int(it)
    if not np.isfinite(res) or res > 1e3 * rtol:
        from scipy.sparse.linalg import spsolve

        import scipy.sparse as sp

        _check_deadline(deadline, f"before the direct solve of {N} states")
        del P
        A = sp.csr_matrix((Av.ravel(), Ai.ravel(), np.arange(0, Av.size + 1, Av.shape[1])), shape=(n, n))
        A.sum_duplicates()          # the padding (zeros on the diagonal's column) adds nothing
        y[:] = spsolve(A.tocsc(), b, permc_spec="MMD_AT_PLUS_A")
        res = float(np.linalg.norm(b - A @ y) / max(np.linalg.norm(b), 1e-300))
        LAST_KRYLOV = "superlu"
    return float(res)


def solve_truncated(m: FluidModel, objective: str, caps, *, x0: np.ndarray | None = None,
                    rtol: float = EXACT_RTOL, deadline: float | None = None) -> _Truncated:
    """Stationary distribution of the chain truncated at ``x_k <= caps[k]``.

    ``deadline`` (``time.monotonic()`` value): give up with :class:`SolveTimeLimit` past it,
    checked between Krylov chunks and before the direct fallback."""
    from mrfq.analysis.state_rates import state_rates

    K = m.a.shape[0]
    caps = tuple(int(c) for c in caps)
    shape = tuple(c + 1 for c in caps)
    N = int(np.prod(shape))
    X = _states(caps)
    strides = np.array([int(np.prod(shape[k + 1:])) for k in range(K)], dtype=np.int64)
    phi = state_rates(objective, X, m.a, m.w)
    death = X * phi / m.sigma
    birth = np.where(X < np.array(caps), m.lam, 0.0)
    scale = max(float(death.max()), float(m.lam.max()))
    death /= scale
    birth /= scale
    indptr, indices, data, b = _kernels()["box_system"](np.array(shape, dtype=np.int64), strides, birth, death)
    del birth, death, phi
    y = np.zeros(N - 1) if x0 is None else np.array(x0[1:], dtype=np.float64)
    A = [indptr, indices, data]
    del indptr, indices, data
    res = _stationary(A, b, y, rtol, X.sum(axis=1), x0, deadline=deadline)
    del b
    pi = np.concatenate([[1.0], y])
    pi = np.maximum(pi, 0.0)
    pi /= pi.sum()
    Ex = pi @ X
    at_cap = (X == np.array(caps)).any(axis=1)
    q = 4
    tail = np.zeros((K, q + 1))
    P = pi.reshape(shape)
    for k in range(K):
        marg = P.sum(axis=tuple(i for i in range(K) if i != k))
        for i in range(q + 1):
            n = caps[k] - q + i
            tail[k, i] = marg[n] if n >= 0 else np.nan
    with np.errstate(divide="ignore"):
        gamma = m.rho / Ex
    return _Truncated(caps=caps, pi=pi, gamma=gamma, mean_flows=Ex, boundary=float(pi[at_cap].sum()),
                      marg_tail=tail, residual=float(res))


#: region solves: states whose rates are computed at once (bounds the transient memory)
RATE_CHUNK = 1 << 20


def solve_region(m: FluidModel, objective: str, region, *, x0: np.ndarray | None = None,
                 rtol: float = EXACT_RTOL, deadline: float | None = None, mirror: bool = False) -> _Truncated:
    """Stationary distribution of the chain truncated to ``region`` (a
    :class:`analysis.markov_region.Region`: transitions that would leave it blocked).  ``x0``
    (N,): a start, and the within-level weights of the two-level preconditioner (else ILU(0)
    alone).  ``caps`` of the result: the largest ``x_k`` in the region; ``boundary``: the
    probability of the states where some transition is blocked.

    ``mirror``: ``region`` is a :func:`analysis.markov_region.half` and the chain, symmetric
    under swapping classes 0 and 1 (:func:`mirror_pair`), is solved lumped by that symmetry (half
    the states); ``pi`` is then the law of the orbits."""
    from mrfq.analysis import markov_region as mr
    from mrfq.analysis.state_rates import state_rates

    K = m.a.shape[0]
    cshape, lo, hi, off = region.flat()
    N = region.n
    death = np.empty((N, K))
    for s0 in range(0, N, RATE_CHUNK):       # rates chunk by chunk: X and phi stay small
        s1 = min(N, s0 + RATE_CHUNK)
        X = mr.region_coords(cshape, lo, hi, off, s0, s1, np.empty((s1 - s0, K)))
        death[s0:s1] = X * state_rates(objective, X, m.a, m.w) / m.sigma
    scale = max(float(death.max()), float(m.lam.max()))
    death /= scale
    indptr, indices, data, b, edge, total = mr.region_system(cshape, lo, hi, off, death, m.lam / scale,
                                                             bool(mirror))
    del death
    y = np.zeros(N - 1) if x0 is None else np.array(x0[1:], dtype=np.float64)
    A = [indptr, indices, data]
    del indptr, indices, data
    res = _stationary(A, b, y, rtol, total, x0, deadline=deadline)
    del b, total
    pi = np.concatenate([[1.0], y])
    del y
    np.maximum(pi, 0.0, out=pi)
    pi /= pi.sum()
    Ex = mr.region_moments(cshape, lo, hi, off, pi)
    caps = region.caps
    if mirror:                  # E[x_0] = E[x_1] = E[(x_0 + x_1) / 2] over the orbits; caps of R and its mirror
        Ex[0] = Ex[1] = 0.5 * (Ex[0] + Ex[1])
        caps = (caps[0], caps[0]) + tuple(caps[2:])
    with np.errstate(divide="ignore"):
        gamma = m.rho / Ex
    return _Truncated(caps=caps, pi=pi, gamma=gamma, mean_flows=Ex, boundary=float(pi[edge].sum()),
                      marg_tail=np.full((K, 1), np.nan), residual=float(res), region=region)


def _pad(pi: np.ndarray, old, new) -> np.ndarray:
    """Embed a solution on the box ``old`` into the box ``new`` (zeros outside), scaled to pi_0 = 1."""
    P = pi.reshape(tuple(c + 1 for c in old)) / pi[0]
    out = np.zeros(tuple(c + 1 for c in new))
    out[tuple(slice(0, min(o, n) + 1) for o, n in zip(old, new))] = \
        P[tuple(slice(0, min(o, n) + 1) for o, n in zip(old, new))]
    return out.ravel()


def _next_caps(t: _Truncated, tol_boundary: float, boundary_ok: bool) -> tuple[int, ...]:
    K = len(t.caps)
    new = []
    for k, c in enumerate(t.caps):
        tail = t.marg_tail[k]
        p = tail[-1]
        if boundary_ok:  # boundary small enough: one larger truncation to check gamma has settled
            new.append(int(math.ceil(c * 1.15)) + 2)
            continue
        if p <= tol_boundary / (4 * K):  # this class's cap is already far enough out
            new.append(c)
            continue
        q = len(tail) - 1
        r = np.nan
        if c >= q and tail[0] > 0 and p > 0:
            r = (p / tail[0]) ** (1.0 / q)
        if np.isfinite(r) and 0 < r < 0.995:
            need = math.log(tol_boundary / (4 * K) / p) / math.log(r)
            step = int(math.ceil(1.1 * need)) + 2
            step = min(max(step, 2), int(1.5 * c) + 4)
        else:
            step = int(0.5 * c) + 4
        new.append(c + step)
    return tuple(new)


def _refuse_if_too_large(n_states: int, K: int, max_states: float, max_memory: float, where: str) -> None:
    """:class:`TruncationTooLarge` (one line naming ``where``) for a truncation beyond the limits
    (also past 2^31 - 1 states: the CSR columns are int32)."""
    if n_states > min(max_states, 2**31 - 1):
        raise TruncationTooLarge(
            f"truncation: the exact solve needs {n_states} states at this load, more than {int(min(max_states, 2**31 - 1))} "
            f"({where}); use --method simulate or a lower load")
    if exact_memory_bytes(int(n_states), K) > max_memory:
        raise TruncationTooLarge(
            f"truncation: the exact solve would need about {exact_memory_bytes(int(n_states), K) / 1e9:.1f} GB "
            f"(> {max_memory / 1e9:.1f} GB) for {n_states} states ({where}); use --method simulate or a lower load")


def _solve_exact(m: FluidModel, objective: str, *, tol_boundary: float, tol_gamma: float,
                 max_states: int, caps=None, max_memory: float = 4e9,
                 deadline: float | None = None) -> MarkovResult:
    t0 = time.perf_counter()
    K = m.a.shape[0]
    if caps is None:
        caps = (8,) * K
    caps = tuple(int(c) for c in caps)
    if len(caps) != K or min(caps) < 1:
        raise MrfqError(f"caps = {caps}: must be {K} integers >= 1, one per class")
    prev = None
    history = []
    x0 = None
    while True:
        t = solve_truncated(m, objective, caps, x0=x0, deadline=deadline)
        change = np.inf if prev is None else float(np.max(np.abs(t.gamma - prev.gamma) / np.abs(t.gamma)))
        history.append((t.caps, t.boundary, tuple(float(g) for g in t.gamma)))
        b_ok = t.boundary < tol_boundary
        if b_ok and change < tol_gamma:
            break
        new = _next_caps(t, tol_boundary, b_ok)
        if new == caps:
            new = tuple(int(math.ceil(c * 1.15)) + 2 for c in caps)
        n_new = int(np.prod([c + 1 for c in new], dtype=float))
        _refuse_if_too_large(n_new, K, max_states, max_memory, f"caps {list(new)}, boundary mass {t.boundary:.2g}")
        _check_deadline(deadline, f"after {len(history)} truncations (caps {list(t.caps)}, boundary mass "
                                  f"{t.boundary:.2g})")
        x0 = _pad(t.pi, caps, new)
        prev, caps = t, new
    return MarkovResult(
        objective=objective, names=m.names, gamma=t.gamma, mean_flows=t.mean_flows, method="exact",
        solve_seconds=time.perf_counter() - t0, resource_loads=tuple(float(v) for v in m.resource_loads()),
        truncation=t.caps, boundary_mass=t.boundary, gamma_change=change, n_states=int(t.pi.size),
        iterations=len(history), history=tuple(history), truncation_shape="box")


#: region truncation: the first region leaves out an estimated probability of ``tol_boundary``
#: times this (the gamma check needs it small: gamma moves by about 7 times the probability left
#: out, br-balanced at 0.95)
REGION_START = 10.0
#: ... each next one, while the boundary mass is too large, a factor aiming at a boundary mass of
#: ``tol_boundary / REGION_MARGIN`` (the boundary mass is nearly proportional to the probability
#: left out: 0.29 times it at br-balanced 0.95, 0.1 times at 0.98), between 2 and ``REGION_STEP``
REGION_MARGIN = 2.0
REGION_STEP = 30.0
#: ... and ``REGION_CHECK_STEP`` times less once the boundary mass is small enough (the next
#: region only checks that gamma has settled)
REGION_CHECK_STEP = 3.0
#: region truncation: the grading of the lattice whose law shapes the regions
REGION_GRADING = 0.1
#: exact, region truncation: a chain symmetric under swapping two classes is solved lumped by
#: that symmetry ("auto", (choice)) or not ("off"); solve's ``symmetry``
SYMMETRIES = ("auto", "off")


def mirror_pair(m: FluidModel, objective: str) -> tuple[int, int] | None:
    """Two classes ``p < q`` that some permutation of the resources swaps while it leaves every
    other class's requirement vector as it is, with equal arrival rates, sizes and weights (with
    three classes at least); None if there are none.  Every resource has capacity 1, so the
    objectives' rates are equivariant under permuting resources and the chain is symmetric under
    ``x_p <-> x_q``; checked on a few states all the same (``phi_p(swap x) = phi_q(x)``)."""
    import itertools

    from mrfq.analysis.state_rates import state_rates

    K, J = m.a.shape
    if K < 3 or J > 6:
        return None
    X = np.array([[1.0 + (3 * i + 5 * k) % 7 for k in range(K)] for i in range(8)])
    for p in range(K):
        for q in range(p + 1, K):
            if not (m.lam[p] == m.lam[q] and m.sigma[p] == m.sigma[q] and m.w[p] == m.w[q]):
                continue
            swapped = m.a.copy()
            swapped[[p, q]] = m.a[[q, p]]
            if not any(np.array_equal(m.a[:, list(t)], swapped) for t in itertools.permutations(range(J))):
                continue
            Xs = X.copy()
            Xs[:, [p, q]] = X[:, [q, p]]
            phi = state_rates(objective, X, m.a, m.w)
            phs = state_rates(objective, Xs, m.a, m.w)
            phs[:, [p, q]] = phs[:, [q, p]]
            if np.allclose(phi, phs, rtol=1e-9, atol=0.0):
                return p, q
    return None


def _permuted(m: FluidModel, order) -> FluidModel:
    """The model with its classes in ``order``."""
    o = list(order)
    return FluidModel(names=tuple(m.names[i] for i in o), a=np.ascontiguousarray(m.a[o]), lam=m.lam[o],
                      sigma=m.sigma[o], w=m.w[o], resources=m.resources)


@jit(parallel=True)
def multilinear(cell, frac, values, strides, X, out):
    """``out[r]``: the multilinear interpolation at the integer point ``X[r]`` of ``values`` (flat,
    C order, ``strides``) given on a grid whose axis k has its cell ``cell[k, v]`` and the fraction
    ``frac[k, v]`` of the way along it at the coordinate v (:func:`_graded_start`).  Corners of
    weight zero are skipped (so a point on the grid's last node reads no node past it)."""
    n, K = X.shape
    for r in prange(n):
        base = 0
        for k in range(K):
            base += cell[k, int(X[r, k])] * strides[k]
        acc = 0.0
        for corner in range(1 << K):
            w = 1.0
            idx = base
            for k in range(K):
                y = frac[k, int(X[r, k])]
                if (corner >> k) & 1:
                    w *= y
                    idx += strides[k]
                else:
                    w *= 1.0 - y
            if w != 0.0:
                acc += w * values[idx]
        out[r] = acc


def axis_tables(axes):
    """The tables of :func:`multilinear` for a grid with integer node coordinates ``axes`` (one
    increasing array per axis, from 0): ``cell``, ``frac`` (K, max node + 1), the C-order
    ``strides`` of the grid and the last node of each axis ``top``."""
    K = len(axes)
    shape = [len(v) for v in axes]
    strides = np.array([int(np.prod(shape[k + 1:])) for k in range(K)], dtype=np.int64)
    top = np.array([int(v[-1]) for v in axes], dtype=np.int64)
    cell = np.zeros((K, int(top.max()) + 1), dtype=np.int64)
    frac = np.zeros((K, int(top.max()) + 1))
    for k, ax in enumerate(axes):
        ax = np.asarray(ax, dtype=np.int64)
        v = np.arange(top[k] + 1)
        if ax.size > 1:
            c = np.minimum(np.searchsorted(ax, v, side="right") - 1, ax.size - 2)
            cell[k, : v.size] = c
            frac[k, : v.size] = (v - ax[c]) / (ax[c + 1] - ax[c])
    return cell, frac, strides, top


def _log_law(t: _Truncated) -> tuple:
    """The tables :func:`_log_law_at` interpolates the graded law ``t`` from (once per law)."""
    cell, frac, strides, top = axis_tables(t.axes)
    return cell, frac, np.ascontiguousarray(np.log(np.maximum(t.node_p, 1e-300)).reshape(-1)), strides, top


def _log_law_at(law: tuple, X: np.ndarray, out: np.ndarray) -> None:
    """``out``: the log of a graded law (its tables ``law``, :func:`_log_law`) interpolated
    (multilinear) at the integer points ``X`` (n, K), clipped to its caps (X is overwritten)."""
    cell, frac, logp, strides, top = law
    np.minimum(X, top, out=X)
    multilinear(cell, frac, logp, strides, X, out)


def _graded_start(t: _Truncated, region) -> np.ndarray:
    """The graded law ``t`` interpolated log-linearly at every state of ``region`` (``p_0 = 1``):
    :func:`multilinear` from per-axis tables of the integer coordinates (the states' coordinates
    are integers up to the graded caps; scipy's ``RegularGridInterpolator``, which searched the
    axes for every state, took 3.0 of 59 s at br-balanced 0.98)."""
    from mrfq.analysis import markov_region as mr

    K = len(t.axes)
    cshape, lo, hi, off = region.flat()
    law = _log_law(t)
    out = np.empty(region.n)
    for s0 in range(0, region.n, RATE_CHUNK):
        s1 = min(region.n, s0 + RATE_CHUNK)
        X = mr.region_coords(cshape, lo, hi, off, s0, s1, np.empty((s1 - s0, K)))
        _log_law_at(law, X, out[s0:s1])
    out -= out[0]
    return np.exp(out)


def _region_for(t: _Truncated, omitted: float):
    """The region of the states whose probability under the graded law ``t`` is at least the
    threshold that leaves out about ``omitted`` of its mass (nodes by decreasing density)."""
    from mrfq.analysis import markov_region as mr

    q = t.node_p / t.node_scale                        # probability per fine state at each node
    order = np.argsort(-q, kind="stable")
    cum = np.cumsum(t.pi[order])
    i = int(np.searchsorted(cum, 1.0 - omitted))
    threshold = float(q[order[min(i, q.size - 1)]])
    return mr.region_from_graded(t.axes, np.log(np.maximum(q, 1e-300)), math.log(max(threshold, 1e-300)))


def _solve_region_exact(m: FluidModel, objective: str, *, tol_boundary: float, tol_gamma: float,
                        max_states: int, max_memory: float = 4e9, caps=None,
                        deadline: float | None = None, symmetry: str = "auto") -> MarkovResult:
    """Truncation "region": the chain on staircase regions shaped like its law (a (choice);
    :mod:`analysis.markov_region`).  The law is first estimated on the graded lattice
    (``REGION_GRADING``, caps far enough out for a boundary mass ``tol_boundary / 1000``); the
    first region keeps the states that hold all but ``REGION_START * tol_boundary`` of that
    estimate, each next one less (``REGION_MARGIN``, ``REGION_STEP``, ``REGION_CHECK_STEP``; and
    the previous region), solved from the previous solution (new states: the graded law, scaled
    to continue each column's previous values, :func:`analysis.markov_region.region_embed`), until
    the boundary mass (the probability of the states where a transition is blocked) is below
    ``tol_boundary`` and gamma moved by less than ``tol_gamma``.  With ``symmetry="auto"`` a
    chain symmetric under swapping two classes (:func:`mirror_pair`) is solved lumped by the
    symmetry, on the half ``x_p >= x_q`` of symmetric regions.  Measured (DRF, load 0.98):
    br-unbalanced needs about 1 M states where the box needs 8.4 M."""
    from mrfq.analysis import markov_region as mr

    t0 = time.perf_counter()
    K = m.a.shape[0]
    if symmetry not in SYMMETRIES:
        raise MrfqError(f"symmetry = {quote(symmetry)}: unknown; choose {' or '.join(SYMMETRIES)}")
    pair = mirror_pair(m, objective) if symmetry == "auto" else None
    order = list(range(K))
    if pair is not None:        # the pair becomes classes 0 and 1 (column coordinates of the regions)
        order = list(pair) + [k for k in range(K) if k not in pair]
        m_orig, m = m, _permuted(m, order)
        if caps is not None:
            caps = [caps[k] for k in order]
    back = np.argsort(order)
    # the estimate's lattice is far smaller than the regions: max_states bounds the regions
    tg = _graded_search(m, objective, grading=REGION_GRADING, tol_boundary=tol_boundary * 1e-3,
                        tol_gamma=tol_gamma, max_states=max(int(max_states), 10**6), max_memory=max_memory,
                        caps=caps, deadline=deadline)[0]
    omitted = tol_boundary * REGION_START
    history = []
    prev = None
    change = np.inf
    while True:
        new = _region_for(tg, omitted)
        if pair is not None:
            new = mr.half(new)
        if prev is not None:
            new = mr.union(new, prev.region)
            if new.n == prev.region.n:       # the estimate's caps stop the growth: give up, don't loop
                raise TruncationTooLarge(
                    f"truncation: the region cannot grow past the graded estimate's caps {list(tg.caps)} "
                    f"(boundary mass {prev.boundary:.2g}, gamma change {change:.2g}); use --truncation box "
                    "or --method simulate")
        n_new = new.n
        where = (f"region caps {list(new.caps)}, leaving out {omitted:.2g} of the estimated probability"
                 + ("" if pair is None else ", lumped by the symmetry of two classes")
                 + ("" if prev is None else f"; boundary mass so far {prev.boundary:.2g}"))
        _refuse_if_too_large(n_new, K, max_states, max_memory, where)
        _check_deadline(deadline, f"after {len(history)} truncations ({n_new} states next)")
        x0 = _graded_start(tg, new)
        if pair is not None:
            mr.orbit_sizes(*new.flat(), x0)
        if prev is not None:
            c0, lo0, hi0, off0 = prev.region.flat()
            mr.region_embed(c0, lo0, hi0, off0, prev.pi / prev.pi[0], *new.flat(), x0, True)
        t = solve_region(m, objective, new, x0=x0, deadline=deadline, mirror=pair is not None,
                         rtol=EXACT_RTOL if prev is not None else FIRST_REGION_RTOL)
        del x0
        change = np.inf if prev is None else float(np.max(np.abs(t.gamma - prev.gamma) / np.abs(t.gamma)))
        history.append((tuple(t.caps[k] for k in back), t.boundary, tuple(float(t.gamma[k]) for k in back)))
        if t.boundary < tol_boundary and change < tol_gamma:
            break
        prev = t
        if t.boundary < tol_boundary:
            omitted /= REGION_CHECK_STEP
        else:
            omitted /= min(max(REGION_MARGIN * t.boundary / tol_boundary, 2.0), REGION_STEP)
    if pair is not None:
        m = m_orig
    return MarkovResult(
        objective=objective, names=m.names, gamma=t.gamma[back], mean_flows=t.mean_flows[back], method="exact",
        solve_seconds=time.perf_counter() - t0, resource_loads=tuple(float(v) for v in m.resource_loads()),
        truncation=tuple(t.caps[k] for k in back), boundary_mass=t.boundary, gamma_change=change,
        n_states=int(t.pi.size), iterations=len(history), history=tuple(history), truncation_shape="region",
        lumped=None if pair is None else (m.names[pair[0]], m.names[pair[1]]))


# ---------------------------------------------------------------------------
# graded lattice (an approximation, method "graded")
# ---------------------------------------------------------------------------
def graded_axis(cap: int, grading: float) -> np.ndarray:
    """Node coordinates ``0 = v_0 < v_1 < ... < v_n = cap`` of one class: spacing
    ``max(1, floor(grading * v))`` (unit spacing below ``2 / grading``; ``grading = 0``: every
    integer, the exact chain)."""
    v = [0]
    while v[-1] < cap:
        v.append(min(int(cap), v[-1] + max(1, int(grading * v[-1]))))
    return np.array(v, dtype=np.int64)


@jit
def _edge_weights(L, h, j):
    """Weights ``(alpha_j, beta_j)`` of the end values ``p_a``, ``p_b`` at fine position ``j`` of an
    edge of ``h`` unit steps whose birth/death ratio is ``exp(L)``: the birth-death chain's
    profile ``p_j = p_a (r^h - r^j) / (r^h - 1) + p_b (r^j - 1) / (r^h - 1)``, ``r = e^L``
    (exponential fitting; linear when ``h L -> 0``), written to neither overflow nor cancel."""
    if abs(h * L) < 1e-9:
        return 1.0 - j / h, j / h
    if L < 0:
        den = math.expm1(h * L)
        return math.exp(j * L) * math.expm1((h - j) * L) / den, math.expm1(j * L) / den
    den = -math.expm1(-h * L)
    return -math.expm1((j - h) * L) / den, math.exp((j - h) * L) * (-math.expm1(-j * L)) / den


@jit
def _cell_sums(p, axes, axptr, strides, shape, Ledge, G, M):
    """For every node i and class k, the sums over the fine coordinates ``u`` of node i's dual
    range in dimension k (the integers nearer to it than to its neighbours; ties go to the upper
    node) of ``g(u) = p(u) / p_i`` (G) and of ``u g(u)`` (M), ``p(u)`` the edge profile of
    :func:`_edge_weights`."""
    N = p.shape[0]
    K = shape.shape[0]
    for i in range(N):
        for k in range(K):
            n_k = shape[k]
            jk = (i // strides[k]) % n_k
            v = axes[axptr[k] + jk]
            gs = 1.0
            ms = float(v)
            if p[i] > 0:
                if jk > 0:
                    a = i - strides[k]
                    hl = v - axes[axptr[k] + jk - 1]
                    for o in range(1, hl // 2 + 1):
                        al, be = _edge_weights(Ledge[a, k], hl, hl - o)
                        g = (al * p[a] + be * p[i]) / p[i]
                        if 2 * o == hl:
                            g *= 0.5
                        gs += g
                        ms += g * (v - o)
                if jk < n_k - 1:
                    b = i + strides[k]
                    hr = axes[axptr[k] + jk + 1] - v
                    for o in range(1, hr // 2 + 1):
                        al, be = _edge_weights(Ledge[i, k], hr, o)
                        g = al + be * p[b] / p[i]
                        if 2 * o == hr:
                            g *= 0.5
                        gs += g
                        ms += g * (v + o)
            G[i, k] = gs
            M[i, k] = ms


def graded_memory_bytes(n_nodes: int, K: int) -> int:
    """Peak memory estimate of one graded solve: :func:`exact_memory_bytes` plus the per-node
    node-index, width, edge log-ratio and cell-sum arrays (about 6K doubles per node)."""
    return exact_memory_bytes(n_nodes, K) + 8 * 6 * K * n_nodes


def solve_graded(m: FluidModel, objective: str, caps, grading: float, *, rtol: float = 1e-11,
                 start: _Truncated | None = None, deadline: float | None = None) -> _Truncated:
    """Stationary law of the chain on a graded lattice (``x_k <= caps[k]``, nodes :func:`graded_axis`).

    Exponentially fitted finite volumes.  Between neighbouring nodes ``x`` and ``x + h e_k`` the
    fine chain moves by unit steps with birth rate ``b = lambda_k`` and death rate ``d``, taken
    constant along the edge (evaluated at its mid-point ``x + (h + 1)/2 e_k``: ``x_k phi_k`` is
    homogeneous of degree 0, so it changes by O(grading) along an edge).  For that 1-D chain the
    probability flux through the edge is exactly ``J = B p(x) - D p(x + h e_k)`` with

        D = (b - d) / (r^h - 1),   B = D r^h,   r = b / d

    (``h = 1``: ``B = b``, ``D = d``, the fine chain itself).  The coarse balance equations
    are those of a CTMC on the node densities ``p`` (probability per fine state) with edge rates
    ``B``, ``D`` multiplied by the number of fine states on the face between the two dual cells;
    it is solved like the exact chain (:func:`_stationary`).  Sums over the fine lattice use
    ``p(x + u) = p(x) prod_k g_k(u_k)``, ``g_k`` the exact 1-D edge profile.

    Exact (to rounding) when every spacing is 1 (``grading = 0``, or all caps below
    ``2 / grading``) and for product-form chains with constant per-class death rates (one class,
    or orthogonal classes): there the coarse chain keeps the geometric law node for node.
    Otherwise it is an approximation whose error shrinks fast with ``grading`` and grows with the
    load; measured on br-balanced (DRF) at load 0.9 against the exact solve: relative gamma
    error 3.1e-3 with grading 0.1, 5.2e-4 with 0.07, 5.6e-5 with 0.05; at 0.98 about 3 % with
    0.05 (documentation, the Performance page).  The error comes from the bulk of the
    law, where the transverse profile is curved (a lattice graded like sqrt(x) did worse at
    equal node count), so only a finer grading reduces it.

    ``start``: a graded solution of the same model (any grading, caps at most these): its node
    densities, interpolated log-linearly, are the GMRES start and the within-level weights of the
    two-level preconditioner (levels: the sum of the node indices, which every edge changes by 1).
    """
    import scipy.sparse as sp

    from mrfq.analysis.state_rates import state_rates

    K = m.a.shape[0]
    caps = tuple(int(c) for c in caps)
    axes = [graded_axis(c, grading) for c in caps]
    shape = tuple(len(v) for v in axes)
    N = int(np.prod(shape))
    strides = np.array([int(np.prod(shape[k + 1:])) for k in range(K)], dtype=np.int64)
    node = np.indices(shape).reshape(K, -1).T                       # (N, K) node index per class
    X = np.stack([axes[k][node[:, k]] for k in range(K)], axis=1).astype(np.float64)
    width = np.empty((N, K))                                       # fine states per dual range
    for k in range(K):
        h = np.diff(axes[k])
        width[:, k] = (np.concatenate([[0.5], h / 2]) + np.concatenate([h / 2, [0.5]]))[node[:, k]]
    idx = np.arange(N, dtype=np.int64)
    Ledge = np.zeros((N, K))
    lo, hi, up, down = [], [], [], []
    for k in range(K):
        has = node[:, k] < shape[k] - 1
        a = idx[has]
        h = np.diff(axes[k])[node[has, k]].astype(np.float64)
        Y = X[has]
        Y[:, k] += (h + 1) / 2
        d = Y[:, k] * state_rates(objective, Y, m.a, m.w)[:, k] / m.sigma[k]
        b = m.lam[k]
        L = np.log(b / d)
        z = np.clip(h * L, -700.0, 700.0)
        small = np.abs(z) < 1e-9
        zs = np.where(small, 1.0, z)
        D = np.where(small, d / h, (b - d) / np.expm1(zs))
        B = np.where(small, d / h, (b - d) / -np.expm1(-zs))
        one = h == 1
        B[one] = b
        D[one] = d[one]
        face = np.prod(np.delete(width[has], k, axis=1), axis=1)
        Ledge[a, k] = L
        lo.append(a)
        hi.append(a + strides[k])
        up.append(B * face)
        down.append(D * face)
    lo, hi, up, down = (np.concatenate(v) for v in (lo, hi, up, down))
    scale = max(float(up.max(initial=0.0)), float(down.max(initial=0.0)), 1e-300)
    up /= scale
    down /= scale
    out = np.bincount(lo, up, minlength=N) + np.bincount(hi, down, minlength=N)
    QT = sp.csr_matrix((np.concatenate([-out, up, down]),
                        (np.concatenate([idx, hi, lo]), np.concatenate([idx, lo, hi]))), shape=(N, N))
    del lo, hi, up, down, out
    Acsr, rhs = _reduced(QT)
    del QT
    if start is None:
        y = np.zeros(N - 1)
        res = _stationary(Acsr, rhs, y, rtol, deadline=deadline)
    else:
        p0 = np.empty(N)
        _log_law_at(_log_law(start), X.copy(), p0)
        p0 = np.exp(p0)
        p0 /= p0[0]
        y = p0[1:].copy()
        res = _stationary(Acsr, rhs, y, rtol, node.sum(axis=1), p0, deadline=deadline)
    del Acsr, rhs
    p = np.maximum(np.concatenate([[1.0], y]), 0.0)
    G = np.empty((N, K))
    M = np.empty((N, K))
    _cell_sums(p, np.concatenate(axes), np.cumsum([0] + list(shape[:-1])).astype(np.int64), strides,
               np.array(shape, dtype=np.int64), Ledge, G, M)
    mass = p * G.prod(axis=1)
    total = mass.sum()
    Ex = np.empty(K)
    top = node == np.array(shape) - 1
    marg_cap = np.empty(K)
    for k in range(K):
        rest = p * np.prod(np.delete(G, k, axis=1), axis=1)       # mass with x_k at the node's value
        Ex[k] = (rest * M[:, k]).sum() / total
        marg_cap[k] = rest[top[:, k]].sum() / total
    # fine states with some x_k = X_k: in a top node's cell, those not strictly inside every top range
    inner = np.prod(np.where(top, G - 1.0, G), axis=1)
    boundary = float((mass - p * inner)[top.any(axis=1)].sum() / total)
    with np.errstate(divide="ignore"):
        gamma = m.rho / Ex
    return _Truncated(caps=caps, pi=mass / total, gamma=gamma, mean_flows=Ex, boundary=boundary,
                      marg_tail=marg_cap[:, None], residual=float(res), node_p=p, axes=tuple(axes),
                      node_scale=float(total))


#: graded: the default grading (relative spacing of the lattice, see solve_graded)
GRADING = 0.05
#: graded: the coarse grading used to find the truncation before the final solve
GRADING_SEARCH = 0.2


def _solve_graded(m: FluidModel, objective: str, *, grading: float, tol_boundary: float, tol_gamma: float,
                  max_states: int, max_memory: float, caps=None, deadline: float | None = None) -> MarkovResult:
    """Method "graded": find caps on a coarse lattice (grading ``max(grading, GRADING_SEARCH)``;
    a class's cap doubles while its marginal mass at the cap exceeds ``tol_boundary / (4K)``,
    then one solve at 1.5 times the caps checks that gamma moved by less than ``tol_gamma``),
    then one solve at ``grading`` with those caps.  Nodes grow like ``log(cap) / grading`` per
    class, so the caps cost little; the approximation error is the lattice's (:func:`solve_graded`)."""
    t0 = time.perf_counter()
    t, caps, history, change, n = _graded_search(m, objective, grading=grading, tol_boundary=tol_boundary,
                                                 tol_gamma=tol_gamma, max_states=max_states,
                                                 max_memory=max_memory, caps=caps, deadline=deadline)
    return MarkovResult(
        objective=objective, names=m.names, gamma=t.gamma, mean_flows=t.mean_flows, method="graded",
        solve_seconds=time.perf_counter() - t0, resource_loads=tuple(float(v) for v in m.resource_loads()),
        truncation=t.caps, boundary_mass=t.boundary, gamma_change=change, n_states=n,
        iterations=len(history), history=tuple(history), grading=float(grading))


def _graded_search(m: FluidModel, objective: str, *, grading: float, tol_boundary: float, tol_gamma: float,
                   max_states: int, max_memory: float, caps=None, deadline: float | None = None):
    """The search of :func:`_solve_graded`: (the final graded solution, its caps, the history,
    the last gamma change, its number of nodes)."""
    K = m.a.shape[0]
    caps = (16,) * K if caps is None else tuple(int(c) for c in caps)
    if len(caps) != K or min(caps) < 1:
        raise MrfqError(f"caps = {caps}: must be {K} integers >= 1, one per class")

    def nodes(cs, g):
        return int(np.prod([len(graded_axis(c, g)) for c in cs], dtype=float))

    def check(cs, g, t):
        _check_deadline(deadline, f"after {len(history)} graded solves (caps {list(cs)})")
        n = nodes(cs, g)
        if n > max_states:
            raise TruncationTooLarge(
                f"truncation: the graded lattice needs more than {max_states} nodes (caps {list(cs)}, grading "
                f"{g:g}, boundary mass {t.boundary if t else float('nan'):.2g}); use a larger grading or --method simulate")
        if graded_memory_bytes(n, K) > max_memory:
            raise TruncationTooLarge(
                f"truncation: the graded lattice would need about {graded_memory_bytes(n, K) / 1e9:.1f} GB "
                f"(> {max_memory / 1e9:.1f} GB) for {n} nodes (caps {list(cs)}, grading {g:g}); use a larger "
                "grading or --method simulate")

    g_search = max(grading, GRADING_SEARCH)
    history = []
    t = None
    while True:
        check(caps, g_search, t)
        t = solve_graded(m, objective, caps, g_search, deadline=deadline)
        history.append((t.caps, t.boundary, tuple(float(v) for v in t.gamma)))
        far = t.marg_tail[:, 0] <= tol_boundary / (4 * K)
        if t.boundary < tol_boundary and far.all():
            wider = tuple(int(math.ceil(1.5 * c)) for c in caps)
            check(wider, g_search, t)
            t2 = solve_graded(m, objective, wider, g_search, deadline=deadline)
            change = float(np.max(np.abs(t2.gamma - t.gamma) / np.abs(t2.gamma)))
            history.append((t2.caps, t2.boundary, tuple(float(v) for v in t2.gamma)))
            if change < tol_gamma:
                break
            caps = wider
            continue
        caps = tuple(c if ok else 2 * c for c, ok in zip(caps, far))
    if grading != g_search:
        check(caps, grading, t)
        t = solve_graded(m, objective, caps, grading, start=t, deadline=deadline)
        history.append((t.caps, t.boundary, tuple(float(v) for v in t.gamma)))
    return t, caps, history, change, nodes(caps, grading)


# ---------------------------------------------------------------------------
# simulation
# ---------------------------------------------------------------------------
def simulate(m: FluidModel, objective: str, rng: np.random.Generator, *, events: int = 4_000_000,
             batches: int = 40, warmup: float = 0.05, confidence: float = 0.95) -> MarkovResult:
    """Event-driven simulation of the chain; gamma with batch-means confidence intervals.

    events      state changes after the warm-up (split into ``batches`` equal batches)
    warmup      fraction of ``events`` discarded first (the chain starts empty)
    rng         a numpy.random.Generator (the only randomness used)
    """
    if not isinstance(rng, np.random.Generator):
        raise MrfqError("rng: must be a numpy.random.Generator (e.g. np.random.default_rng(seed))")
    if int(events) < 1000 or int(batches) < 2:
        raise MrfqError(f"events = {events}, batches = {batches}: need events >= 1000 and batches >= 2")
    if not 0 < confidence < 1:
        raise MrfqError(f"confidence = {confidence}: must be in (0, 1)")
    J = m.a.shape[1]
    if not objectives.kernel_handles(objective, J):
        raise MrfqError(f"method = 'simulate': {objective} with {J} resources is not in the simulator "
                        "(two resources at most); use --method exact")
    t0 = time.perf_counter()
    code = objectives.TABLE[objective].state_code
    batch_events = int(events) // int(batches)
    n_warm = int(warmup * events)
    integ = np.zeros((int(batches), m.a.shape[0]))
    dur = np.zeros(int(batches))
    norm = np.ascontiguousarray(kernel_norm(objective, m.a))
    x = np.zeros(m.a.shape[0])
    total = n_warm + int(batches) * batch_events
    kernel = _kernels()["gillespie"]
    for ev0 in range(0, total, SIM_CHUNK):  # back in Python between chunks: Ctrl-C is seen
        kernel(code, m.a, m.w, norm, m.lam, m.sigma, rng, x, ev0, min(ev0 + SIM_CHUNK, total), n_warm,
               batch_events, integ, dur)
    from mrfq.analysis.batch_stats import t_quantile

    B = int(batches)
    mean = integ.sum(axis=0) / dur.sum()
    resid = (integ - mean[None, :] * dur[:, None]) / dur.mean()
    half = t_quantile(confidence, B - 1) * resid.std(axis=0, ddof=1) / math.sqrt(B)
    rho = m.rho
    with np.errstate(divide="ignore"):
        gamma = rho / mean
        lo = rho / (mean + half)
        hi = np.where(mean - half > 0, rho / np.maximum(mean - half, 1e-300), np.inf)
    return MarkovResult(
        objective=objective, names=m.names, gamma=gamma, mean_flows=mean, method="simulate",
        solve_seconds=time.perf_counter() - t0, resource_loads=tuple(float(v) for v in m.resource_loads()),
        gamma_low=lo, gamma_high=hi, events=B * batch_events, confidence=confidence)


# ---------------------------------------------------------------------------
def solve(classes_or_scenario, objective: str, *, method: str = "exact", load: float | None = None,
          tol_boundary: float = 1e-6, tol_gamma: float = 1e-4, max_states: int = MAX_STATES,
          max_memory: float = 4e9, caps=None, rng: np.random.Generator | None = None, events: int = 4_000_000,
          batches: int = 40, confidence: float = 0.95, time_limit: float | None = TIME_LIMIT,
          grading: float = GRADING, truncation: str = "region", symmetry: str = "auto") -> MarkovResult:
    """gamma_k of every class under ``objective`` (one of :data:`analysis.objectives.MARKOV`).

    classes_or_scenario  a Scenario, a sequence of class specs, or a :class:`FluidModel`
    method               "exact" (truncated sparse solve, grown until the boundary mass is
                         below ``tol_boundary`` and gamma moves by less than ``tol_gamma``),
                         "graded" (the same chain on a graded lattice, :func:`solve_graded`: an
                         approximation, for loads where the exact box is too large; ``grading``)
                         or "simulate" (needs ``rng``; ``events``, ``batches``, ``confidence``)
    grading              graded: spacing ``max(1, floor(grading * x_k))``; 0 is the exact chain
    truncation           exact: the shape of the truncated state space ((choice), :data:`TRUNCATIONS`):
                         "region" (default; states kept by the probability a graded estimate of
                         the law gives them, :func:`_solve_region_exact`) or "box" (``x_k <= X_k``,
                         the plain truncation, with per-class caps, :func:`_solve_exact`)
    symmetry             exact, region: "auto" (default; a chain symmetric under swapping two
                         classes, :func:`mirror_pair`, is solved lumped by that symmetry: half the
                         states, the same law) or "off" ((choice), :data:`SYMMETRIES`)
    load                 rescale class rates so the most loaded resource has this load
    caps                 initial truncation per class (exact, box; region: of the graded search)
    max_states, max_memory  exact: refuse (TruncationTooLarge) a truncation with more states
                         or a larger estimated footprint (bytes, :func:`exact_memory_bytes`)
    time_limit           exact and graded: wall-clock budget in seconds (None: none); past it the solve
                         gives up with :class:`SolveTimeLimit` (checked between truncations
                         and between Krylov chunks)
    """
    objectives.get(objective, objectives.MARKOV)
    if method not in METHODS:
        raise MrfqError(f"method = {quote(method)}: unknown; choose one of {', '.join(METHODS)}")
    if isinstance(classes_or_scenario, FluidModel):
        m = classes_or_scenario
        if load is not None:
            m = model_from([_Spec(n, tuple(r), l, s, w) for n, r, l, s, w in
                            zip(m.names, m.a, m.lam, m.sigma, m.w)], load=load, resources=m.resources)
        check_stable(m)
    else:
        m = model_from(classes_or_scenario, load=load)
    if method in ("exact", "graded"):
        if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                       or not time_limit > 0):
            raise MrfqError(f"time_limit = {quote(time_limit)}: must be a number of seconds > 0 (or None)")
        deadline = None if time_limit is None else time.monotonic() + float(time_limit)
    if method == "graded":
        if isinstance(grading, bool) or not isinstance(grading, (int, float)) or not 0 <= grading <= 0.5:
            raise MrfqError(f"grading = {quote(grading)}: must be a number in [0, 0.5] (0: the exact chain)")
        return _solve_graded(m, objective, grading=float(grading), tol_boundary=tol_boundary, tol_gamma=tol_gamma,
                             max_states=max_states, max_memory=max_memory, caps=caps, deadline=deadline)
    if method == "exact" and truncation not in TRUNCATIONS:
        raise MrfqError(f"truncation = {quote(truncation)}: unknown; choose one of {', '.join(TRUNCATIONS)}")
    if method == "exact" and symmetry not in SYMMETRIES:
        raise MrfqError(f"symmetry = {quote(symmetry)}: unknown; choose one of {', '.join(SYMMETRIES)}")
    limit = EXACT_MAX_LOAD[truncation] if method == "exact" else None
    if method == "exact" and max(m.resource_loads()) > limit:
        # bounded time: above this load the truncation grows towards max_states for minutes
        raise TruncationTooLarge(
            f"load {max(m.resource_loads()):.4g}: the exact solve ({truncation} truncation) gives up above load "
            f"{limit:g} (the truncated chain would need minutes and millions of states); use --method simulate "
            "(or auto)" + ("" if truncation == "region" else ", or the region truncation"))
    if method == "exact" and truncation == "region":
        return _solve_region_exact(m, objective, tol_boundary=tol_boundary, tol_gamma=tol_gamma,
                                   max_states=max_states, caps=caps, max_memory=max_memory, deadline=deadline,
                                   symmetry=symmetry)
    if method == "exact":
        return _solve_exact(m, objective, tol_boundary=tol_boundary, tol_gamma=tol_gamma,
                            max_states=max_states, caps=caps, max_memory=max_memory, deadline=deadline)
    if rng is None:
        raise MrfqError("method = 'simulate': needs rng, a numpy.random.Generator")
    return simulate(m, objective, rng, events=events, batches=batches, confidence=confidence)


@dataclass(frozen=True)
class _Spec:
    name: str
    cost: tuple
    rate: float
    mean_packets: float
    weight: float
