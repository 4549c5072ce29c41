"""Quantile bins of each feature, from a sorted subsample of its values; rows are binned on the GPU.

A feature with at most `n_bins` distinct values gets one bin per value and thresholds halfway
between neighbours, so small data sees exactly scikit-learn's candidate splits. Otherwise the
thresholds are the midpoint percentiles of (a subsample of) the values, as scikit-learn's
HistGradientBoosting does. Everything is in f32, the precision the GPU compares in: a row goes
to bin j when exactly j of the feature's thresholds are below its value, so `x <= threshold[j]`
holds for bins 0..j and fails above.

The subsample is every `step`-th row (`sample_shape`). GPU backends sort it on the device
(`sample` and `sort_pass` kernels) and pick the thresholds there too (`thresholds`, the same
steps as `feature_bins`, bit for bit): only the bins come back. `sorted_columns` sorts in Python
(the reference backend). Either way each feature's values are its f32 values, -0 made +0, sorted
ascending, so the thresholds are the same on every backend. From the sorted values only
O(n_bins log m) are read.
"""
from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right

from ..kernels.forest import mid_down

SUBSAMPLE = 100_000  # rows the thresholds are computed from (HistGradientBoosting: 200,000)
INF = float("inf")


def sample_shape(n: int) -> tuple[int, int, int]:
    """(step, m, SM): every step-th row, m of them, padded to SM = a power of two (for the sort)."""
    step = -(-n // SUBSAMPLE)
    m = -(-n // step)
    return step, m, 1 << max(0, (m - 1).bit_length())


def midpoint(a: float, b: float) -> float:
    """The largest f32 m <= (a + b) / 2 (a < b, both f32), so a <= m < b: an f32 value goes to
    the same side of m as of the real midpoint (scikit-learn's f64 threshold)."""
    return mid_down(a, b)


def distinct_upto(values, limit: int) -> list[float] | None:
    """The distinct values of a sorted sequence if there are at most `limit`, else None: found
    by bisection, O(limit log m) steps."""
    out, i, m = [], 0, len(values)
    while i < m:
        if len(out) == limit:
            return None
        v = values[i]
        out.append(v)
        i = bisect_right(values, v, i)
    return out


def feature_bins(values, n_bins: int) -> tuple[list[float], list[float], list[float]]:
    """(thresholds, lo, hi) of one feature from its sorted f32 values (a list or an array):
    len(thresholds) + 1 bins, lo/hi the smallest and largest value in each."""
    distinct = distinct_upto(values, n_bins)
    if distinct is not None:
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


def sorted_columns(X: array, n: int, n_features: int) -> list:
    """Each feature's subsample, sorted, in Python (what `sample` + `sort_pass` give on a GPU).
    X: row-major n x n_features, array('f') or array('d') (rounded to f32 here)."""
    step = sample_shape(n)[0]
    out = []
    for f in range(n_features):
        col = X[f:n * n_features:n_features * step]
        if col.typecode != "f":
            col = array("f", col)
        out.append(sorted(v + 0.0 for v in col))  # -0 + 0 is +0
    return out


def edges_from_sorted(columns, n_bins: int) -> tuple[array, array, list[list[float]]]:
    """(edges, fmeta, thresholds) for the kernels from each feature's sorted values.

    edges: f32 (NB, 3): per global bin its upper threshold (inf for a feature's last bin), its
    smallest and its largest value. fmeta: u32 (F, 2): first global bin, number of bins.
    """
    edges, fmeta, all_thresholds = array("f"), array("I"), []
    for values in columns:
        thresholds, lo, hi = feature_bins(values, n_bins)
        fmeta.extend((len(edges) // 3, len(thresholds) + 1))
        for j in range(len(thresholds) + 1):
            edges.extend((thresholds[j] if j < len(thresholds) else INF, lo[j], hi[j]))
        all_thresholds.append(thresholds)
    return edges, fmeta, all_thresholds


def bin_edges(X: array, n: int, n_features: int, n_bins: int) -> tuple[array, array, list[list[float]]]:
    """`edges_from_sorted` of X's sorted subsample (X: array('f'/'d'), row-major)."""
    return edges_from_sorted(sorted_columns(X, n, n_features), n_bins)
