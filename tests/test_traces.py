"""Exact service traces against hand-computed virtual-time examples (docs/schedulers.md, 'Hand-checked traces').

Each expected list was worked out by hand from the tag rules and the event
order of docs/schedulers.md, 'Event order and ties' (see the comments); the engine must reproduce it exactly.
"""

import pytest

from mrfq import flows
from mrfq.fq import dovetail, drfq, sfq
from mrfq.router.run import simulate

pytestmark = pytest.mark.nojit


def starts(result, resource, n):
    names = [f.name for f in result.scenario.flows]
    return result.trace.rows(names, resource=resource)[:n]


def test_drfq_trace_spec_4_6():
    # f1 s = (1, 1/2), f2 s = (1/2, 1), N = 2; S_1^k = S_2^k = k - 1
    r = simulate(flows.load_preset("oracle-drfq-trace"), scheduler="drfq", trace=200)
    assert starts(r, 0, 5) == [(0.0, "f1", 1), (1.0, "f2", 1), (1.5, "f1", 2), (2.5, "f2", 2), (3.0, "f1", 3)]
    assert starts(r, 1, 4) == [(1.0, "f1", 1), (1.5, "f2", 1), (2.5, "f1", 2), (3.0, "f2", 2)]
    # flow 1's k-th packet leaves at 1.5k, flow 2's at 1.5k + 1 (ends of link services)
    tr = r.trace
    ends = {}
    for i in range(len(tr.start)):
        if tr.resource[i] == 1:
            ends[(int(tr.flow[i]), int(tr.seq[i]))] = float(tr.end[i])
    for k in range(1, 10):
        assert ends[(0, k)] == 1.5 * k
        assert ends[(1, k)] == 1.5 * k + 1


def test_drfq_trace_both_virtual_times_agree_here():
    a = simulate(flows.load_preset("oracle-drfq-trace"), scheduler="drfq", trace=60)
    b = simulate(flows.load_preset("oracle-drfq-trace"), scheduler="drfq", virtual_time="in-service", trace=60)
    assert starts(a, 0, 20) == starts(b, 0, 20)


def test_drfq_virtual_time_rules_differ_by_hand():
    """A trace where the `started` ([BR]) and `in-service` ([DRFQ]) virtual times disagree.

    f1 s = (1/4, 1) backlogged from 0, window 2; f2 s = (1/4, 1), one packet, starts at 2.75.
    f1's tags S = 0, 1, 2, ... (F = S + 1).  The idle CPU runs ahead of the link: at 2.75 the
    link serves f1p3 (S = 2) while f1p4 (S = 3, begun on the CPU at 2.25) waits for it.
    * started: V(2.75) = 3 (largest start tag begun) -> f2p1 S = 3, ties f1p4 and loses on flow
      id: the link serves f1p4 at 3.25, f2p1 at 4.25.
    * in-service: V(2.75) = 2 (f1p3 on the link; the CPU is idle) -> f2p1 S = 2: the link serves
      f2p1 at 3.25, f1p4 at 4.25.  At 3.25 nothing is in service, V = largest finish tag begun = 4,
      f1p5 S = max(4, F = 4) = 4.  f1p4's departure, and with it f1p6's admission at the CPU,
      moves from 4.25 to 5.25.
    """
    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"window": 2}, "run": {"duration": 8.0},
                          "flow": [{"name": "f1", "cost": [0.25, 1.0]},
                                   {"name": "f2", "cost": [0.25, 1.0], "packets": 1, "start": 2.75}]})
    a = simulate(sc, scheduler="drfq", virtual_time="started", trace=100)
    b = simulate(sc, scheduler="drfq", virtual_time="in-service", trace=100)
    common_cpu = [(0.0, "f1", 1), (0.25, "f1", 2), (1.25, "f1", 3), (2.25, "f1", 4), (2.75, "f2", 1),
                  (3.25, "f1", 5)]
    assert starts(a, 0, 8) == common_cpu + [(4.25, "f1", 6), (6.25, "f1", 7)]
    assert starts(b, 0, 8) == common_cpu + [(5.25, "f1", 6), (6.25, "f1", 7)]
    common_link = [(0.25, "f1", 1), (1.25, "f1", 2), (2.25, "f1", 3)]
    assert starts(a, 1, 7) == common_link + [(3.25, "f1", 4), (4.25, "f2", 1), (5.25, "f1", 5), (6.25, "f1", 6)]
    assert starts(b, 1, 7) == common_link + [(3.25, "f2", 1), (4.25, "f1", 4), (5.25, "f1", 5), (6.25, "f1", 6)]


def test_drfq_memoryless_spec_4_6():
    # f1 alone from 0 (tags 0, 1, 2, ...); f2 joins at 9.5 when V = 9: tags 9, 10, 11, ...
    r = simulate(flows.load_preset("oracle-memoryless"), scheduler="drfq", trace=400)
    cpu = [row for row in starts(r, 0, 200) if row[0] >= 9.0][:8]
    assert cpu == [
        (9.0, "f1", 10),   # S = 9, V(9.5) = 9
        (10.0, "f2", 1),   # S = 9 beats f1p11 (S = 10)
        (10.5, "f1", 11),  # S = 10 ties f2p2 (S = 10): smaller flow id
        (11.5, "f2", 2),
        (12.0, "f1", 12),
        (13.0, "f2", 3),
        (13.5, "f1", 13),
        (14.5, "f2", 4),
    ]


def test_bmf_wfq_trace_spec_4_6():
    r = simulate(flows.load_preset("oracle-drfq-trace"), scheduler="bmf-wfq", trace=200)
    assert starts(r, 0, 7) == [(0.0, "f1", 1), (1.0, "f2", 1), (1.5, "f2", 2), (2.0, "f1", 2),
                               (3.0, "f2", 3), (3.5, "f2", 4), (4.0, "f1", 3)]
    assert starts(r, 1, 5) == [(1.0, "f1", 1), (1.5, "f2", 1), (2.5, "f2", 2), (3.5, "f1", 2), (4.0, "f2", 3)]


def test_fifo_trace_by_hand():
    # FIFO: key = arrival time at the resource, ties by flow id then sequence.
    # t=0: cpu queue f1p1 f1p2 f2p1 f2p2 (all key 0) -> f1p1 [0,1], f1p2 [1,2], f2p1 [2,2.5], f2p2 [2.5,3]
    # f1p1 leaves the link at 1.5 and admits f1p3 (key 1.5 at cpu) which waits behind f2p2.
    r = simulate(flows.load_preset("oracle-drfq-trace"), scheduler="fifo", trace=200)
    assert starts(r, 0, 5) == [(0.0, "f1", 1), (1.0, "f1", 2), (2.0, "f2", 1), (2.5, "f2", 2), (3.0, "f1", 3)]
    assert starts(r, 1, 4) == [(1.0, "f1", 1), (2.0, "f1", 2), (2.5, "f2", 1), (3.5, "f2", 2)]


def test_pf_sfq_trace_by_hand():
    # PF-SFQ, same flows, N = 2.  At t=0 cpu tags with Q counted incl. the arriving packet:
    # f1p1 Q=1: S=0 F=1; f1p2 Q=2: S=1 F=1.5; f2p1 Q=1: S=0 F=0.5; f2p2 Q=2: S=0.5 F=0.75.
    # cpu: f1p1 [0,1] (S=0, id 0); t=1: f2p1 (S=0) [1,1.5]; f1p1 -> link S=0 F=0.5.
    # t=1.5: f2p1 -> link (Q_link(f2)=1) S=max(V=0,0)=0; f1p1 leaves, f1p3 admitted at cpu with
    #        Q=2 (f1p2 waiting + itself): S=max(V_cpu=0, F=1.5)=1.5.  cpu picks f2p2 (S=0.5).
    r = simulate(flows.load_preset("oracle-drfq-trace"), scheduler="pf-sfq", trace=200)
    assert starts(r, 0, 4) == [(0.0, "f1", 1), (1.0, "f2", 1), (1.5, "f2", 2), (2.0, "f1", 2)]
    assert starts(r, 1, 2) == [(1.0, "f1", 1), (1.5, "f2", 1)]


def test_dovetail_equals_memoryless_for_proportional_constant_costs():
    # docs/schedulers.md, 'drfq-dovetail': identical to memoryless DRFQ when s_ij is constant and
    # proportional to one vector
    sc = flows.from_dict({"resources": ["cpu", "link"], "router": {"window": 3}, "run": {"duration": 60.0},
                          "flow": [{"cost": [1.0, 0.5]}, {"cost": [0.5, 0.25]}, {"cost": [1.0, 0.5], "start": 7.25}]})
    a = simulate(sc, scheduler="drfq", trace=1000)
    b = simulate(sc, scheduler="drfq-dovetail", trace=1000)
    assert a.trace.rows() == b.trace.rows()


def test_twins_match_hand_values():
    st = {"V": 0.0, "F": {}}
    assert drfq.twin_admit(st, 0, [1.0, 0.5], 1.0) == (0.0, 1.0)
    assert drfq.twin_admit(st, 0, [1.0, 0.5], 1.0) == (1.0, 2.0)
    st["V"] = 9.0
    assert drfq.twin_admit(st, 1, [0.5, 1.0], 1.0) == (9.0, 10.0)
    d = {"V": [0.0, 0.0], "F": {}}
    assert dovetail.twin_admit(d, 0, [1.0, 0.25], 2.0) == 0.0
    assert dovetail.twin_admit(d, 0, [0.0, 1.0], 2.0) == 0.125  # skipped cpu: F_cpu unchanged
    q = {"V": [0.0], "F": {}}
    assert sfq.twin_arrive(q, 0, 0, 1.0, 2.0) == (0.0, 0.5)
    assert sfq.twin_arrive(q, 0, 0, 1.0, 2.0) == (0.5, 1.0)
