"""The one objective table (analysis.objectives) and its consumers."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from mrfq.analysis import allocations, objectives
from mrfq.analysis.objectives import S_ASSET, S_BMF, S_DRF, S_PF, TABLE
from mrfq.flows.errors import MrfqError
from mrfq.fq.registry import SCHEDULERS


@pytest.mark.nojit
def test_every_scheduler_objective_is_in_the_table():
    named = {info.objective for info in SCHEDULERS.values() if info.objective is not None}
    assert named  # drfq, drfq-dovetail, pf-sfq and bmf-wfq name one
    for name, info in SCHEDULERS.items():
        if info.objective is None:
            continue
        assert info.objective in TABLE, (name, info.objective)
        # compare needs a fluid reference for it
        assert TABLE[info.objective].markov, (name, info.objective)


@pytest.mark.nojit
def test_kernel_codes_are_distinct_and_named():
    codes = [o.state_code for o in TABLE.values() if o.state_code is not None]
    assert len(codes) == len(set(codes))
    assert (S_DRF, S_PF, S_BMF, S_ASSET) == tuple(TABLE[n].state_code for n in ("drf", "pf", "bmf", "asset"))
    # every Markov objective needs a per-state kernel
    assert all(TABLE[n].state_code is not None for n in objectives.MARKOV)
    assert set(objectives.MARKOV) <= set(objectives.STATE) <= set(objectives.ALLOC)
    assert objectives.MARKOV == ("drf", "pf", "bmf")
    assert objectives.ALLOC == ("drf", "pf", "bmf", "asset", "ceei")


@pytest.mark.nojit
def test_rows_point_at_the_solvers():
    assert TABLE["drf"].allocate is allocations.drf
    assert TABLE["ceei"].allocate is allocations.ceei
    assert TABLE["asset"].allocate is allocations.asset_fairness
    # two transactions (0.5, 1) and (1, 0.5): DRF gives 2/3 each (docs/allocators.md, 'Public oracles')
    np.testing.assert_allclose(objectives.allocate("drf", [[0.5, 1.0], [1.0, 0.5]]).phi, [2 / 3, 2 / 3], rtol=1e-12)


@pytest.mark.nojit
def test_kernel_handles():
    assert objectives.kernel_handles("drf", 5) and objectives.kernel_handles("asset", 3)
    assert objectives.kernel_handles("pf", 2) and not objectives.kernel_handles("pf", 3)
    assert not objectives.kernel_handles("bmf", 3) and not objectives.kernel_handles("ceei", 1)


@pytest.mark.nojit
def test_unknown_names_are_refused_with_the_table_choices():
    with pytest.raises(MrfqError, match=r"^objective = 'fair': unknown; choose one of drf, pf, bmf, asset, ceei$"):
        objectives.allocate("fair", [[1.0]])
    with pytest.raises(MrfqError, match=r"objective = 'ceei': unknown; choose one of drf, pf, bmf$"):
        objectives.get("ceei", objectives.MARKOV)


def test_state_rates_and_markov_refuse_by_name():
    from mrfq.analysis import markov
    from mrfq.analysis.state_rates import state_rates

    with pytest.raises(MrfqError, match=r"objective = 'ceei': unknown; choose one of drf, pf, bmf, asset$"):
        state_rates("ceei", [[1.0]], [[1.0]])
    with pytest.raises(MrfqError, match=r"objective = 'asset': unknown; choose one of drf, pf, bmf$"):
        markov.solve([markov._Spec("c", (1.0,), 0.1, 1.0, 1.0)], "asset")


@pytest.mark.nojit
def test_cli_choices_come_from_the_table():
    from mrfq.analysis import cli_fluid

    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers()
    cli_fluid.register(sub)
    helps = {a.dest: a.help for p in sub.choices.values() for a in p._actions if a.dest == "objective"}
    assert all("or all" in h for h in helps.values())
    alloc_help = next(a.help for a in sub.choices["alloc"]._actions if a.dest == "objective")
    fluid_help = next(a.help for a in sub.choices["fluid"]._actions if a.dest == "objective")
    assert alloc_help.startswith(", ".join(objectives.ALLOC))
    assert fluid_help.startswith(", ".join(objectives.MARKOV))
