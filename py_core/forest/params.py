"""The forest's parameters, spelled once: scikit-learn's names, defaults and constraints, plus
`n_bins` and `exact_bins`. The estimators validate from this table and their signature equals it
(tests/test_kinds.py); the forest job extends it (py_core/jobs/forest_job.py), the server's runners
read their names and defaults from it, and the page's form its labels and ranges (GET /api/kinds).
"""
from __future__ import annotations

import math

from ..kernels.forest import CRITERIA
from ..params import Bool, Choice, Int, Null, Param, Params, Real

MAX_BINS = 256              # quantile bins of a feature
EXACT_BINS_MAX = 2**16      # bins of 16 bits in the binned matrix

PARAMS = Params(
    "forest",
    Param("n_estimators", 100, Int(1), label="Trees", help="trees"),
    Param("criterion", None, Null(), Choice(tuple(CRITERIA)), label="Criterion",
          help="split quality: squared_error (regression), gini or entropy (classes)"),
    Param("max_depth", None, Null(), Int(1), label="Max depth",
          help="levels below the root; null: no limit"),
    Param("min_samples_split", 2, Int(2), Real(0, 1, lo_open=True, ints=False),
          label="Min samples to split", help="rows a node needs to split (a fraction: of the training rows)"),
    Param("min_samples_leaf", 1, Int(1), Real(0, 1, lo_open=True, hi_open=True, ints=False),
          label="Min samples per leaf", help="rows each child keeps (a fraction: of the training rows)"),
    Param("max_features", "default", Null(), Choice(("sqrt", "log2", "default")), Int(1),
          Real(0, 1, lo_open=True, ints=False), label="Max features",
          help="features drawn at a split; default: sqrt for classes, all for regression"),
    Param("bootstrap", True, Bool(), label="Bootstrap", help="each tree on a bootstrap sample of the rows"),
    Param("oob_score", False, Bool(), label="Out-of-bag score",
          help="score each row by the trees that did not see it"),
    Param("random_state", None, Null(), Int(0, 2**32 - 1), label="Seed", help="seed (scikit-learn's range)"),
    Param("n_bins", MAX_BINS, Int(2, MAX_BINS), label="Bins per feature",
          help="quantile bins of a feature of many values"),
    Param("exact_bins", 1024, Int(0, EXACT_BINS_MAX), label="Exact bins",
          help="a bin a value up to this many values"))


def features_per_split(max_features, n_features: int) -> int:
    """How many features a split draws for `max_features` (scikit-learn's meaning; None and
    "default" all of them: callers resolve "default" by task first), checked by the table; it may
    exceed n_features (the estimators refuse that, the server's peers clamp it)."""
    mf = PARAMS.params["max_features"].check(max_features)
    if mf is None or mf == "default":
        return n_features
    if mf == "sqrt":
        return max(1, int(math.sqrt(n_features)))
    if mf == "log2":
        return max(1, int(math.log2(n_features)))
    if isinstance(mf, float):
        return max(1, int(mf * n_features))
    return mf
