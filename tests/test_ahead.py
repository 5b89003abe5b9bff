"""Compiling ahead (analysis/ahead.py): jobs run from the end in forked processes while the caller
claims them from the front, and a command's results do not depend on it."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from mrfq.analysis import ahead as _ahead
from mrfq.analysis.ahead import Ahead

forks = pytest.mark.skipif(not _ahead._usable(), reason="compiling ahead needs fork and numba's cache")


def _mark(path, i):
    def job():
        path.joinpath(str(i)).write_text(str(os.getpid()))
    return job


def _taken(a, i, timeout=120.0):
    """Wait until the pool has taken job ``i`` (the caller's claim then waits for it, where a claim
    before that takes it back: on a loaded machine the pool's queue may not have reached it yet)."""
    f = a._futures[i]
    deadline = time.monotonic() + timeout
    while not (f.running() or f.done()) and time.monotonic() < deadline:
        time.sleep(0.01)


@forks
def test_jobs_after_the_first_run_in_another_process(tmp_path):
    jobs = [_mark(tmp_path, i) for i in range(4)]
    with Ahead(jobs, workers=1) as a:
        for i in (3, 2, 1):
            _taken(a, i)
            a.claim(i)  # waits for the process compiling it
            assert int(tmp_path.joinpath(str(i)).read_text()) != os.getpid()
        a.claim(0)  # the caller's own: nothing to wait for
    assert not tmp_path.joinpath("0").exists()


@forks
def test_every_job_runs_ahead_for_a_caller_busy_elsewhere(tmp_path):
    """``every=True`` (``mrfq compare`` solving the Markov model first): job 0 runs ahead too."""
    jobs = [_mark(tmp_path, i) for i in range(2)]
    with Ahead(jobs, workers=1, every=True) as a:
        assert a.jobs == jobs
        for i in (1, 0):
            _taken(a, i)
            a.claim(i)
            assert int(tmp_path.joinpath(str(i)).read_text()) != os.getpid()
    assert Ahead([lambda: None], workers=1, every=True)._pool is not None  # one job is enough


@forks
def test_a_sweep_runs_its_points_after_a_warm_up_started_ahead(monkeypatch):
    """analysis.sweep.execute claims a warm-up started before it (compare's Markov step), and an
    executor with nothing to run closes it."""
    from mrfq import flows
    from mrfq.analysis import sweep
    from mrfq.flows.scenario import to_dict

    d = to_dict(flows.load_preset("oracle-rates").replace(**{"run.duration": 200.0, "run.warmup": 20.0}))
    p = sweep.Point("h", "drfq", 0.5, 0, 1, 200.0)
    claimed = []
    real = Ahead.claim
    monkeypatch.setattr(Ahead, "claim", lambda self, i, what="": (claimed.append(i), real(self, i, what))[1])
    a = sweep.warm_ahead([(d, "oracle-rates", "drfq")])
    got = []
    sweep.execute([(p, d, "oracle-rates")], lambda pt, payload: got.append(payload), workers=1, ahead=a)
    assert claimed == [0, 1, 2] and a._pool is None and got and got[0]["services"] > 0
    b = sweep.warm_ahead([(d, "oracle-rates", "drfq")])
    sweep.execute([], lambda pt, payload: None, ahead=b)
    assert b._pool is None


@forks
def test_a_job_not_started_is_taken_back(tmp_path):
    import time

    def slow():
        time.sleep(1.0)

    jobs = [_mark(tmp_path, 0), _mark(tmp_path, 1), slow]
    with Ahead(jobs, workers=1) as a:  # the one process takes job 2 (slow) first
        a.claim(1)  # still queued: cancelled, the caller runs it itself
        jobs[1]()
    assert int(tmp_path.joinpath("1").read_text()) == os.getpid()


@forks
def test_a_failing_job_is_left_to_the_caller():
    def boom():
        raise RuntimeError("compile error")

    with Ahead([lambda: None, boom], workers=1) as a:
        a.claim(1)  # no error here: the caller runs the job and reports what it raises


def test_nothing_is_forked_without_a_spare_core_a_second_job_or_the_cache(monkeypatch):
    assert Ahead([lambda: None], workers=4)._pool is None
    assert Ahead([lambda: None] * 3, workers=0)._pool is None
    import mrfq.fq._jit as fj

    monkeypatch.setattr(fj, "CACHE", False)
    assert not _ahead._usable()
    assert Ahead([lambda: None] * 3, workers=1)._pool is None


@forks
def test_a_scorecard_is_the_same_compiled_ahead_or_not(monkeypatch):
    from mrfq.analysis.scorecard import scorecard
    from mrfq.flows.scenario import load_preset

    sc = load_preset("oracle-rates").with_overrides(duration=3000.0)  # (lean loops other tests compile too)
    both = scorecard(sc, ["drfq", "fifo"])
    monkeypatch.setattr(_ahead.os, "cpu_count", lambda: 1)  # no spare core: nothing compiled ahead
    alone = scorecard(sc, ["drfq", "fifo"])
    for a, b in zip(both.rows, alone.rows):
        assert a["rate"] == b["rate"] and a["mean"] == b["mean"] and a["p99"] == b["p99"]
    for s in ("drfq", "fifo"):
        assert np.array_equal(both.runs[s].flows.rate, alone.runs[s].flows.rate)
        assert both.runs[s].services == alone.runs[s].services
