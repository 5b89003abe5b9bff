"""Compiling ahead: the engine's loop variants a command will need, compiled in other processes
while the command works through them in order.

numba compiles each loop variant (a scheduler, a number of resources, the router's options) once and
keeps its machine code on disk; a command that runs several schedulers (``mrfq scorecard``, a
sweep's warm-up) would compile them one after another on one core.  :class:`Ahead` forks up to one
process per spare core, each compiling jobs from the end of the list, while the caller runs the list
from the front: before job ``i`` the caller :meth:`Ahead.claim`\\ s it (it waits for a job a process
is compiling, takes back one no process has started, and returns at once for one already done), then
runs it as it would have, loading the machine code from numba's cache.  The results are those of a
sequential run, bit for bit: only where the machine code comes from changes.

Nothing is forked where it cannot help or may not: one job, one core, numba's cache off
(``MRFQ_NUMBA_CACHE=0``) or the JIT disabled, no ``fork`` start method, or a daemon process (a
dask worker).  A process that fails leaves its job to the caller,
which then compiles it and reports any error itself.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

#: the jobs of the :class:`Ahead` being set up, read by the forked processes (fork copies them: no
#: pickling of scenarios or closures)
_JOBS: list = []


def _run(i: int) -> None:
    from mrfq.flows import notice

    notice.notice = None  # the caller's terminal shows only the caller's lines
    notice.progress = None
    _JOBS[i]()


def _init(parent_pid: int) -> None:
    from mrfq.analysis.sweep import _die_with_parent

    _die_with_parent(parent_pid)


def _usable() -> bool:
    from mrfq.fq._jit import CACHE

    return (CACHE and os.environ.get("NUMBA_DISABLE_JIT", "0") in ("", "0")
            and "fork" in multiprocessing.get_all_start_methods()
            and not multiprocessing.current_process().daemon)  # (a daemon, e.g. a dask worker, has no children)


class Ahead:
    """Compile ``jobs`` (callables that compile, e.g. a run of one service) from the end, in up to
    ``workers`` forked processes (default: one per core but the caller's); see the module docstring.
    Use as a context manager, and :meth:`claim` job ``i`` before doing what it compiles."""

    def __init__(self, jobs: list, workers: int | None = None, *, every: bool = False):
        """``every``: the processes may take job 0 too, for a caller that has other work to do
        before it claims the first job (by default the caller starts with job 0 at once)."""
        global _JOBS
        self.jobs = list(jobs)
        self._futures: dict = {}
        self._pool = None
        first = 0 if every else 1
        w = (os.cpu_count() or 1) - 1 if workers is None else int(workers)
        w = min(w, len(jobs) - first)
        if w <= 0 or not _usable():
            return
        _JOBS = self.jobs
        self._pool = ProcessPoolExecutor(max_workers=w, mp_context=multiprocessing.get_context("fork"),
                                         initializer=_init, initargs=(os.getpid(),))
        for i in reversed(range(first, len(jobs))):  # job 0: the caller's first, unless ``every``
            self._futures[i] = self._pool.submit(_run, i)

    @property
    def running(self) -> bool:
        """Whether processes were forked (and not yet stopped)."""
        return self._pool is not None

    def claim(self, i: int, what: str = "") -> None:
        """Before the caller runs job ``i``: wait for it if a process is compiling it (saying so on
        a terminal, as the caller's own compilation would: ``what`` compiles, flows.notice), take it
        back if none has started it."""
        from mrfq.flows.notice import compiling

        f = self._futures.pop(i, None)
        if f is None or f.cancel():
            return
        with compiling(what or "a loop variant", needed=not f.done()):
            try:
                f.result()
            except Exception:  # noqa: BLE001 - the caller compiles it and reports the error itself
                pass

    def close(self, wait: bool = True) -> None:
        """Stop: jobs not started are dropped; ``wait=False`` (on an error or Ctrl-C) does not wait
        for a compilation under way (the process dies with this one, analysis.sweep.watch_parent)."""
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=True)
            self._pool = None
            self._futures = {}

    def __enter__(self) -> Ahead:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(wait=exc_type is None)
