"""scikit-learn's random forest on the server's CPU cores (n_jobs=-1): the baseline everyone knows.

Same rows as the page (py_core.data `prepare`), the job's parameters mapped one to one, the
page's metrics. `n_bins` has no scikit-learn counterpart (it splits on exact values) and is listed
under "ignored".
"""
from __future__ import annotations

import time
from pathlib import Path

from py_core.forest.params import PARAMS as FOREST_PARAMS

from .common import Runner, cpu_name, fit_and_score, forest_rows, job_params, versions

# job params -> RandomForest* keyword, the same meaning and defaults (py_core follows scikit-learn:
# tests/test_kinds.py checks them against scikit-learn's own): the forest's table
# (py_core/forest/params.py) but for what scikit-learn has no counterpart of, and the criterion,
# which depends on the task
NO_COUNTERPART = ("n_bins", "exact_bins")
PARAMS = tuple(n for n in FOREST_PARAMS.names() if n not in (*NO_COUNTERPART, "criterion"))
CRITERIA = {"regression": ("squared_error",), "classification": ("gini", "entropy")}
MAX_FEATURES = {"regression": 1.0, "classification": "sqrt"}  # py_core's "default"


def estimator_kwargs(params: dict, task: str) -> tuple[dict, list[str]]:
    """(keyword arguments for RandomForestRegressor/Classifier, params that have no counterpart),
    from the params as the forest's table checks them (common.job_params)."""
    given, _ = job_params("random_forest", params)
    kwargs = {name: given[name] for name in PARAMS if name in given}
    if kwargs.get("max_features") == "default":
        kwargs["max_features"] = MAX_FEATURES[task]
    criterion = given.get("criterion")
    if criterion is not None:
        if criterion not in CRITERIA[task]:
            raise ValueError(f"criterion {criterion!r} is not one of {list(CRITERIA[task])} "
                             f"for {task}")
        kwargs["criterion"] = criterion
    ignored = sorted(set(given) - set(PARAMS) - {"criterion"})
    return kwargs, ignored


def run(job: dict, data_dir: Path, device: str) -> dict:
    t0 = time.perf_counter()
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    rows = forest_rows(job, data_dir)
    kwargs, ignored = estimator_kwargs(job.get("params") or {}, rows.task)
    cls = RandomForestRegressor if rows.task == "regression" else RandomForestClassifier
    model = cls(n_jobs=-1, **kwargs)
    scored = fit_and_score(model, rows, t0)
    if kwargs.get("oob_score"):
        scored["metrics"]["oob_score"] = float(model.oob_score_)
    return {"runner": RUNNER.name, "device": "cpu", "hardware": cpu_name(),
            "versions": versions("scikit-learn", "numpy"), **scored,
            "params": {**kwargs, "n_jobs": -1}, "ignored": ignored}


RUNNER = Runner("sklearn", ("random_forest",), run)
