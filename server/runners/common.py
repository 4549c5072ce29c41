"""What the runners share: loading a job's data exactly as the page does, metrics, versions.

The page prepares a random-forest job's data with py_core.data (`prepare`: features, target,
seeded split, median imputation fit on the training rows). The runners call the same function
with the same job fields, so every runner sees the browser's rows, in the browser's order.
"""
from __future__ import annotations

import asyncio
import importlib.util
import math
import os
import platform
import re
import subprocess
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Callable

from py_core.jobs import Context, JobError


class Unavailable(Exception):
    """This runner cannot run here; the message says why ("no CUDA device", "cuML not installed")."""


@dataclass(frozen=True)
class Runner:
    name: str  # as the API shows it
    kinds: tuple[str, ...]  # job kinds it runs
    run: Callable  # (job, data_dir: Path, device: str) -> result dict
    check: Callable = field(default=lambda device: None)  # (device) -> reason it cannot run, or None


# -- parameters --------------------------------------------------------------------------------

def job_params(kind: str, params) -> tuple[dict, dict]:
    """(the params as given, and with every default filled in) of a job, checked by its kind's
    table (py_core/params.py): the values POST /api/runs accepted and the caps costed.
    Runners read these, never the raw JSON (no `int()` of a client's string). JobError for
    params the table refuses (a run stored before it)."""
    from py_core.jobs import ParamError, params_of
    table = params_of(kind)
    try:
        given = table.check(params)
    except ParamError as exc:
        raise JobError(str(exc)) from None
    return given, table.values(given)


# -- data --------------------------------------------------------------------------------------

def server_context(data_dir: Path) -> Context:
    """A py_core job context that loads data sets and texts from the server's data dir;
    synthetic sets are generated with numpy's kernels (server/synthetic_numpy.py)."""
    from server.datasets import dataset_path
    from server.synthetic_numpy import install
    install()

    def load_dataset(dataset_id: str) -> bytes:
        try:
            return dataset_path(data_dir, dataset_id).read_bytes()
        except LookupError as exc:
            raise JobError(str(exc)) from None

    def load_text(text_id: str) -> str:
        from py_core.transformer.text import BUILTIN_TEXTS, builtin_text
        if text_id in BUILTIN_TEXTS:
            return builtin_text(text_id)
        # Uploads: server/texts.py stores each as <data_dir>/texts/<32 hex digits>.txt.
        path = Path(data_dir) / "texts" / f"{text_id}.txt"
        if not re.fullmatch(r"[0-9a-f]{32}", text_id) or not path.is_file():
            raise JobError(f"no text {text_id!r}")
        return path.read_text(encoding="utf-8")

    return Context(load_dataset=load_dataset, load_text=load_text)


def forest_data(job: dict, data_dir: Path, table=None):
    """The job's table prepared as the page prepares it: a py_core.data `Prepared`."""
    from py_core.data import prepare
    for key in ("dataset", "target"):
        if not isinstance(job.get(key), str):
            raise JobError(f"a {job.get('kind', 'random_forest')} job needs a {key!r} string")
    if table is None:
        table = asyncio.run(server_context(data_dir).load_table(job["dataset"]))
    split = job.get("split") or {}
    return prepare(table, job["target"], features=job.get("features"), task=job.get("task"),
                   test_size=split.get("test_size", 0.2), seed=split.get("seed", 42),
                   stratify=split.get("stratify"))


def as_numpy(prep):
    """(X_train, y_train, X_test, y_test) as numpy arrays: float32 features, as the trees use."""
    import numpy as np
    nf = prep.n_features
    X_train = np.asarray(prep.X_train, dtype=np.float32).reshape(-1, nf)
    X_test = np.asarray(prep.X_test, dtype=np.float32).reshape(-1, nf)
    ydt = np.float64 if prep.info["task"] == "regression" else np.int32
    return X_train, np.asarray(prep.y_train, dtype=ydt), X_test, np.asarray(prep.y_test, dtype=ydt)


@dataclass
class ForestRows:
    """A tree job's rows as the page prepares them, as numpy arrays (every forest and boosting
    runner's input): float32 features, float64 targets (regression) or int32 class codes."""
    task: str
    X_train: object
    y_train: object
    X_test: object
    y_test: object
    n_classes: int  # 0 for regression
    categorical: tuple = ()  # which features are categories (py_core.data's codes)

    @property
    def n_features(self) -> int:
        return self.X_train.shape[1]


def forest_rows(job: dict, data_dir: Path) -> ForestRows:
    prep = forest_data(job, data_dir)
    return ForestRows(prep.info["task"], *as_numpy(prep), len(prep.info["classes"] or ()))


def boosting_rows(job: dict, data_dir: Path) -> ForestRows:
    """A gradient_boosting job's rows: the page's split (`prepare`), with missing values left
    NaN (HistGradientBoosting routes them itself, so nothing is imputed); categorical columns as
    py_core.data's codes (`info["kinds"]` says which)."""
    import numpy as np

    from py_core.data import features_and_target
    table = asyncio.run(server_context(data_dir).load_table(job["dataset"]))
    prep = forest_data(job, data_dir, table)
    X, _, _ = features_and_target(table, job["target"], features=job.get("features"),
                                  task=prep.info["task"])
    X = np.asarray(X, dtype=np.float32).reshape(-1, prep.n_features)
    _, y_train, _, y_test = as_numpy(prep)
    return ForestRows(prep.info["task"], X[np.asarray(prep.train_idx)], y_train,
                      X[np.asarray(prep.test_idx)], y_test, len(prep.info["classes"] or ()),
                      tuple(k != "numeric" for k in prep.info["kinds"]))  # as the job says


def fit_and_score(model, rows: ForestRows, t0: float, labels=None, classes=None,
                  host=lambda x: x, fit=None) -> dict:
    """The part of a forest runner that is the same in every library: fit on the training rows,
    predict the test rows (values, or each class's probability), both timed; the page's metrics.
    Returns the result's "timings" (total: since t0, the runner's start), "metrics" and "rows".

    labels: what the model is fitted on (default y_train; XGBoost and LightGBM take codes
    0..k-1 of the classes seen, `encode_labels`), classes: the class code of each probability
    column (default model.classes_), host: a device array to numpy (cuML's CuPy arrays), fit:
    the fit itself, when it is not model.fit(X_train, labels) (a validation set, callbacks)."""
    import numpy as np
    t_fit = time.perf_counter()
    if fit is None:
        model.fit(rows.X_train, rows.y_train if labels is None else labels)
    else:
        fit()
    fit = time.perf_counter() - t_fit
    t_pred = time.perf_counter()
    if rows.task == "regression":
        pred, proba = np.asarray(host(model.predict(rows.X_test)), dtype=np.float64), None
    else:
        pred, proba = None, model.predict_proba(rows.X_test)
    predict = time.perf_counter() - t_pred
    if proba is not None:
        classes = host(model.classes_) if classes is None else classes
        proba = full_proba(host(proba), classes, rows.n_classes)
    return {"timings": {"fit": fit, "predict": predict, "total": time.perf_counter() - t0},
            "metrics": forest_metrics(rows.task, rows.y_test, pred, proba, rows.n_classes),
            "rows": {"train": len(rows.y_train), "test": len(rows.y_test)}}


def encode_labels(y_train):
    """Train labels as 0..k-1 (a class absent from the training rows has no column), and the
    class code each column stands for."""
    import numpy as np
    seen, codes = np.unique(y_train, return_inverse=True)
    return codes.astype(np.int32), seen


def forest_metrics(task: str, y_true, pred=None, proba=None, n_classes: int = 0) -> dict:
    """The page's metrics, by the page's own code (py_core.jobs.metrics): regression mse, mae, r2;
    classification accuracy, f1 (macro), log_loss.

    proba: (rows, n_classes) with a column for every class, in class-code order."""
    from py_core.jobs.metrics import classification_metrics, regression_metrics
    truth = y_true.tolist()
    if task == "regression":
        return regression_metrics(truth, pred.tolist())
    return classification_metrics(truth, proba.argmax(axis=1).tolist(), proba.tolist(), n_classes)


def full_proba(proba, classes, n_classes: int):
    """predict_proba's columns (for the classes seen in training) spread to all n_classes."""
    import numpy as np
    out = np.zeros((proba.shape[0], n_classes), dtype=np.float64)
    out[:, np.asarray(classes, dtype=np.int64)] = proba
    return out


# -- description -------------------------------------------------------------------------------

def versions(*packages: str) -> dict:
    """{"python": ..., package: version or None} for the packages a runner used."""
    out = {"python": platform.python_version()}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def cpu_name() -> str:
    """The CPU as a person would name it, with its core count: 'AMD EPYC 9654 (16 cores)'."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model} ({os.cpu_count()} cores)"


def gpu_name() -> str | None:
    """The CUDA GPU as nvidia-smi names it ('NVIDIA H200'), or None."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.splitlines()[0].strip() if out.returncode == 0 and out.stdout else None
    except (OSError, subprocess.SubprocessError):
        return None


def require(reason: str | None) -> None:
    """A runner's first line: Unavailable with its check's reason, when there is one."""
    if reason:
        raise Unavailable(reason)


def needs(module: str, library: str, extra: str = "peers"):
    """The check of a runner that runs wherever its library is installed (pip's `extra`)."""
    def check(device: str) -> str | None:
        return None if installed(module) else f"{library} is not installed (pip install '.[{extra}]')"
    return check


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (PyTorch takes seconds)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def finite(x):
    """A float for JSON: NaN and infinities become None (SQLite's JSON and the page refuse them)."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [finite(v) for v in x]
    return x
