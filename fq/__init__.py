"""Schedulers: one module per discipline on one contract (fq/contract.py), listed in fq/registry.py."""

from mrfq.fq.registry import SCHEDULERS, SchedulerInfo

__all__ = ["SCHEDULERS", "SchedulerInfo"]
