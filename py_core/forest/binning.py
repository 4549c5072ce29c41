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
from bisect import bisect_left

SUBSAMPLE = 200_000  # rows the thresholds are computed from, as HistGradientBoosting
INF = float("inf")


def _f32(x: float) -> float:
    return array("f", [x])[0]


def midpoint(a: float, b: float) -> float:
    """An f32 m with a <= m < b, halfway when the rounding allows (a < b, both f32)."""
    m = _f32((a + b) / 2)
    return m if a <= m < b else a


def feature_bins(values: list[float], n_bins: int) -> tuple[list[float], list[float], list[float]]:
    """(thresholds, lo, hi) of one feature from its sorted f32 values: len(thresholds) + 1 bins,
    lo/hi the smallest and largest value seen in each bin."""
    distinct = [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]
    if len(distinct) <= n_bins:
        return [midpoint(a, b) for a, b in zip(distinct, distinct[1:])], distinct, distinct
    m = len(values)
    cuts = set()
    for k in range(1, n_bins):
        h = (m - 1) * k / n_bins
        a, b = values[math.floor(h)], values[math.ceil(h)]
        cuts.add(a if a == b else midpoint(a, b))
    thresholds = sorted(cuts)
    if thresholds and thresholds[-1] >= distinct[-1]:  # the top bin must hold the largest value
        thresholds.pop()
    nb = len(thresholds) + 1
    lo, hi = [None] * nb, [None] * nb
    for v in distinct:
        j = bisect_left(thresholds, v)
        if lo[j] is None:
            lo[j] = v
        hi[j] = v
    for j in range(nb):  # a bin empty in the sample: its bounds stand in for its values
        if lo[j] is None:
            lo[j] = thresholds[j - 1] if j else thresholds[0]
            hi[j] = thresholds[j] if j < nb - 1 else thresholds[-1]
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
        thresholds, lo, hi = feature_bins(sorted(col.tolist()), n_bins)
        fmeta.extend((len(edges) // 3, len(thresholds) + 1))
        for j in range(len(thresholds) + 1):
            edges.extend((thresholds[j] if j < len(thresholds) else INF, lo[j], hi[j]))
        all_thresholds.append(thresholds)
    return edges, fmeta, all_thresholds
