"""The forest against scikit-learn on 30 real data sets (tests/forest_corpus.py): the same prepared
rows and features, scikit-learn's defaults (max_depth=None, min_samples_leaf=1, bootstrap,
max_features 1.0 for regression and sqrt for classes), TREES trees, SEEDS seeds.

Two forests stand for scikit-learn. "RandomForest": its own RandomForest* (its own bootstrap
draws), the mean over the seeds: what a person would run, printed for reference. "Same draws":
scikit-learn's RandomForest algorithm (a DecisionTree* per tree, fit with the tree's bootstrap
counts as sample weights, as RandomForest* does internally) given *our* bootstrap counts, so the
comparison is of the trees, not of two random number generators: this one is held to the issue's
bar for regression: over the regression sets the median of (our test MSE / scikit-learn's) within
1% and the worst within 5%.
For classes the draws matter less than the features each node draws (max_features sqrt), which
no seed can pair, and a test set of 30 to 500 rows moves a point a row or two: there our forests
are larger (CLASS_TREES trees, CLASS_SEEDS seeds) and the bar is held against scikit-learn's own
RandomForestClassifier averaged over SK_SEEDS seeds (cheap: it is scikit-learn's time) for the
median, and the same-draws forest for the worst (see the assertions for the bars).
The table is printed in the test output (and kept in docs/accuracy.md)."""
from __future__ import annotations

import statistics
import time

from forest_corpus import CORPUS, SEEDS, TREES, compare, table


def test_regression_matches_sklearn_on_real_data(native_backend, capsys):
    t0 = time.perf_counter()
    rows, ratios, own = compare(("regression",), native_backend)
    summary = (f"same draws: regression ({len(ratios)} sets) MSE ratio median {statistics.median(ratios):.4f}, "
               f"worst {max(ratios):.4f}. RandomForest: MSE ratio median {statistics.median(own):.4f}, "
               f"worst {max(own):.4f} ({TREES} trees x {SEEDS} seeds; {time.perf_counter() - t0:.0f} s)")
    with capsys.disabled():
        print("\n" + table(rows) + "\n" + summary)
    assert len(CORPUS) >= 25 and len(ratios) >= 10
    assert statistics.median(ratios) <= 1.01, summary  # the bar, on the same draws
    assert max(ratios) <= 1.05, summary
