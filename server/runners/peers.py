"""XGBoost and LightGBM in random-forest mode: the peers a practitioner would pick instead.

Both are gradient-boosting libraries with a forest mode; neither is scikit-learn's algorithm, so each
runner maps the job's parameters as closely as its library allows and lists what differs in
`notes` (shown in the page's comparison table) and what it could not map in `ignored`.

    xgboost   XGBRFRegressor / XGBRFClassifier: one boosting round of `num_parallel_tree` =
              n_estimators trees, learning_rate 1, reg_lambda 0 (a leaf is its rows' mean
              residual), row subsample 0.632 WITHOUT replacement (XGBoost cannot bootstrap),
              colsample_bynode = max_features / features, max_bin = n_bins, tree_method hist.
              max_depth None: max_depth 0 with grow_policy depthwise and max_leaves 0 (hist's
              "no limit": trees grow until a leaf's hessian sum is below min_child_weight, the
              same fully grown trees as lossguide, measured faster).
              On CUDA when the server's device is cuda and the installed xgboost is the CUDA
              build (`pip install xgboost`; the xgboost-cpu wheel of the `peers` extra is CPU
              only), else on every CPU core.
    lightgbm  boosting "rf": bagging_fraction 0.632 with bagging_freq 1 (also without
              replacement), feature_fraction_bynode from max_features, max_bin = n_bins,
              min_data_in_leaf = min_samples_leaf, max_depth with num_leaves = 2**max_depth
              (None: max_depth -1, num_leaves = train rows // min_samples_leaf, at most 131072).
              The PyPI wheel runs on the CPU.

Classification in both: one round of the softmax (multiclass) or logistic (binary) loss, so a tree
predicts a Newton step of log-odds, not class fractions; the forest averages them, then softmax.
Splits follow that loss's gradient (criterion gini/entropy is not used).
"""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

from py_core.forest.params import features_per_split

from .common import (
    Runner,
    cpu_name,
    encode_labels,
    fit_and_score,
    forest_rows,
    gpu_name,
    job_params,
    needs,
    require,
    versions,
)

SUBSAMPLE = 0.632  # the expected share of distinct rows in a bootstrap sample: 1 - 1/e
MAX_LEAVES_LGBM = 131072  # LightGBM's largest num_leaves


def _common(params: dict, task: str, n_features: int, n_train: int):
    """The job's parameters in the shape both libraries need, and what neither maps; read from
    the forest's table (common.job_params), defaults filled in, never from the raw JSON."""
    given, p = job_params("random_forest", params)
    mf = p["max_features"]
    if mf == "default":
        mf = "sqrt" if task == "classification" else 1.0
    k = min(n_features, features_per_split(mf, n_features))  # the estimators' own count
    criterion = p["criterion"]
    ignored = sorted(set(given) & {"min_samples_split", "oob_score"})
    notes = []
    if criterion is not None and criterion != "squared_error":
        notes.append(f"criterion {criterion} not used: splits follow the log-loss gradient")
    msl = p["min_samples_leaf"]
    if isinstance(msl, float):  # a fraction of the training rows, as scikit-learn counts it
        msl = max(1, math.ceil(msl * n_train))
    return {
        "n_estimators": p["n_estimators"],
        "max_depth": p["max_depth"],
        "min_samples_leaf": msl,
        "fraction": k / n_features,
        "features_per_split": k,
        "bootstrap": p["bootstrap"],
        "n_bins": p["n_bins"],
        "seed": p["random_state"],
        "leaves_unlimited": max(2, n_train // msl),
    }, ignored, notes


def _seeded(kwargs: dict, p: dict, ignored: list, notes: list, n_features: int, sampled: str):
    """How both mappings end: the seed, and the note `sampled` when a split draws fewer than
    every feature; (kwargs, ignored, notes)."""
    if p["seed"] is not None:
        kwargs["random_state"] = p["seed"]
    if p["features_per_split"] != n_features:
        notes.append(sampled)
    return kwargs, sorted(ignored), notes


def peer_result(name, device, hardware, vers, scored, kwargs, ignored, notes, **more):
    return {"runner": name, "device": device, "hardware": hardware, "versions": vers, **scored,
            "params": kwargs, "ignored": ignored, "note": "; ".join(notes), "notes": notes,
            **more}


def _fit(model, rows, t0) -> dict:
    """Both libraries fit class codes 0..k-1 of the classes seen (encode_labels)."""
    if rows.task == "regression":
        return fit_and_score(model, rows, t0)
    labels, seen = encode_labels(rows.y_train)
    return fit_and_score(model, rows, t0, labels, seen)


def _run(name: str, job: dict, data_dir: Path, device: str, check, model_of, vers: tuple) -> dict:
    """Both runners: refused without their library, the job's rows read, the parameters mapped
    by `model_of(rows, params, device)` -> (estimator class, kwargs, ignored, notes, where: model
    -> the device it ran on), fitted and scored; the total time counts the library's import."""
    require(check(device))
    t0 = time.perf_counter()
    rows = forest_rows(job, data_dir)
    cls, kwargs, ignored, notes, where = model_of(rows, job.get("params") or {}, device)
    model = cls(**kwargs)
    scored = _fit(model, rows, t0)
    used = where(model)
    return peer_result(name, used, gpu_name() if used.startswith("cuda") else cpu_name(), versions(*vers),
                   scored, kwargs, ignored, notes)


# -- XGBoost -----------------------------------------------------------------------------------

def xgboost_cuda() -> bool:
    import xgboost
    return bool(xgboost.build_info().get("USE_CUDA"))


def xgboost_kwargs(params: dict, task: str, n_features: int, n_train: int, device: str):
    p, ignored, notes = _common(params, task, n_features, n_train)
    kwargs = {"n_estimators": p["n_estimators"], "learning_rate": 1.0, "reg_lambda": 0.0,
              "subsample": SUBSAMPLE if p["bootstrap"] else 1.0,
              "colsample_bynode": p["fraction"], "max_bin": p["n_bins"],
              "tree_method": "hist", "device": device, "n_jobs": os.cpu_count() or 1}
    if p["bootstrap"]:
        notes.insert(0, f"rows: subsample {SUBSAMPLE} without replacement (XGBoost cannot "
                        "bootstrap); forest mode is deprecated in XGBoost")
    if p["max_depth"] is None:
        # hist grows depthwise with no depth limit at 0; min_child_weight stops the growth.
        kwargs.update(max_depth=0, grow_policy="depthwise", max_leaves=0)
        notes.append("max_depth None: max_depth 0 (no limit), depthwise, max_leaves 0")
    else:
        kwargs["max_depth"] = p["max_depth"]
    if task == "regression":
        kwargs["min_child_weight"] = float(p["min_samples_leaf"])  # hessian 1 a row
    else:
        kwargs["min_child_weight"] = 0.0
        if p["min_samples_leaf"] > 1:
            ignored.append("min_samples_leaf")
        notes.append("classes: averaged log-odds steps, then softmax")
    return _seeded(kwargs, p, ignored, notes, n_features, f"colsample_bynode {p['fraction']:.4g} "
                   f"({p['features_per_split']} of {n_features} features)")


_xgb_check = needs("xgboost", "XGBoost")


def _xgboost_model(rows, params: dict, device: str):
    import xgboost
    use = "cuda" if device == "cuda" and xgboost_cuda() else "cpu"
    kwargs, ignored, notes = xgboost_kwargs(params, rows.task, rows.n_features, len(rows.y_train), use)
    if device == "cuda" and use == "cpu":
        notes.append("on the CPU: this xgboost is a CPU-only build (pip install xgboost)")
    cls = xgboost.XGBRFRegressor if rows.task == "regression" else xgboost.XGBRFClassifier
    return cls, kwargs, ignored, notes, lambda model: xgb_device(model) or use


def run_xgboost(job: dict, data_dir: Path, device: str) -> dict:
    return _run("xgboost", job, data_dir, device, _xgb_check, _xgboost_model, ("xgboost", "xgboost-cpu", "numpy"))


def xgb_device(model) -> str | None:
    """The device the booster ran on, from its own configuration."""
    import json
    try:
        config = json.loads(model.get_booster().save_config())
        return config["learner"]["generic_param"]["device"]
    except (KeyError, ValueError):
        return None


# -- LightGBM ----------------------------------------------------------------------------------

def lightgbm_kwargs(params: dict, task: str, n_features: int, n_train: int):
    p, ignored, notes = _common(params, task, n_features, n_train)
    kwargs = {"boosting_type": "rf", "n_estimators": p["n_estimators"],
              "feature_fraction_bynode": p["fraction"], "max_bin": p["n_bins"],
              "min_child_samples": p["min_samples_leaf"], "min_child_weight": 0.0,
              "min_split_gain": 0.0, "reg_lambda": 0.0, "n_jobs": os.cpu_count() or 1,
              "verbose": -1}
    if p["bootstrap"]:
        kwargs.update(subsample=SUBSAMPLE, subsample_freq=1)
        notes.insert(0, f"rows: bagging {SUBSAMPLE} without replacement")
    else:
        # boosting=rf needs bagging or feature sampling; 0.999 keeps all but 1 row in 1000.
        kwargs.update(subsample=0.999, subsample_freq=1)
        notes.insert(0, "bootstrap off: bagging 0.999 (rf mode needs some bagging)")
    if p["max_depth"] is None:
        leaves = min(MAX_LEAVES_LGBM, p["leaves_unlimited"])
        kwargs.update(max_depth=-1, num_leaves=leaves)
        notes.append(f"max_depth None: num_leaves {leaves}")
    else:
        d = p["max_depth"]
        # 2 ** d past 17 levels is past the leaf cap anyway (and 2 ** 2**31 a 256 MB integer)
        kwargs.update(max_depth=d, num_leaves=max(2, min(MAX_LEAVES_LGBM, 2 ** min(d, 18))))
    if task == "classification":
        notes.append("classes: averaged log-odds steps, then softmax")
    return _seeded(kwargs, p, ignored, notes, n_features, f"feature_fraction_bynode "
                   f"{p['fraction']:.4g} ({p['features_per_split']} of {n_features})")


_lgbm_check = needs("lightgbm", "LightGBM")


def _lightgbm_model(rows, params: dict, device: str):
    import lightgbm
    kwargs, ignored, notes = lightgbm_kwargs(params, rows.task, rows.n_features, len(rows.y_train))
    if device == "cuda":
        notes.append("on the CPU: LightGBM's PyPI wheel has no CUDA")
    cls = lightgbm.LGBMRegressor if rows.task == "regression" else lightgbm.LGBMClassifier
    return cls, kwargs, ignored, notes, lambda model: "cpu"


def run_lightgbm(job: dict, data_dir: Path, device: str) -> dict:
    return _run("lightgbm", job, data_dir, device, _lgbm_check, _lightgbm_model, ("lightgbm", "numpy"))


XGBOOST = Runner("xgboost", ("random_forest",), run_xgboost, _xgb_check)
LIGHTGBM = Runner("lightgbm", ("random_forest",), run_lightgbm, _lgbm_check)
