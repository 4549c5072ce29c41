"""How much ties and binning alone move the forest's accuracy on the real-data corpus
(tests/forest_corpus.py): the figures behind docs/accuracy.md's "Tree by tree" paragraph.

For each classification set, 100-tree forests with every feature (max_features=None: no random
feature draws, so trees differ only where splits tie) on the same bootstrap draws, averaged over
SEEDS seeds:
- scikit-learn's (a DecisionTreeClassifier a tree, our draws as sample weights) against itself
  under another random_state: what tie choices alone do;
- ours (native backend) against scikit-learn's;
and, for car/Chile (a feature of 436 distinct values: 256 quantile bins with exact_bins=0, a bin
a value by default), scikit-learn's forest at the corpus's default max_features on its raw values
against the same forest on 256 bins' indices, over CHILE_SEEDS seeds: what such binning alone
would cost there (exact_bins, 1024 by default, avoids it).

Run: `python tools/forest_ties.py [SEEDS] [CHILE_SEEDS]` (defaults 3 and 36; a few minutes on
two cores). Accuracy gaps are in points (100 x accuracy difference).
"""
from __future__ import annotations

import asyncio
import statistics
import sys
from array import array
from pathlib import Path

import numpy as np
from sklearn.tree import DecisionTreeClassifier

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from forest_corpus import CORPUS, bootstrap_counts, prepared  # noqa: E402

from py_core.forest import RandomForestClassifier  # noqa: E402
from py_core.forest.binning import bin_edges  # noqa: E402
from py_core.gpu import get_backend  # noqa: E402

TREES = 100


def sk_forest(Xtr, ytr, Xte, seed, n, max_features, offset=0):
    """scikit-learn's trees on our draws of `seed`: the forest's predicted classes on Xte."""
    trees = [DecisionTreeClassifier(max_features=max_features, random_state=1000 * seed + t + offset)
             .fit(Xtr, ytr, sample_weight=bootstrap_counts(seed, t, n)) for t in range(TREES)]
    proba = np.mean([t.predict_proba(Xte) for t in trees], axis=0)
    return trees[0].classes_[proba.argmax(axis=1)]


def main(seeds: int = 3, chile_seeds: int = 36) -> None:
    backend = get_backend("native")
    print(f"every feature, the same draws, {seeds} seeds: accuracy gaps in points")
    print("| data set | scikit-learn, other random_state | ours |")
    print("| --- | --- | --- |")
    own_gaps, our_gaps = [], []
    for name, target, task, drop in CORPUS:
        if task != "classification":
            continue
        p = prepared(name, target, task, drop)
        F = p.n_features
        Xtr, Xte = np.array(p.X_train).reshape(-1, F), np.array(p.X_test).reshape(-1, F)
        ytr, yte = np.array(p.y_train), np.array(p.y_test)
        n = len(ytr)
        sk, sk_other, ours = [], [], []
        for seed in range(seeds):
            sk.append((sk_forest(Xtr, ytr, Xte, seed, n, None) == yte).mean())
            sk_other.append((sk_forest(Xtr, ytr, Xte, seed, n, None, offset=500) == yte).mean())
            f = asyncio.run(RandomForestClassifier(TREES, random_state=seed, max_features=None,
                                                   backend=backend).fit(p.X_train, list(p.y_train), n_features=F))
            ours.append((np.array(asyncio.run(f.predict(p.X_test, n_features=F))) == yte).mean())
        own = 100 * (statistics.mean(sk_other) - statistics.mean(sk))
        our = 100 * (statistics.mean(ours) - statistics.mean(sk))
        own_gaps.append(own)
        our_gaps.append(our)
        print(f"| {name} | {own:+.2f} | {our:+.2f} |", flush=True)
    print(f"largest gap: scikit-learn against itself {max(own_gaps, key=abs):+.2f}, "
          f"ours against scikit-learn {max(our_gaps, key=abs):+.2f}")

    name, target, task, drop = next(c for c in CORPUS if c[0] == "car/Chile")
    p = prepared(name, target, task, drop)
    F = p.n_features
    Xtr, Xte = np.array(p.X_train).reshape(-1, F), np.array(p.X_test).reshape(-1, F)
    ytr, yte = np.array(p.y_train), np.array(p.y_test)
    n = len(ytr)
    _, _, thresholds = bin_edges(array("d", p.X_train), n, F, 256)

    def binned(X):  # each value's bin: how many of its feature's thresholds lie below it
        return np.stack([np.searchsorted(np.array(thresholds[j], dtype=np.float32),
                                         X[:, j].astype(np.float32), side="left") for j in range(F)], 1)
    raw, bins = [], []
    for seed in range(chile_seeds):
        raw.append((sk_forest(Xtr, ytr, Xte, seed, n, "sqrt") == yte).mean())
        bins.append((sk_forest(binned(Xtr), ytr, binned(Xte), seed, n, "sqrt") == yte).mean())
    print(f"car/Chile, scikit-learn on our bins against its raw values, {chile_seeds} seeds: "
          f"{100 * (statistics.mean(bins) - statistics.mean(raw)):+.2f} points")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
