"""The notice of a long first compilation (numba compiles a loop variant once, then keeps it on disk).

The command line sets :data:`notice` on a terminal (never with ``--json`` or on a pipe); the
engines wrap a call that may compile in :func:`compiling`.  Plain Python, no numba import, so that
the command line can set it before anything is compiled.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

#: what says that a first compilation is under way (None: nothing does): an object with ``start(text)``
#: and ``done(seconds)``; the command line sets one on a terminal
notice = None
#: seconds a compilation (or a load from numba's cache) runs before the notice starts
NOTICE_AFTER = 1.0


@contextmanager
def compiling(what: str, needed: bool = True):
    """Around a call that may compile ``what`` (e.g. "the drfq loop for 2 resources"): when it runs
    longer than NOTICE_AFTER seconds and a :data:`notice` is set, the notice says so while it runs
    and how long it took.  ``needed=False``: nothing to compile, no notice."""
    n = notice
    if n is None or not needed:
        yield
        return
    shown = []

    def show():
        shown.append(True)
        n.start(f"compiling {what} (first run only: numba keeps it on disk)...")

    timer = threading.Timer(NOTICE_AFTER, show)
    timer.daemon = True
    t0 = time.perf_counter()
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()
        if shown:
            n.done(time.perf_counter() - t0)
