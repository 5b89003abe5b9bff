"""The lean event loop (one scheduler, default options, no trace) against the generic one.

Both are compiled from the same source (router.loop._make_raw); the generic loop is
checked trace-for-trace against the SimPy reference (test_reference.py), the lean one,
which records no trace, must then give the very same outputs, bit for bit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mrfq import flows
from conftest import JIT_DISABLED
from test_reference import SCHEDULER_NAMES, scenarios

DEFAULTS = {"router.virtual_time": "started", "router.idle_reset": False, "router.rtt": 0.0,
            "router.increment": "cost", "router.fq_resource": None}


def outputs(r) -> dict:
    d = {f.name: getattr(r, f.name) for f in dataclasses.fields(r)
         if f.name not in ("wall_seconds", "cpu_seconds", "compile_seconds", "loop_cpu_seconds", "loop_wall_seconds",
                           "state_bytes", "batches", "trace")}  # timings, and the layout's size
    d["batches"] = {k: np.asarray(v).tolist() for k, v in r.batches.items()}
    return d


def assert_lean_equals_generic(sc) -> None:
    from mrfq.fq.registry import resolve
    from mrfq.router.engine import is_lean
    from mrfq.router.run import simulate

    info, opt = resolve(sc.router, sc.resources)
    assert is_lean(info, opt, sc.n_resources, sc.router.rtt, 0)  # the lean variant applies
    lean = simulate(sc)
    generic = simulate(sc, specialise=False)
    assert lean.services > 0 or sc.classes  # a short run may see no Poisson flow
    assert outputs(lean) == outputs(generic)
    assert not is_lean(info, opt, sc.n_resources, sc.router.rtt, 1)
    assert not is_lean(info, opt, sc.n_resources, 0.5, 0)


@pytest.mark.skipif(JIT_DISABLED, reason="one plain-Python loop without the JIT")
@pytest.mark.parametrize("scheduler", SCHEDULER_NAMES)
@pytest.mark.parametrize("preset", ["oracle-three-flows", "middlebox-mix", "dynamic-small"])
def test_lean_loop_equals_generic_on_presets(preset, scheduler):
    duration = 20_000.0 if preset == "dynamic-small" else 400.0
    sc = flows.load_preset(preset).replace(**{"router.scheduler": scheduler, "run.warmup": 5.0,
                                              "run.duration": duration, **DEFAULTS})
    assert_lean_equals_generic(sc)


# The random scenarios run at J = 2 and the default window (30: the packet ring of 32 records compiled
# into the lean loop, router.loop.CONST_RINGS), on the lean variants the presets above compile; the
# ring read at run time (any other window) with drfq below.  A compilation costs more than the runs.
@pytest.mark.skipif(JIT_DISABLED, reason="one plain-Python loop without the JIT")
@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(sc=scenarios(J=2, options=False), scheduler=st.sampled_from(SCHEDULER_NAMES))
def test_lean_loop_equals_generic(sc, scheduler):
    assert_lean_equals_generic(sc.replace(**{"router.scheduler": scheduler, "router.window": 30, **DEFAULTS}))


@pytest.mark.skipif(JIT_DISABLED, reason="one plain-Python loop without the JIT")
@settings(deadline=None, max_examples=10, suppress_health_check=[HealthCheck.too_slow])
@given(sc=scenarios(J=2, scheduler="drfq", options=False))
def test_lean_loop_with_its_ring_read_at_run_time_equals_generic(sc):
    """Windows 1..4: packet rings of 2 to 8 records, their size read at run time."""
    assert_lean_equals_generic(sc.replace(**DEFAULTS))


@pytest.mark.skipif(JIT_DISABLED, reason="one plain-Python loop without the JIT")
@settings(deadline=None, max_examples=15, suppress_health_check=[HealthCheck.too_slow])
@given(sc=scenarios(J=2, options=False), scheduler=st.sampled_from(SCHEDULER_NAMES))
def test_costs_per_flow_equal_costs_per_packet(sc, scheduler):
    """Constant-cost flows keep their costs once per flow (router/state.py); the per-packet
    layout, which scenarios with packet sizes take, must give the very same outputs (the lean loops;
    the generic ones, with each scheduler's options drawn, against the reference: tests/test_reference.py)."""
    from mrfq.router.run import simulate

    sc = sc.replace(**{"router.scheduler": scheduler, "router.window": 30, **DEFAULTS})
    per_packet = simulate(sc, packet_costs=True)
    default = simulate(sc)
    assert outputs(per_packet) == outputs(default)


def _live_names(tcp: bool, lean: bool) -> set:
    """The attributes and globals a loop variant's code reaches once numba has dropped the branches
    its compile-time constants decide (numba's own pass, before typing: what is left is typed,
    lowered and optimised)."""
    from numba.core import ir
    from numba.core.analysis import compute_cfg_from_blocks, dead_branch_prune
    from numba.core.compiler import run_frontend

    from mrfq.router import loop

    raw = loop._make_raw(2, 12, False, lean, (0.0,), 1, 0, 2, True, True, 0, False, False, tcp, False)
    fir = run_frontend(raw)
    dead_branch_prune(fir, [None] * raw.__code__.co_argcount)
    dead = set(compute_cfg_from_blocks(fir.blocks).dead_nodes())
    names = set()
    for label, block in fir.blocks.items():
        for stmt in block.body if label not in dead else ():
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "getattr":
                names.add(stmt.value.attr)
            elif isinstance(stmt, ir.Assign) and isinstance(stmt.value, (ir.Global, ir.FreeVar)):
                names.add(stmt.value.name)
    return names


@pytest.mark.nojit
def test_a_loop_variant_holds_no_code_for_what_it_does_not_run():
    """The TCP senders are compiled only into loops for runs with TCP flows, and the open-loop
    sources' drops only into the generic loop: every flag the loop branches on is a closure constant
    numba's branch pruning sees (a flag derived from one, such as ``TCP_CONST and P.n_tcp > 0``, is
    a run-time value to numba, and every variant would compile the TCP code)."""
    generic, with_tcp, lean = _live_names(False, False), _live_names(True, False), _live_names(False, True)
    assert {"phase", "receive", "ring_room"} <= with_tcp  # (the loop's ring_room: the TCP senders')
    assert not {"phase", "receive", "next_event", "log_room"} & generic
    assert "_push_out" in generic and "_push_out" not in lean and "phase" not in lean
