"""Gradient boosting's speed against its peers on the issue's jobs (issue 35), on one machine:
py_core on the native backend (wgpu-native: the machine's GPU, or lavapipe), scikit-learn's
HistGradientBoosting*, XGBoost `hist` (CPU and CUDA) and LightGBM (CPU), at the same parameters
(max_iter / n_estimators, 31 leaves, learning rate 0.1, 255 bins, min_samples_leaf 20, no early
stopping), on the same rows (py_core.data's generators, as the page's synthetic data sets).
Fit seconds (a warm-up fit of a small job first: kernel compilation is not timed) and test MSE or
accuracy, one line of JSON a run and a Markdown table at the end.

    # the issue's H200 targets (not run on the CPU machines)
    python tools/gpu/boosting_bench.py --job regression --rows 1000000 --features 20 --iters 200
    python tools/gpu/boosting_bench.py --job classes --rows 500000 --features 50 --classes 10 --iters 200
    # a mid-size job on lavapipe
    python tools/gpu/boosting_bench.py --job regression --rows 100000 --features 20 --iters 100 --peers sklearn

--rows counts the training rows (the generated table has a quarter more: the 20% test split).
The tab's own figure: the suite tools/gpu/boosting-perf.json (the same jobs), copied to
web/suites/ and run by `tools/gpu/run_suite.sh boosting-perf` (tools/gpu/README.md).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import time

import numpy as np

from py_core.boosting import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from py_core.data import generate, prepare
from py_core.gpu import get_backend


def data(job: str, rows: int, features: int, classes: int):
    """py_core's prepared 80/20 split of a generated table of rows training rows."""
    rows = rows * 5 // 4
    if job == "regression":
        table = generate("regression", n_samples=rows, n_features=features, n_informative=10, noise=10, seed=0)
    else:
        table = generate("blobs", n_samples=rows, n_features=features, centers=classes, cluster_std=12, seed=0)
    return prepare(table, "y", test_size=0.2, seed=42)


def score(job, pred, truth) -> float:
    pred, truth = np.asarray(pred), np.asarray(truth)
    return float((pred == truth).mean()) if job == "classes" else float(((pred - truth) ** 2).mean())


def ours(p, job, iters, backend):
    cls = HistGradientBoostingClassifier if job == "classes" else HistGradientBoostingRegressor
    F = p.n_features
    kw = dict(max_iter=iters, early_stopping=False, random_state=0, backend=backend)
    warm = 2000 * F
    asyncio.run(cls(**dict(kw, max_iter=2)).fit(p.X_train[:warm], list(p.y_train[:2000]), n_features=F))
    t0 = time.perf_counter()
    model = asyncio.run(cls(**kw).fit(p.X_train, list(p.y_train), n_features=F))
    fit = time.perf_counter() - t0
    pred = asyncio.run(model.predict(p.X_test, n_features=F))
    return fit, score(job, pred, p.y_test), model.timings_


def peer(name, device, p, job, iters, classes):
    F = p.n_features
    Xtr, Xte = np.frombuffer(p.X_train, dtype=np.float64).reshape(-1, F), np.frombuffer(p.X_test, dtype=np.float64).reshape(-1, F)
    ytr, yte = np.asarray(p.y_train), np.asarray(p.y_test)
    if name == "sklearn":
        from sklearn.ensemble import HistGradientBoostingClassifier as C
        from sklearn.ensemble import HistGradientBoostingRegressor as R
        model = (C if job == "classes" else R)(max_iter=iters, early_stopping=False, random_state=0)
    elif name == "xgboost":
        import xgboost as xgb
        kw = dict(n_estimators=iters, tree_method="hist", grow_policy="lossguide", max_leaves=31,
                  max_depth=0, learning_rate=0.1, max_bin=256, min_child_weight=1e-3,
                  reg_lambda=0.0, device=device, random_state=0)
        model = xgb.XGBClassifier(**kw) if job == "classes" else xgb.XGBRegressor(**kw)
    else:
        import lightgbm as lgb
        kw = dict(n_estimators=iters, num_leaves=31, learning_rate=0.1, max_bin=255, min_child_samples=20,
                  reg_lambda=0.0, random_state=0, verbose=-1)
        model = lgb.LGBMClassifier(**kw) if job == "classes" else lgb.LGBMRegressor(**kw)
    t0 = time.perf_counter()
    model.fit(Xtr, ytr)
    fit = time.perf_counter() - t0
    return fit, score(job, model.predict(Xte), yte)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--job", choices=("regression", "classes"), default="regression")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--peers", default="sklearn,xgboost:cpu,xgboost:cuda,lightgbm")
    a = ap.parse_args()
    p = data(a.job, a.rows, a.features, a.classes)
    backend = get_backend("native")
    rows = []
    fit, metric, timings = ours(p, a.job, a.iters, backend)
    rows.append({"runner": "py_core", "device": backend.adapter.get("device"), "fit_s": fit, "metric": metric,
                 "phases": {k: round(v, 3) for k, v in timings.items()}})
    print(json.dumps(rows[-1]), flush=True)
    for spec in filter(None, a.peers.split(",")):
        name, _, device = spec.partition(":")
        try:
            fit, metric = peer(name, device or "cpu", p, a.job, a.iters, a.classes)
        except Exception as exc:  # a peer not installed, or no CUDA: said, and the others run
            rows.append({"runner": spec, "error": f"{type(exc).__name__}: {exc}"})
        else:
            rows.append({"runner": name, "device": device or "cpu", "fit_s": fit, "metric": metric})
        print(json.dumps(rows[-1]), flush=True)
    what = "accuracy" if a.job == "classes" else "test MSE"
    print(f"\n{a.job}, {a.rows:,} rows x {a.features} features, {a.iters} iterations, 31 leaves, lr 0.1\n")
    print(f"| runner | device | fit s | {what} |\n| --- | --- | --- | --- |")
    for r in rows:
        if "error" in r:
            print(f"| {r['runner']} | | {r['error']} | |")
        else:
            print(f"| {r['runner']} | {r['device']} | {r['fit_s']:.2f} | {r['metric']:.5g} |")


if __name__ == "__main__":
    main()
