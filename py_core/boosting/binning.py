"""Each feature's bins: quantile thresholds of its non-missing values, as HistGradientBoosting's.

A feature of at most max_bins distinct values gets a bin per value (thresholds halfway between
neighbours); others the midpoint percentiles of their values, from every step-th row
(py_core.forest.binning's subsample and `feature_bins`, the same thresholds the forest uses).
Missing values (NaN) take no part: `bin_rows` puts them in a bin of their own, the last (B - 1)
of every feature, as scikit-learn does. GPU backends find the same bits on the device, with the
forest's kernels (grower.py: `sample`, `sort_pass`, `thresholds`, whose references are
py_core.kernels.forest's); `thresholds` here is the reference backend's way, in Python.
"""
from __future__ import annotations

import math
from array import array

from ..forest.binning import sample_shape
from ..kernels.forest import feature_bins

INF = float("inf")


def thresholds(X: array, n: int, F: int, max_bins: int) -> tuple[list[list[float]], list]:
    """Each feature's f32 thresholds (ascending: x <= thresholds[j] for bins 0..j), and each
    feature's value of each bin where it has a bin per value (else None): a categorical
    feature's category codes."""
    step = sample_shape(n)[0]
    out, codes = [], []
    for f in range(F):
        col = array("f", X[f:n * F:F * step]).tolist()
        # NaN left out, and infinities (the fit refuses them once binned);
        # -0 made +0, as the device's `sample` makes it (equal values, equal bits)
        values = sorted(v + 0.0 for v in col if math.isfinite(v))
        th, lo, hi = feature_bins(values, max_bins, 0) if values else ([], [], [])
        out.append(th)
        codes.append(list(lo) if lo == hi and len(lo) == len(th) + 1 else None)
    return out, codes


def category_codes(values) -> bool:
    """Whether a bin per value holds category codes the trees can name: integers in 0..255."""
    return values is not None and all(v == int(v) and 0 <= v < 256 for v in values)


def edges(all_thresholds: list[list[float]]) -> tuple[array, array, int]:
    """(edges, nthr, B) for the kernels: B bins a feature (the most any has, plus the missing
    values'), edges (F, B) f32: a feature's thresholds, then +inf; nthr (F): their number."""
    B = max(len(t) for t in all_thresholds) + 2
    out, nthr = array("f"), array("I")
    for t in all_thresholds:
        out.extend(t)
        out.extend([INF] * (B - len(t)))
        nthr.append(len(t))
    return out, nthr, B
