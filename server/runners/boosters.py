"""Gradient boosting's comparison runners: scikit-learn's HistGradientBoosting (the reference: the
tab's parameters are its own), XGBoost `hist` and LightGBM `gbdt` in their boosting modes.

All three see the page's rows (common.boosting_rows: the page's split, missing values NaN,
categorical columns as codes) and are scored with the page's metrics. Early stopping holds out
the same rows in all three: scikit-learn's own split of the training rows (validation_fraction,
stratified for classes, seeded as scikit-learn seeds it from random_state), which XGBoost and
LightGBM get as their evaluation set. The job's parameters map as:

    scikit-learn     xgboost                        lightgbm
    loss             objective reg:squarederror,    objective regression,
                     reg:absoluteerror,             regression_l1,
                     binary:logistic/multi:softprob binary/multiclass
    learning_rate    learning_rate                  learning_rate
    max_iter         n_estimators                   n_estimators (num_boost_round)
    max_leaf_nodes   max_leaves, lossguide          num_leaves (at most rows / min_samples_leaf)
    max_depth        max_depth (None: 0)            max_depth (None: -1)
    min_samples_leaf min_child_weight (a hessian    min_child_samples
                     sum: rows only where each row
                     weighs 1, squared and absolute
                     error; log loss: not mapped)
    l2_regularization reg_lambda                    reg_lambda (lambda_l2)
    max_bins         max_bin                        max_bin
    max_features     colsample_bynode               feature_fraction_bynode
    n_iter_no_change early stopping's rounds        early_stopping's stopping_rounds
    tol              its min_delta                  its min_delta

Each result names what differs (`notes`) and what has no counterpart (`ignored`), as the forest's
peers do, its metrics the number of iterations its predictions use (n_iter: XGBoost and LightGBM
predict with the best, scikit-learn with all it grew), and the loss per iteration where the
library records it, as the tab's job gives it (`loss_curve`, with early stopping: the training
rows, 10,000 of them at most as scikit-learn scores them, and the validation rows, in
scikit-learn's terms: half the squared error, the absolute error, the log loss).
"""
from __future__ import annotations

import inspect
import os
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from py_core.boosting.params import EARLY_STOPPING_AUTO_ROWS, default_loss

from .common import (
    Runner,
    boosting_rows,
    cpu_name,
    encode_labels,
    fit_and_score,
    gpu_name,
    job_params,
    needs,
    require,
    versions,
)
from .peers import MAX_LEAVES_LGBM, peer_result, xgb_device, xgboost_cuda

KIND = "gradient_boosting"
TRAIN_SCORED = 10_000  # training rows scikit-learn scores early stopping's training loss on


# -- what the three share ----------------------------------------------------------------------

def _params(params: dict, rows) -> dict:
    """The job's parameters as the kind's table checks them, defaults filled in, the loss
    resolved for the task, early stopping's "auto" decided and the categorical features chosen
    (a column of more categories than max_bins splits by its codes' order, as a number)."""
    _, p = job_params(KIND, params)
    p = dict(p)
    p["loss"] = p["loss"] or default_loss(rows.task)
    allowed = ("log_loss",) if rows.task == "classification" else ("squared_error",
                                                                     "absolute_error")
    if p["loss"] not in allowed:
        raise ValueError(f"loss {p['loss']!r} is not one of {list(allowed)} for {rows.task}")
    stop = p["early_stopping"]
    p["early_stopping"] = stop is True or (stop == "auto"
                                           and len(rows.y_train) > EARLY_STOPPING_AUTO_ROWS)
    p["notes"] = []
    categorical = list(rows.categorical) if p["categorical_features"] == "from_dtype" else []
    for j, cat in enumerate(categorical):
        if cat and _codes(rows, j) > p["max_bins"]:
            categorical[j] = False
            p["notes"].append(f"feature {j}: more categories than max_bins, split as a number")
    p["categorical"] = categorical
    return p


def _two_classes(rows) -> bool:
    """Whether the training rows hold two classes (the fit sees those alone: encode_labels)."""
    import numpy as np
    return len(np.unique(rows.y_train)) == 2


def _codes(rows, j: int) -> int:
    import numpy as np
    return int(np.nanmax(np.concatenate([rows.X_train[:, j], rows.X_test[:, j]]))) + 1


def validation_split(rows, p: dict, y):
    """(X_fit, y_fit, X_val, y_val) as scikit-learn's fit splits the training rows for early
    stopping, or None without early stopping; validation_fraction None scores the training
    rows themselves."""
    import numpy as np
    from sklearn.model_selection import train_test_split
    from sklearn.utils import check_random_state
    if not p["early_stopping"]:
        return None
    if p["validation_fraction"] is None:  # copies: LightGBM takes the fit's own arrays for
        return rows.X_train, y, rows.X_train.copy(), y.copy()  # its training set, never stopping
    seed = check_random_state(p["random_state"]).randint(np.iinfo(np.uint32).max, dtype="u8")
    X_fit, X_val, y_fit, y_val = train_test_split(
        rows.X_train, y, test_size=p["validation_fraction"], random_state=seed,
        stratify=y if rows.task == "classification" else None)
    return X_fit, y_fit, X_val, y_val


def _scored_rows(X, y, seed):
    """At most TRAIN_SCORED of the training rows, drawn once: the training loss's rows."""
    import numpy as np
    if len(y) <= TRAIN_SCORED:
        return X, y
    pick = np.random.default_rng(seed).choice(len(y), TRAIN_SCORED, replace=False)
    return X[pick], y[pick]


def loss_curve(train, validation, max_iter: int, best: int | None = None) -> dict:
    """A runner's losses as the tab's job gives them (py_core/jobs/boosting_job.py
    `loss_curve`): by iteration, from before any tree (None where the library scores none),
    the best iteration (the smallest loss watched: validation's, else training's) and whether
    early stopping ended the fit."""
    train = [None if v is None else float(v) for v in train]
    validation = [None if v is None else float(v) for v in validation] if validation else None
    watched = validation or train
    if best is None:
        best = min((i for i, v in enumerate(watched) if v is not None), key=watched.__getitem__)
    return {"train": train, "validation": validation, "best_iteration": best,
            "early_stopped": len(train) - 1 < max_iter}


# -- scikit-learn ------------------------------------------------------------------------------

SKLEARN_PARAMS = ("loss", "learning_rate", "max_iter", "max_leaf_nodes", "max_depth",
                  "min_samples_leaf", "l2_regularization", "max_features", "max_bins",
                  "early_stopping", "validation_fraction", "n_iter_no_change", "tol",
                  "random_state")


def sklearn_kwargs(params: dict, rows) -> tuple[dict, list, list]:
    """(HistGradientBoosting* keywords, ignored, notes): the job's own, the loss resolved, the
    categorical features as a mask of the page's categorical columns."""
    p = _params(params, rows)
    kwargs = {k: p[k] for k in SKLEARN_PARAMS}
    kwargs["categorical_features"] = p["categorical"] if any(p["categorical"]) else None
    return kwargs, [], p["notes"]


def run_sklearn(job: dict, data_dir: Path, device: str) -> dict:
    t0 = time.perf_counter()
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    rows = boosting_rows(job, data_dir)
    kwargs, ignored, notes = sklearn_kwargs(job.get("params") or {}, rows)
    cls = (HistGradientBoostingRegressor if rows.task == "regression"
           else HistGradientBoostingClassifier)
    model = cls(**kwargs)
    scored = fit_and_score(model, rows, t0)
    curve = None
    if len(model.train_score_):  # with early stopping: -loss, from before the first tree
        curve = loss_curve(list(-model.train_score_), list(-model.validation_score_),
                           kwargs["max_iter"])
    scored["metrics"]["n_iter"] = int(model.n_iter_)
    params = {**kwargs, "categorical_features": kwargs["categorical_features"] and
              [j for j, c in enumerate(kwargs["categorical_features"]) if c]}
    return {"runner": SKLEARN.name, "device": "cpu", "hardware": cpu_name(),
            "versions": versions("scikit-learn", "numpy"), **scored, "params": params,
            "ignored": ignored, "note": "; ".join(notes), "notes": notes, "loss_curve": curve}


# -- XGBoost and LightGBM: one skeleton --------------------------------------------------------

@dataclass(frozen=True)
class Peer:
    """What XGBoost's and LightGBM's boosting runners do each their own way."""
    name: str
    check: Callable     # (device) -> why it cannot run here, or None
    versions: tuple     # the packages its result names
    setup: Callable     # (rows, params, device) -> (model, kwargs, ignored, notes, p)
    fit: Callable       # (model, X, y, evals: [(X, y) training, validation] or None, p)
    losses: Callable    # (model, p) -> (training, validation) losses after each iteration,
                        # in scikit-learn's terms
    best: Callable      # (model) -> the iterations its predictions use, or None: all
    device: Callable    # (model, device asked) -> the device it ran on


def run_peer(peer: Peer, job: dict, data_dir: Path, device: str) -> dict:
    """A peer's boosting job: the page's rows, the parameters mapped, class codes 0..k-1 of the
    classes seen (encode_labels), scikit-learn's validation rows with early stopping, fitted and
    scored; the total time counts the library's import."""
    require(peer.check(device))
    t0 = time.perf_counter()
    rows = boosting_rows(job, data_dir)
    model, kwargs, ignored, notes, p = peer.setup(rows, job.get("params") or {}, device)
    labels, seen = (encode_labels(rows.y_train) if rows.task != "regression"
                    else (rows.y_train, None))
    split = validation_split(rows, p, labels)
    if split is None:
        def fit():
            peer.fit(model, rows.X_train, labels, None, p)
    else:
        notes.append(_STOPPING)
        X_fit, y_fit, X_val, y_val = split

        def fit():
            peer.fit(model, X_fit, y_fit,
                     [_scored_rows(X_fit, y_fit, p["random_state"]), (X_val, y_val)], p)
    scored = fit_and_score(model, rows, t0, labels, seen, fit=fit)
    used = peer.device(model, kwargs.get("device", "cpu"))
    result = peer_result(peer.name, used, gpu_name() if used.startswith("cuda") else cpu_name(),
                         versions(*peer.versions), scored, kwargs, ignored, notes,
                         loss_curve=None)
    best = peer.best(model)
    result["metrics"]["n_iter"] = best or p["max_iter"]
    if split is not None:  # nothing is scored before the first tree
        train, validation = peer.losses(model, p)
        result["loss_curve"] = loss_curve([None, *train], [None, *validation], p["max_iter"],
                                          best)
    return result


_STOPPING = ("early stopping: stops when n_iter_no_change rounds bring no loss tol below the best "
             "(scikit-learn: below the loss n_iter_no_change + 1 iterations back) and predicts "
             "with the best iteration (scikit-learn keeps them all)")



# -- XGBoost -----------------------------------------------------------------------------------

XGB_OBJECTIVES = {"squared_error": ("reg:squarederror", "rmse"),
                  "absolute_error": ("reg:absoluteerror", "mae")}


def xgboost_kwargs(params: dict, rows, device: str) -> tuple[dict, list, list, dict]:
    """(XGBRegressor/XGBClassifier keywords, ignored, notes, p: the params read)."""
    p = _params(params, rows)
    notes, ignored = list(p["notes"]), []
    if rows.task == "regression":
        objective, metric = XGB_OBJECTIVES[p["loss"]]
    else:
        objective, metric = (("binary:logistic", "logloss") if _two_classes(rows)
                             else ("multi:softprob", "mlogloss"))
    kwargs = {"objective": objective, "eval_metric": metric, "n_estimators": p["max_iter"],
              "learning_rate": p["learning_rate"], "tree_method": "hist",
              "grow_policy": "lossguide",  # best-first, as scikit-learn grows
              "max_leaves": p["max_leaf_nodes"] or 0, "max_depth": p["max_depth"] or 0,
              "reg_lambda": p["l2_regularization"], "reg_alpha": 0.0, "gamma": 0.0,
              "max_bin": p["max_bins"], "colsample_bynode": p["max_features"],
              "device": device, "n_jobs": os.cpu_count() or 1}
    if rows.task == "regression":
        kwargs["min_child_weight"] = float(p["min_samples_leaf"])  # a row's hessian is 1
    else:  # a row's hessian is p(1 - p): no count of rows to map min_samples_leaf to
        kwargs["min_child_weight"] = 1e-3  # scikit-learn's min_hessian_to_split
        ignored.append("min_samples_leaf")
        notes.append("min_samples_leaf not mapped: XGBoost has no minimum count of rows, only "
                     "min_child_weight, a sum of hessians (1e-3, scikit-learn's own minimum)")
    if any(p["categorical"]):
        kwargs["enable_categorical"] = True
        kwargs["feature_types"] = ["c" if c else "q" for c in p["categorical"]]
        notes.append("categorical splits by XGBoost's partition of the categories")
    if p["random_state"] is not None:
        kwargs["random_state"] = p["random_state"]
    notes.append("starts from XGBoost's own intercept (base_score) estimate")
    return kwargs, ignored, notes, p


def _xgboost_setup(rows, params: dict, device: str):
    import xgboost
    use = "cuda" if device == "cuda" and xgboost_cuda() else "cpu"
    kwargs, ignored, notes, p = xgboost_kwargs(params, rows, use)
    if device == "cuda" and use == "cpu":
        notes.append("on the CPU: this xgboost is a CPU-only build (pip install xgboost)")
    stopping = [xgboost.callback.EarlyStopping(rounds=p["n_iter_no_change"], min_delta=p["tol"])]
    cls = xgboost.XGBRegressor if rows.task == "regression" else xgboost.XGBClassifier
    model = cls(**kwargs, callbacks=stopping if p["early_stopping"] else None)
    return model, kwargs, ignored, notes, p


def _xgboost_fit(model, X, y, evals, p) -> None:
    model.fit(X, y, verbose=False, **({"eval_set": evals} if evals else {}))


def _xgboost_losses(model, p) -> tuple[list, list]:
    metric = model.get_params()["eval_metric"]
    evals = model.evals_result()
    return tuple([v * v / 2 if metric == "rmse" else v for v in evals[name][metric]]
                 for name in ("validation_0", "validation_1"))


def _xgboost_best(model) -> int | None:
    best = getattr(model, "best_iteration", None)  # 0-based
    return None if best is None else best + 1


XGBOOST_PEER = Peer("xgboost", needs("xgboost", "XGBoost"), ("xgboost", "xgboost-cpu", "numpy"),
                    _xgboost_setup, _xgboost_fit, _xgboost_losses, _xgboost_best,
                    lambda model, asked: xgb_device(model) or asked)


# -- LightGBM ----------------------------------------------------------------------------------

LGBM_OBJECTIVES = {"squared_error": ("regression", "l2"),
                   "absolute_error": ("regression_l1", "l1")}


def lightgbm_kwargs(params: dict, rows) -> tuple[dict, list, list, dict]:
    """(LGBMRegressor/LGBMClassifier keywords, ignored, notes, p: the params read)."""
    p = _params(params, rows)
    notes = list(p["notes"])
    if rows.task == "regression":
        objective, metric = LGBM_OBJECTIVES[p["loss"]]
    else:
        objective, metric = (("binary", "binary_logloss") if _two_classes(rows)
                             else ("multiclass", "multi_logloss"))
    # No more leaves than the rows allow (LightGBM sizes its trees by num_leaves: 131072 took
    # 16 s on 180 rows; past it, LightGBM refuses), nor than max_depth's levels hold: the same
    # trees, for max_leaf_nodes None or past that bound
    bound = min(MAX_LEAVES_LGBM, max(2, len(rows.y_train) // p["min_samples_leaf"]),
                2 ** min(p["max_depth"] or 17, 17))
    leaves = p["max_leaf_nodes"]
    if leaves is None or leaves > bound:
        notes.append(f"max_leaf_nodes {leaves}: num_leaves {bound} (training rows / "
                     f"min_samples_leaf{', 2 ** max_depth' if p['max_depth'] else ''}, "
                     f"at most {MAX_LEAVES_LGBM})")
        leaves = bound
    kwargs = {"boosting_type": "gbdt", "objective": objective, "n_estimators": p["max_iter"],
              "learning_rate": p["learning_rate"], "num_leaves": leaves,
              "max_depth": p["max_depth"] or -1, "min_child_samples": p["min_samples_leaf"],
              "min_child_weight": 1e-3,  # scikit-learn's min_hessian_to_split
              "reg_lambda": p["l2_regularization"], "reg_alpha": 0.0, "min_split_gain": 0.0,
              "max_bin": p["max_bins"], "feature_fraction_bynode": p["max_features"],
              "subsample": 1.0, "n_jobs": os.cpu_count() or 1, "verbose": -1}
    if p["random_state"] is not None:
        kwargs["random_state"] = p["random_state"]
    if any(p["categorical"]):
        notes.append("categorical splits by LightGBM's rule (cat_smooth 10, at most 32 "
                     "categories a side), not scikit-learn's")
    notes.append("starts from the training rows' average (boost_from_average)")
    return kwargs, [], notes, {**p, "metric": metric}


def _lightgbm_setup(rows, params: dict, device: str):
    import lightgbm
    kwargs, ignored, notes, p = lightgbm_kwargs(params, rows)
    if device == "cuda":
        notes.append("on the CPU: LightGBM's PyPI wheel has no CUDA")
    cls = lightgbm.LGBMRegressor if rows.task == "regression" else lightgbm.LGBMClassifier
    return cls(**kwargs), kwargs, ignored, notes, p


def _lightgbm_fit(model, X, y, evals, p) -> None:
    import lightgbm
    categorical = [j for j, c in enumerate(p["categorical"]) if c] or "auto"
    if not evals:
        model.fit(X, y, categorical_feature=categorical)
        return
    sets = ({"eval_X": tuple(x for x, _ in evals), "eval_y": tuple(y for _, y in evals)}
            if "eval_X" in inspect.signature(model.fit).parameters  # 4.7's name
            else {"eval_set": evals})
    model.fit(X, y, categorical_feature=categorical, eval_metric=p["metric"], **sets,
              eval_names=["train", "validation"],
              callbacks=[lightgbm.early_stopping(p["n_iter_no_change"], verbose=False,
                                                 min_delta=p["tol"])])


def _lightgbm_losses(model, p) -> tuple[list, list]:
    half = 0.5 if p["metric"] == "l2" else 1.0  # l2: the squared error
    return tuple([v * half for v in model.evals_result_[k][p["metric"]]]
                 for k in ("train", "validation"))


LIGHTGBM_PEER = Peer("lightgbm", needs("lightgbm", "LightGBM"), ("lightgbm", "numpy"),
                     _lightgbm_setup, _lightgbm_fit, _lightgbm_losses,
                     lambda model: model.best_iteration_ or None, lambda model, asked: "cpu")


SKLEARN = Runner("sklearn", (KIND,), run_sklearn)
XGBOOST = Runner("xgboost", (KIND,), partial(run_peer, XGBOOST_PEER), XGBOOST_PEER.check)
LIGHTGBM = Runner("lightgbm", (KIND,), partial(run_peer, LIGHTGBM_PEER), LIGHTGBM_PEER.check)
RUNNERS = ("server.runners.boosters:SKLEARN", "server.runners.boosters:XGBOOST",
           "server.runners.boosters:LIGHTGBM")  # the Kind's `runners`
