"""The forest against scikit-learn on the classification sets of the real-data corpus
(tests/forest_corpus.py; the method is in tests/test_forest_corpus.py's docstring)."""
from __future__ import annotations

import statistics
import time

from forest_corpus import CLASS_SEEDS, CLASS_TREES, SK_SEEDS, compare, table


def test_classification_matches_sklearn_on_real_data(native_backend, capsys):
    t0 = time.perf_counter()
    rows, gaps, own = compare(("classification",), native_backend)
    summary = (f"same draws: classification ({len(gaps)} sets) accuracy gap median "
               f"{statistics.median(gaps):+.2f}, worst {min(gaps):+.2f} points. RandomForest: accuracy gap "
               f"median {statistics.median(own):+.2f}, worst {min(own):+.2f} points ({CLASS_TREES} trees x "
               f"{CLASS_SEEDS} seeds, scikit-learn's forest x {SK_SEEDS}; {time.perf_counter() - t0:.0f} s)")
    with capsys.disabled():
        print("\n" + table(rows) + "\n" + summary)
    assert len(gaps) >= 10
    # The median at most half a point under; the worst at most 3 points: between two versions of
    # the same forest (other draws) a set's gap moved by 3 points on test sets of 43 to 130 rows,
    # so the 1 point on the worst set is below what these sets resolve.
    assert statistics.median(gaps) >= -0.5 and statistics.median(own) >= -0.5, summary
    assert min(gaps) >= -3.0, summary
