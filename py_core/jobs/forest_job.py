"""The random forest job: a data set in, a trained forest, its metrics, timings and plots out.

    {"kind": "random_forest", "dataset": ID, "target": COLUMN,
     "task": "regression" | "classification",     # inferred from the target when absent
     "features": [COLUMN, ...],                   # default: every usable column but the target
     "params": {...},                             # the estimators' parameters (py_core.forest),
                                                  # and benchmark switches: "profile": true for
                                                  # kernel timings, "parallel_bins": true/false
                                                  # for one kernel set or the other (builder.py)
     "split": {"test_size": 0.2, "seed": 42},
     "surface": [COLUMN, COLUMN],                 # the decision surface's two features (default:
                                                  # both when there are two, else the two most
                                                  # important: of the first trees while it grows,
                                                  # of the forest at the end)
     "live": true}                                # live plots while the forest grows (below)

Result: {"metrics": {...}, "baseline": {...}, "timings": {...}, "model": {...}, "plots": {...},
"params": {...}, "rows": {...}}
- rows: what became of the data set's rows: {"read": the file's rows, "used": those trained and
  tested on, "no_target": those left out for having no value in the target column}; the page
  says it in words before training (from the summary) and under the result (from this).
- metrics: mse, mae, r2 (regression) or accuracy, f1 (macro), log_loss (classification), on the
  test rows; n_train, n_test, n_features, and oob_score with params {"oob_score": true}.
- timings (seconds, the queue drained before each clock read): binning, fit (binning included),
  predict (the test rows); the fit's phases (prepare, thresholds, binning, levels, readback,
  host: see `RandomForest*.timings_`). With params {"profile": true}: each kernel's GPU time
  summed over the fit ("k_NAME"), and predict_all: predicting every row, train and test
  (metrics: predict_all_rows).
- baseline: the same metrics for the model that ignores the features: the training rows' mean
  (regression) or their most frequent class, with their class frequencies as probabilities
  (classification). A model should beat it; the page shows it under the model's row.
- model: `RandomForest*.to_dict()`'s header (all but the trees) plus "data": what a new CSV needs
  to be predicted the same way (feature names, categories, medians), and "binary": the whole
  forest, data included, in the format of `to_bytes()`, as its parts (`jobs.Joined` of
  `export.parts`: the forest's own arrays, no copy in Python; the page's worker joins them into
  one transferred Uint8Array and writes the JSON only on download), for `predict_csv`.
- plots: pred_vs_actual [[actual, predicted]] and residuals [[predicted, actual - predicted]]
  (regression, up to PLOT_POINTS test rows); confusion {"matrix" (rows: true class), "classes"};
  importances [{"name", "importance"}] (largest first); with two features or more, surface:
  {"grid": {"x": [lo, hi], "y": [lo, hi], "n": SURFACE, "values": n*n class ids (the order of
  "classes") or predicted values (regression), row-major from the bottom}, "points": [[x, y,
  class id or target value]], "x_name", "y_name", "others": the other features' count, held at
  their training medians (a category at its most frequent), "held": [[name, value]] the first HELD_SHOWN of them, "classes" (class
  names: the legend) or "scale" ([lo, hi] of the target: the colour scale's ends, regression),
  "note": a sentence when the features held decide the prediction on this slice, else None}.
  The sizes are forest_plots' constants.
- live (with "live": true): the forest grows in several batches (py_core.forest.builder), and
  about eight times as they finish a progress message {"live": {"trees": [grown, n_estimators],
  "plots": {"surface", and "pred_vs_actual" for regression}}} carries those plots as the trees so
  far draw them; timings["live"] is their time, left out of "fit".
"""
from __future__ import annotations

import math
import re
import time
from array import array

from ..errors import JobError
from ..forest import RandomForestClassifier, RandomForestRegressor
from ..forest.builder import forest_kernels
from ..forest.params import PARAMS as FOREST_PARAMS
from ..params import Bool, Null, Param
from .forest_plots import Plots, surface_pair
from .kinds import Kind, Timing
from .results import Joined
from .tabular import evaluate, importance_plot, job_params, load_prepared, predict_test

# The job's params: the estimators' (py_core/forest/params.py: scikit-learn's meaning and
# ranges) and two benchmark switches. Checked here, in the tab, and by the server (POST /api/runs,
# its caps and its runners), so a job the tab ran is one the server accepts.
PARAMS = FOREST_PARAMS.extend(
    "forest",
    Param("profile", False, Bool(), label="Profile", help="time each kernel (benchmarks)"),
    Param("parallel_bins", None, Null(), Bool(), label="Parallel bins",
          help="force one kernel set (benchmarks)"))


async def run(job: dict, backend, ctx, session=None) -> dict:
    """The job (a forest keeps nothing in the session); every GPU buffer and plan it makes (the forest's too) is freed when it ends."""
    async with backend.scope("forest job"):
        return await _run(job, backend, ctx)


async def _run(job: dict, backend, ctx) -> dict:
    params = job_params(job, KIND)
    profile = params.pop("profile", False)
    variant = params.pop("parallel_bins", None)
    backend.warm(forest_kernels(backend, variant))  # compiling while the data load (where not yet)
    table, prep = await load_prepared(job, ctx)
    info, F = prep.info, prep.n_features
    classify = info["task"] == "classification"
    cls = RandomForestClassifier if classify else RandomForestRegressor
    try:
        forest = cls(**params, backend=backend)
    except TypeError as exc:
        raise JobError(str(exc)) from exc

    def progress(p):
        ctx.progress(dict(p, fraction=0.02 + 0.93 * p.get("fraction", 0.0)))

    y_train = [info["classes"][v] for v in prep.y_train] if classify else prep.y_train
    pair = surface_pair(job.get("surface"), info["features"])
    draw = Plots(prep, info, forest, pair)

    async def on_trees(partial):
        live = {"surface": await draw.surface(partial.predict, partial.importances)}
        if not classify:
            live["pred_vs_actual"] = await draw.pred_vs_actual(partial.predict)
        ctx.progress({"live": {"trees": [partial.trees, partial.n_estimators], "plots": live}})

    t0 = time.perf_counter()
    try:
        await forest.fit(prep.X_train, y_train, n_features=F, progress=progress,
                         should_stop=ctx.should_stop, pause=getattr(ctx, "pause_point", None),
                         profile=profile, parallel_bins=variant,
                         on_trees=on_trees if job.get("live") and F >= 2 else None)
    except ValueError as exc:
        raise JobError(str(exc)) from exc
    await backend.finish()
    t_fit = time.perf_counter() - t0 - forest.timings_.get("live", 0.0)

    tested, t_predict = await predict_test(forest, prep, classify, backend, ctx)

    metrics = {"n_train": len(prep.y_train), "n_test": len(prep.y_test), "n_features": F}
    timings = {"fit": t_fit, "predict": t_predict}
    timings.update((k, v) for k, v in forest.timings_.items() if k != "fit")
    if profile:  # prediction of every row, as a benchmark of prediction alone
        X_all = array("d", prep.X_train)
        X_all.extend(prep.X_test)
        await backend.finish()
        t0 = time.perf_counter()
        await forest._predict_raw(X_all, F)
        await backend.finish()
        timings["predict_all"] = time.perf_counter() - t0
        metrics["predict_all_rows"] = len(X_all) // F
    plots = {"importances": importance_plot(info["features"], forest.feature_importances_)}
    baseline = evaluate(prep, info, metrics, plots, **tested)
    score = getattr(forest, "oob_score_", None)
    if score is not None and math.isfinite(score):
        metrics["oob_score"] = score
    if F >= 2:
        ctx.progress({"stage": "drawing the decision surface", "fraction": 0.98})

        async def final(X, n):
            return (await forest._predict_raw(X, F))[0]

        async def ranked():
            return forest.feature_importances_

        plots["surface"] = await draw.surface(final, ranked, final=True)
    from ..forest import export
    data = {"target": info["target"], "task": info["task"], "features": info["features"],
            "kinds": info["kinds"], "categories": info["categories"], "medians": prep.medians}
    model = dict(export.header(forest), data=data, n_trees=forest.n_estimators,
                 binary=Joined(export.parts(forest, {"data": data})))
    ctx.progress({"stage": "done", "fraction": 1.0})
    return {"metrics": metrics, "baseline": baseline, "model": model, "plots": plots,
            "params": {k: v for k, v in forest.get_params().items() if k != "backend"},
            "timings": timings, "rows": {"read": table.n_rows, "used": info["n_rows"],
                                         "no_target": info["n_dropped"]}}


async def predict_csv(model, data: bytes, name: str, backend="reference") -> dict:
    """Predictions of an exported model (a job's "model": its binary form, or the JSON format with
    "data") for a new CSV with the same feature columns: {"csv": CSV text, a row for each of the
    file's rows: its id (the file's index column, else its number from 1, in a column "row"), the
    prediction and, for classes, each class's probability, numbers to 7 significant digits,
    "rows": n, "seconds": time to predict}."""
    from ..forest import export
    if isinstance(model, dict) and "binary" in model:
        model = model["binary"]
    try:
        head = export.read_bytes(model)[0] if not isinstance(model, dict) else model
    except (ValueError, KeyError) as exc:
        raise JobError(f"not a forest model: {exc}") from exc
    meta = head.get("data")
    if not meta:
        raise JobError("this model has no data description: export it from a forest job")
    cls = RandomForestClassifier if meta["task"] == "classification" else RandomForestRegressor
    try:
        forest = (cls.from_dict(model, backend=backend) if isinstance(model, dict)
                  else cls.from_bytes(model, backend=backend))
    except (ValueError, KeyError, TypeError) as exc:
        raise JobError(f"not a forest model: {exc}") from exc
    try:
        return await _predict_csv(forest, cls, meta, data, name)
    finally:
        forest.release()  # the trees' device copy goes with the request


async def _predict_csv(forest, cls, meta, data, name) -> dict:
    from ..data import DataError, parse_csv
    try:
        table = parse_csv(data, name=name)
        cols = [table.column(f) for f in meta["features"]]
    except (DataError, KeyError) as exc:
        raise JobError(f"{name}: {exc}") from exc
    n, F = len(table.columns[0]) if table.columns else 0, len(cols)
    X = array("d", bytes(8 * n * F))
    for j, (col, kind, median) in enumerate(zip(cols, meta["kinds"], meta["medians"])):
        if kind == "categorical":
            cats = meta["categories"][col.name]
            index = {c: float(i) for i, c in enumerate(cats)}
            missing = float(len(cats) - 1 if cats and cats[-1] == "(missing)" else len(cats))
            raw = col.values if col.kind != "numeric" else [_as_label(v) for v in col.values]
            X[j::F] = array("d", [index.get(v, missing) for v in raw])
        elif col.kind == "numeric":
            X[j::F] = array("d", [median if v != v else v for v in col.values])
        else:
            raise JobError(f"{name}: column {col.name!r} must be numeric, as in training")
    t0 = time.perf_counter()
    target = meta["target"]
    if cls is RandomForestClassifier:
        proba = await forest.predict_proba(X, n_features=F)
        classes = forest.classes_
        lines = [[_csv(target)] + [_csv(f"p({c})") for c in classes]]
        lines += [[_csv(classes[max(range(len(r)), key=r.__getitem__)])] + [_num(v) for v in r]
                  for r in proba]
    else:
        pred = await forest.predict(X, n_features=F)
        lines = [[_csv(target)]] + [[_num(v)] for v in pred]
    seconds = time.perf_counter() - t0
    # Each row's id first: the file's own (R's row names, an index column), else its number.
    if table.index is not None:
        ids = [_csv(_as_label(v) if isinstance(v, float) else v) for v in table.column(table.index).values]
        head = table.index
    else:
        ids = [str(i) for i in range(1, n + 1)]
        head = "row"
        while head in table.names:
            head = "_" + head
    lines = [[_csv(head)] + lines[0]] + [[i] + line for i, line in zip(ids, lines[1:])]
    lines = [",".join(line) for line in lines]
    return {"csv": "\n".join(lines) + "\n", "rows": n, "seconds": seconds}


def _num(v: float) -> str:
    """A prediction as text: 7 significant digits, all an f32 sum of leaf values holds."""
    return f"{v:.7g}"


def _as_label(v: float):
    if v != v:
        return None
    return str(int(v)) if float(v).is_integer() else repr(v)


# A cell a spreadsheet would run as a formula: OWASP's CSV-injection rule is to prefix it with a
# quote, so it shows as text. A plain number keeps its sign ("-3", "+2.5e-3" are no formulas).
_FORMULA_START = ("=", "@", "+", "-", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _csv(value) -> str:
    """A text cell of the predictions CSV (row ids, labels, names from the file): formulas
    neutralised, then quoted where it holds a delimiter, a quote or a line end."""
    text = str(value)
    if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text):
        text = "'" + text
    return '"' + text.replace('"', '""') + '"' if any(ch in text for ch in ',"\n\r') else text


def cost(params: dict, shape) -> dict:
    """What a server job costs (server/jobcost.py): rows x trees x depth, depth being max_depth,
    or 2 log2(rows) for unlimited trees (the depth a fully grown tree on random data reaches);
    also trees alone and a generated table's cells, which have caps of their own."""
    p = PARAMS.values(params)
    rows, cols, generated = shape()
    trees = p["n_estimators"]
    depth = p["max_depth"] or 2 * math.ceil(math.log2(max(2, rows)))
    total = rows * trees * depth
    return {"cost": total, "unit": "rows x trees x depth", "forest_cost": total, "rows": rows,
            "columns": cols, "trees": trees, "depth": depth,
            "generated_cells": rows * cols if generated else 0}


_FORESTS = ("server.runners.sklearn_runner:RUNNER", "server.runners.peers:XGBOOST",
            "server.runners.peers:LIGHTGBM", "server.runners.cuml_runner:RUNNER",
            "server.runners.pycore_runner:NATIVE", "server.runners.pycore_runner:REFERENCE")
KIND = Kind(
    name="random_forest", label="Random forest", run=run, params=PARAMS, main_timing=Timing("fit", "Fit", "Seconds to fit"),
    needs=("dataset", "target"), cost=cost,
    plots=("pred_vs_actual", "residuals", "confusion", "importances", "surface"),
    exports=("onnx", "json"), snippet=("forest", "onnx", "server.snippets:forest"),
    runners=_FORESTS, tab="forest", panel="/web/panels/forest.js")
