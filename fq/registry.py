"""The scheduler registry: CLI, sweeps, benchmarks and tests enumerate it.

Adding a discipline = one kernel module in ``fq/`` with the common hooks
(``admit``, ``arrive``, ``start``), one line here, one branch in
:mod:`router.engine`'s dispatch, and its trace test.
"""

from __future__ import annotations

from dataclasses import dataclass

from flows.scenario import SCHEDULER_NAMES


@dataclass(frozen=True)
class SchedulerInfo:
    name: str
    code: int
    summary: str
    reference: str
    #: the fluid objective it is meant to realise (None for baselines)
    objective: str | None


P_DRFQ, P_DOVETAIL, P_PFSFQ, P_BMFWFQ, P_FIFO, P_FQSINGLE = range(6)

SCHEDULERS: dict[str, SchedulerInfo] = {
    "drfq": SchedulerInfo("drfq", P_DRFQ, "memoryless DRFQ, one start tag per packet",
                          "[BR] eq. 2; [DRFQ] sec. 4", "drf"),
    "drfq-dovetail": SchedulerInfo("drfq-dovetail", P_DOVETAIL, "dovetailing DRFQ, per-resource tags",
                                   "[DRFQ] sec. 4", "drf"),
    "pf-sfq": SchedulerInfo("pf-sfq", P_PFSFQ, "per-resource SFQ weighted by queue length",
                            "[BR] eq. 5", "pf"),
    "bmf-wfq": SchedulerInfo("bmf-wfq", P_BMFWFQ, "per-resource SFQ of resource time",
                             "[BR] eq. 7", "bmf"),
    "fifo": SchedulerInfo("fifo", P_FIFO, "FIFO at every resource", "baseline (SPEC 4.5)", None),
    "fq-single": SchedulerInfo("fq-single", P_FQSINGLE, "SFQ on one resource, FIFO elsewhere",
                               "baseline (SPEC 4.5)", None),
}

assert tuple(SCHEDULERS) == SCHEDULER_NAMES, "flows.scenario.SCHEDULER_NAMES out of date"
