"""Task-level cluster mechanisms (fq/cluster): the papers' examples with hand-traced launches."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mrfq.flows.errors import MrfqError
from mrfq.fq.cluster import drfh, slots
from mrfq.fq.cluster.registry import ALLOCATORS, allocate_static, bind
from mrfq.fq.cluster.state import BACKLOGGED, ClusterState, fill

pytestmark = pytest.mark.nojit

# [DRFH] Fig. 1: server 1 high-memory (2 CPU, 12 GB), server 2 high-CPU (12 CPU, 2 GB)
DRFH_C = [[2.0, 12.0], [12.0, 2.0]]
DRFH_D = [[0.2, 1.0], [1.0, 0.2]]


def test_drf_paper_example_gives_3_and_2_tasks():
    # [DRF] §4.1 / Table 1: 9 CPUs, 18 GB; A <1 CPU, 4 GB>, B <3 CPUs, 1 GB>.
    # Dominant shares after each launch: A 2/9, B 1/3, A 4/9, B 2/3, A 2/3; then nothing fits (CPU 9/9).
    st_ = ClusterState.new([9, 18], [[1, 4], [3, 1]])
    launches = allocate_static("drf", st_)
    assert launches == [(0, 0), (1, 0), (0, 0), (1, 0), (0, 0)]
    assert st_.tasks().tolist() == [3, 2]
    assert st_.allocation().tolist() == [[3, 12], [6, 2]]          # {3 CPU, 12 GB}, {6 CPU, 2 GB}
    np.testing.assert_allclose(st_.dominant_share(), [2 / 3, 2 / 3])
    np.testing.assert_allclose(st_.free, [[0, 4]])


def test_drf_weighted_doubles_the_heavy_user():
    # one resource, 12 units, tasks of 1 unit, weights 2:1 -> 8 and 4 tasks (weighted max-min)
    st_ = ClusterState.new([12], [[1], [1]], weight=[2, 1])
    allocate_static("drf", st_)
    assert st_.tasks().tolist() == [8, 4]


def test_drf_blocked_skip_versus_stop():
    # 3 CPU, 3 GB; A <2 CPU, 0 GB> (2/3 per task), B <0 CPU, 1 GB> (1/3 per task).
    # A, B, B reach 2/3 each; the tie goes to A, whose task no longer fits (1 CPU free).
    # "stop" (Algorithm 1 literally) ends there; "skip" lets B take the last GB.
    a = ClusterState.new([3, 3], [[2, 0], [0, 1]])
    assert allocate_static("drf", a, blocked="stop") == [(0, 0), (1, 0), (1, 0)]
    b = ClusterState.new([3, 3], [[2, 0], [0, 1]])
    assert allocate_static("drf", b) == [(0, 0), (1, 0), (1, 0), (1, 0)]
    assert b.tasks().tolist() == [1, 3]


def test_drf_finite_pending_then_the_rest_goes_to_the_other_user():
    st_ = ClusterState.new([9, 18], [[1, 4], [3, 1]], pending=[1, BACKLOGGED])
    allocate_static("drf", st_)
    assert st_.tasks().tolist() == [1, 2]          # B: 3 tasks need 9 CPUs, A holds 1
    assert st_.pending[0] == 0


def test_naive_drf_per_server_gives_6_tasks_each():
    # [DRFH] §III-D, Fig. 2: server 1: CPU is both users' local dominant resource, 1 CPU each ->
    # user 1: 5 tasks, user 2: 1 task; server 2 the mirror image; 6 tasks each.
    st_ = ClusterState.new(DRFH_C, DRFH_D)
    allocate_static("naive-drf", st_)
    assert st_.running.tolist() == [[5, 1], [1, 5]]


def test_best_fit_drfh_reaches_the_drfh_allocation_10_tasks_each():
    # [DRFH] Fig. 3: server 1 to user 1, server 2 to user 2, 10 tasks each, G = 10/14 = 5/7.
    # First placement: H(1, s1) = |5 - 6| = 1 < H(1, s2) = |5 - 1/6|; H(2, s2) = |0.2 - 1/6| < H(2, s1).
    st_ = ClusterState.new(DRFH_C, DRFH_D)
    allocate_static("drfh-best-fit", st_)
    assert st_.running.tolist() == [[10, 0], [0, 10]]
    np.testing.assert_allclose(st_.dominant_share(), [5 / 7, 5 / 7])
    np.testing.assert_allclose(st_.free, [[0, 2], [2, 0]], atol=1e-12)   # 2 GB and 2 CPUs stay idle


def test_first_fit_drfh_on_the_two_server_example():
    # Hand trace: users alternate; user 2's first task lands on server 1 (first fit, 1 CPU),
    # after that server 1's 0.6 free CPU only takes user 1's tasks (5 there, CPU full),
    # user 1's 6th task goes to server 2 whose memory is then full (5 x 0.2 + 1 = 2 GB).
    st_ = ClusterState.new(DRFH_C, DRFH_D)
    allocate_static("drfh-first-fit", st_)
    assert st_.running.tolist() == [[5, 1], [1, 5]]


def test_best_fit_fitness_is_eq9():
    st_ = ClusterState.new(DRFH_C, DRFH_D)
    H = drfh.fitness(st_, 0, np.array([0, 1]))
    np.testing.assert_allclose(H, [1.0, 5 - 1 / 6])
    H = drfh.fitness(st_, 1, np.array([0, 1]))
    np.testing.assert_allclose(H, [6 - 0.2, abs(0.2 - 1 / 6)])
    # "dominant" normalises by the user's global dominant resource (memory for user 1):
    H = drfh.fitness(st_, 0, np.array([0, 1]), fitness_ref="dominant")
    np.testing.assert_allclose(H, [abs(0.2 - 1 / 6), abs(0.2 - 6)])


def test_slots_server_holds_floor_min_slots_and_tasks_take_whole_slots():
    # max server (1, 1) / 4 slots -> slot (0.25, 0.25); server (0.5, 0.25) holds 1 slot, (1, 1) holds 4.
    C = [[1.0, 1.0], [0.5, 0.25]]
    D = [[0.1, 0.1], [0.3, 0.1]]          # 1 slot and 2 slots per task
    st_ = ClusterState.new(C, D)
    launches = allocate_static("slots", st_, n_slots=4)
    # slots held: u0 0 -> s0; u1 0 -> 2 slots on s0; u0 (1) -> s0 (last slot); u0 (2) -> s1; u1 (2): none fits.
    assert launches == [(0, 0), (1, 0), (0, 0), (0, 1)]
    assert slots.slots_per_task(np.array(D), slots.slot_size(np.array(C), 4)).tolist() == [1, 2]
    one = ClusterState.new(C, D)
    allocate_static("slots", one, n_slots=4, task_slots="one")
    assert one.tasks().tolist() == [3, 2]


def test_bind_rejects_unknown_names_and_options():
    st_ = ClusterState.new([1, 1], [[1, 1]])
    with pytest.raises(MrfqError, match="allocator = 'nope'"):
        bind("nope", st_)
    with pytest.raises(MrfqError, match="not an option of 'drf'"):
        bind("drf", st_, n_slots=3)
    with pytest.raises(MrfqError, match="blocked = 'x'"):
        bind("drf", st_, blocked="x")
    with pytest.raises(MrfqError, match="n_slots = 0"):
        bind("slots", st_, n_slots=0)


def test_finish_restores_free_and_fill_refuses_a_runaway_pick():
    st_ = ClusterState.new(DRFH_C, DRFH_D)
    allocate_static("drfh-best-fit", st_)
    st_.finish(0, 0)
    assert ALLOCATORS["drfh-best-fit"].pick(st_) == (0, 0)
    with pytest.raises(RuntimeError):
        fill(ClusterState.new([1], [[1]]), lambda s: (0, 0), max_launches=3)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 2), st.data())
def test_every_allocator_stays_feasible_and_stops_only_when_nothing_fits(S, U, R, data):
    cap = data.draw(st.lists(st.lists(st.integers(1, 8), min_size=R, max_size=R), min_size=S, max_size=S))
    dem = data.draw(st.lists(st.lists(st.integers(1, 4), min_size=R, max_size=R), min_size=U, max_size=U))
    w = data.draw(st.lists(st.integers(1, 3), min_size=U, max_size=U))
    for name in ("drf", "drfh-first-fit", "drfh-best-fit", "naive-drf", "slots"):
        s = ClusterState.new(cap, dem, weight=w)
        allocate_static(name, s)
        used = np.einsum("us,ur->sr", s.running, s.charge)
        assert np.all(used <= np.array(cap) + 1e-9), name
        np.testing.assert_allclose(s.free, np.array(cap, float) - used, atol=1e-9)
        # work conserving: when a "skip" mechanism stops, no pending task fits anywhere
        assert not any(s.fits(u).any() for u in range(U)), name


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), st.data())
def test_naive_drf_is_single_server_drf_on_every_server(S, U, R, data):
    # oracle: with backlogged users the servers are independent, and on one server the local dominant
    # share is the global one, so column s of naive-drf's result is task-level DRF on server s alone.
    cap = data.draw(st.lists(st.lists(st.integers(1, 9), min_size=R, max_size=R), min_size=S, max_size=S))
    dem = data.draw(st.lists(st.lists(st.integers(0, 4), min_size=R, max_size=R), min_size=U, max_size=U)
                    .filter(lambda d: all(max(row) > 0 for row in d)))
    w = data.draw(st.lists(st.integers(1, 3), min_size=U, max_size=U))
    s_all = ClusterState.new(cap, dem, weight=w)
    allocate_static("naive-drf", s_all)
    for s in range(S):
        one = ClusterState.new([cap[s]], dem, weight=w)
        allocate_static("drf", one)
        assert s_all.running[:, s].tolist() == one.running[:, 0].tolist()
