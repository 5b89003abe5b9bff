"""The exact Markov solve gives up within a wall-clock budget (``time_limit``,
``mrfq fluid --time-limit``) and the simulated chain runs in chunks of events (Ctrl-C is seen
between them), with the same results bit for bit as one kernel call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from mrfq import flows
from mrfq.analysis import markov
from mrfq.analysis.cli import main


def _br(load):
    return markov.model_from(flows.load_preset("br-unbalanced"), load=load)


def _same(a: markov.MarkovResult, b: markov.MarkovResult) -> None:
    for f in ("gamma", "mean_flows", "gamma_low", "gamma_high"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None and y is None) or np.array_equal(x, y), f
    assert (a.events, a.truncation, a.n_states, a.boundary_mass, a.history) == \
           (b.events, b.truncation, b.n_states, b.boundary_mass, b.history)


# ---------------------------------------------------------------------------
# the simulated chain in chunks
@pytest.mark.parametrize("objective", ["drf", "pf", "bmf"])
def test_simulate_in_chunks_is_bit_identical_to_one_call(monkeypatch, objective):
    m = _br(0.7)
    # one call (the chunk covers every event: the kernel as before the split)
    monkeypatch.setattr(markov, "SIM_CHUNK", 1 << 40)
    whole = markov.simulate(m, objective, np.random.default_rng(5), events=40_000, batches=8)
    for chunk in (997, 1000, 2000, 40_000 // 8 + 1):  # 2000 = the warm-up; 5001 straddles batch ends
        monkeypatch.setattr(markov, "SIM_CHUNK", chunk)
        _same(markov.simulate(m, objective, np.random.default_rng(5), events=40_000, batches=8), whole)
    assert whole.events == 40_000 and np.all(np.isfinite(whole.gamma))


def test_ctrl_c_stops_a_long_simulation_cleanly():
    """1e8 events (about a minute here) stop within seconds of SIGINT: exit 130, one line."""
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-m", "mrfq.analysis.cli", "fluid", "--preset", "br-unbalanced", "--load",
                          "0.9", "--objective", "drf", "--method", "simulate", "--events", "1e8", "--json"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(10.0)  # imports and the kernel's compilation (cache=False), then inside the chain
        assert p.poll() is None, p.communicate()[1]
        t0 = time.perf_counter()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        waited = time.perf_counter() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert err.strip() == "mrfq: interrupted (no output file was left half-written)" and out == ""
    assert waited < 15.0, f"stopped {waited:.1f} s after SIGINT"
    print(f"stopped {waited:.2f} s after SIGINT")


def test_ctrl_c_stops_a_long_exact_solve_cleanly():
    """br-balanced at loads 0.97 and 0.975, three objectives: six exact solves of several seconds
    to tens of seconds each here (lumped by the c1 <-> c2 symmetry, 2-4 M states); SIGINT 10 s in
    stops the current one between Krylov chunks (or truncations) within seconds (assembling and
    factorising one truncation cannot be interrupted): exit 130, one line."""
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-m", "mrfq.analysis.cli", "fluid", "--preset", "br-balanced", "--loads",
                          "0.97,0.975", "--json"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(10.0)
        assert p.poll() is None, p.communicate()[1]
        t0 = time.perf_counter()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        waited = time.perf_counter() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert err.strip() == "mrfq: interrupted (no output file was left half-written)" and out == ""
    assert waited < 30.0, f"stopped {waited:.1f} s after SIGINT"
    print(f"stopped {waited:.2f} s after SIGINT")


# ---------------------------------------------------------------------------
# the exact solve's wall-clock budget
@pytest.mark.parametrize("krylov", ["bicgstab", "gmres"])
def test_krylov_chunks_give_the_one_call_iterates(monkeypatch, krylov):
    """The solve with its Krylov kernel run a chunk of iterations (BiCGSTAB) or one restart
    cycle (GMRES) per call equals the one-call solve."""
    monkeypatch.setattr(markov, "KRYLOV", krylov)
    m = _br(0.8)
    chunked = {o: markov.solve(m, o) for o in ("drf", "pf", "bmf")}
    assert markov.LAST_KRYLOV == krylov

    def one_call(cycle, n_states, chunk, maxiter, rtol, deadline, name):
        return cycle(maxiter)  # every chunk inside one kernel call

    monkeypatch.setattr(markov, "_krylov_chunked", one_call)
    for o, r in chunked.items():
        _same(markov.solve(m, o), r)
        assert r.method == "exact" and r.iterations >= 2


def test_time_limit_gives_up_with_one_line_naming_simulate():
    with pytest.raises(markov.SolveTimeLimit) as e:
        markov.solve(_br(0.6), "drf", time_limit=1e-9, truncation="box")
    msg = str(e.value)
    assert msg.startswith("time limit: the Markov solve gave up in BiCGSTAB after 0 iterations on 729 states")
    assert "use --method simulate" in msg and "\n" not in msg
    assert isinstance(e.value, markov.TruncationTooLarge)  # auto and the sweep fall back to simulate
    with pytest.raises(markov.SolveTimeLimit) as e:  # the region truncation: in its graded estimate
        markov.solve(_br(0.6), "drf", time_limit=1e-9)
    msg = str(e.value)
    assert msg.startswith("time limit: the Markov solve gave up after 0 graded solves")
    assert "use --method simulate" in msg and "\n" not in msg
    for bad in (0, -1.0, float("nan"), "5"):
        with pytest.raises(flows.MrfqError, match=r"time_limit = .*: must be a number of seconds > 0"):
            markov.solve(_br(0.6), "drf", time_limit=bad)
    assert markov.solve(_br(0.6), "drf", time_limit=None).method == "exact"


def _own_clock(monotonic):
    """The time module as analysis.markov sees it, with ``monotonic`` replaced: only the solve's
    own looks at the clock (numba's compiler, compiling the parallel kernels on a first call,
    looks at time.monotonic too)."""
    class Clock:
        def __getattr__(self, name):
            return getattr(time, name)
    c = Clock()
    c.monotonic = monotonic
    return c


def test_time_limit_is_checked_between_truncations(monkeypatch):
    """A clock that jumps 10 s from its third look on (the first sets the deadline, one look per
    truncation after it): the loop gives up after the second truncation."""
    looks = []
    real = time.monotonic

    def clock():
        looks.append(1)
        return real() + (10.0 * len(looks) if len(looks) > 2 else 0.0)

    markov.solve(_br(0.6), "drf", truncation="box")     # the kernels compiled (if not cached) before the clock
    monkeypatch.setattr(markov, "_krylov_chunked",
                        lambda cycle, n, chunk, maxiter, rtol, deadline, name: cycle(maxiter))  # no look inside
    monkeypatch.setattr(markov, "time", _own_clock(clock))
    with pytest.raises(markov.SolveTimeLimit, match=r"^time limit: the Markov solve gave up after 2 "
                                                    r"truncations \(caps \[\d+, \d+, \d+\], boundary mass"):
        markov.solve(_br(0.9), "drf", time_limit=5.0, truncation="box")
    assert len(looks) == 3


def test_time_limit_is_checked_between_regions(monkeypatch):
    """The region truncation: a clock that jumps 10 s once the first region is solved gives up
    before the second, naming its size."""
    jumped = []
    real = time.monotonic
    solve_region = markov.solve_region

    def first(*a, **k):
        t = solve_region(*a, **k)
        jumped.append(t.pi.size)
        return t

    monkeypatch.setattr(markov, "_krylov_chunked",
                        lambda cycle, n, chunk, maxiter, rtol, deadline, name: cycle(maxiter))  # no look inside
    monkeypatch.setattr(markov, "solve_region", first)
    monkeypatch.setattr(markov, "time", _own_clock(lambda: real() + (10.0 if jumped else 0.0)))
    with pytest.raises(markov.SolveTimeLimit, match=r"^time limit: the Markov solve gave up after 1 "
                                                    r"truncations \(\d+ states next\)"):
        markov.solve(_br(0.9), "drf", time_limit=5.0)
    assert len(jumped) == 1


@pytest.mark.parametrize("preset, load, truncation", [("br-unbalanced", 0.96, "box"),
                                                       ("br-balanced", 0.97, "region")])
def test_long_exact_solve_stops_near_its_time_limit(preset, load, truncation):
    """br-unbalanced at load 0.96 takes 2.3 s in the box, br-balanced at 0.97 10 s or more in
    regions; with 0.5 s they give up soon after."""
    t0 = time.perf_counter()
    with pytest.raises(markov.SolveTimeLimit):
        markov.solve(flows.load_preset(preset), "drf", load=load, time_limit=0.5, truncation=truncation)
    took = time.perf_counter() - t0
    assert took < 0.5 + 10.0, took
    print(f"gave up after {took:.2f} s (limit 0.5 s)")


def test_fluid_time_limit_option(capsys):
    code = main(["fluid", "--preset", "br-unbalanced", "--load", "0.6", "--objective", "drf",
                 "--time-limit", "1e-9"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "gave up" in err and "use --method simulate" in err
    # auto: the same budget, then the simulation
    code = main(["fluid", "--preset", "br-unbalanced", "--load", "0.6", "--objective", "drf", "--method", "auto",
                 "--time-limit", "1e-9", "--events", "20000", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["objectives"]["drf"]["method"] == "simulate"
    for bad, needle in [("0", "--time-limit = '0': out of range; give a number in (0, 86400]"),
                        ("nan", "--time-limit = 'nan': not a number"), ("1e9", "out of range")]:
        code = main(["fluid", "--preset", "br-unbalanced", "--load", "0.6", "--time-limit", bad])
        err = capsys.readouterr().err
        assert code == 2 and needle in err and err.count("\n") == 1, err


def test_time_limit_covers_the_graded_solve():
    with pytest.raises(markov.SolveTimeLimit, match=r"^time limit: the Markov solve gave up"):
        markov.solve(_br(0.6), "drf", method="graded", time_limit=1e-9)
    with pytest.raises(flows.MrfqError, match=r"time_limit = True: must be a number of seconds > 0"):
        markov.solve(_br(0.6), "drf", method="graded", time_limit=True)
