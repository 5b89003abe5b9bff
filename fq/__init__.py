"""Schedulers: numba-compiled start-time fair queueing variants (one module each)."""

from fq.registry import SCHEDULERS, SchedulerInfo

__all__ = ["SCHEDULERS", "SchedulerInfo"]
