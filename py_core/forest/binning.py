"""Quantile bins of each feature, computed once on the CPU; rows are binned on the GPU.

A feature with at most `n_bins` distinct values gets one bin per value and thresholds halfway
between neighbours, so small data sees exactly scikit-learn's candidate splits. Otherwise the
thresholds are the midpoint percentiles of (a subsample of) the values, as scikit-learn's
HistGradientBoosting does. Everything is in f32, the precision the GPU compares in: a row goes
to bin j when exactly j of the feature's thresholds are below its value, so `x <= threshold[j]`
holds for bins 0..j and fails above.
"""
from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right

SUBSAMPLE = 100_000  # rows the thresholds are computed from (HistGradientBoosting: 200,000)
INF = float("inf")


def _f32(x: float) -> float:
    return array("f", [x])[0]


def midpoint(a: float, b: float) -> float:
    """An f32 m with a <= m < b, halfway when the rounding allows (a < b, both f32)."""
    m = _f32((a + b) / 2)
    return m if a <= m < b else a


def feature_bins(values: list[float], n_bins: int, distinct=None
                 ) -> tuple[list[float], list[float], list[float]]:
    """(thresholds, lo, hi) of one feature from its sorted f32 values (and, if known, their
    distinct values): len(thresholds) + 1 bins, lo/hi the smallest and largest value in each."""
    if distinct is None:
        distinct = set(values)
    if len(distinct) <= n_bins:
        distinct = sorted(distinct)
        return [midpoint(a, b) for a, b in zip(distinct, distinct[1:])], distinct, distinct
    m = len(values)
    cuts = set()
    for k in range(1, n_bins):
        h = (m - 1) * k / n_bins
        a, b = values[math.floor(h)], values[math.ceil(h)]
        cuts.add(a if a == b else midpoint(a, b))
    thresholds = sorted(cuts)
    if thresholds[-1] >= values[-1]:  # the top bin must hold the largest value
        thresholds.pop()
        below = values[bisect_left(values, values[-1]) - 1]  # exists: > n_bins distinct values
        if not thresholds or thresholds[-1] < below:
            thresholds.append(midpoint(below, values[-1]))
    # Bin j holds values[ends[j - 1]:ends[j]], the values above threshold j - 1 up to threshold j.
    ends = [bisect_right(values, t) for t in thresholds] + [m]
    lo, hi, start = [], [], 0
    for j, end in enumerate(ends):
        if end > start:
            lo.append(values[start])
            hi.append(values[end - 1])
        else:  # a bin empty in the sample: its bounds stand in for its values
            lo.append(thresholds[j - 1] if j else thresholds[0])
            hi.append(thresholds[j] if j < len(thresholds) else thresholds[-1])
        start = end
    return thresholds, lo, hi


def bin_edges(X: array, n: int, n_features: int, n_bins: int) -> tuple[array, array, list[list[float]]]:
    """(edges, fmeta, thresholds) for the kernels.

    edges: f32 (NB, 3): per global bin its upper threshold (inf for a feature's last bin), its
    smallest and its largest value. fmeta: u32 (F, 2): first global bin, number of bins.
    X: array('f'), row-major n x n_features.
    """
    step = -(-n // SUBSAMPLE)
    edges, fmeta, all_thresholds = array("f"), array("I"), []
    for f in range(n_features):
        col = X[f:n * n_features:n_features * step]
        values = col.tolist()
        distinct = set(values)
        if len(distinct) <= n_bins:
            values = distinct = sorted(distinct)
        else:
            values.sort()
        thresholds, lo, hi = feature_bins(values, n_bins, distinct)
        fmeta.extend((len(edges) // 3, len(thresholds) + 1))
        for j in range(len(thresholds) + 1):
            edges.extend((thresholds[j] if j < len(thresholds) else INF, lo[j], hi[j]))
        all_thresholds.append(thresholds)
    return edges, fmeta, all_thresholds
