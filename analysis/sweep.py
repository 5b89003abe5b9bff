"""Sweeps that survive: points, a crash-safe SQLite store, and executors.

A *point* is one packet-emulator run: (scenario hash, scheduler, load,
replication, seed).  :func:`run_point` is a pure, picklable function of the
point; it returns the per-class batch sums that :mod:`analysis.compare` pools
into confidence intervals.

:class:`ResultStore` commits every finished point in its own SQLite
transaction (``INSERT OR IGNORE`` on the point key, write-ahead log), so a
sweep killed at any instant — SIGKILL included — loses at most the points
that were still running and never duplicates one; re-running the same sweep
skips what is stored.  When a sweep finishes, its table (the rows ``mrfq compare``
printed, with the sweep's configuration) is stored beside its points, one row per
sweep in the table ``sweeps``, which ``mrfq results`` prints and exports.  A write
the file system refuses (disk full, quota, I/O error) rolls back that one row and stops the sweep with a one-line :class:`MrfqError`
naming the file and the number of points stored (exit 2); the stored points are intact.

Executors: ``"local"`` runs points in worker processes, one per core, forked
from a parent that has already compiled the numba engine (workers reuse that
machine code and stay alive for the whole sweep); ``"serial"`` runs them in
this process; a dask.distributed address (or ``"dask:local"`` for a
LocalCluster) runs them on a cluster.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import sqlite3
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from mrfq.analysis.ahead import Ahead
from mrfq.flows.errors import MrfqError, quote


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
    from mrfq import flows
    from mrfq.router.run import simulate

    from mrfq.analysis.fluid_path import fluid_path
    from mrfq.fq.registry import SCHEDULERS

    sc = flows.from_dict(scenario_dict, name=name)
    # the payload has no delays: the run does not record them (the same services otherwise)
    r = simulate(sc, scheduler=point.scheduler, seed=point.seed, duration=point.duration, record_delays=False)
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


#: SQLite ``PRAGMA application_id`` of a results store: "mrfq" in ASCII.  A database
#: without it is not ours and is refused, left byte-identical.
APPLICATION_ID = 0x6D726671
#: ``PRAGMA user_version``: the store's schema version
SCHEMA_VERSION = 1
_SQLITE_MAGIC = b"SQLite format 3\x00"


#: the finished sweeps' tables (``mrfq results``); optional, so the schema version stays 1: a store
#: written before it existed is still read (it has no tables to show) and is given it when a sweep
#: writes to it, and a reader that does not know it only needs ``points`` and ``fluid``
SWEEPS_TABLE = ("CREATE TABLE IF NOT EXISTS sweeps (key TEXT PRIMARY KEY, scenario TEXT, scenario_hash TEXT,"
                " config TEXT, rows TEXT, created REAL)")


def _fix(what: str) -> str:
    """The way out of a file that is not a usable store: a sweep (``--results``) can start a new one;
    the reader (``mrfq results``) needs one a sweep wrote."""
    return "give a new file name" if what == "--results" else "give a store written by mrfq compare --results"


def _header_check(path: Path, what: str) -> None:
    """Refuse, from the file's first 100 bytes alone (SQLite never opens it), anything that
    is not a complete mrfq results store: not SQLite, truncated, or another application's."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):  # swapped for a pipe or a device since it was checked
                raise MrfqError(f"{what} {path}: not a regular file")
            size = st.st_size
            head = os.read(fd, 100)
        finally:
            os.close(fd)
    except OSError as e:
        raise MrfqError(f"{what} {path}: cannot read ({e.strerror})") from None
    if size == 0:
        raise MrfqError(f"{what} {path}: an empty file, not an mrfq results store; {_fix(what)}")
    if not head.startswith(_SQLITE_MAGIC):
        raise MrfqError(f"{what} {path}: not an SQLite file (so not an mrfq results store); left untouched, "
                        f"{_fix(what)}")
    if len(head) < 100:
        raise MrfqError(f"{what} {path}: a truncated SQLite file ({size} bytes); left untouched")
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    valid_for = int.from_bytes(head[92:96], "big")
    changes = int.from_bytes(head[24:28], "big")
    # a write-ahead log next to the file holds pages a checkpoint may not have copied yet (one that
    # stopped on a full disk leaves the header's page count ahead of the file): SQLite reads them
    # from the log, and quick_check, once it is open, judges the whole
    try:
        wal = os.stat(f"{path}-wal").st_size > 0
    except OSError:
        wal = False
    if page < 512 or size % page != 0 or (valid_for == changes and size < page * pages and not wal):
        raise MrfqError(f"{what} {path}: a truncated or damaged SQLite file ({size} bytes, pages of {page}); "
                        "left untouched")
    app = int.from_bytes(head[68:72], "big")
    version = int.from_bytes(head[60:64], "big")
    if app != APPLICATION_ID:
        raise MrfqError(f"{what} {path}: an SQLite database of another application (application_id {app:#x}, "
                        f"not mrfq's {APPLICATION_ID:#x}); left untouched, {_fix(what)}")
    if version != SCHEMA_VERSION:
        raise MrfqError(f"{what} {path}: an mrfq results store of schema version {version}; this mrfq reads "
                        f"version {SCHEMA_VERSION}; {_fix(what)}")


def _create(path: Path, what: str) -> None:
    """Make a new, stamped, empty store at ``path``: built under a temporary name and linked
    into place only when complete, so a crash while creating it never leaves an unstamped
    file (which the next run would refuse) and an existing file is never replaced."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".new", dir=path.parent if str(path.parent) else ".")
    os.close(fd)
    os.unlink(tmp)  # SQLite creates it
    try:
        conn = sqlite3.connect(tmp)
        try:
            with conn:
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute(
                    "CREATE TABLE points (key TEXT PRIMARY KEY, scenario_hash TEXT, scenario TEXT, scheduler TEXT,"
                    " load REAL, replication INTEGER, seed INTEGER, duration REAL, payload TEXT, created REAL)")
                conn.execute(
                    "CREATE TABLE fluid (key TEXT PRIMARY KEY, scenario_hash TEXT, objective TEXT, load REAL,"
                    " payload TEXT, created REAL)")
                conn.execute(SWEEPS_TABLE)
            conn.execute("PRAGMA journal_mode=WAL")
        finally:
            conn.close()
        try:
            os.link(tmp, path)  # fails if someone created the file meanwhile: theirs is kept
        except FileExistsError:
            pass
    except (OSError, sqlite3.Error) as e:
        raise MrfqError(f"{what} {path}: cannot create the results file ({e})") from None
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(tmp + suffix)
            except FileNotFoundError:
                pass


class ResultStore:
    """Finished points and fluid solutions, one SQLite file, one transaction per row.

    A new store is stamped with ``PRAGMA application_id`` (:data:`APPLICATION_ID`) and
    ``user_version`` (:data:`SCHEMA_VERSION`); an existing file is checked from its header
    before SQLite opens it, and anything else (not SQLite, truncated, another
    application's database) is refused and left byte-identical.  ``readonly=True`` opens
    with SQLite's ``mode=ro`` (``mrfq results``): nothing is written.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False, what: str = "--results"):
        if not str(path):
            raise MrfqError(f"{what}: empty file name; give the results file, e.g. mrfq-results.sqlite")
        self.path = Path(path)
        self.readonly = readonly
        d = self.path.parent if str(self.path.parent) else Path(".")
        try:
            if not d.is_dir():
                raise MrfqError(f"{what} {path}: folder {d} does not exist")
            exists = self.path.exists()
            is_file = self.path.is_file()
        except OSError as e:  # e.g. a name longer than the file system allows
            from mrfq.flows.cli_args import path_error

            raise path_error(what, path, e) from None
        if exists and not is_file:
            raise MrfqError(f"{what} {path}: not a regular file")
        if not exists and readonly:
            raise MrfqError(f"{what} {path}: no such results file")
        if not readonly and not os.access(d, os.W_OK | os.X_OK):
            raise MrfqError(f"{what} {path}: folder {d} is not writable (the store keeps a write-ahead log there)")
        if not exists:
            _create(self.path, what)
        _header_check(self.path, what)
        exists = True
        try:
            if readonly:
                self.conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=60.0)
            else:
                self.conn = sqlite3.connect(str(self.path), timeout=60.0)
            if exists:
                ok = self.conn.execute("PRAGMA quick_check").fetchone()[0]
                if ok != "ok":
                    raise MrfqError(f"{what} {path}: damaged SQLite file ({ok}); left untouched")
                tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not {"points", "fluid"} <= tables:
                    raise MrfqError(f"{what} {path}: an mrfq store without its tables; left untouched")
            if not readonly:
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=FULL")
                with self.conn:
                    self.conn.execute(SWEEPS_TABLE)
        except sqlite3.Error as e:
            if getattr(self, "conn", None) is not None:
                self.conn.close()
            if getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(e):
                raise MrfqError(f"{what} {path}: cannot open the results file: the disk is full; free some space "
                                "and re-run (the points it holds are kept)") from None
            raise MrfqError(f"{what} {path}: not a usable SQLite results file ({e})") from None
        except MrfqError:
            self.conn.close()
            raise

    def close(self) -> None:
        """Close; a writer first folds its write-ahead log back into the file (best effort: another
        open connection, or a full disk, leaves the log, which the next open reads), so that the
        store is one file at rest and reading it (``mrfq results``) leaves no -wal/-shm files."""
        if not self.readonly:
            try:
                self.conn.execute("PRAGMA journal_mode=DELETE")
            except sqlite3.Error:
                pass
        self.conn.close()

    def _load(self, table: str, key: str, payload: str) -> dict:
        try:
            d = json.loads(payload)
        except (TypeError, ValueError):
            d = None
        if not isinstance(d, dict):
            raise MrfqError(f"--results {self.path}: the stored {table} row {key[:80]!r} has a corrupt payload; "
                            "use a new results file (or delete that row)")
        return d

    def has(self, key: str) -> bool:
        return self.conn.execute("SELECT 1 FROM points WHERE key = ?", (key,)).fetchone() is not None

    def get(self, key: str) -> dict | None:
        row = self.conn.execute("SELECT payload FROM points WHERE key = ?", (key,)).fetchone()
        return self._load("points", key, row[0]) if row else None

    def _write(self, sql: str, row: tuple, what: str) -> None:
        """One row in its own transaction; a write the file system refuses is one line that
        says so, with the number of points still stored (the failed transaction is rolled back)."""
        try:
            with self.conn:
                self.conn.execute(sql, row)
        except sqlite3.Error as e:
            code = getattr(e, "sqlite_errorcode", None)
            full = code == sqlite3.SQLITE_FULL or "disk is full" in str(e)
            try:
                n_fluid = self.conn.execute("SELECT COUNT(*) FROM fluid").fetchone()[0]
                stored = f"{self.count():,} points" + (f" and {n_fluid:,} fluid solutions" if n_fluid else "")
                stored += " are stored and intact"
            except sqlite3.Error:
                stored = "the points stored before are kept"
            if full:
                cause = "the disk is full (or the file reached its size limit)"
            elif code is not None and code & 0xFF == sqlite3.SQLITE_IOERR:
                cause = f"the file system refused the write ({e})"
            elif code is not None and code & 0xFF in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_BUSY,
                                                      sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN):
                cause = f"cannot write ({e})"
            else:
                raise
            raise MrfqError(f"--results {self.path}: could not store {what}: {cause}, so the sweep stopped; "
                            f"{stored}; free some space and re-run the same command: it resumes from the "
                            "stored points") from None

    def put(self, point: Point, scenario_name: str, payload: dict) -> None:
        self._write(  # one atomic transaction per point
            "INSERT OR IGNORE INTO points VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (point.key, point.scenario_hash, scenario_name, point.scheduler, point.load, point.replication,
             point.seed, point.duration, json.dumps(payload), time.time()),
            f"the point {point.scheduler} at load {point.load:g} (replication {point.replication})")

    def fluid_get(self, key: str) -> dict | None:
        row = self.conn.execute("SELECT payload FROM fluid WHERE key = ?", (key,)).fetchone()
        return self._load("fluid", key, row[0]) if row else None

    def fluid_put(self, key: str, scenario_hash: str, objective: str, load: float, payload: dict) -> None:
        self._write("INSERT OR IGNORE INTO fluid VALUES (?, ?, ?, ?, ?, ?)",
                    (key, scenario_hash, objective, load, json.dumps(payload), time.time()),
                    f"the fluid solution of {objective} at load {load:g}")

    def sweep_put(self, key: str, scenario_name: str, scenario_hash: str, config: dict, rows: list[dict]) -> None:
        """Store a finished sweep's table (``rows``: :meth:`analysis.compare.Row.to_json` of every
        row, strict JSON); the same sweep run again replaces it (its rows are the same, bit for bit,
        from the same stored points)."""
        self._write("INSERT OR REPLACE INTO sweeps VALUES (?, ?, ?, ?, ?, ?)",
                    (key, scenario_name, scenario_hash, json.dumps(config), json.dumps(rows), time.time()),
                    f"the table of the sweep of {scenario_name}")

    def sweeps(self) -> list[dict]:
        """The stored sweeps' tables, oldest first: ``{"scenario", "scenario_hash", "config", "rows",
        "created"}`` each (none from a store written before sweeps stored their tables)."""
        has = self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sweeps'").fetchone()
        if has is None:
            return []
        out = []
        for key, scen, h, config, rows, created in self.conn.execute(
                "SELECT key, scenario, scenario_hash, config, rows, created FROM sweeps ORDER BY created, key"):
            cfg = self._load("sweeps", key, config)
            try:
                got = json.loads(rows)
            except (TypeError, ValueError):
                got = None
            if not isinstance(got, list) or not all(isinstance(r, dict) for r in got):
                raise MrfqError(f"--results {self.path}: the stored sweeps row {key[:80]!r} has a corrupt table; "
                                "re-run its mrfq compare command to store it again")
            out.append({"scenario": scen, "scenario_hash": h, "config": cfg, "rows": got, "created": created})
        return out

    def count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM points").fetchone()[0]

    def rows(self) -> Iterator[tuple]:
        for scen, h, sched, load, rep, seed, dur, payload, key in self.conn.execute(
                "SELECT scenario, scenario_hash, scheduler, load, replication, seed, duration, payload, key"
                " FROM points ORDER BY scenario, scheduler, load, replication"):
            yield scen, h, sched, load, rep, seed, dur, self._load("points", key, payload)


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


def _warm(specs: list[tuple[dict, str, str]] = (), ahead: Ahead | None = None) -> None:
    """Compile (or load from cache) the engine loop variants the sweep needs and the
    fluid-path kernel once, in the parent, before forking, so that no worker compiles
    anything.  ``ahead``: the jobs already being compiled ahead (:func:`warm_ahead`, whose specs
    then stand for ``specs``), else compiled ahead here."""
    jobs = ahead.jobs if ahead is not None else warm_jobs(specs)
    with ahead if ahead is not None else Ahead(jobs) as a:  # on the spare cores too (analysis.ahead)
        for i, job in enumerate(jobs):
            a.claim(i, "the sweep's loop variants")
            job()


def warm_ahead(specs: list[tuple[dict, str, str]]) -> Ahead:
    """Start compiling the warm-up's jobs (:func:`warm_jobs`) on the spare cores now, for a caller
    with other work before the sweep (``mrfq compare`` solves the Markov model first, on one core,
    compiling its own kernels); pass it to :func:`execute`, or close it."""
    return Ahead(warm_jobs(specs), every=True)


def warm_jobs(specs: list[tuple[dict, str, str]]) -> list:
    """The warm-up's jobs: the engine loop variants of ``specs`` (:func:`_warm_specs`) and the
    fluid-path kernels, each a callable that compiles (or loads) them."""
    from mrfq import flows
    from mrfq.analysis.fluid_path import fluid_path
    from mrfq.analysis.objectives import MARKOV
    from mrfq.router.run import simulate

    sc = flows.from_dict({"resources": ["a", "b"], "run": {"duration": 5.0, "batches": 2},
                          "class": [{"cost": [1.0, 0.5], "rate": 0.2, "mean_packets": 3}],
                          "flow": [{"cost": [0.5, 1.0]}]})

    def fluid():
        for objective in MARKOV:
            fluid_path(sc, objective, 1, batches=2)

    # the fluid-path kernels last, so that a process compiling ahead (from the end) starts with
    # them, which share no helper with the loops the caller compiles first (analysis.ahead)
    jobs = [functools.partial(simulate, sc, record_delays=False)]  # as run_point runs
    return jobs + [functools.partial(_warm_one, d, nm, scheduler) for d, nm, scheduler in specs] + [fluid]


def _warm_one(d: dict, nm: str, scheduler: str) -> None:
    from mrfq import flows
    from mrfq.router.run import simulate

    simulate(flows.from_dict(d, name=nm), scheduler=scheduler, max_services=1, record_delays=False)


#: seconds between two looks of a worker's parent watch
PARENT_WATCH_SECONDS = 0.5


def _run_task(task: tuple[Point, dict, str]) -> tuple[Point, dict]:
    p, d, nm = task
    return p, run_point(d, nm, p)


def _die_with_parent(parent_pid: int) -> None:
    """Pool-worker initializer: the worker dies when the sweep's process does, even by SIGKILL
    (:func:`watch_parent`).  Workers ignore Ctrl-C: the sweep's process sees it and terminates them.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent(parent_pid)


def watch_parent(parent_pid: int) -> None:
    """Make this process die when ``parent_pid``, its parent, does, even by SIGKILL.

    On Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` asks the kernel to kill this process when
    the thread that forked it exits (even while a kernel holds the GIL); everywhere, a daemon
    thread watches the parent's pid (a process whose parent died is re-parented, so
    ``getppid()`` changes) and exits within :data:`PARENT_WATCH_SECONDS`.  Used by the pool
    workers (:func:`_die_with_parent`, before the first task) and by the workers of a dask
    ``LocalCluster`` (:mod:`analysis.dask_plugin`, when they join).
    """
    import signal
    import sys
    import threading

    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):  # no prctl: the watch below still applies
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(PARENT_WATCH_SECONDS)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="mrfq-parent-watch", daemon=True).start()


def execute(tasks: list[tuple[Point, dict, str]], on_done: Callable[[Point, dict], None], *,
            executor: str = "local", workers: int | None = None, ahead: Ahead | None = None) -> None:
    """Run ``(point, scenario_dict, name)`` tasks, calling ``on_done`` in this process as each finishes.
    ``ahead``: the warm-up already compiling (:func:`warm_ahead`; the local executor claims it, the
    others close it)."""
    if ahead is not None and executor != "local":
        ahead.close(wait=False)
        ahead = None
    if not tasks:
        if ahead is not None:
            ahead.close(wait=False)
        return
    if executor == "serial":
        for p, d, n in tasks:
            on_done(p, run_point(d, n, p))
        return
    if executor == "local":
        _warm(_warm_specs(tasks), ahead)
        n = workers or os.cpu_count() or 1
        if n <= 1:
            for p, d, nm in tasks:
                on_done(p, run_point(d, nm, p))
            return
        for p, payload in fork_imap_unordered(_run_task, tasks, n):
            on_done(p, payload)
        return
    if executor.startswith("dask:"):
        _execute_dask(tasks, on_done, executor[5:], workers)
        return
    raise MrfqError(f"executor {quote(executor)}: use 'local', 'serial' or 'dask:ADDRESS' / 'dask:local'")


def fork_imap_unordered(fn, tasks, n: int):
    """``fn`` over ``tasks`` in ``n`` forked worker processes that die with this one
    (:func:`_die_with_parent`), results as they finish.  On Ctrl-C or an error, here or in the
    caller's loop (the generator is closed), every worker is stopped at once."""
    ctx = multiprocessing.get_context("fork")
    pool = ctx.Pool(n, initializer=_die_with_parent, initargs=(os.getpid(),))
    try:
        yield from pool.imap_unordered(fn, tasks)
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()


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
        if cluster is not None:
            # the LocalCluster's workers are this process's children: they die with it, even by
            # SIGKILL and even inside a kernel (dask's own parent pipe needs the GIL to act)
            from mrfq.analysis.dask_plugin import register_die_with_parent

            register_die_with_parent(client, os.getpid())
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


def iter_unique(xs: Iterable[Any]) -> list[Any]:
    seen, out = set(), []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out
