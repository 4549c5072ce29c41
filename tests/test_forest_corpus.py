"""The forest against scikit-learn on 30 real data sets (tests/forest_corpus.py): the same prepared
rows and features, scikit-learn's defaults (max_depth=None, min_samples_leaf=1, bootstrap,
max_features 1.0 for regression and sqrt for classes), TREES trees, SEEDS seeds.

Two forests stand for scikit-learn. "RandomForest": its own RandomForest* (its own bootstrap
draws), the mean over the seeds: what a person would run, printed for reference. "Same draws":
scikit-learn's RandomForest algorithm (a DecisionTree* per tree, fit with the tree's bootstrap
counts as sample weights, as RandomForest* does internally) given *our* bootstrap counts, so the
comparison is of the trees, not of two random number generators: this one is held to the issue's
bar for regression: over the regression sets the median of (our test MSE / scikit-learn's) within
1% and the worst within 5%.
For classes the draws matter less than the features each node draws (max_features sqrt), which
no seed can pair, and a test set of 30 to 500 rows moves a point a row or two: there our forests
are larger (CLASS_TREES trees, CLASS_SEEDS seeds) and the bar is held against scikit-learn's own
RandomForestClassifier averaged over SK_SEEDS seeds (cheap: it is scikit-learn's time) for the
median, and the same-draws forest for the worst (see the assertions for the bars).
The table is printed in the test output (and kept in the README)."""
from __future__ import annotations

import asyncio
import statistics
import time

import numpy as np
from forest_corpus import CORPUS, prepared
from sklearn.ensemble import RandomForestClassifier as SkForestClassifier
from sklearn.ensemble import RandomForestRegressor as SkForestRegressor
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from py_core.forest import RandomForestClassifier, RandomForestRegressor
from py_core.kernels.forest import hash3

TREES, SEEDS = 20, 3               # regression
CLASS_TREES, CLASS_SEEDS, SK_SEEDS = 50, 2, 6  # classification


def bootstrap_counts(seed: int, tree: int, n: int) -> np.ndarray:
    """Tree `tree`'s draws (with replacement, n of them) as py_core's `bootstrap` kernel makes them."""
    rows = [hash3(seed, 2 * tree, i) % n for i in range(n)]
    return np.bincount(rows, minlength=n).astype(float)


def _scores(p, task, backend) -> tuple[float, float, float]:
    """(ours, scikit-learn on the same draws, scikit-learn's RandomForest): test MSE or accuracy,
    each the mean over SEEDS seeds."""
    F = p.n_features
    Xtr, Xte = np.array(p.X_train).reshape(-1, F), np.array(p.X_test).reshape(-1, F)
    ytr, yte = np.array(p.y_train), np.array(p.y_test)
    n = len(ytr)
    ours, same, own = [], [], []
    regression = task == "regression"
    T, seeds = (TREES, SEEDS) if regression else (CLASS_TREES, CLASS_SEEDS)
    for seed in range(seeds if regression else SK_SEEDS):
        if not regression and seed >= seeds:  # more seeds of scikit-learn's own forest
            own.append(SkForestClassifier(T, random_state=seed, n_jobs=1).fit(Xtr, ytr).score(Xte, yte))
            continue
        trees = [(DecisionTreeRegressor(random_state=1000 * seed + t) if regression else
                  DecisionTreeClassifier(max_features="sqrt", random_state=1000 * seed + t))
                 .fit(Xtr, ytr, sample_weight=bootstrap_counts(seed, t, n)) for t in range(T)]
        if task == "regression":
            f = asyncio.run(RandomForestRegressor(T, random_state=seed, backend=backend)
                            .fit(p.X_train, p.y_train, n_features=F))
            ours.append(float(((np.array(asyncio.run(f.predict(p.X_test, n_features=F))) - yte) ** 2).mean()))
            same.append(float(((np.mean([t.predict(Xte) for t in trees], axis=0) - yte) ** 2).mean()))
            sk = SkForestRegressor(T, random_state=seed, n_jobs=1).fit(Xtr, ytr)
            own.append(float(((sk.predict(Xte) - yte) ** 2).mean()))
        else:
            f = asyncio.run(RandomForestClassifier(T, random_state=seed, backend=backend)
                            .fit(p.X_train, list(p.y_train), n_features=F))
            ours.append(asyncio.run(f.score(p.X_test, list(p.y_test), n_features=F)))
            proba = np.mean([t.predict_proba(Xte) for t in trees], axis=0)
            same.append(float((trees[0].classes_[proba.argmax(axis=1)] == yte).mean()))
            own.append(SkForestClassifier(T, random_state=seed, n_jobs=1).fit(Xtr, ytr).score(Xte, yte))
    return statistics.mean(ours), statistics.mean(same), statistics.mean(own)


def test_forest_matches_sklearn_on_real_data(native_backend, capsys):
    rows, ratios, gaps, own_ratios, own_gaps = [], [], [], [], []
    t0 = time.perf_counter()
    for name, target, task, drop in CORPUS:
        p = prepared(name, target, task, drop)
        ours, same, own = _scores(p, task, native_backend)
        cats = p.info["kinds"].count("categorical")
        if task == "regression":
            ratios.append(ours / same)
            own_ratios.append(ours / own)
            cmp = f"MSE {ours:.4g} | {same:.4g}: {100 * (ours / same - 1):+.1f}% | {own:.4g}: {100 * (ours / own - 1):+.1f}%"
        else:
            gaps.append(100 * (ours - same))
            own_gaps.append(100 * (ours - own))
            cmp = (f"accuracy {ours:.4f} | {same:.4f}: {100 * (ours - same):+.2f} | {own:.4f}: "
                   f"{100 * (ours - own):+.2f} points")
        rows.append(f"| {name} | {target} | {len(p.y_train)}/{len(p.y_test)} | {p.n_features} ({cats} cat.) | {cmp} |")
    table = "\n".join(["| data set | target | train/test | features | ours · scikit-learn, same draws · its RandomForest |",
                       "| --- | --- | --- | --- | --- |", *rows])
    summary = (f"same draws: regression ({len(ratios)} sets) MSE ratio median {statistics.median(ratios):.4f}, "
               f"worst {max(ratios):.4f}; classification ({len(gaps)} sets) accuracy gap median "
               f"{statistics.median(gaps):+.2f}, worst {min(gaps):+.2f} points. RandomForest: MSE ratio "
               f"median {statistics.median(own_ratios):.4f}, worst {max(own_ratios):.4f}; accuracy gap "
               f"median {statistics.median(own_gaps):+.2f}, worst {min(own_gaps):+.2f} points "
               f"(regression {TREES} trees x {SEEDS} seeds; classes {CLASS_TREES} trees x {CLASS_SEEDS} "
               f"seeds, scikit-learn's forest x {SK_SEEDS}; {time.perf_counter() - t0:.0f} s)")
    with capsys.disabled():
        print("\n" + table + "\n" + summary)
    assert len(CORPUS) >= 25 and len(ratios) >= 10 and len(gaps) >= 10
    assert statistics.median(ratios) <= 1.01, summary  # the bar, on the same draws
    assert max(ratios) <= 1.05, summary
    # Classes: the median at most half a point under; the worst at most 2 points (one test row
    # of the 43-60 some sets have: the 1 point is below what their test rows resolve).
    assert statistics.median(gaps) >= -0.5 and statistics.median(own_gaps) >= -0.5, summary
    assert min(gaps) >= -2.0, summary
