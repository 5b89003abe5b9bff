"""Sweeps that survive: points, a crash-safe SQLite store, and executors.

A *point* is one packet-emulator run: (scenario hash, scheduler, load,
replication, seed).  :func:`run_point` is a pure, picklable function of the
point; it returns the per-class batch sums that :mod:`analysis.compare` pools
into confidence intervals.

:class:`ResultStore` commits every finished point in its own SQLite
transaction (``INSERT OR IGNORE`` on the point key, write-ahead log), so a
sweep killed at any instant — SIGKILL included — loses at most the points
that were still running and never duplicates one; re-running the same sweep
skips what is stored.

Executors: ``"local"`` runs points in worker processes, one per core, forked
from a parent that has already compiled the numba engine (workers reuse that
machine code and stay alive for the whole sweep); ``"serial"`` runs them in
this process; a dask.distributed address (or ``"dask:local"`` for a
LocalCluster) runs them on a cluster.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from flows.errors import MrfqError


@dataclass(frozen=True)
class Point:
    scenario_hash: str
    scheduler: str
    load: float
    replication: int
    seed: int
    duration: float

    @property
    def key(self) -> str:
        return f"{self.scenario_hash}|{self.scheduler}|{self.load!r}|{self.replication}|{self.seed}"


def run_point(scenario_dict: dict, name: str, point: Point) -> dict:
    """Run one point (in any process) and return its JSON-able payload."""
    import flows
    from router.run import simulate

    from analysis.fluid_path import fluid_path
    from fq.registry import SCHEDULERS

    sc = flows.from_dict(scenario_dict, name=name)
    r = simulate(sc, scheduler=point.scheduler, seed=point.seed, duration=point.duration)
    objective = SCHEDULERS[point.scheduler].objective
    cv = fluid_path(r.scenario, objective, point.seed, batches=r.scenario.run.batches) if objective else None
    return {
        "objective": objective,
        "cv": cv,
        "classes": [c.name for c in r.scenario.classes],
        "area": r.batches["area"].tolist(),
        "departed": r.batches["departed"].tolist(),
        "done_packets": r.batches["done_packets"].tolist(),
        "done_time": r.batches["done_time"].tolist(),
        "completed": [c.completed for c in r.classes],
        "arrived": [c.arrived for c in r.classes],
        "services": r.services,
        "wall_seconds": r.wall_seconds,
        "duration": r.t_end,
        "warmup": r.scenario.run.warmup,
        "utilization": [x.utilization for x in r.resources],
    }


class ResultStore:
    """Finished points and fluid solutions, one SQLite file, one transaction per row."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.parent and not self.path.parent.exists():
            raise MrfqError(f"--results {path}: folder {self.path.parent} does not exist")
        try:
            self.conn = sqlite3.connect(str(self.path), timeout=60.0)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")
            with self.conn:
                self.conn.execute(
                    "CREATE TABLE IF NOT EXISTS points (key TEXT PRIMARY KEY, scenario_hash TEXT, scenario TEXT,"
                    " scheduler TEXT, load REAL, replication INTEGER, seed INTEGER, duration REAL,"
                    " payload TEXT, created REAL)")
                self.conn.execute(
                    "CREATE TABLE IF NOT EXISTS fluid (key TEXT PRIMARY KEY, scenario_hash TEXT, objective TEXT,"
                    " load REAL, payload TEXT, created REAL)")
        except sqlite3.DatabaseError as e:
            raise MrfqError(f"--results {path}: not a usable SQLite results file ({e})") from None

    def close(self) -> None:
        self.conn.close()

    def has(self, key: str) -> bool:
        return self.conn.execute("SELECT 1 FROM points WHERE key = ?", (key,)).fetchone() is not None

    def get(self, key: str) -> dict | None:
        row = self.conn.execute("SELECT payload FROM points WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, point: Point, scenario_name: str, payload: dict) -> None:
        with self.conn:  # one atomic transaction per point
            self.conn.execute(
                "INSERT OR IGNORE INTO points VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (point.key, point.scenario_hash, scenario_name, point.scheduler, point.load, point.replication,
                 point.seed, point.duration, json.dumps(payload), time.time()))

    def fluid_get(self, key: str) -> dict | None:
        row = self.conn.execute("SELECT payload FROM fluid WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def fluid_put(self, key: str, scenario_hash: str, objective: str, load: float, payload: dict) -> None:
        with self.conn:
            self.conn.execute("INSERT OR IGNORE INTO fluid VALUES (?, ?, ?, ?, ?, ?)",
                              (key, scenario_hash, objective, load, json.dumps(payload), time.time()))

    def count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM points").fetchone()[0]

    def rows(self) -> Iterator[tuple]:
        yield from self.conn.execute(
            "SELECT scenario, scenario_hash, scheduler, load, replication, seed, duration, payload FROM points"
            " ORDER BY scenario, scheduler, load, replication")


# ---------------------------------------------------------------------------
def _warm_specs(tasks: list[tuple[Point, dict, str]]) -> list[tuple[dict, str, str]]:
    """One (scenario, name, scheduler) per engine loop variant the tasks need (the variant
    depends on the scheduler, the number of resources and the router options)."""
    seen, out = set(), []
    for p, d, nm in tasks:
        key = (p.scheduler, len(d.get("resources", ())), json.dumps(d.get("router", {}), sort_keys=True))
        if key not in seen:
            seen.add(key)
            out.append((d, nm, p.scheduler))
    return out


def _warm(specs: list[tuple[dict, str, str]] = ()) -> None:
    """Compile (or load from cache) the engine loop variants the sweep needs and the
    fluid-path kernel once, in the parent, before forking, so that no worker compiles
    anything."""
    import flows
    from analysis.fluid_path import fluid_path
    from analysis.objectives import MARKOV
    from router.run import simulate

    sc = flows.from_dict({"resources": ["a", "b"], "run": {"duration": 5.0, "batches": 2},
                          "class": [{"cost": [1.0, 0.5], "rate": 0.5, "mean_packets": 3}],
                          "flow": [{"cost": [0.5, 1.0]}]})
    simulate(sc)
    for objective in MARKOV:
        fluid_path(sc, objective, 1, batches=2)
    for d, nm, scheduler in specs:
        simulate(flows.from_dict(d, name=nm), scheduler=scheduler, max_services=1)


def execute(tasks: list[tuple[Point, dict, str]], on_done: Callable[[Point, dict], None], *,
            executor: str = "local", workers: int | None = None) -> None:
    """Run ``(point, scenario_dict, name)`` tasks, calling ``on_done`` in this process as each finishes."""
    if not tasks:
        return
    if executor == "serial":
        for p, d, n in tasks:
            on_done(p, run_point(d, n, p))
        return
    if executor == "local":
        _warm(_warm_specs(tasks))
        n = workers or os.cpu_count() or 1
        if n <= 1:
            for p, d, nm in tasks:
                on_done(p, run_point(d, nm, p))
            return
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
            futs = {pool.submit(run_point, d, nm, p): p for p, d, nm in tasks}
            for f in as_completed(futs):
                on_done(futs[f], f.result())
        return
    if executor.startswith("dask:"):
        _execute_dask(tasks, on_done, executor[5:], workers)
        return
    raise MrfqError(f"executor {executor!r}: use 'local', 'serial' or 'dask:ADDRESS' / 'dask:local'")


def _execute_dask(tasks, on_done, address: str, workers: int | None) -> None:
    try:
        from dask.distributed import Client, LocalCluster, as_completed as das_completed
    except ImportError:
        raise MrfqError("--dask: dask.distributed is not installed; pip install 'mrfq[dask]'") from None
    cluster = None
    if address == "local":
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout="10s")
        except OSError as e:
            raise MrfqError(f"--dask {address}: cannot reach the scheduler ({e})") from None
    try:
        client.run(_warm, _warm_specs(tasks))  # compile once per worker process, before the first point
        futs = {}
        for p, d, nm in tasks:
            futs[client.submit(run_point, d, nm, p, pure=False)] = p
        for f in das_completed(list(futs)):
            on_done(futs[f], f.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def parse_loads(spec: str) -> list[float]:
    """``0.1:0.9:0.1`` (start:stop:step, inclusive) or ``0.3,0.6,0.8``."""
    try:
        if ":" in spec:
            a, b, c = (float(x) for x in spec.split(":"))
            if c <= 0:
                raise ValueError
            n = int(round((b - a) / c))
            vals = [round(a + i * c, 10) for i in range(n + 1)]
        else:
            vals = [float(x) for x in spec.split(",") if x.strip()]
    except ValueError:
        raise MrfqError(f"--loads {spec!r}: give start:stop:step (e.g. 0.1:0.9:0.1) or a list like 0.3,0.6") from None
    if not vals:
        raise MrfqError(f"--loads {spec!r}: no loads")
    for v in vals:
        if not 0 < v < 1:
            raise MrfqError(f"--loads {spec!r}: load {v:g} is outside (0, 1); every resource load must be < 1")
    return vals


def iter_unique(xs: Iterable[Any]) -> list[Any]:
    seen, out = set(), []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out
