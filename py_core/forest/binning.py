"""Quantile bins of each feature, from a sorted subsample of its values; rows are binned on the GPU.

A feature with at most max(n_bins, exact_bins) distinct values (exact_bins: 1024 by default) gets
one bin per value and thresholds halfway between neighbours, so small data sees exactly
scikit-learn's candidate splits; beyond 256 bins a feature takes 16 bits of the binned matrix
rather than 8 (`b16`: two bins a word, for every feature of that fit). Otherwise the
thresholds are the midpoint percentiles of (a subsample of) the values, as scikit-learn's
HistGradientBoosting does. Everything is in f32, the precision the GPU compares in: a row goes
to bin j when exactly j of the feature's thresholds are below its value, so `x <= threshold[j]`
holds for bins 0..j and fails above.

The subsample is every `step`-th row (`sample_shape`). GPU backends sort it on the device
(`sample` and `sort_pass` kernels) and pick the thresholds there too (the `thresholds` kernel,
whose reference is `feature_bins`, in py_core.kernels.forest: the same steps, bit for bit): only
the bins come back. `sorted_columns` sorts in Python
(the reference backend). Either way each feature's values are its f32 values, -0 made +0, sorted
ascending, so the thresholds are the same on every backend. From the sorted values only
O(n_bins log m) are read.
"""
from __future__ import annotations

from array import array

from ..kernels.forest import feature_bins

SUBSAMPLE = 100_000  # rows the thresholds are computed from (HistGradientBoosting: 200,000)
INF = float("inf")


def sample_shape(n: int) -> tuple[int, int, int]:
    """(step, m, SM): every step-th row, m of them, padded to SM = a power of two (for the sort)."""
    step = -(-n // SUBSAMPLE)
    m = -(-n // step)
    return step, m, 1 << max(0, (m - 1).bit_length())


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


def edges_from_sorted(columns, n_bins: int, exact: int = 0) -> tuple[array, array, list[list[float]]]:
    """(edges, fmeta, thresholds) for the kernels from each feature's sorted values.

    edges: f32 (NB, 3): per global bin its upper threshold (inf for a feature's last bin), its
    smallest and its largest value. fmeta: u32 (F, 2): first global bin, number of bins.
    """
    edges, fmeta, all_thresholds = array("f"), array("I"), []
    for values in columns:
        thresholds, lo, hi = feature_bins(values, n_bins, exact)
        fmeta.extend((len(edges) // 3, len(thresholds) + 1))
        for j in range(len(thresholds) + 1):
            edges.extend((thresholds[j] if j < len(thresholds) else INF, lo[j], hi[j]))
        all_thresholds.append(thresholds)
    return edges, fmeta, all_thresholds


def bin_edges(X: array, n: int, n_features: int, n_bins: int,
              exact: int = 0) -> tuple[array, array, list[list[float]]]:
    """`edges_from_sorted` of X's sorted subsample (X: array('f'/'d'), row-major)."""
    return edges_from_sorted(sorted_columns(X, n, n_features), n_bins, exact)
