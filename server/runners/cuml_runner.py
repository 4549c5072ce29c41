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
    fit_and_score,
    forest_rows,
    gpu_name,
    installed,
    job_params,
    require,
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
    require(check(device))
    t0 = time.perf_counter()
    try:
        from cuml.ensemble import RandomForestClassifier, RandomForestRegressor
    except Exception as exc:  # installed but broken: a CUDA runtime mismatch, no driver
        raise Unavailable(f"cuML does not load here: {type(exc).__name__}: {exc}") from None
    rows = forest_rows(job, data_dir)
    params, _ = job_params("random_forest", job.get("params"))
    kwargs, ignored = estimator_kwargs({k: v for k, v in params.items() if k != "n_bins"}, rows.task)
    criterion = kwargs.pop("criterion", None)
    if criterion is not None:
        kwargs["split_criterion"] = CRITERIA[criterion]
    if "n_bins" in params:
        kwargs["n_bins"] = params["n_bins"]
    # n_streams=1: cuML builds trees on several CUDA streams by default, which makes a seed
    # give different forests from run to run.
    kwargs["n_streams"] = 1
    cls = RandomForestRegressor if rows.task == "regression" else RandomForestClassifier
    scored = fit_and_score(cls(**kwargs), rows, t0, host=_numpy)
    return {"runner": RUNNER.name, "device": "cuda", "hardware": gpu_name(),
            "versions": {**versions("numpy"), "cuml": _cuml_version()}, **scored,
            "params": kwargs, "ignored": ignored}


def _cuml_version() -> str | None:
    import cuml
    return getattr(cuml, "__version__", None)


def _numpy(x):
    import numpy as np
    return x.get() if hasattr(x, "get") else np.asarray(x)  # CuPy arrays come back with .get()


RUNNER = Runner("cuml", ("random_forest",), run, check)
