"""What the jobs of tabular models share (the random forest's, gradient boosting's): the data set
loaded and prepared for the job, and a model's test predictions made into metrics, the baseline
and the plots (shapes: forest_job's docstring)."""
from __future__ import annotations

import time

from ..errors import JobError
from ..params import ParamError
from .forest_plots import PLOT_POINTS, every
from .metrics import classification_metrics, majority_baseline, regression_metrics


def job_params(job: dict, kind) -> dict:
    """The job's params, checked by its kind's table, once its fields (kind.needs) are there."""
    for key in kind.needs:
        if not isinstance(job.get(key), str):
            raise JobError(f'a {kind.name} job needs "{key}" (a string)')
    try:
        return kind.params.check(job.get("params"))
    except ParamError as exc:
        raise JobError(str(exc)) from None


async def load_table(ctx, dataset_id):
    from ..data import DataError, parse_csv
    try:
        if hasattr(ctx, "load_table"):
            return await ctx.load_table(dataset_id)
        return parse_csv(await ctx.load_dataset(dataset_id), name=dataset_id,
                         should_stop=getattr(ctx, "should_stop", None))
    except DataError as exc:
        raise JobError(str(exc)) from exc


async def load_prepared(job: dict, ctx, impute: bool = True):
    """(table, py_core.data.Prepared) of the job's data set, target, features and split;
    impute=False keeps missing values as NaN."""
    from ..data import DataError, prepare
    split = job.get("split") or {}
    ctx.progress({"stage": "loading data", "fraction": 0.0})
    table = await load_table(ctx, job["dataset"])
    ctx.check_stop()  # Stop while the data loads ends the job before the model starts
    try:  # a million rows take about a second here: Stop is checked all along
        prep = prepare(table, job["target"], features=job.get("features"), task=job.get("task"),
                       test_size=split.get("test_size", 0.2), seed=split.get("seed", 42),
                       stratify=split.get("stratify"),  # None: stratified for classes
                       should_stop=ctx.should_stop, impute=impute,
                       progress=lambda f: ctx.progress({"stage": "preparing the data",
                                                        "fraction": 0.02 * f}))
    except (DataError, ValueError) as exc:
        raise JobError(str(exc)) from exc
    return table, prep


async def predict_test(model, prep, classify: bool, backend, ctx) -> tuple[dict, float]:
    """The test rows predicted as `evaluate` takes them ({"classes", "proba"} for classes, else
    {"pred"}) and the seconds it took, the queue drained."""
    ctx.progress({"stage": "predicting the test rows", "fraction": 0.96})
    F, t0 = prep.n_features, time.perf_counter()
    if classify:
        got = {"classes": model.classes_, "proba": await model.predict_proba(prep.X_test, n_features=F)}
    else:
        got = {"pred": list(await model.predict(prep.X_test, n_features=F))}
    await backend.finish()
    return got, time.perf_counter() - t0


def evaluate(prep, info, metrics: dict, plots: dict, classes=None, proba=None, pred=None) -> dict:
    """Metrics (into `metrics`) and plots (into `plots`: confusion, or pred_vs_actual and
    residuals) of the test rows' predictions: `proba` (a row of probabilities each, in `classes`
    order, the model's) for classes, else `pred`; returns the baseline's metrics."""
    truth = list(prep.y_test)
    if proba is not None:  # class codes: the order of info["classes"]
        codes = {c: i for i, c in enumerate(info["classes"])}
        order = [codes[c] for c in classes]  # model column -> class code
        K = len(info["classes"])
        probs = []
        for row in proba:
            full = [0.0] * K
            for j, v in zip(order, row):
                full[j] = v
            probs.append(full)
        guess = [max(range(K), key=row.__getitem__) for row in probs]
        metrics.update(classification_metrics(truth, guess, probs, K))
        matrix = [[0] * K for _ in range(K)]
        for t, g in zip(truth, guess):
            matrix[t][g] += 1
        plots["confusion"] = {"matrix": matrix, "classes": [str(c) for c in info["classes"]]}
        return majority_baseline(list(prep.y_train), truth, K, info["classes"])
    metrics.update(regression_metrics(truth, pred))
    mean = sum(prep.y_train) / len(prep.y_train)
    keep = every(len(truth), PLOT_POINTS)
    plots["pred_vs_actual"] = [[truth[i], pred[i]] for i in keep]
    plots["residuals"] = [[pred[i], truth[i] - pred[i]] for i in keep]
    return {"predictor": "mean of the training rows", **regression_metrics(truth, [mean] * len(truth))}


def importance_plot(features: list, importances) -> list:
    """[{"name", "importance"}], largest first."""
    return sorted(({"name": name, "importance": imp} for name, imp in zip(features, importances)),
                  key=lambda d: -d["importance"])
