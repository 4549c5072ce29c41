"""The gradient boosting job: a data set in, a boosted model, its metrics, timings and plots out.

    {"kind": "gradient_boosting", "dataset": ID, "target": COLUMN,
     "task", "features", "split", "surface": as the random forest job's (forest_job.py),
     "params": {...}}                             # the estimators' (py_core.boosting.PARAMS)

Missing values stay missing (NaN): the trees route them (py_core.boosting); the medians are
only where the surface holds the features it does not show.

Result: as the random forest job's {"metrics", "baseline", "timings", "model", "plots",
"params", "rows"} (forest_job.py says each), with
- metrics: also n_iter (iterations kept);
- timings: fit, predict, and the fit's phases (prepare, compile: a backend's first fit only, binning,
  iterations, readback);
- model: `HistGradientBoosting*.to_dict()` (py_core.boosting's format) plus "data": the feature
  names, kinds, categories and medians of the job's columns;
- plots: pred_vs_actual, residuals, confusion, importances, surface as the forest's, and
  loss_curve {"loss": the loss's name (scikit-learn's: "squared_error" is half the squared
  error, as scikit-learn's train_score_ holds it), "train": [loss before any tree, then after
  each iteration kept], "validation": the same on the validation rows or null (no early
  stopping), "best_iteration": the iteration of the smallest loss watched (validation's, else
  training's), "early_stopped": bool}.
- live: every group of iterations (a few a second), a progress message {"live": {"iteration": i,
  "max_iter": N, "train_loss": x, "validation_loss": y or null, "points": [[iteration, train,
  validation], ...] the iterations since the last message}}.
"""
from __future__ import annotations

import time

from ..boosting import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from ..boosting.cost import cost
from ..boosting.params import PARAMS as BOOSTING_PARAMS
from ..errors import JobError
from .forest_plots import Plots, surface_pair
from .kinds import Kind, Timing
from .tabular import evaluate, importance_plot, job_params, load_prepared, predict_test

# The job's params: the estimators' (py_core/boosting/params.py: scikit-learn's names, defaults
# and ranges), checked here, in the tab, and by the server.
PARAMS = BOOSTING_PARAMS.extend("gradient boosting")


async def run(job: dict, backend, ctx, session=None) -> dict:
    """The job; every GPU buffer and plan it makes is freed when it ends."""
    async with backend.scope("boosting job"):
        return await _run(job, backend, ctx)


async def _run(job: dict, backend, ctx) -> dict:
    params = job_params(job, KIND)
    table, prep = await load_prepared(job, ctx, impute=False)
    info, F = prep.info, prep.n_features
    classify = info["task"] == "classification"
    cls = HistGradientBoostingClassifier if classify else HistGradientBoostingRegressor
    loss = params.get("loss")
    if loss is not None and loss not in cls._losses:
        raise JobError(f"loss: {loss!r} is not a {info['task']} loss: one of {', '.join(cls._losses)}")
    model = cls(**params, backend=backend)
    y_train = [info["classes"][v] for v in prep.y_train] if classify else prep.y_train
    pair = surface_pair(job.get("surface"), info["features"])
    sent = [0]  # iterations whose losses went out live

    def progress(p):
        ctx.progress(dict(p, fraction=0.02 + 0.93 * p.get("fraction", 0.0)))

    async def on_losses(train, val):
        points = [[i, train[i], val[i] if val else None] for i in range(sent[0], len(train))]
        sent[0] = len(train)
        ctx.progress({"live": {"iteration": len(train) - 1, "max_iter": model.max_iter,
                               "train_loss": train[-1], "validation_loss": val[-1] if val else None,
                               "points": points}})

    t0 = time.perf_counter()
    try:
        await model.fit(prep.X_train, y_train, n_features=F, progress=progress,
                        should_stop=ctx.should_stop, on_losses=on_losses,
                        categorical=[kind != "numeric" for kind in info["kinds"]])
    except ValueError as exc:
        raise JobError(str(exc)) from exc
    await backend.finish()
    t_fit = time.perf_counter() - t0

    tested, t_predict = await predict_test(model, prep, classify, backend, ctx)
    metrics = {"n_train": len(prep.y_train), "n_test": len(prep.y_test), "n_features": F,
               "n_iter": model.n_iter_}
    timings = {"fit": t_fit, "predict": t_predict}
    timings.update((k, v) for k, v in model.timings_.items() if k != "fit")
    plots = {"importances": importance_plot(info["features"], model.feature_importances_),
             "loss_curve": loss_curve(model)}
    baseline = evaluate(prep, info, metrics, plots, **tested)
    if F >= 2:
        ctx.progress({"stage": "drawing the decision surface", "fraction": 0.98})

        async def predict(X, n):
            if classify:
                return [v for row in await model.predict_proba(X, n_features=F) for v in row]
            return await model.predict(X, n_features=F)

        async def ranked():
            return model.feature_importances_

        plots["surface"] = await Plots(prep, info, model, pair).surface(predict, ranked, final=True)
    data = {"target": info["target"], "task": info["task"], "features": info["features"],
            "kinds": info["kinds"], "categories": info["categories"], "medians": prep.medians}
    ctx.progress({"stage": "done", "fraction": 1.0})
    return {"metrics": metrics, "baseline": baseline, "model": dict(model.to_dict(), data=data),
            "plots": plots, "params": {k: v for k, v in model.get_params().items() if k != "backend"},
            "timings": timings, "rows": {"read": table.n_rows, "used": info["n_rows"],
                                         "no_target": info["n_dropped"]}}


def loss_curve(model) -> dict:
    """The losses per iteration (minus scikit-learn's scores), the best, and whether early
    stopping ended the fit."""
    train = [-s for s in model.train_score_]
    val = [-s for s in model.validation_score_] or None
    watched = val or train
    return {"loss": model.loss_, "train": train, "validation": val, "early_stopped": model.early_stopped_,
            "best_iteration": min(range(len(watched)), key=watched.__getitem__)}


KIND = Kind(
    name="gradient_boosting", label="Gradient boosting", run=run, params=PARAMS,
    main_timing=Timing("fit", "Fit", "Seconds to fit"), needs=("dataset", "target"), cost=cost,
    plots=("pred_vs_actual", "residuals", "confusion", "importances", "surface", "loss_curve"),
    exports=("json", "onnx"), snippet=("boosting", "json", "server.snippets:boosting"),
    runners=("server.runners.boosters:SKLEARN", "server.runners.boosters:XGBOOST",
             "server.runners.boosters:LIGHTGBM"),
    tab="boosting", panel="/web/panels/boosting.js")
