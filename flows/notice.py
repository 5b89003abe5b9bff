"""What a person watching a terminal is told: the notice of a long first compilation (numba compiles a
loop variant once, then keeps it on disk) and the progress line of a long run.

The command line sets :data:`notice` and :data:`progress` on a terminal (never with ``--json`` or on a
pipe); the engines wrap a call that may compile in :func:`compiling`, and the packet engine reports a
run's progress between calls of its compiled loop to a :func:`tracker`.  Plain Python, no numba import, so that
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


# ---------------------------------------------------------------------------
# the progress line of a long run

#: what shows a long run's progress (None: nothing, the default, so the Python API stays silent): an
#: object with ``show(text)`` (draw or redraw the one line) and ``clear()`` (erase it); the command line
#: sets a :class:`TerminalLine` on a terminal (never with ``--json`` or on a pipe), a caller of the API
#: may set one too
progress = None
#: seconds of simulation (compilation excluded) before the line appears
PROGRESS_AFTER = 2.0
#: seconds between two redraws of the line, at least
PROGRESS_EVERY = 0.25
#: what the line names before its figures (set by :func:`labelled`: the scorecard's scheduler)
_label = ""


@contextmanager
def labelled(text: str):
    """Runs inside name ``text`` on their progress line (``simulating drfq (2 of 8): t = ...``)."""
    global _label
    old, _label = _label, text
    try:
        yield
    finally:
        _label = old


def tracker(T: float, max_services: int = 0):
    """A :class:`RunProgress` for a run to time ``T`` (and at most ``max_services`` services, 0: no
    limit) when a :data:`progress` is set, else None (the engine then does nothing at all)."""
    p = progress
    return None if p is None else RunProgress(p, T, max_services, _label)


class RunProgress:
    """One run's progress line: the engine calls :meth:`tick` between calls of its compiled loop (never
    inside it, so the results cannot change) and :meth:`finish` at the end (also on Ctrl-C or an error)."""

    __slots__ = ("line", "T", "max_services", "label", "t0", "next", "shown")

    def __init__(self, line, T: float, max_services: int = 0, label: str = ""):
        self.line, self.T, self.max_services, self.label = line, float(T), int(max_services), label
        self.t0 = time.perf_counter()
        self.next = self.t0 + PROGRESS_AFTER
        self.shown = False

    def tick(self, t: float, services: int, paused: float = 0.0) -> None:
        """The run reached simulated time ``t`` after ``services`` services; ``paused``: seconds spent
        compiling so far (not simulating: left out of the rate)."""
        now = time.perf_counter()
        if now < self.next + paused:
            return
        self.next = now - paused + PROGRESS_EVERY
        self.line.show(self.text(t, services, now - self.t0 - paused))
        self.shown = True

    def text(self, t: float, services: int, elapsed: float) -> str:
        frac = t / self.T if self.T > 0 else 0.0
        if self.max_services > 0:  # the run also ends at its service limit: whichever comes first
            frac = max(frac, services / self.max_services)
        frac = min(max(frac, 0.0), 1.0)
        left = f", about {duration_text(elapsed * (1.0 - frac) / frac)} left" if frac > 0 else ""
        who = f" {self.label}" if self.label else ""
        pct = 100.0 * frac
        pct = f"{pct:.0f}" if pct >= 1.0 or pct == 0.0 else f"{pct:.1g}"  # 0.03 % of a very long run
        return (f"simulating{who}: t = {time_text(t)} of {time_text(self.T)} ({pct} %), "
                f"{count_text(services)} services{left}")

    def finish(self) -> None:
        if self.shown:
            self.line.clear()
            self.shown = False


class TerminalLine:
    """The progress line on a terminal stream: redrawn in place (carriage return, erase to the end of
    the line), cut to the terminal's width so that it never wraps, erased at the end."""

    def __init__(self, stream):
        self.stream = stream

    def show(self, text: str) -> None:
        import shutil

        width = shutil.get_terminal_size((100, 24)).columns - 1
        if len(text) > width > 10:
            text = text[:width - 3] + "..."
        self.stream.write("\r" + text + "\x1b[K")
        self.stream.flush()

    def clear(self) -> None:
        self.stream.write("\r\x1b[K")
        self.stream.flush()


def time_text(t: float) -> str:
    """A simulated time for the line: thousands separated, fewer digits when small (4,210; 0.0125)."""
    t = float(t)
    if t >= 1000.0:
        return f"{t:,.0f}"
    return f"{t:.4g}"


def count_text(n: float) -> str:
    """A count in two significant digits: 950, 8.4e7, 5e10."""
    n = float(n)
    if n < 1000.0:
        return f"{n:.0f}"
    m, e = f"{n:.1e}".split("e")
    return f"{m.removesuffix('.0')}e{int(e)}"


def duration_text(s: float) -> str:
    """Seconds as a person reads them: 40 s, 12 min, 2.3 h, 3.5 days."""
    s = float(s)
    if s < 90.0:
        return f"{max(s, 1.0):.0f} s"
    if s < 90.0 * 60.0:
        return f"{s / 60.0:.0f} min"
    if s < 48.0 * 3600.0:
        return f"{s / 3600.0:.2g} h"
    d = s / 86400.0
    return f"{d:.2g} days" if d < 10.0 else f"{d:,.0f} days"
