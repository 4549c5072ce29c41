"""Gradient boosting's parameters, spelled once: scikit-learn's `HistGradientBoostingRegressor` /
`HistGradientBoostingClassifier` names, defaults and constraints (scikit-learn 1.9), for the
losses and options the tab implements. The estimators validate from this table and their
signature equals it; the boosting job extends it, the server's runners (scikit-learn, XGBoost,
LightGBM) read their names and defaults from it, and the page's form its labels and ranges
(GET /api/kinds).

Left out of scikit-learn's: the losses gamma, poisson and quantile; monotonic_cst,
interaction_cst, warm_start, scoring (the loss is the score), class_weight and verbose.
"""
from __future__ import annotations

from ..params import Bool, Choice, Int, Null, Param, Params, Real

LOSSES = ("squared_error", "absolute_error", "log_loss")
MAX_BINS = 255              # bins of non-missing values a feature; one more holds the missing
EARLY_STOPPING_AUTO_ROWS = 10_000  # "auto": early stopping on above this many training rows
F32_MAX = 3.4028234663852886e38  # the largest f32: the kernels take the learning rate and L2 so

PARAMS = Params(
    "boosting",
    Param("loss", None, Null(), Choice(LOSSES), label="Loss",
          help="squared_error or absolute_error (regression), log_loss (classes); null: the task's default"),
    Param("learning_rate", 0.1, Real(0, F32_MAX, lo_open=True), label="Learning rate",
          help="shrinkage: each tree's leaves are multiplied by it"),
    Param("max_iter", 100, Int(1), label="Iterations",
          help="boosting iterations (one tree each, one a class for several classes)"),
    Param("max_leaf_nodes", 31, Null(), Int(2), label="Max leaves",
          help="leaves a tree, grown best-first; null: no limit"),
    Param("max_depth", None, Null(), Int(1), label="Max depth",
          help="levels below the root; null: no limit"),
    Param("min_samples_leaf", 20, Int(1), label="Min samples per leaf",
          help="rows each leaf keeps"),
    Param("l2_regularization", 0.0, Real(0, F32_MAX), label="L2 regularization",
          help="added to the hessian sums of the leaf values and the split gains"),
    Param("max_features", 1.0, Real(0, 1, lo_open=True, ints=False), label="Max features",
          help="fraction of the features drawn at each split"),
    Param("max_bins", MAX_BINS, Int(2, MAX_BINS), label="Bins per feature",
          help="quantile bins of the non-missing values; missing values get a bin of their own"),
    Param("categorical_features", "from_dtype", Null(), Choice(("from_dtype",)), label="Categorical features",
          help="from_dtype: the file's text and boolean columns split by category sets; null: by their codes' order"),
    Param("early_stopping", "auto", Choice(("auto",)), Bool(), label="Early stopping",
          help=f"stop when the validation loss stops improving; auto: on above {EARLY_STOPPING_AUTO_ROWS:,} rows"),
    Param("validation_fraction", 0.1, Null(), Real(0, 1, lo_open=True, hi_open=True, ints=False),
          label="Validation fraction", help="training rows held out to score early stopping"),
    Param("n_iter_no_change", 10, Int(1), label="Patience",
          help="iterations without improvement before early stopping"),
    Param("tol", 1e-7, Real(0), label="Tolerance",
          help="how much better the validation loss must be to count as improving"),
    Param("random_state", None, Null(), Int(0, 2**32 - 1), label="Seed",
          help="seed of the validation split and the feature draws (scikit-learn's range)"))


def default_loss(task: str) -> str:
    """scikit-learn's default loss of the task's estimator."""
    return "log_loss" if task == "classification" else "squared_error"


def most_leaves(rows: int, limit: int, min_samples_leaf: int, max_depth: int | None) -> int:
    """The most leaves a tree can grow, at least 2: `limit` (max_leaf_nodes, or a bound where
    there is none), rows / min_samples_leaf (each leaf keeps that many rows) and 2^max_depth,
    the power taken only where it can bind: max_depth may be 2^31 - 1, whose power is a number
    of 256 MB (19 s of CPU to compute, in the tab and in the server's rebuild for ONNX)."""
    leaves = min(limit, max(2, rows // min_samples_leaf))
    if max_depth is not None and max_depth < leaves.bit_length():
        leaves = min(leaves, 2 ** max_depth)
    return max(2, leaves)
