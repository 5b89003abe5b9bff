"""Packet vs fluid: every scheduler over a range of loads, beside the Markov model.

For each (scheduler, load) the packet emulator runs independent replications
of the flow-arrival scenario (same seeds for every scheduler: common random
numbers), and the flow-level Markov model of the matching objective gives the
fluid value (drfq, drfq-dovetail -> DRF; pf-sfq -> PF; bmf-wfq -> BMF).

Statistics (documented on the "Packet vs fluid" page of the documentation):

* **Warm-up removal**: each replication starts empty; the first
  ``warmup_fraction`` (10 %) of its simulated time is discarded.
* **Estimator**: ``gamma_k = (class-k packets served) / (integral of the number
  of class-k flows in the system)`` over the measurement window (Little's law,
  ``gamma_k = rho_k / E[x_k]``), which uses every flow, including those still
  in progress at the end, so long flows are not censored.
* **Control variate** (where the scheduler has a fluid objective and a
  per-state kernel exists): the fluid model is run on the *same* arrival path
  (:mod:`analysis.fluid_path`) and the reported value is
  ``gamma_packet_path - beta (gamma_fluid_path - gamma_markov)`` with ``beta``
  fitted on the batches (see :func:`pooled`).  Near saturation
  the plain estimator's variance grows like ``(1 - rho)^-4``; the difference
  of two systems fed the same flows varies far less, so the interval measures
  how far the packet scheduler is from its fluid ideal, not how noisy the
  arrivals were.  The plain ratio estimate stays in the rows as
  ``gamma_raw``/``ci_raw``.
* **Coarse-packet control** (:mod:`analysis.coarse`) for a scheduler no fluid
  model describes (drfq-dovetail): the same scheduler on the same flows in
  ``m`` times fewer, larger packets is one more control; its mean is not
  known, so it is estimated from independent "level-0" replications of the
  coarse copy (themselves corrected by the fluid paths, whose means are
  known), and ``|beta|`` times that estimate's half-width joins the interval.
  For any fixed ``beta`` the estimator is unbiased whatever the coarse copy
  is (a two-level estimator, Giles 2008; a control variate with an estimated
  mean, Law & Kelton §11.3): its quality only sets the interval's width.
  ``coarse = "auto"`` engages it for a point whose gamma departs from the
  scheduler's own fluid value by more than ``target / 2`` (the fluid paths
  then follow another system, and two replications can miss the excursions
  only the packet system makes) or whose interval the fluid controls leave
  above ``target``.
* **Confidence interval**: each replication's window is cut into
  ``batches`` batch means; the batches of all replications of a point are
  pooled and the ratio estimator's interval comes from the batch residuals
  (delta method) with a Student t quantile (:mod:`analysis.batch_stats`),
  at ``confidence`` (95 %).
* **Stopping rule**: start with ``replications`` replications; while some
  class's half-width exceeds ``target`` (2 % of gamma) and fewer than
  ``max_replications`` have run, double the replications of that point.
  High loads, whose flows live long, so get the samples they need.  Where
  the coarse control is engaged the rule chooses between doubling and more
  level-0 replications by the cheaper plan in packet services (see
  ``check`` in :func:`compare`); a simulated Markov value's own half-width
  is left out of the rule (replications cannot shrink it).  The progress
  bar follows the rule's rounds (:class:`SweepProgress`).
* **Size laws**: the Markov model assumes geometric flow sizes ([BR] §4).
  With another law (``size = {law = "pareto", ...}``) the packet gamma is
  still reported against the geometric Markov value of the same mean, but the
  row says ``insensitivity_guaranteed: false`` (a ``*`` in the table): the
  fluid value is then a reference, not the expectation.  The control variate
  runs the fluid model on the same non-geometric arrivals
  (:mod:`analysis.fluid_path` takes them from :mod:`flows.traffic`), so it
  still removes the arrival noise, but the corrected gamma is centred on the
  Markov value only where insensitivity holds.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from mrfq.analysis import objectives
from mrfq.analysis.batch_stats import ratio_ci, t_quantile
from mrfq.analysis.coarse import LEVEL0_COST, coarse_dict, coarse_factor, coarse_run, level0, level0_seed, needed
from mrfq.analysis.fluid_path import fluid_path
from mrfq.analysis.sweep import Point, ResultStore, _warm_specs, execute, warm_ahead
from mrfq.flows.cli_args import MAX_FLOWS, MAX_REPLICATIONS, MIN_FLOWS
from mrfq.flows.errors import MrfqError, quote
from mrfq.flows.scenario import MAX_SEED, Scenario, to_dict
from mrfq.fq.registry import SCHEDULERS

#: fluid objective each scheduler is compared with
OBJECTIVE = {name: info.objective for name, info in SCHEDULERS.items()}
#: level-0 replications of the coarse control
MAX_COARSE_REPLICATIONS = 1 << 20


def _whole(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _real(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class CompareConfig:
    schedulers: tuple[str, ...] = ("drfq", "drfq-dovetail", "pf-sfq", "bmf-wfq")
    loads: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    replications: int = 2
    max_replications: int = 32
    target: float = 0.02
    flows_per_replication: float = 2000.0
    warmup_fraction: float = 0.1
    batches: int = 10
    confidence: float = 0.95
    seed: int = 1
    #: control variates: "all" = the fluid path of every Markov objective (multiple
    #: regression), "own" = only the scheduler's own objective, "none" = plain ratio
    controls: str = "all"
    #: the coarse-packet control (:mod:`analysis.coarse`): "auto" = for a point whose interval the
    #: fluid controls leave above ``target`` or whose gamma departs from its own fluid value by
    #: more than ``target / 2``, "always" = for every point, "never"
    coarse: str = "auto"
    #: level-0 (coarse, independent) replications: the first estimate, and the cap
    coarse_replications: int = 64
    max_coarse_replications: int = 4096

    def __post_init__(self):
        """The same ranges as ``mrfq compare``'s options, for every way a configuration is made (the
        command, ``mrfq.compare``, a script): a field outside is a one-line MrfqError."""
        for name, lo, hi in (("replications", 1, MAX_REPLICATIONS), ("max_replications", 1, MAX_REPLICATIONS),
                             ("batches", 2, 10_000), ("seed", 0, MAX_SEED),
                             ("coarse_replications", 1, MAX_COARSE_REPLICATIONS),
                             ("max_coarse_replications", 1, MAX_COARSE_REPLICATIONS)):
            v = getattr(self, name)
            if not (_whole(v) and lo <= v <= hi):
                raise MrfqError(f"{name} = {quote(v)}: must be a whole number in [{lo}, {hi:,}]")
        for name, lo, hi, lo_open, hi_open in (("target", 0.0, 1.0, True, True),
                                               ("flows_per_replication", MIN_FLOWS, MAX_FLOWS, False, False),
                                               ("warmup_fraction", 0.0, 1.0, False, True),
                                               ("confidence", 0.0, 1.0, True, True)):
            v = getattr(self, name)
            if not (_real(v) and (lo < v if lo_open else lo <= v) and (v < hi if hi_open else v <= hi)):
                raise MrfqError(f"{name} = {quote(v)}: must be a number in {'(' if lo_open else '['}{lo:g}, "
                                f"{hi:g}{')' if hi_open else ']'}")
        for name, allowed in (("controls", ("all", "own", "none")), ("coarse", ("auto", "always", "never"))):
            if getattr(self, name) not in allowed:
                raise MrfqError(f"{name} = {quote(getattr(self, name))}: choose one of {', '.join(allowed)}")

    @staticmethod
    def quick(**kw) -> "CompareConfig":
        d = dict(replications=2, max_replications=4, target=0.05, flows_per_replication=400.0)
        d.update(kw)
        return CompareConfig(**d)


@dataclass
class Row:
    scheduler: str
    load: float
    cls: str
    gamma_packet: float
    ci: tuple[float, float]
    gamma_fluid: float | None
    rel_error: float | None
    inside: bool | None
    replications: int
    completed: int
    gamma_raw: float = math.nan
    ci_raw: tuple[float, float] = (math.nan, math.nan)
    estimator: str = "ratio"
    insensitivity_guaranteed: bool = True   # False: non-geometric sizes, the Markov value assumes geometric
    coarse_replications: int = 0            # level-0 replications of the coarse-packet control (0: not used)

    @staticmethod
    def from_json(d: dict) -> "Row":
        """The row :meth:`to_json` gave (a stored table, ``mrfq results``); a null number is NaN again."""
        def num(v):
            return math.nan if v is None else float(v)

        def pair(v):
            return (num(v[0]), num(v[1]))

        return Row(scheduler=d["scheduler"], load=float(d["load"]), cls=d["class"], gamma_packet=num(d["gamma_packet"]),
                   ci=pair(d["ci"]), gamma_fluid=None if d["gamma_fluid"] is None else float(d["gamma_fluid"]),
                   rel_error=None if d["rel_error"] is None else float(d["rel_error"]), inside=d["inside"],
                   replications=int(d["replications"]), completed=int(d["completed"]),
                   gamma_raw=num(d.get("gamma_raw")), ci_raw=pair(d.get("ci_raw") or (None, None)),
                   estimator=d.get("estimator", "ratio"),
                   insensitivity_guaranteed=bool(d.get("insensitivity_guaranteed", True)),
                   coarse_replications=int(d.get("coarse_replications", 0)))

    def to_json(self) -> dict:
        d = asdict(self)
        d["class"] = d.pop("cls")
        d["ci"] = list(self.ci)
        d["ci_raw"] = list(self.ci_raw)
        # strict JSON: a value that could not be estimated (no flows of a class) is null, not NaN
        for key in ("gamma_packet", "gamma_raw", "rel_error", "gamma_fluid"):
            if isinstance(d[key], float) and math.isnan(d[key]):
                d[key] = None
        for key in ("ci", "ci_raw"):
            d[key] = [None if isinstance(v, float) and math.isnan(v) else v for v in d[key]]
        return d


@dataclass
class CompareResult:
    scenario: str
    rows: list[Row]
    wall_seconds: float
    points_run: int
    points_reused: int
    services: int
    results_file: str
    fluid: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"scenario": self.scenario, "rows": [r.to_json() for r in self.rows],
                "wall_seconds": self.wall_seconds, "points_run": self.points_run,
                "points_reused": self.points_reused, "services": self.services,
                "results_file": self.results_file}


class SweepProgress:
    """The sweep's progress bar, one phase of the stopping rule at a time ("Packet vs fluid" page of the
    documentation, "Stopping rule").

    The number of runs is not known when a sweep starts: each round of the rule doubles the
    replications of the points whose interval is still too wide.  So the bar counts one round's
    runs (``round 2 (14 of 36 points need more replications): 12/28 runs``), then the rule's check
    of every point (``round 2 done, checking the intervals: 20/36 points``, naming the coarse
    control's level-0 runs while they go on), and never shows 100 % of a sweep that has more to do.
    ``stream``: where the bar goes (default: stderr; the command line shows it on a terminal only).
    """

    def __init__(self, stream=None):
        self.stream = stream
        self.bar = None

    def _phase(self, desc: str, total: int, unit: str) -> None:
        from tqdm import tqdm

        fmt = "{desc}: {n_fmt}/{total_fmt} " + unit + "s {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]"
        if self.bar is None:
            import sys

            self.bar = tqdm(total=total, desc=desc, unit=unit, bar_format=fmt, file=self.stream or sys.stderr,
                            dynamic_ncols=True, leave=False)
            return
        self.bar.bar_format = fmt
        self.bar.unit = unit
        self.bar.set_postfix_str("", refresh=False)
        self.bar.set_description_str(desc, refresh=False)
        self.bar.reset(total=total)  # shows the new phase at once

    def runs(self, round_no: int, need: int, points: int, runs: int) -> None:
        """Round ``round_no`` starts ``runs`` runs for the ``need`` of ``points`` points that want them."""
        what = f"{points} points" if round_no == 1 else f"{need} of {points} points need more replications"
        self._phase(f"mrfq compare round {round_no} ({what})", runs, "run")

    def ran(self) -> None:
        self.bar.update(1)

    def checking(self, round_no: int, points: int) -> None:
        """Round ``round_no``'s runs are done; the stopping rule checks each of the ``points`` points."""
        self._phase(f"mrfq compare round {round_no} done, checking the intervals", points, "point")

    def checked(self) -> None:
        self.bar.set_postfix_str("", refresh=False)
        self.bar.update(1)

    def level0(self, scheduler: str, load: float, have: int, want: int) -> None:
        """The coarse control of ``scheduler`` at ``load`` runs level-0 replications ``have``..``want``."""
        self.bar.set_postfix_str(f"coarse control of {scheduler} at {load:g}: level-0 runs {have}->{want}")

    def close(self) -> None:
        """Clear the bar's line (at the end, or before an error's message)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def point_scenario(base: Scenario, scheduler: str, load: float, cfg: CompareConfig) -> Scenario:
    """The fully specified scenario of one point (its digest keys the stored result)."""
    sc = base.with_load(load)
    lam = sum(c.rate for c in sc.classes)
    duration = cfg.flows_per_replication / lam
    return sc.replace(**{"router.scheduler": scheduler, "run.duration": duration,
                         "run.warmup": cfg.warmup_fraction * duration, "run.batches": cfg.batches,
                         "run.confidence": cfg.confidence, "run.seed": cfg.seed})


@contextlib.contextmanager
def _threads(n: int | None):
    """numba's parallel kernels (the Markov solve) on ``n`` threads in the block (None: as they are):
    one while other processes compile on the other cores, where a second thread would spin at every
    barrier waiting for a core (the results do not depend on the number of threads)."""
    if n is None:
        yield
        return
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(min(n, before))
    try:
        yield
    finally:
        numba.set_num_threads(before)


def fluid_gammas(base: Scenario, objective: str, load: float, store: ResultStore | None) -> dict:
    """gamma_k of the flow-level Markov model (cached in the store)."""
    from mrfq.analysis import markov

    sc = base.with_load(load)
    key = f"{sc.digest()}|{objective}"
    if store is not None:
        got = store.fluid_get(key)
        if got is not None:
            return got
    try:
        res = markov.solve(sc, objective)
    except markov.TruncationTooLarge:
        # too many states for the exact solve (loads near 1): simulate the same chain instead
        res = markov.solve(sc, objective, method="simulate",
                           rng=np.random.default_rng(np.random.SeedSequence([sc.run.seed, int(load * 1e6)])),
                           events=20_000_000)
    hw = None
    if res.method == "simulate":
        hw = [float((h - l) / 2) if np.isfinite(h) else float("inf") for l, h in zip(res.gamma_low, res.gamma_high)]
    payload = {"gamma": [float(g) for g in res.gamma], "halfwidth": hw,
               "truncation": list(res.truncation) if res.truncation is not None else None,
               "boundary_mass": float(res.boundary_mass) if res.boundary_mass is not None else None,
               "method": res.method}
    if store is not None:
        store.fluid_put(key, sc.digest(), objective, load, payload)
    return payload


def pooled(payloads: list[dict], k: int, confidence: float, fluid: dict | None = None,
           controls: list[tuple[dict, list[dict]]] | None = None) -> dict:
    """Pool the batches of all replications of one point for class k.

    Without controls this is the plain ratio estimator of the batch sums.  With them it
    is the regression (multiple) control-variate estimator

        gamma_cv = gamma_packet - sum_i beta_i (gamma_fluid_i - gamma_markov_i)

    where control i is the fluid model of objective i run on the *same* arrival path
    (:mod:`analysis.fluid_path`; its expectation ``gamma_markov_i`` is the Markov model's
    value, known), and ``beta`` is the least-squares fit of the packet estimator's
    linearised batch residuals ``u_b = (Y_b - g X_b) / mean X`` on the controls'
    ``v_ib`` (the delta method for ratios).  This is the classical estimator of Lavenberg
    & Welch (1981) / Law & Kelton §11.3 with ``q`` controls: consistent for any ``beta``
    (the controls have known means), so a scheduler that does not follow any one fluid
    model (drfq-dovetail, between DRF and BMF) still gets an honest interval, only a
    wider one; ``beta ~ 0`` where no control tracks it.  Its standard error comes from
    the regression residuals ``d = u - V beta`` with ``B - 1 - q`` degrees of freedom
    (the cost of fitting ``beta`` on the same batches): ``s^2 (1/B + delta' (V'V)^-1 delta)``,
    ``s^2 = sum d^2 / (B - 1 - q)`` and ``delta_i = gamma_fluid_i - gamma_markov_i`` (the
    classical variance of the estimator with an estimated ``beta``; the second term, if left
    out, makes the intervals at load 0.5-0.9 about 1.5x too narrow against the
    spread of independent pairs of replications), plus ``|beta_i|`` times each Markov value's
    own half-width when that came from a simulation (independent).

    ``fluid`` + each payload's ``cv`` is one control (the scheduler's own objective, as
    computed by the sweep's workers); ``controls`` adds more: ``(markov payload,
    [fluid-path batch sums per payload])`` pairs.  Controls without flows of class k in
    the window are skipped.

    A control's mean may itself be an estimate from independent replications (the
    coarse-packet control, :mod:`analysis.coarse`): its payload then has ``halfwidth``
    (added as above: the estimator stays unbiased for a fixed ``beta``, and the
    independent estimate's variance adds ``beta_i^2 Var``) and ``refinable``, the part
    of that half-width more replications of it would shrink; ``refinable_halfwidth`` in
    the result is ``sqrt(sum (beta_i refinable_i)^2)`` (the stopping rule's business).
    """
    y = np.concatenate([np.asarray(p["departed"][k]) for p in payloads])
    x = np.concatenate([np.asarray(p["area"][k]) for p in payloads])
    completed = int(sum(p["completed"][k] for p in payloads))
    g, lo, hi = ratio_ci(y, x, confidence)
    out = {"gamma": g, "ci": (lo, hi), "raw": g, "raw_ci": (lo, hi), "completed": completed,
           "estimator": "ratio"}
    cands = []
    if fluid is not None and all(p.get("cv") for p in payloads):
        cands.append((fluid, [p["cv"] for p in payloads]))
    cands += list(controls or [])
    if not cands or x.sum() <= 0:
        return out
    B = len(x)
    gp = y.sum() / x.sum()
    u = (y - gp * x) / x.mean()
    V, shift, hws, refs = [], [], [], []
    for mk, paths in cands:
        yf = np.concatenate([np.asarray(c["departed"][k]) for c in paths])
        xf = np.concatenate([np.asarray(c["area"][k]) for c in paths])
        if xf.sum() <= 0 or len(xf) != B or not math.isfinite(mk["gamma"][k]):
            continue
        gf = yf.sum() / xf.sum()
        v = (yf - gf * xf) / xf.mean()
        if not np.any(v):
            continue
        V.append(v)
        shift.append(gf - mk["gamma"][k])
        hws.append((mk.get("halfwidth") or [0.0] * (k + 1))[k] or 0.0)
        refs.append((mk.get("refinable") or [0.0] * (k + 1))[k] or 0.0)
    q = len(V)
    if q == 0 or B < q + 3:
        return out
    Vm = np.column_stack(V)
    beta, *_ = np.linalg.lstsq(Vm, u, rcond=None)
    d = u - Vm @ beta
    # Var = s^2 (1/B + shift' (V'V)^-1 shift): the second term is the cost of estimating beta when
    # the controls' means are off their known values (Law & Kelton §11.3, Lavenberg & Welch 1981);
    # near saturation a few replications' fluid gamma can be 10-100 % off the Markov value
    shift_a = np.array(shift)
    lever = float(shift_a @ np.linalg.lstsq(Vm.T @ Vm, shift_a, rcond=None)[0])
    se = math.sqrt(float((d * d).sum()) / (B - 1 - q) * (1.0 / B + max(lever, 0.0)))
    h = t_quantile(confidence, B - 1 - q) * se
    h_fluid = math.sqrt(sum((b * hw) ** 2 for b, hw in zip(beta, hws)))
    g_cv = gp - float(beta @ np.array(shift))
    out.update(packet_halfwidth=h, beta=[float(b) for b in beta], controls=q,
               refinable_halfwidth=math.sqrt(sum((b * r) ** 2 for b, r in zip(beta, refs))))
    h = math.sqrt(h * h + h_fluid * h_fluid)
    out.update(gamma=g_cv, ci=(g_cv - h, g_cv + h),
               estimator="control variate" if q == 1 else f"{q} control variates")
    return out


def compare(base: Scenario, cfg: CompareConfig, store: ResultStore, *, executor: str = "local",
            workers: int | None = None, progress: bool | SweepProgress = True, fluid: bool = True) -> CompareResult:
    """Run the sweep (resuming from ``store``), then tabulate packet vs fluid and store the table
    (:meth:`analysis.sweep.ResultStore.sweep_put`, what ``mrfq results`` shows).

    ``progress``: True for a :class:`SweepProgress` bar on stderr, or one to use, or False.  The sweep's
    runs never draw the per-run progress line (flows.notice.progress): the bar is the sweep's display,
    and the two would overwrite each other's line."""
    from mrfq.flows import notice

    shown, notice.progress = notice.progress, None
    try:
        return _compare(base, cfg, store, executor=executor, workers=workers, progress=progress, fluid=fluid)
    finally:
        notice.progress = shown


def _compare(base: Scenario, cfg: CompareConfig, store: ResultStore, *, executor: str, workers: int | None,
             progress: bool | SweepProgress, fluid: bool) -> CompareResult:
    if not base.classes:
        raise MrfqError(f"scenario {base.name}: compare needs flow arrivals ([[class]]) to measure gamma")
    if base.load is None:
        raise MrfqError(f"scenario {base.name}: compare needs [traffic] load with class shares to sweep the load")
    for s in cfg.schedulers:
        if s not in SCHEDULERS:
            raise MrfqError(f"--schedulers: unknown scheduler {quote(s)}; choose from {', '.join(SCHEDULERS)}")
    t0 = time.perf_counter()
    name = base.name
    geometric = base.geometric_sizes
    reps = {(s, load): cfg.replications for s in cfg.schedulers for load in cfg.loads}
    done: dict[tuple[str, float], dict[int, dict]] = {key: {} for key in reps}
    stats = {"run": 0, "reused": 0, "services": 0}
    bar = (SweepProgress() if progress is True else progress) or None

    def points_for(s, load, r_from, r_to):
        sc = point_scenario(base, s, load, cfg)
        d = to_dict(sc)
        h = sc.digest()
        return [(Point(h, s, load, r, cfg.seed + r, sc.run.duration), d) for r in range(r_from, r_to)]

    # the fluid reference first: it is the control variates' known mean
    if cfg.controls not in ("all", "own", "none"):
        raise MrfqError(f"controls = {quote(cfg.controls)}: unknown; choose all, own or none")
    J = len(base.resources)
    ctl_objs = [o for o in objectives.MARKOV if objectives.kernel_handles(o, J)] if cfg.controls == "all" else []
    fl: dict = {}
    ahead = None
    if fluid and executor == "local":
        # the first round's loop variants compile on the spare cores while this process solves the
        # Markov model (compiling its kernels on one core: about 45 s with an empty cache)
        missing = [(p, d, name) for s, load in reps for p, d in points_for(s, load, 0, reps[(s, load)])
                   if store.get(p.key) is None]
        if missing:
            ahead = warm_ahead(_warm_specs(missing))
    try:
        with _threads(1 if ahead is not None and ahead.running else None):
            if fluid:
                for load in cfg.loads:
                    for obj in [OBJECTIVE[s] for s in cfg.schedulers] + ctl_objs:
                        if obj is not None and (obj, load) not in fl:
                            fl[(obj, load)] = fluid_gammas(base, obj, load, store)
    except BaseException:
        if ahead is not None:
            ahead.close(wait=False)
        raise

    def fluid_of(s, load):
        obj = OBJECTIVE[s]
        return fl.get((obj, load)) if obj is not None and cfg.controls != "none" else None

    paths: dict = {}  # (load, replication, objective) -> fluid-path batch sums (scheduler-free)
    # the coarse-packet control (analysis.coarse) of the points that use it:
    # key -> {"dict": coarse scenario, "paired": {r: batch sums}, "level0": [(batch sums, fluid paths)], "mean": ...}
    coarse: dict = {}
    if cfg.coarse not in ("auto", "always", "never"):
        raise MrfqError(f"coarse = {quote(cfg.coarse)}: unknown; choose auto, always or never")
    m_coarse = coarse_factor(base) if fluid and cfg.controls != "none" and cfg.coarse != "never" else 0
    l0_objs = [o for o in objectives.MARKOV if objectives.kernel_handles(o, J)
               and all((o, load) in fl for load in cfg.loads)]
    l0_workers = 1 if executor != "local" else (workers or os.cpu_count() or 1)

    def controls_of(s, load, reps_done):
        if not fluid:
            return None
        sc = point_scenario(base, s, load, cfg)
        out = []
        for o in ctl_objs:
            if o == OBJECTIVE[s]:
                continue  # the payloads' own "cv"
            for r in reps_done:
                if (load, r, o) not in paths:
                    paths[(load, r, o)] = fluid_path(sc, o, cfg.seed + r, batches=cfg.batches)
            out.append((fl[(o, load)], [paths[(load, r, o)] for r in reps_done]))
        cs = coarse.get((s, load))
        if cs is not None:
            for r in reps_done:
                if r not in cs["paired"]:
                    cs["paired"][r] = coarse_run(cs["dict"], name, cfg.seed + r)
            out.append((cs["mean"], [cs["paired"][r] for r in reps_done]))
        return out or None

    def coarse_level0(key, n0):
        """Extend the point's level-0 (independent coarse) replications to n0 and re-estimate
        the coarse control's mean per class (fluid paths of the fine scenario as controls)."""
        s, load = key
        cs = coarse.get(key)
        if cs is None:
            d = to_dict(point_scenario(base, s, load, cfg))
            cs = coarse[key] = {"dict": coarse_dict(d, m_coarse), "fine": d, "paired": {}, "level0": []}
        have = len(cs["level0"])
        if n0 > have:
            if bar is not None:
                bar.level0(s, load, have, n0)
            cs["level0"] += level0(cs["dict"], cs["fine"], name, l0_objs,
                                   [level0_seed(cfg.seed, i) for i in range(have, n0)], workers=l0_workers)
        runs = cs["level0"]
        mean = {"gamma": [], "halfwidth": [], "refinable": []}
        for k in range(len(base.classes)):
            st = pooled([c for c, _ in runs], k, cfg.confidence, None,
                        [(fl[(o, load)], [f[o] for _, f in runs]) for o in l0_objs])
            lo, hi = st["ci"]
            h = (hi - lo) / 2
            mean["gamma"].append(st["gamma"])
            mean["halfwidth"].append(h)
            mean["refinable"].append(st.get("packet_halfwidth", h))
        cs["mean"] = mean

    def rule(key, got):
        """[(gamma, packet half-width, refinable half-width)] per class of the point as it stands."""
        payloads = [got[r] for r in sorted(got)]
        ctl = controls_of(*key, sorted(got))
        out = []
        for k in range(len(base.classes)):
            st = pooled(payloads, k, cfg.confidence, fluid_of(*key), ctl)
            g, (lo, hi) = st["gamma"], st["ci"]
            # more packet replications cannot shrink a simulated fluid value's own interval:
            # the rule looks at the packet side and at the coarse control's estimated mean
            out.append((g, st.get("packet_halfwidth", (hi - lo) / 2), st.get("refinable_halfwidth", 0.0)))
        return out

    def rel(g, h):
        return h / g if g and not math.isnan(g) and not math.isnan(h) else math.inf

    def check(key, got):
        """Engage or refine the coarse control as needed; True when the point wants more replications.

        Where the fluid controls leave the interval too wide the coarse control is engaged.
        Then the rule plans: for each number of fine replications the doubling can reach
        (n, 2n, 4n, ... up to the cap) it works out, by the 1/sqrt(n) law, how many level-0
        replications would bring every class to 0.95 target, picks the cheapest plan in packet
        services (a deterministic proxy of time: the choices, hence the results, do not depend
        on the machine), and takes its level-0 replications first, then re-plans."""
        if cfg.coarse == "always" and m_coarse and key not in coarse:
            coarse_level0(key, cfg.coarse_replications)
        while True:
            cls = rule(key, got)
            own = fl.get((OBJECTIVE[key[0]], key[1])) if OBJECTIVE[key[0]] is not None else None
            if m_coarse and key not in coarse and own is not None and any(
                    not abs(g - gf) <= 0.5 * cfg.target * gf for (g, _, _), gf in zip(cls, own["gamma"])):
                # the scheduler departs from its own fluid model: the fluid paths track another
                # system, and a short run can miss the excursions that only it makes
                coarse_level0(key, cfg.coarse_replications)
                continue
            if max(rel(g, math.hypot(hp, hr)) for g, hp, hr in cls) <= cfg.target:
                return False
            if m_coarse and key not in coarse:
                coarse_level0(key, cfg.coarse_replications)
                continue
            nf = len(got)
            more_fine = nf < cfg.max_replications
            if key not in coarse:
                return more_fine
            cs = coarse[key]
            n0, cap = len(cs["level0"]), cfg.max_coarse_replications
            c_fine = float(np.mean([p["services"] for p in got.values()]))
            c_l0 = LEVEL0_COST * float(np.mean([c["services"] for c, _ in cs["level0"]]))
            goal = 0.95 * cfg.target
            best, nf2 = None, nf
            while True:
                shrink, want, ok = nf / nf2, n0, True
                for g, hp, hr in cls:
                    budget = (goal * g) ** 2 - hp * hp * shrink if math.isfinite(g) else -1.0
                    if not (budget > 0 and math.isfinite(hr)):
                        ok = False
                        break
                    if hp * hp * shrink + hr * hr > (goal * g) ** 2:
                        w = needed(n0, hr, math.sqrt(budget), cap)
                        ok = ok and hr * math.sqrt(n0 / w) <= math.sqrt(budget)
                        want = max(want, w)
                if ok:
                    cost = (nf2 - nf) * c_fine + (want - n0) * c_l0
                    if best is None or cost < best[0]:
                        best = (cost, nf2, want)
                if nf2 >= cfg.max_replications:
                    break
                nf2 = min(2 * nf2, cfg.max_replications)
            # level-0 replications first, four times as many at a time at most: they are cheap,
            # every plan needs them, and a first estimate from few heavy-tailed replications can
            # be far off (drfq-dovetail at 0.9: 64 of them gave 15 % where 4096 gave 1.4 %, so
            # one would otherwise commit to fine replications no plan needs)
            if best is None:  # out of reach as it stands: spend what the caps allow
                if n0 < cap:
                    coarse_level0(key, min(cap, 4 * n0))
                    continue
                return more_fine
            _, nf2, want = best
            if want > n0:
                coarse_level0(key, min(want, 4 * n0))
                continue
            return nf2 > nf

    try:
        pending = {key: (0, reps[key]) for key in reps}
        round_no = 0
        while pending:
            round_no += 1
            tasks = []
            for (s, load), (a, b) in pending.items():
                for p, d in points_for(s, load, a, b):
                    got = store.get(p.key)
                    if got is not None:
                        done[(s, load)][p.replication] = got
                        stats["reused"] += 1
                    else:
                        tasks.append((p, d, name))
            if bar is not None and tasks:
                bar.runs(round_no, len(pending), len(done), len(tasks))

            def on_done(p: Point, payload: dict) -> None:
                store.put(p, name, payload)
                done[(p.scheduler, p.load)][p.replication] = payload
                stats["run"] += 1
                stats["services"] += payload["services"]
                if bar is not None:
                    bar.ran()

            # longest points first keeps the workers busy to the end
            tasks.sort(key=lambda t: -t[0].load)
            execute(tasks, on_done, executor=executor, workers=workers, ahead=ahead)
            ahead = None
            # stopping rule: double the replications of points whose interval is still too wide
            # (after trying the coarse control, where the fluid ones leave the interval too wide)
            pending = {}
            if bar is not None:
                bar.checking(round_no, len(done))
            for key, got in done.items():
                n = len(got)
                if check(key, got):
                    pending[key] = (n, min(2 * n, cfg.max_replications))
                if bar is not None:
                    bar.checked()
    finally:  # an error or Ctrl-C mid-sweep: the bar's line is cleared before the message
        if ahead is not None:
            ahead.close(wait=False)
        if bar is not None:
            bar.close()

    rows = []
    for s in cfg.schedulers:
        for load in cfg.loads:
            got = done[(s, load)]
            payloads = [got[r] for r in sorted(got)]
            fd = fluid_of(s, load)
            ctl = controls_of(s, load, sorted(got))
            for k, c in enumerate(base.classes):
                st = pooled(payloads, k, cfg.confidence, fd, ctl)
                g, (lo, hi) = st["gamma"], st["ci"]
                own = fl.get((OBJECTIVE[s], load)) if OBJECTIVE[s] is not None else None
                gf = own["gamma"][k] if own is not None else None
                rows.append(Row(
                    scheduler=s, load=load, cls=c.name, gamma_packet=float(g), ci=(float(lo), float(hi)),
                    gamma_fluid=None if gf is None else float(gf),
                    rel_error=float((g - gf) / gf) if gf else None,
                    inside=bool(lo <= gf <= hi) if gf is not None else None,
                    replications=len(payloads), completed=int(st["completed"]),
                    gamma_raw=float(st["raw"]), ci_raw=(float(st["raw_ci"][0]), float(st["raw_ci"][1])),
                    estimator=st["estimator"] + (" (one a coarse-packet copy)" if (s, load) in coarse else ""),
                    insensitivity_guaranteed=geometric,
                    coarse_replications=len(coarse[(s, load)]["level0"]) if (s, load) in coarse else 0))
    config = {**asdict(cfg), "fluid": fluid}
    store.sweep_put(sweep_key(base, config), name, base.digest(), config, [r.to_json() for r in rows])
    return CompareResult(scenario=name, rows=rows, wall_seconds=time.perf_counter() - t0,
                         points_run=stats["run"], points_reused=stats["reused"], services=stats["services"],
                         results_file=str(store.path), fluid={f"{o}@{l}": v for (o, l), v in fl.items()})


def sweep_key(base: Scenario, config: dict) -> str:
    """The key of a sweep's stored table: its scenario and configuration (the same sweep run again
    replaces its table)."""
    import hashlib
    import json

    text = json.dumps({"scenario": base.digest(), "config": config}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def format_table(res: CompareResult) -> str:
    """The table ``mrfq compare`` prints: :func:`format_rows` and a line on the runs."""
    out = format_rows(res.rows)
    out.append(f"{res.points_run} runs ({res.services:,} packet services), {res.points_reused} reused from "
               f"{res.results_file}; {res.wall_seconds:.1f} s")
    return "\n".join(out)


def format_rows(rows: list[Row]) -> list[str]:
    """The lines of a sweep's table, one block per class (``mrfq compare``, ``mrfq results``; the
    columns are those of :func:`analysis.cli_compare.rows_csv`)."""
    out = []
    classes = []
    for r in rows:
        if r.cls not in classes:
            classes.append(r.cls)
    for c in classes:
        out.append(f"class {c}")
        out.append(f"  {'scheduler':<14} {'load':>5} {'gamma packet':>12} {'95% CI':>19} {'gamma fluid':>11} "
                   f"{'rel err':>8} {'in CI':>5} {'reps':>4} {'flows':>6}")
        for r in rows:
            if r.cls != c:
                continue
            gf = "-" if r.gamma_fluid is None else f"{r.gamma_fluid:.4f}"
            re = "-" if r.rel_error is None else f"{100 * r.rel_error:+.1f}%"
            ins = "-" if r.inside is None else ("yes" if r.inside else "NO")
            if r.gamma_fluid is not None and not r.insensitivity_guaranteed:
                gf += "*"
            out.append(f"  {r.scheduler:<14} {r.load:>5.2f} {r.gamma_packet:>12.4f} "
                       f"[{r.ci[0]:.4f}, {r.ci[1]:.4f}] {gf:>11} {re:>8} {ins:>5} {r.replications:>4} "
                       f"{r.completed:>6}")
        out.append("")
    est = {r.estimator for r in rows}
    out.append("gamma packet: " + (" and ".join(sorted(est))) + " estimator (see analysis/compare.py); "
               "'in CI': the fluid value lies in the packet interval")
    if any(not r.insensitivity_guaranteed for r in rows):
        out.append("* non-geometric flow sizes: the fluid value is the Markov model's for geometric sizes of the "
                   "same mean; insensitivity to the size law is not guaranteed (insensitivity_guaranteed: false)")
    return out


def plot_comparison(rows: list[Row] | list[dict], title: str = ""):
    """[BR] Fig. 3: one panel per scheduler; fluid lines, packet points with error bars, one colour per class."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    rs = [r if isinstance(r, dict) else r.to_json() for r in rows]
    scheds = list(dict.fromkeys(r["scheduler"] for r in rs))
    classes = list(dict.fromkeys(r["class"] for r in rs))
    n = len(scheds)
    ncol = 2 if n > 1 else 1
    nrow = math.ceil(n / ncol)
    fig = Figure(figsize=(5.2 * ncol, 3.8 * nrow), layout="constrained")
    axes = fig.subplots(nrow, ncol, squeeze=False, sharey=True)
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    top = 0.0  # the shared y axis must hold every point, interval and fluid value of every panel
    for i, s in enumerate(scheds):
        ax = axes[i // ncol][i % ncol]
        obj = OBJECTIVE.get(s)
        for k, c in enumerate(classes):
            sub = sorted((r for r in rs if r["scheduler"] == s and r["class"] == c), key=lambda r: r["load"])
            col = colours[k % len(colours)]
            x = [r["load"] for r in sub]
            if all(r["gamma_fluid"] is not None for r in sub):
                ax.plot(x, [r["gamma_fluid"] for r in sub], "-", color=col, lw=1.5,
                        label=f"{c} fluid ({obj.upper()})" if obj else None)
            g = np.array([r["gamma_packet"] for r in sub])
            lo = np.array([r["ci"][0] for r in sub])
            hi = np.array([r["ci"][1] for r in sub])
            ax.errorbar(x, g, yerr=[g - lo, hi - g], fmt="o", ms=4, color=col, capsize=2,
                        label=f"{c} packet")
            top = max([top, *(v for r in sub for v in (r["gamma_fluid"], r["gamma_packet"], r["ci"][1])
                               if v is not None and math.isfinite(v))])
        ax.set_title(s)
        ax.set_xlabel("load of the most loaded resource")
        ax.set_xlim(0, 1)
        ax.grid(alpha=0.3)
        if i % ncol == 0:
            ax.set_ylabel("mean service rate γ (packets / time unit)")
        ax.legend(fontsize=7)
    axes[0][0].set_ylim(0, 1.05 * top if top > 0 else 1.0)
    for j in range(n, nrow * ncol):
        axes[j // ncol][j % ncol].set_visible(False)
    if title:
        fig.suptitle(title)
    return fig
