"""Confidence intervals from batch means for ratio estimators.

The packet emulator splits the measurement window ``[warmup, T]`` into ``B``
equal batches and accumulates, per class and batch, a numerator ``Y_b`` and a
denominator ``X_b``.  The point estimate is the ratio of sums
``R = sum Y_b / sum X_b`` and its standard error comes from the batch
residuals ``d_b = Y_b - R X_b`` (the delta method for a ratio of means):

    se(R) = sqrt( sum_b d_b^2 / (B (B - 1)) ) / mean(X)

with a Student t quantile on ``B - 1`` degrees of freedom.  Batches that are
long compared with the correlation time of the process (here: many flow
lifetimes) make the batch means nearly independent; the number of batches is
``[run] batches`` (default 20).
"""

from __future__ import annotations

import math

import numpy as np

from mrfq.analysis.t_table import MAX_DOF, T_QUANTILES


def t_quantile(confidence: float, dof: int) -> float:
    """The two-sided Student t quantile: ``scipy.stats.t.ppf(0.5 + confidence / 2, dof)``, from
    ``scipy.special.stdtrit``, the function that ``ppf`` calls (the same bits; importing
    scipy.stats costs a warm ``mrfq run`` about a second).  For the confidences 0.9, 0.95, 0.99
    and up to :data:`analysis.t_table.MAX_DOF` degrees of freedom, scipy's values from a table
    (analysis/t_table.py: importing scipy.special alone costs a warm run about 0.2 s)."""
    row = T_QUANTILES.get(confidence)
    if row is not None and 1 <= dof <= MAX_DOF:
        return row[dof - 1]
    from scipy.special import stdtrit

    return float(stdtrit(dof, 0.5 + confidence / 2.0))


def ratio_ci(y: np.ndarray, x: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """(estimate, low, high) of ``sum y / sum x`` from per-batch sums; NaN where undefined: no
    data, or (the interval) fewer than two batches with data (their residuals would all be 0)."""
    y = np.asarray(y, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    sx = float(x.sum())
    if sx <= 0.0:
        return math.nan, math.nan, math.nan
    r = float(y.sum()) / sx
    B = len(x)
    if B < 2 or int(np.count_nonzero(x > 0.0)) < 2:  # all the data in one batch: no spread to estimate
        return r, math.nan, math.nan
    d = y - r * x
    se = math.sqrt(float((d * d).sum()) / (B * (B - 1))) / (sx / B)
    h = t_quantile(confidence, B - 1) * se
    return r, r - h, r + h
