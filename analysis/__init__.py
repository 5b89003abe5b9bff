"""Fluid models and analysis: static allocations (DRF, PF, BMF, asset fairness, CEEI),
per-state allocations, the flow-level Markov model of [BR] §4.1, CLI handlers and plots.

Only the numpy-based static allocations are imported here; ``analysis.state_rates``
and ``analysis.markov`` (numba, scipy.sparse) and ``analysis.plots`` (matplotlib) are
imported on demand.
"""

from mrfq.analysis.allocations import (
    Allocation,
    asset_fairness,
    bmf,
    ceei,
    drf,
    is_bmf,
    pf,
)
from mrfq.analysis.objectives import ALLOC as OBJECTIVES
from mrfq.analysis.objectives import allocate

__all__ = ["OBJECTIVES", "Allocation", "allocate", "asset_fairness", "bmf", "ceei", "drf", "is_bmf", "pf"]
