"""A dask worker plugin: the workers of a sweep's ``LocalCluster`` die with the sweep's process.

Imported only when a sweep runs on ``dask:local`` (dask is an optional dependency).  A
``LocalCluster(processes=True)`` starts its workers as children of the sweep's process; dask
closes a worker whose parent vanished from a thread that waits on a pipe, which needs the
GIL, so a worker inside a long kernel would outlive a SIGKILLed sweep until the kernel
returns.  :func:`analysis.sweep.watch_parent` adds ``PR_SET_PDEATHSIG`` (the kernel kills the
worker at once) and a parent watch, as for the pool workers.
"""

from __future__ import annotations

from distributed import WorkerPlugin


class DieWithParent(WorkerPlugin):
    """Run :func:`analysis.sweep.watch_parent` in every worker as it joins (restarted ones too)."""

    name = "mrfq-die-with-parent"

    def __init__(self, parent_pid: int):
        self.parent_pid = int(parent_pid)

    def setup(self, worker) -> None:
        from mrfq.analysis.sweep import watch_parent

        watch_parent(self.parent_pid)


def register_die_with_parent(client, parent_pid: int) -> None:
    """Register :class:`DieWithParent` on ``client``'s workers (children of ``parent_pid``)."""
    register = getattr(client, "register_plugin", None) or client.register_worker_plugin
    register(DieWithParent(parent_pid))
