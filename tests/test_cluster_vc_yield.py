"""Virtual-cluster yield ([VC] Stillwell et al.): bounds, exact MILP and heuristics."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrfq.analysis.cluster.vc_yield import (
    HEURISTICS,
    VCInstance,
    generate,
    greedy,
    greedy_backtracking,
    lp_bound,
    lp_bound_solved,
    max_average_yield,
    mcb_pack,
    milp_exact,
    placement_min_yield,
    solve,
)
from mrfq.flows.errors import MrfqError

pytestmark = pytest.mark.nojit


def test_paper_example_two_hosts_three_jobs():
    # [VC] §2.3 (migration remark): 2 hosts, 3 jobs with alpha = 0.6: without migration the best
    # minimum yield is 0.5 / 0.6 = 5/6 (two jobs share a host at 50% each); the relaxation gives 1.
    inst = VCInstance(2, np.full(3, 0.6), np.zeros(3))
    assert milp_exact(inst) == pytest.approx(5 / 6, abs=1e-7)
    assert lp_bound(inst) == 1.0
    for h in HEURISTICS:
        r = solve(h, inst, rng=np.random.default_rng(0)) if h.startswith("RR") else solve(h, inst)
        assert r.min_yield == pytest.approx(5 / 6, abs=1e-6) or (h.startswith("RR") and r.min_yield <= 5 / 6), h


def test_mcb_pack_scans_against_the_imbalance():
    # Y = 1. CPU-heavy list (MCB8: max desc) A(0.6, 0.2), B(0.5, 0.1); memory-heavy C(0.2, 0.7), D(0.1, 0.5).
    # host 0: A (free 0.4 CPU, 0.8 mem) -> more memory free -> memory list: C (0.2, 0.1 left);
    # nothing else fits -> host 1: B (0.5, 0.9) -> memory list: D.
    inst = VCInstance(2, np.array([0.6, 0.5, 0.2, 0.1]), np.array([0.2, 0.1, 0.7, 0.5]))
    assert mcb_pack(inst, 1.0, 8).tolist() == [0, 1, 0, 1]
    assert mcb_pack(inst, 1.0, 8, first_list="mem").tolist() == [0, 1, 0, 1]  # C, then A on host 0
    assert solve("MCB8", inst).min_yield == 1.0


def test_average_yield_phase_by_hand():
    # host 0: alpha 0.4 and 0.8 at Y = 0.5 -> 0.2 and 0.4, spare 0.4: the smaller job is topped up to 0.4,
    # the rest (0.2) goes to the other: 0.6.  host 1: alpha 0.9 alone -> 0.9.
    inst = VCInstance(2, np.array([0.4, 0.8, 0.9]), np.zeros(3))
    np.testing.assert_allclose(max_average_yield(inst, np.array([0, 0, 1]), 0.5), [0.4, 0.6, 0.9])
    assert placement_min_yield(inst, np.array([0, 0, 1])) == pytest.approx(1 / 1.2)


def test_greedy_fails_where_backtracking_and_sorting_succeed():
    # memory 0.5, 0.3, 0.2, 0.5, 0.5 on 2 hosts (sum exactly 2). GR: j0->h0, j1->h1, j2->h0 (tie),
    # j3->h1, then j4 (0.5) finds 0.3 and 0.2 free: failure.  SG places the three 0.5 first and succeeds;
    # GB backtracks to a packing {0.5, 0.5} + {0.5, 0.3, 0.2}.
    inst = VCInstance(2, np.full(5, 0.1), np.array([0.5, 0.3, 0.2, 0.5, 0.5]))
    assert greedy(inst) is None
    assert solve("GR", inst).failed
    for h in (greedy(inst, sort=True), greedy_backtracking(inst)):
        assert h is not None
        assert np.all(np.bincount(h, weights=inst.mem, minlength=2) <= 1 + 1e-12)
    assert solve("GB", inst).min_yield == 1.0
    assert greedy_backtracking(inst, max_attempts=4) is None       # the bound is honoured


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**31), st.integers(2, 3), st.integers(3, 6), st.sampled_from([0.1, 0.3, 0.6]))
def test_heuristics_never_beat_the_exact_solution_which_never_beats_the_bound(seed, H, J, slack):
    inst = generate(np.random.default_rng(seed), H, J, slack, 0.5, 0.5)
    bound = lp_bound(inst)
    assert bound == pytest.approx(lp_bound_solved(inst), abs=1e-7)     # closed form of §3.1 = the LP
    exact = milp_exact(inst)
    assert exact == pytest.approx(milp_exact(inst, formulation="paper"), abs=1e-6)   # §2.5 as stated
    assert exact <= bound + 1e-7
    for h in HEURISTICS:
        r = solve(h, inst, rng=np.random.default_rng(seed)) if h.startswith("RR") else solve(h, inst)
        assert r.min_yield <= exact + 1e-6, h
        if not r.failed:
            assert np.all(np.bincount(r.host, weights=inst.mem, minlength=H) <= 1 + 1e-9)
            assert np.all(np.bincount(r.host, weights=r.cpu, minlength=H) <= 1 + 1e-9)
            assert np.all(r.cpu >= r.min_yield * inst.alpha - 1e-12) and np.all(r.cpu <= inst.alpha + 1e-12)


def test_randomized_rounding_one_host_and_infeasible_relaxation():
    from mrfq.analysis.cluster.vc_yield import randomized_rounding

    # one host: the relaxation puts every job there (e = 1), so both roundings do; Y = 1 / sum alpha
    inst = VCInstance(1, np.array([0.5, 0.3, 0.4]), np.array([0.2, 0.3, 0.1]))
    for h in ("RRND", "RRNZ"):
        r = solve(h, inst, rng=np.random.default_rng(1))
        assert r.host.tolist() == [0, 0, 0] and r.min_yield == pytest.approx(1 / 1.2)
    # total memory above the hosts' memory: the relaxation is infeasible, the rounding fails
    assert randomized_rounding(VCInstance(1, np.full(2, 0.5), np.full(2, 0.6)), np.random.default_rng(0)) is None
    # reproducible: same generator seed, same placement
    inst = generate(np.random.default_rng(4), 3, 7, 0.4, 0.5, 0.5)
    a = randomized_rounding(inst, np.random.default_rng(9), no_zero=True)
    b = randomized_rounding(inst, np.random.default_rng(9), no_zero=True)
    assert a is not None and np.array_equal(a, b)


def test_generate_follows_the_paper_and_validation():
    inst = generate(np.random.default_rng(0), 64, 500, 0.3, 0.25, 0.75)
    assert inst.mem.mean() == pytest.approx(0.7 * 64 / 500, rel=0.05)
    assert inst.alpha.mean() == pytest.approx(0.5, rel=0.1)
    assert np.all((inst.alpha > 0) & (inst.alpha <= 1)) and np.all((inst.mem > 0) & (inst.mem <= 1))
    with pytest.raises(MrfqError, match=r"alpha\[1\] = 1.5"):
        VCInstance(1, np.array([0.5, 1.5]), np.array([0.1, 0.1]))
    with pytest.raises(MrfqError, match="heuristic = 'X'"):
        solve("X", VCInstance(1, np.array([0.5]), np.array([0.1])))


def test_evaluate_tables_and_degradation_by_hand():
    from mrfq.analysis.cluster.vc_yield import VCRecord, degradation_from_best, evaluate, ratio_table

    rec = evaluate(3, 2, [3], [0.5], cvs=(0.25,), instances=2, heuristics=("GR", "MCB8", "RRNZ"), exact=True)
    assert [r.algorithm for r in rec] == ["LP", "MILP", "GR", "MCB8", "RRNZ"] * 2
    again = evaluate(3, 2, [3], [0.5], cvs=(0.25,), instances=2, heuristics=("GR", "MCB8", "RRNZ"), exact=True)
    assert [(r.algorithm, r.min_yield) for r in again] == [(r.algorithm, r.min_yield) for r in rec]
    tab = ratio_table(rec)
    for a in ("MILP", "GR", "MCB8"):
        m, fail = tab[a][0.5]
        assert 0 < m <= 1 + 1e-9 and fail == 0.0
    # hand-made records: best per instance is 0.8 then 0.5; B: 25% then 0% degradation; C failed once
    mk = lambda i, a, y, f=False: VCRecord(2, 3, 0.5, 0.25, 0.25, i, a, y, y, f, 0.0)  # noqa: E731
    recs = [mk(0, "A", 0.8), mk(0, "B", 0.6), mk(0, "C", 0.0, True), mk(1, "A", 0.4), mk(1, "B", 0.5),
            mk(1, "C", 0.5), mk(0, "LP", 1.0), mk(1, "LP", 0.5)]
    d = degradation_from_best(recs, ("A", "B", "C"))
    assert d["A"] == pytest.approx((10.0, 20.0)) and d["B"] == pytest.approx((12.5, 25.0))
    assert d["C"] == pytest.approx((0.0, 0.0))
    t = ratio_table(recs)
    assert t["A"][0.5] == pytest.approx((0.8, 0.0)) and t["C"][0.5] == pytest.approx((1.0, 0.5))


def test_vc_script_runs_tiny(tmp_path, capsys):
    import importlib.util
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("cvy", os.path.join(root, "scripts", "cluster_vc_yield.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--slacks", "0.5", "--small-jobs", "5", "--large-jobs", "20", "--small-instances", "1",
                     "--large-instances", "1", "--max-attempts", "200", "--out", str(tmp_path)]) == 0
    assert "MCB8" in capsys.readouterr().out
    assert (tmp_path / "vc_yield.png").exists()
