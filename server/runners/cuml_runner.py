"""cuML's random forest (RAPIDS) on the server's CUDA GPU, when cuML is installed.

cuML bins features into quantiles as py_core does (`n_bins`, up to 256 here and there), so it is
the closest GPU counterpart. Its wheels are large and tied to a CUDA version, hence not part of
the `cuda` extra: `pip install cuml-cu12` (or cuml-cu13, matching the server's CUDA; docs/deploy.md).
"""
from __future__ import annotations

import time
from pathlib import Path

from .common import (
    Runner,
    Unavailable,
    as_numpy,
    forest_data,
    forest_metrics,
    full_proba,
    installed,
    job_params,
    versions,
)
from .sklearn_runner import estimator_kwargs

CRITERIA = {"squared_error": "mse", "gini": "gini", "entropy": "entropy"}


def check(device: str) -> str | None:
    if device != "cuda":
        return "no CUDA device (the server runs its comparisons on the CPU)"
    if not installed("cuml"):
        return "cuML is not installed (pip install cuml-cu12, or cuml-cu13 for CUDA 13)"
    return None


def run(job: dict, data_dir: Path, device: str) -> dict:
    reason = check(device)
    if reason:
        raise Unavailable(reason)
    t0 = time.perf_counter()
    try:
        from cuml.ensemble import RandomForestClassifier, RandomForestRegressor
    except Exception as exc:  # installed but broken: a CUDA runtime mismatch, no driver
        raise Unavailable(f"cuML does not load here: {type(exc).__name__}: {exc}") from None
    prep = forest_data(job, data_dir)
    task = prep.info["task"]
    X_train, y_train, X_test, y_test = as_numpy(prep)
    params, _ = job_params("random_forest", job.get("params"))
    kwargs, ignored = estimator_kwargs({k: v for k, v in params.items() if k != "n_bins"}, task)
    criterion = kwargs.pop("criterion", None)
    if criterion is not None:
        kwargs["split_criterion"] = CRITERIA[criterion]
    if "n_bins" in params:
        kwargs["n_bins"] = params["n_bins"]
    # n_streams=1: cuML builds trees on several CUDA streams by default, which makes a seed
    # give different forests from run to run.
    kwargs["n_streams"] = 1
    cls = RandomForestRegressor if task == "regression" else RandomForestClassifier
    model = cls(**kwargs)
    t_fit = time.perf_counter()
    model.fit(X_train, y_train)
    fit = time.perf_counter() - t_fit
    t_pred = time.perf_counter()
    pred = proba = None
    if task == "regression":
        pred = model.predict(X_test)
    else:
        proba = model.predict_proba(X_test)
    predict = time.perf_counter() - t_pred
    n_classes = len(prep.info["classes"] or ())
    if proba is not None:
        proba = full_proba(_numpy(proba), _numpy(model.classes_), n_classes)
    metrics = forest_metrics(task, y_test, None if pred is None else _numpy(pred), proba, n_classes)
    return {"runner": RUNNER.name, "device": "cuda", "hardware": _gpu_name(),
            "versions": {**versions("numpy"), "cuml": _cuml_version()},
            "timings": {"fit": fit, "predict": predict, "total": time.perf_counter() - t0},
            "metrics": metrics, "params": kwargs, "ignored": ignored,
            "rows": {"train": len(y_train), "test": len(y_test)}}


def _cuml_version() -> str | None:
    import cuml
    return getattr(cuml, "__version__", None)


def _numpy(x):
    import numpy as np
    return x.get() if hasattr(x, "get") else np.asarray(x)  # CuPy arrays come back with .get()


def _gpu_name() -> str | None:
    try:
        import torch
        return torch.cuda.get_device_name(0)
    except Exception:
        return None


RUNNER = Runner("cuml", ("random_forest",), run, check)
