"""scikit-learn's fitted HistGradientBoosting* in py_core.boosting's JSON format (test side only).

Until the tab's booster lands, the server's boosting code (its ONNX export, its snippet) is
tested on models scikit-learn fits, converted here from `est._predictors`. That the converted
model predicts what scikit-learn predicts also shows that the format describes scikit-learn's
model. What scikit-learn does that the format spells otherwise:

- its categorical columns come first inside the estimator (`_preprocess_X`): feature indices are
  mapped back to the data's columns;
- it encodes a categorical column's values 0..k-1 in sorted order (an OrdinalEncoder fit on the
  training rows) and treats a value it never saw as missing: the format's codes are the data's
  own, so each split's categories_left lists the data's codes, the unseen ones included where
  missing values go left;
- its thresholds are float64 midpoints: the format's is an f32, the largest at or below it (for
  an f32 value x, x <= t exactly when x <= that f32), and +inf ("split on missing values": all
  the others go left) is the largest f32.

Data for it: every value an f32 (X.astype(float32)), missing values NaN, a categorical column's
values small non-negative integer codes.
"""
from __future__ import annotations

import numpy as np

from py_core.boosting import PARAMS

F32_MAX = float(np.finfo(np.float32).max)


def f32_at_or_below(t: float) -> float:
    if t == np.inf:
        return F32_MAX
    f = np.float32(t)
    if float(f) > t:
        f = np.nextafter(f, np.float32(-np.inf))
    return float(f)


def to_model(est, n_codes: dict | None = None) -> dict:
    """The JSON format of a fitted HistGradientBoostingRegressor/Classifier. n_codes: for each
    categorical column (its index in the data), how many codes the data has (codes 0..n-1)."""
    F = est.n_features_in_
    is_cat = est.is_categorical_ if est.is_categorical_ is not None else np.zeros(F, bool)
    column = [*np.flatnonzero(is_cat), *np.flatnonzero(~is_cat)]  # estimator's feature -> data's
    known = (est._preprocessor.named_transformers_["encoder"].categories_
             if is_cat.any() else [])
    classify = hasattr(est, "classes_")
    K = est.n_trees_per_iteration_
    trees, gains = [], np.zeros(F)
    for iteration in est._predictors:
        for predictor in iteration:
            trees.append(_tree(predictor, column, known, n_codes or {}, gains))
    params = {k: v for k, v in est.get_params().items() if k in PARAMS.names()}
    params["categorical_features"] = "from_dtype"
    out = {"format": "py_core.boosting", "version": 1,
           "estimator": type(est).__name__, "params": params,
           "loss": "log_loss" if classify else est.loss, "n_features": F, "n_trees_per_iteration": K,
           "n_iter": int(est.n_iter_),
           "baseline": [float(v) for v in np.ravel(est._baseline_prediction)],
           "categorical": [bool(c) for c in is_cat],
           "feature_importances": [float(g) for g in gains / max(gains.sum(), 1e-300)],
           "trees": trees}
    if classify:
        out["classes"] = [c.item() if isinstance(c, np.generic) else c for c in est.classes_]
    return out


def _tree(predictor, column, known, n_codes, gains) -> dict:
    nodes, bitsets = predictor.nodes, predictor.raw_left_cat_bitsets
    t = {k: [] for k in ("feature", "threshold", "missing_left", "categories_left", "left",
                         "right", "value")}
    for node in nodes:
        leaf = bool(node["is_leaf"])
        f = -1 if leaf else int(column[node["feature_idx"]])
        cats = None
        if not leaf and node["is_categorical"]:
            # the estimator's code c is the data's values[c]; NaN last, if any, is missing
            values = [v for v in known[node["feature_idx"]] if v == v]
            bits = bitsets[node["bitset_idx"]]
            cats = {int(values[c]) for c in range(len(values)) if bits[c >> 5] >> (c & 31) & 1}
            if node["missing_go_to_left"]:  # codes it never saw go the missing values' way
                cats |= set(range(n_codes.get(f, 0))) - {int(v) for v in values}
            cats = sorted(cats)
        if not leaf:
            gains[f] += max(float(node["gain"]), 0.0)
        t["feature"].append(f)
        t["threshold"].append(0.0 if leaf or cats is not None
                              else f32_at_or_below(float(node["num_threshold"])))
        t["missing_left"].append(bool(node["missing_go_to_left"]) and not leaf)
        t["categories_left"].append(cats)
        t["left"].append(-1 if leaf else int(node["left"]))
        t["right"].append(-1 if leaf else int(node["right"]))
        t["value"].append(float(node["value"]) if leaf else 0.0)
    return t
