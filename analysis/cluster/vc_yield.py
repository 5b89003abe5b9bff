"""Virtual-cluster yield: VCSched ([VC] Stillwell, Schanzenbach, Vivien, Casanova,
"Resource allocation using virtual clusters", §2-4).

The problem as the paper states it (§2.3, hypotheses H1-H5): ``H`` identical hosts,
each with CPU capacity 1 and memory 1; ``J`` jobs, job ``j`` needs the fraction
``alpha_j`` in (0, 1] of a host's CPU when alone and the fraction ``m_j`` in [0, 1]
of its memory.  Each job runs in one VM on exactly one host (``e_ij`` in {0, 1},
``sum_i e_ij = 1``); host ``i`` gives it the CPU fraction ``a_ij <= e_ij alpha_j``
with ``sum_j a_ij <= 1`` and ``sum_j e_ij m_j <= 1``.  The *yield* of job j is
``y_j = sum_i a_ij / alpha_j``; VCSched maximises the minimum yield ``Y``.  It is
NP-hard in the strong sense (§2.4, Theorem 1).

What is implemented:

- :func:`milp_exact` - the MILP of §2.5 (eqs. (3)-(11)) or an equivalent compact one, by ``scipy.optimize.milp``
  (HiGHS; the paper used GLPK), for small instances;
- :func:`lp_bound` - the rational relaxation's optimum, in the closed form of §3.1:
  ``min(1, H / sum_j alpha_j)`` when ``sum_j m_j <= H`` (else the relaxation is infeasible,
  0.0 here); :func:`lp_bound_solved` solves the relaxed LP itself (a test oracle);
- the heuristics of §3.3-3.4: ``GR`` (greedy: jobs in index order, each to the
  least-CPU-loaded host where its memory fits), ``SG`` (GR after sorting jobs by
  decreasing memory), ``GB`` / ``SGB`` (GR / SG with backtracking, bounded number of
  placement attempts), and ``MCB1`` ... ``MCB8`` (multi-capacity bin packing after
  Leinberger et al. with the paper's eight sort keys, inside a binary search on Y);
- :func:`max_average_yield` - the second phase of §3.5 (placement fixed: every job gets
  ``Y alpha_j``, then each host's spare CPU goes to its jobs in increasing ``alpha_j``).

- the randomised roundings ``RRND`` / ``RRNZ`` of §3.2 on the relaxed MILP's solution (HiGHS
  instead of GLPK; the relaxation's optimum is degenerate, HiGHS returns one vertex of it).

Choices the paper leaves open, named as options:

``first_list`` (MCB) which list is scanned first on an empty host: ``"cpu"`` (default,
    the CPU-heavy list) or ``"mem"`` ("starting arbitrarily with any list").  A job is
    CPU-heavy when ``Y alpha_j > m_j``.
``tol`` (MCB binary search) stop when the bracket is narrower than ``tol`` (default 1e-4);
    the search starts at half of the upper bound ``min(1, H / sum alpha)`` as in §3.4; the
    placement of the largest yield found feasible is kept and reported with its own best
    minimum yield (:func:`placement_min_yield`, >= the searched value, so no bisection error).
``max_attempts`` (GB, SGB) the bound on job placement attempts (paper: 500,000).
Truncated normal sampling (:func:`generate`): values outside (0, 1] are redrawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mrfq.flows.errors import MrfqError, quote

HEURISTICS = ("GR", "SG", "GB", "SGB", "MCB1", "MCB2", "MCB3", "MCB4", "MCB5", "MCB6", "MCB7", "MCB8",
              "RRND", "RRNZ")
#: RRNZ: the value that replaces zero placement fractions ([VC] §3.2 uses 0.01)
RRNZ_EPS = 0.01
FIRST_LIST = ("cpu", "mem")
#: memory fit tolerance (absorbs float sums)
MEM_TOL = 1e-12


@dataclass(frozen=True, eq=False)
class VCInstance:
    """``hosts`` identical hosts; per job ``alpha[j]`` CPU need, ``mem[j]`` memory need (host fractions)."""

    hosts: int
    alpha: np.ndarray
    mem: np.ndarray

    def __post_init__(self):
        a = np.asarray(self.alpha, dtype=np.float64)
        m = np.asarray(self.mem, dtype=np.float64)
        if not (isinstance(self.hosts, (int, np.integer)) and self.hosts >= 1):
            raise MrfqError(f"hosts = {quote(self.hosts)}: must be a whole number >= 1")
        if a.ndim != 1 or a.shape != m.shape or a.size < 1:
            raise MrfqError(f"alpha, mem: shapes {a.shape}, {m.shape}; must be equal 1-D with >= 1 job")
        if np.any(~(a > 0)) or np.any(a > 1):
            j = int(np.flatnonzero(~((a > 0) & (a <= 1)))[0])
            raise MrfqError(f"alpha[{j}] = {a[j]}: must be in (0, 1]")
        if np.any(~(m >= 0)) or np.any(m > 1):
            j = int(np.flatnonzero(~((m >= 0) & (m <= 1)))[0])
            raise MrfqError(f"mem[{j}] = {m[j]}: must be in [0, 1]")
        object.__setattr__(self, "alpha", a)
        object.__setattr__(self, "mem", m)

    @property
    def jobs(self) -> int:
        return self.alpha.size


@dataclass(frozen=True, eq=False)
class VCResult:
    """``host[j]`` host of job j (-1 everywhere on failure), ``min_yield``, ``avg_yield``
    (after :func:`max_average_yield`), ``cpu[j]`` CPU fraction given."""

    host: np.ndarray
    min_yield: float
    avg_yield: float
    cpu: np.ndarray

    @property
    def failed(self) -> bool:
        return bool(self.host[0] < 0)


def generate(rng: np.random.Generator, hosts: int, jobs: int, slack: float, cv_mem: float,
             cv_cpu: float, mean_cpu: float = 0.5) -> VCInstance:
    """An instance of [VC] §4.1: normal CPU needs (mean ``mean_cpu``) and memory needs (mean
    ``(1 - slack) hosts / jobs``), coefficients of variation ``cv_cpu`` / ``cv_mem``,
    truncated to (0, 1] by redrawing."""
    if not 0 <= slack < 1:
        raise MrfqError(f"slack = {slack}: must be in [0, 1)")

    def draw(mean, cv):
        out = rng.normal(mean, cv * mean, jobs)
        bad = (out <= 0) | (out > 1)
        while bad.any():
            out[bad] = rng.normal(mean, cv * mean, int(bad.sum()))
            bad = (out <= 0) | (out > 1)
        return out

    alpha = draw(mean_cpu, cv_cpu)
    mem = draw((1 - slack) * hosts / jobs, cv_mem)
    return VCInstance(hosts, alpha, mem)


# ---------------------------------------------------------------------------
# bounds and the exact solution
# ---------------------------------------------------------------------------
def lp_bound(inst: VCInstance) -> float:
    """[VC] §3.1: optimum of the rational relaxation, ``min(1, H / sum alpha)`` if ``sum m <= H``, else 0."""
    if inst.mem.sum() > inst.hosts * (1 + 1e-12):
        return 0.0
    return float(min(1.0, inst.hosts / inst.alpha.sum()))


def _milp_arrays(inst: VCInstance):
    H, J = inst.hosts, inst.jobs
    n = 2 * H * J + 1                   # e_ij (i-major), a_ij, Y
    E = lambda i, j: i * J + j          # noqa: E731
    A = lambda i, j: H * J + i * J + j  # noqa: E731
    rows, lo, hi = [], [], []

    def add(coef, lb, ub):
        r = np.zeros(n)
        for k, v in coef:
            r[k] += v
        rows.append(r)
        lo.append(lb)
        hi.append(ub)

    for j in range(J):
        add([(E(i, j), 1.0) for i in range(H)], 1.0, 1.0)                                # (3) one host
        add([(A(i, j), -1.0) for i in range(H)] + [(n - 1, inst.alpha[j])], -np.inf, 0.0)  # yield >= Y
        for i in range(H):
            add([(A(i, j), 1.0), (E(i, j), -inst.alpha[j])], -np.inf, 0.0)               # a_ij <= e_ij alpha_j
    for i in range(H):
        add([(A(i, j), 1.0) for j in range(J)], -np.inf, 1.0)                            # CPU
        add([(E(i, j), inst.mem[j]) for j in range(J)], -np.inf, 1.0)                    # memory
    c = np.zeros(n)
    c[-1] = -1.0
    return c, np.array(rows), np.array(lo), np.array(hi), n, H * J


FORMULATIONS = ("makespan", "paper")


def milp_solve(inst: VCInstance, *, time_limit: float = 60.0, formulation: str = "makespan") -> tuple[float, bool]:
    """Exact VCSched by MILP (HiGHS): (best minimum yield found, proven optimal); 0.0 when infeasible.

    ``formulation``:
    ``"paper"``     the MILP of [VC] §2.5 (placement ``e_ij``, CPU fractions ``a_ij``, yield Y);
    ``"makespan"``  (default) the equivalent compact MILP: minimise the largest host CPU load
                    ``L >= sum_j alpha_j e_ij`` under the memory constraints, then ``Y = min(1, 1/L)``
                    (for a fixed placement the best minimum yield is ``min(1, 1 / max load)``, see
                    :func:`placement_min_yield`); same optimum, a much tighter relaxation.
    Both add the symmetry-breaking bounds ``e_ij = 0 for i > j`` (hosts are identical: order them
    by their lowest-index job), which leave the optimum unchanged.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    if formulation not in FORMULATIONS:
        raise MrfqError(f"formulation = {quote(formulation)}: must be one of {', '.join(FORMULATIONS)}")
    H, J = inst.hosts, inst.jobs
    if formulation == "paper":
        c, A, lo, hi, n, ne = _milp_arrays(inst)
    else:
        n = ne = H * J
        n += 1                                          # e_ij (i-major), then L
        rows, lo, hi = [], [], []
        for j in range(J):
            r = np.zeros(n)
            r[np.arange(H) * J + j] = 1.0
            rows.append(r), lo.append(1.0), hi.append(1.0)
        for i in range(H):
            r = np.zeros(n)
            r[i * J:(i + 1) * J] = inst.alpha
            r[-1] = -1.0
            rows.append(r), lo.append(-np.inf), hi.append(0.0)
            r = np.zeros(n)
            r[i * J:(i + 1) * J] = inst.mem
            rows.append(r), lo.append(-np.inf), hi.append(1.0)
        A, lo, hi = np.array(rows), np.array(lo), np.array(hi)
        c = np.zeros(n)
        c[-1] = 1.0
    integrality = np.zeros(n)
    integrality[:ne] = 1
    ub = np.ones(n)
    if formulation == "makespan":
        ub[-1] = np.inf
    for i in range(H):
        ub[i * J:i * J + min(i, J)] = 0.0               # e_ij = 0 for j < i
    res = milp(c, constraints=LinearConstraint(A, lo, hi), integrality=integrality,
               bounds=Bounds(np.zeros(n), ub), options={"time_limit": time_limit})
    if res.x is None:
        return 0.0, res.status == 2                     # 2: infeasible (proven)
    if formulation == "paper":
        return float(res.x[-1]), res.status == 0
    host = np.argmax(res.x[:ne].reshape(H, J), axis=0)
    return placement_min_yield(inst, host), res.status == 0


def milp_exact(inst: VCInstance, *, time_limit: float = 60.0, formulation: str = "makespan") -> float:
    """The exact maximum minimum yield (:func:`milp_solve`); raises when the time limit stops HiGHS
    before it proves optimality."""
    y, optimal = milp_solve(inst, time_limit=time_limit, formulation=formulation)
    if not optimal:
        raise RuntimeError(f"VCSched MILP not solved to optimality within {time_limit} s")
    return y


def _relaxation(inst: VCInstance):
    from scipy.optimize import linprog

    c, A, lo, hi, n, ne = _milp_arrays(inst)
    eq = lo == hi
    ub_rows = ~eq
    res = linprog(c, A_ub=A[ub_rows], b_ub=hi[ub_rows], A_eq=A[eq], b_eq=hi[eq],
                  bounds=[(0, 1)] * n, method="highs")
    return res if res.status == 0 else None


def lp_bound_solved(inst: VCInstance) -> float:
    """The rational relaxation of the MILP solved as an LP (HiGHS); equals :func:`lp_bound`."""
    res = _relaxation(inst)
    return float(res.x[-1]) if res is not None else 0.0


def randomized_rounding(inst: VCInstance, rng: np.random.Generator, *, no_zero: bool = False) -> np.ndarray | None:
    """RRND / RRNZ ([VC] §3.2): solve the relaxed MILP; then, job by job in index order, draw a host
    with probability proportional to the relaxed ``e_ij`` (RRNZ: zeros replaced by ``RRNZ_EPS``),
    excluding hosts where its memory no longer fits (their probability set to zero and the others
    renormalised); None when no host is left for some job or the relaxation is infeasible."""
    res = _relaxation(inst)
    if res is None:
        return None
    H, J = inst.hosts, inst.jobs
    e = np.clip(res.x[:H * J].reshape(H, J), 0.0, 1.0)
    if no_zero:
        e = np.where(e <= 1e-12, RRNZ_EPS, e)
    free = np.ones(H)
    host = np.full(J, -1)
    for j in range(J):
        p = e[:, j].copy()
        p[free < inst.mem[j] - MEM_TOL] = 0.0
        if p.sum() <= 0:
            return None
        i = int(rng.choice(H, p=p / p.sum()))
        host[j] = i
        free[i] -= inst.mem[j]
    return host


# ---------------------------------------------------------------------------
# second phase and evaluation of a placement
# ---------------------------------------------------------------------------
def placement_min_yield(inst: VCInstance, host: np.ndarray) -> float:
    """Best minimum yield of a fixed placement: ``min_i min(1, 1 / sum_{j on i} alpha_j)``."""
    load = np.bincount(host, weights=inst.alpha, minlength=inst.hosts)
    return float(min(1.0, 1.0 / load.max()))


def max_average_yield(inst: VCInstance, host: np.ndarray, Y: float) -> np.ndarray:
    """[VC] §3.5: every job gets ``Y alpha_j``; then, host by host, the spare CPU goes to the
    jobs in increasing ``alpha_j`` (ties: index) until spent.  Returns the CPU fractions."""
    cpu = Y * inst.alpha
    for i in range(inst.hosts):
        on = np.flatnonzero(host == i)
        spare = 1.0 - cpu[on].sum()
        for j in on[np.argsort(inst.alpha[on], kind="stable")]:
            if spare <= 0:
                break
            add = min(spare, inst.alpha[j] - cpu[j])
            cpu[j] += add
            spare -= add
    return cpu


def _result(inst: VCInstance, host: np.ndarray | None, Y: float | None = None) -> VCResult:
    if host is None:
        return VCResult(np.full(inst.jobs, -1), 0.0, 0.0, np.zeros(inst.jobs))
    Y = placement_min_yield(inst, host) if Y is None else Y
    cpu = max_average_yield(inst, host, Y)
    return VCResult(host, float(Y), float(np.mean(cpu / inst.alpha)), cpu)


# ---------------------------------------------------------------------------
# greedy heuristics (§3.3)
# ---------------------------------------------------------------------------
def _greedy_order(inst: VCInstance, sort: bool) -> np.ndarray:
    if sort:
        return np.argsort(-inst.mem, kind="stable")
    return np.arange(inst.jobs)


def greedy(inst: VCInstance, *, sort: bool = False) -> np.ndarray | None:
    """GR (``sort=False``) / SG: each job to the least-loaded host (CPU load = sum of alpha
    placed, ties: lowest index) where its memory fits; None when a job fits nowhere."""
    load = np.zeros(inst.hosts)
    free = np.ones(inst.hosts)
    host = np.full(inst.jobs, -1)
    for j in _greedy_order(inst, sort):
        for i in np.argsort(load, kind="stable"):
            if free[i] >= inst.mem[j] - MEM_TOL:
                host[j] = i
                load[i] += inst.alpha[j]
                free[i] -= inst.mem[j]
                break
        else:
            return None
    return host


def greedy_backtracking(inst: VCInstance, *, sort: bool = False, max_attempts: int = 500_000) -> np.ndarray | None:
    """GB / SGB: depth-first search in GR's order (hosts by load at each step), at most
    ``max_attempts`` placement attempts; the first complete placement, or None."""
    order = _greedy_order(inst, sort)
    load = np.zeros(inst.hosts)
    free = np.ones(inst.hosts)
    host = np.full(inst.jobs, -1)
    attempts = 0
    stack = [iter(np.argsort(load, kind="stable"))]
    while stack:
        k = len(stack) - 1
        j = order[k]
        if host[j] >= 0:                                  # undo this job's previous placement
            load[host[j]] -= inst.alpha[j]
            free[host[j]] += inst.mem[j]
            host[j] = -1
        for i in stack[-1]:
            attempts += 1
            if attempts > max_attempts:
                return None
            if free[i] >= inst.mem[j] - MEM_TOL:
                host[j] = i
                load[i] += inst.alpha[j]
                free[i] -= inst.mem[j]
                break
        if host[j] < 0:
            stack.pop()
            continue
        if k + 1 == inst.jobs:
            return host
        stack.append(iter(np.argsort(load, kind="stable")))
    return None


# ---------------------------------------------------------------------------
# multi-capacity bin packing (§3.4)
# ---------------------------------------------------------------------------
def mcb_key(variant: int, cpu: np.ndarray, mem: np.ndarray) -> np.ndarray:
    """The sort key of MCB1..MCB8 (ascending for 1-4, descending for 5-8; ties: index)."""
    hi_, lo_ = np.maximum(cpu, mem), np.minimum(cpu, mem)
    with np.errstate(divide="ignore"):
        base = {1: cpu + mem, 2: hi_ - lo_, 3: np.where(lo_ > 0, hi_ / np.where(lo_ > 0, lo_, 1), np.inf),
                4: hi_}[(variant - 1) % 4 + 1]
    return base if variant <= 4 else -base


def mcb_pack(inst: VCInstance, Y: float, variant: int, *, first_list: str = "cpu") -> np.ndarray | None:
    """Pack with CPU needs ``Y alpha_j`` and memory ``m_j`` into the hosts one after the other
    ([VC] §3.4, after Leinberger et al.); None on failure."""
    cpu = Y * inst.alpha
    mem = inst.mem
    key = mcb_key(variant, cpu, mem)
    heavy = cpu > mem
    lists = {"cpu": [j for j in np.argsort(key, kind="stable") if heavy[j]],
             "mem": [j for j in np.argsort(key, kind="stable") if not heavy[j]]}
    lists = {k: np.array(v, dtype=np.int64) for k, v in lists.items()}
    left = {k: np.ones(v.size, dtype=bool) for k, v in lists.items()}
    host = np.full(inst.jobs, -1)
    placed = 0
    for i in range(inst.hosts):
        fc, fm = 1.0, 1.0
        empty = True
        while True:
            if empty:
                order = (first_list, "mem" if first_list == "cpu" else "cpu")
            else:                               # against the current imbalance
                order = ("cpu", "mem") if fc > fm else ("mem", "cpu")
            chosen = None
            for name in order:
                L = lists[name]
                ok = left[name] & (cpu[L] <= fc + MEM_TOL) & (mem[L] <= fm + MEM_TOL)
                idx = np.flatnonzero(ok)
                if idx.size:
                    chosen = (name, int(idx[0]))
                    break
            if chosen is None:
                break
            name, k = chosen
            j = lists[name][k]
            left[name][k] = False
            host[j] = i
            fc -= cpu[j]
            fm -= mem[j]
            placed += 1
            empty = False
        if placed == inst.jobs:
            return host
    return None


def mcb(inst: VCInstance, variant: int, *, tol: float = 1e-4, first_list: str = "cpu") -> VCResult:
    """MCB<variant> with the binary search on the yield of [VC] §3.4."""
    ub = min(1.0, inst.hosts / inst.alpha.sum())
    lo, hi = 0.0, ub
    best = None
    Y = ub / 2
    while True:
        h = mcb_pack(inst, Y, variant, first_list=first_list)
        if h is not None:
            lo, best = Y, (h, Y)
        else:
            hi = Y
        if hi - lo < tol:
            break
        Y = (lo + hi) / 2
    if best is None:
        return _result(inst, None)
    return _result(inst, best[0])


def solve(name: str, inst: VCInstance, **options) -> VCResult:
    """Run heuristic ``name`` (one of :data:`HEURISTICS`) including the average-yield phase.
    RRND / RRNZ need ``rng=`` (a ``numpy.random.Generator``)."""
    if name in ("RRND", "RRNZ"):
        return _result(inst, randomized_rounding(inst, options["rng"], no_zero=name == "RRNZ"))
    if name in ("GR", "SG"):
        return _result(inst, greedy(inst, sort=name == "SG"))
    if name in ("GB", "SGB"):
        return _result(inst, greedy_backtracking(inst, sort=name == "SGB", **options))
    if name.startswith("MCB") and name[3:].isdigit() and 1 <= int(name[3:]) <= 8:
        return mcb(inst, int(name[3:]), **options)
    raise MrfqError(f"heuristic = {quote(name)}: unknown; choose one of {', '.join(HEURISTICS)}")


# ---------------------------------------------------------------------------
# the evaluation of [VC] §4 (flat records; the script prints and plots them)
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class VCRecord:
    """One (instance, algorithm) result: ``min_yield`` is 0.0 on failure ("MILP" counts as failed
    when infeasible or stopped by its time limit before proving optimality)."""

    hosts: int
    jobs: int
    slack: float
    cv_mem: float
    cv_cpu: float
    instance: int
    algorithm: str
    min_yield: float
    avg_yield: float
    failed: bool
    seconds: float


def evaluate(seed: int, hosts: int, jobs_list, slacks, cvs=(0.25, 0.75), instances: int = 2,
             heuristics=HEURISTICS, *, exact: bool = False, max_attempts: int = 20_000,
             milp_time_limit: float = 30.0) -> list[VCRecord]:
    """Run every heuristic (plus ``"LP"`` bound and, if ``exact``, ``"MILP"``) on ``instances``
    instances per (jobs, slack, cv_mem, cv_cpu) of [VC] §4.1, drawn from ``SeedSequence(seed)``
    (one child per problem specification; its own child drives the randomised roundings)."""
    import time

    specs = [(J, s, cm, cc) for J in jobs_list for s in slacks for cm in cvs for cc in cvs]
    children = np.random.SeedSequence(seed).spawn(len(specs))
    out: list[VCRecord] = []
    for (J, s, cm, cc), child in zip(specs, children, strict=True):
        rng = np.random.default_rng(child)                     # the instances
        rounding = np.random.default_rng(child.spawn(1)[0])    # RRND / RRNZ draws
        for k in range(instances):
            inst = generate(rng, hosts, J, s, cm, cc)
            names = ["LP"] + (["MILP"] if exact else []) + list(heuristics)
            for name in names:
                t0 = time.perf_counter()
                if name == "LP":
                    y = lp_bound(inst)
                    rec = (y, float("nan"), y <= 0)
                elif name == "MILP":
                    # failed when infeasible or stopped by the time limit before proving optimality
                    y, optimal = milp_solve(inst, time_limit=milp_time_limit)
                    rec = (y, float("nan"), y <= 0 or not optimal)
                else:
                    opts = ({"max_attempts": max_attempts} if name in ("GB", "SGB") else
                            {"rng": rounding} if name in ("RRND", "RRNZ") else {})
                    res = solve(name, inst, **opts)
                    rec = (res.min_yield, res.avg_yield, res.failed)
                dt = time.perf_counter() - t0
                out.append(VCRecord(hosts, J, s, cm, cc, k, name, rec[0], rec[1], bool(rec[2]), dt))
    return out


def ratio_table(records: list[VCRecord], reference: str = "LP") -> dict[str, dict[float, tuple[float, float]]]:
    """Per algorithm and slack: (mean min-yield / reference over instances solved by both, failure rate)."""
    ref = {(r.jobs, r.slack, r.cv_mem, r.cv_cpu, r.instance): r.min_yield
           for r in records if r.algorithm == reference}
    table: dict[str, dict[float, list]] = {}
    for r in records:
        if r.algorithm == reference:
            continue
        key = (r.jobs, r.slack, r.cv_mem, r.cv_cpu, r.instance)
        cell = table.setdefault(r.algorithm, {}).setdefault(r.slack, [[], 0, 0])
        cell[2] += 1
        if r.failed:
            cell[1] += 1
        elif ref.get(key, 0.0) > 0:
            cell[0].append(r.min_yield / ref[key])
    return {a: {s: (float(np.mean(c[0])) if c[0] else float("nan"), c[1] / c[2]) for s, c in sorted(d.items())}
            for a, d in table.items()}


def degradation_from_best(records: list[VCRecord], algorithms) -> dict[str, tuple[float, float]]:
    """[VC] Table 1: per algorithm, (average, maximum) % degradation of its minimum yield from the
    best of ``algorithms`` on each instance where that algorithm succeeded."""
    by_inst: dict[tuple, dict[str, VCRecord]] = {}
    for r in records:
        if r.algorithm in algorithms:
            by_inst.setdefault((r.jobs, r.slack, r.cv_mem, r.cv_cpu, r.instance), {})[r.algorithm] = r
    deg: dict[str, list[float]] = {a: [] for a in algorithms}
    for rs in by_inst.values():
        best = max(r.min_yield for r in rs.values())
        if best <= 0:
            continue
        for a, r in rs.items():
            if not r.failed:
                deg[a].append(100.0 * (best - r.min_yield) / best)
    return {a: (float(np.mean(d)) if d else float("nan"), float(np.max(d)) if d else float("nan"))
            for a, d in deg.items()}
